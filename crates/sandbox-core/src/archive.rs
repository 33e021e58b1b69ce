//! Directory archives moved between the host and a sandbox: building them the way node-tar
//! does (so byte counts match the original providers), checking received archives before a
//! single byte lands, and extracting them.
//!
//! Layout of a built archive (node-tar `c({cwd}, ["."])`): a `./` directory entry, then every
//! entry breadth-first in Node's `readdir` order (sorted by name bytes) as `./name`, `./dir/`, `./dir/name`; ustar headers;
//! each member padded to 512 bytes; two zero blocks at the end and no record padding. A PAX
//! header precedes an entry only where node-tar needs one (paths or link targets that do not
//! fit ustar, non-ASCII names, sizes of 8 GiB and more).
//!
//! Safety policy of a received archive (every entry is checked before the verdict):
//! - the running sum of declared entry sizes may not exceed [`EXTRACTION_LIMIT`];
//! - paths must be relative, without a `..` segment, a backslash or NUL;
//! - only files, directories, symbolic links and hard links are allowed;
//! - symbolic link targets must be relative, backslash-free, and climb (leading `..` only, no
//!   more than the link's depth) before they descend ([`symlink_target_confined`]: confined
//!   however links combine, now or after later syncs);
//! - hard links only to an earlier regular-file entry of the same archive.
//!
//! Extraction ([`extract_archive`]) runs after the whole archive passed, so a rejection leaves
//! the destination as it was; it creates every entry through directory handles reached from the
//! destination without following any link ([`crate::confined`]), and re-checks every link.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fs;
use std::io::{self, Read, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

/// Declared entry sizes an archive may add up to: 10 GiB.
pub const EXTRACTION_LIMIT: u64 = 10 * 1024 * 1024 * 1024;
const BLOCK: usize = 512;

/// Why an archive operation failed.
#[derive(Debug)]
pub enum ArchiveError {
    /// The archive breaks the safety policy (or the extraction limit).
    Unsafe,
    /// A file-system call failed, as Node would report it (`ENOENT: …, open '<path>'`).
    Fs {
        error: io::Error,
        syscall: &'static str,
        path: PathBuf,
    },
    /// The bytes are not a readable tar archive.
    Format,
    /// Extraction would write through a symbolic link inside the destination.
    SymlinkTraversal,
    /// Following symbolic links reached directory `path` a second time (same device and inode):
    /// a link loop (`a -> .`) or two links to one directory. Each provider has its catalogued
    /// message for it.
    RepeatedDirectory { path: PathBuf },
}

impl ArchiveError {
    fn fs(error: io::Error, syscall: &'static str, path: &Path) -> Self {
        ArchiveError::Fs {
            error,
            syscall,
            path: path.to_owned(),
        }
    }

    /// The text the original (Node, node-tar) failed with for this error. [`ArchiveError::Unsafe`]
    /// has no text of its own: each provider has its catalogued message for it.
    pub fn node_message(&self) -> String {
        match self {
            ArchiveError::Unsafe => "unsafe archive".to_owned(),
            ArchiveError::Fs {
                error,
                syscall,
                path,
            } => node_fs_message(error, syscall, path),
            ArchiveError::Format => "TAR_BAD_ARCHIVE: Unrecognized archive format".to_owned(),
            ArchiveError::SymlinkTraversal => "Cannot extract through symbolic link".to_owned(),
            ArchiveError::RepeatedDirectory { path } => node_fs_message(
                &io::Error::from_raw_os_error(40), // ELOOP
                "stat",
                path,
            ),
        }
    }
}

/// `CODE: description, syscall 'path'`, the message of a Node `fs` error.
///
/// A path with a NUL byte never reaches a syscall in Node: `fs` throws ERR_INVALID_ARG_VALUE
/// first (std fails the same way, without an errno).
pub fn node_fs_message(error: &io::Error, syscall: &str, path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    if path.as_os_str().as_bytes().contains(&0) {
        // The name of the argument that carries `path` in the `fs` call.
        let argument = match syscall {
            "copyfile" => "src",
            "rename" => "oldPath",
            "mkdtemp" => "prefix",
            _ => "path",
        };
        return format!(
            "The argument '{argument}' must be a string, Uint8Array, or URL without null bytes. Received {}",
            inspect_string(&path.to_string_lossy())
        );
    }
    let (code, text) = match error.raw_os_error() {
        Some(1) => ("EPERM", "operation not permitted"),
        Some(2) => ("ENOENT", "no such file or directory"),
        Some(13) => ("EACCES", "permission denied"),
        Some(17) => ("EEXIST", "file already exists"),
        Some(18) => ("EXDEV", "cross-device link not permitted"),
        Some(20) => ("ENOTDIR", "not a directory"),
        Some(21) => ("EISDIR", "illegal operation on a directory"),
        Some(28) => ("ENOSPC", "no space left on device"),
        Some(36) => ("ENAMETOOLONG", "name too long"),
        Some(39) => ("ENOTEMPTY", "directory not empty"),
        Some(40) => ("ELOOP", "too many symbolic links encountered"),
        _ => return format!("{error}, {syscall} '{}'", path.display()),
    };
    format!("{code}: {text}, {syscall} '{}'", path.display())
}

/// `util.inspect` of a string: single quotes unless the text has one (then double quotes, or
/// backticks when it has both), control characters escaped as Node escapes them.
fn inspect_string(text: &str) -> String {
    let quote = if !text.contains('\'') {
        '\''
    } else if !text.contains('"') {
        '"'
    } else if !text.contains('`') && !text.contains("${") {
        '`'
    } else {
        '\''
    };
    let mut out = String::with_capacity(text.len() + 2);
    out.push(quote);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\\' => out.push_str("\\\\"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02X}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

// ---------------------------------------------------------------------------------------------
// POSIX path helpers (node's `path.posix`)

/// `path.posix.normalize`.
pub fn posix_normalize(path: &str) -> String {
    if path.is_empty() {
        return ".".to_owned();
    }
    let absolute = path.starts_with('/');
    let trailing = path.ends_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|p| *p != "..") {
                    parts.pop();
                } else if !absolute {
                    parts.push("..");
                }
            }
            other => parts.push(other),
        }
    }
    let mut out = parts.join("/");
    if out.is_empty() && !absolute {
        out.push('.');
    }
    if !out.is_empty() && trailing {
        out.push('/');
    }
    if absolute { format!("/{out}") } else { out }
}

/// `path.posix.dirname`.
pub fn posix_dirname(path: &str) -> String {
    if path.is_empty() {
        return ".".to_owned();
    }
    let bytes = path.as_bytes();
    let rooted = bytes[0] == b'/';
    let mut end = None;
    let mut matched_slash = true;
    for i in (1..bytes.len()).rev() {
        if bytes[i] == b'/' {
            if !matched_slash {
                end = Some(i);
                break;
            }
        } else {
            matched_slash = false;
        }
    }
    match end {
        None if rooted => "/".to_owned(),
        None => ".".to_owned(),
        Some(1) if rooted => "//".to_owned(),
        Some(end) => path[..end].to_owned(),
    }
}

/// `path.posix.join(a, b)`.
pub fn posix_join(a: &str, b: &str) -> String {
    let joined = [a, b]
        .iter()
        .filter(|p| !p.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join("/");
    posix_normalize(&joined)
}

/// An archive path that stays inside the root: relative, no `..` segment, no `\`, no NUL.
pub fn is_confined_entry_path(path: &str) -> bool {
    !path.starts_with('/')
        && !path.split('/').any(|s| s == "..")
        && !path.contains('\\')
        && !path.contains('\0')
}

// ---------------------------------------------------------------------------------------------
// Entry types and the safety policy

/// node-tar's entry type names, from the header type flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    File,
    OldFile,
    Link,
    SymbolicLink,
    Directory,
    /// Devices, FIFOs, contiguous and sparse files, GNU specials...: never allowed.
    Other(u8),
}

impl EntryKind {
    pub fn from_type_flag(flag: u8) -> Self {
        match flag {
            b'0' => EntryKind::File,
            0 => EntryKind::OldFile,
            b'1' => EntryKind::Link,
            b'2' => EntryKind::SymbolicLink,
            b'5' => EntryKind::Directory,
            other => EntryKind::Other(other),
        }
    }

    /// Regular file content (what the providers count as a transferred file).
    pub fn is_file(self) -> bool {
        matches!(self, EntryKind::File | EntryKind::OldFile)
    }
}

/// Header-only members that describe the next entry (node-tar consumes them silently).
fn is_meta(flag: u8) -> bool {
    matches!(flag, b'x' | b'g' | b'L' | b'K')
}

/// The components of an archive path: `./a//b/` is `["a", "b"]`.
pub fn path_parts(path: &str) -> Vec<&str> {
    path.split('/')
        .filter(|s| !s.is_empty() && *s != ".")
        .collect()
}

/// Whether a symbolic link at entry `path` with target `link` stays inside the destination
/// whatever else is, or later becomes, a link there: the target is relative, free of `\` and
/// NUL, made of leading `..` components (no more than the link's depth) followed by names only.
///
/// Why stricter than "normalises inside as text" (the original's check): `..` after a name is
/// resolved by the kernel against where that name *leads*, not lexically. With `d -> .`, the
/// target `d/..` normalises to `.` but resolves to the destination's parent; with `x` missing
/// now, `x/..` looks harmless until a later sync makes `x` a link. A target of the accepted
/// form only climbs the link's own real parents (entries are never created through links) and
/// then descends, and every link it descends through obeys the same rule, so it resolves inside
/// however links are combined, now or after later syncs.
pub fn symlink_target_confined(path: &str, link: &str) -> bool {
    if link.is_empty() || link.starts_with('/') || link.contains('\\') || link.contains('\0') {
        return false;
    }
    let depth = path_parts(path).len().saturating_sub(1);
    let mut ups = 0;
    let mut descended = false;
    for part in path_parts(link) {
        if part == ".." {
            if descended {
                return false;
            }
            ups += 1;
        } else {
            descended = true;
        }
    }
    ups <= depth
}

/// The running verdict over an archive's entries.
#[derive(Debug, Default)]
pub struct ArchivePolicy {
    declared: u64,
    files: u64,
    invalid: bool,
    /// The regular files of the archive so far (hard links may only point at one of them).
    file_paths: std::collections::HashSet<String>,
}

/// What is wrong with one entry (see [`ArchivePolicy::violation`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Violation {
    /// The running sum of declared sizes passed [`EXTRACTION_LIMIT`].
    OverLimit,
    /// The entry's path is absolute, has a `..` segment, a backslash or a NUL.
    Path,
    /// A link without a target, or whose target may lead outside the destination (a hard link
    /// that is not to an earlier regular file of the same archive).
    Link,
    /// A FIFO, device, socket, sparse or other special entry.
    Special,
}

impl ArchivePolicy {
    /// Accounts for one entry.
    pub fn check(&mut self, path: &str, kind: EntryKind, size: u64, link: Option<&str>) {
        if self.violation(path, kind, size, link).is_some() {
            self.invalid = true;
        }
    }

    /// Accounts for one entry and says what, if anything, is wrong with it.
    pub fn violation(
        &mut self,
        path: &str,
        kind: EntryKind,
        size: u64,
        link: Option<&str>,
    ) -> Option<Violation> {
        self.declared = self.declared.saturating_add(size);
        if self.declared > EXTRACTION_LIMIT {
            return Some(Violation::OverLimit);
        }
        if !is_confined_entry_path(path) {
            return Some(Violation::Path);
        }
        let key = path_parts(path).join("/");
        match kind {
            EntryKind::File | EntryKind::OldFile => {
                self.files += 1;
                self.file_paths.insert(key);
                None
            }
            EntryKind::Directory => {
                self.file_paths.remove(&key);
                None
            }
            EntryKind::SymbolicLink => {
                self.file_paths.remove(&key);
                match link {
                    Some(link) if symlink_target_confined(path, link) => None,
                    _ => Some(Violation::Link),
                }
            }
            EntryKind::Link => {
                let source = link
                    .filter(|l| !l.is_empty() && !l.starts_with('/') && is_confined_entry_path(l));
                match source.map(|l| path_parts(l).join("/")) {
                    Some(source) if source != key && self.file_paths.contains(&source) => None,
                    _ => Some(Violation::Link),
                }
            }
            EntryKind::Other(_) => Some(Violation::Special),
        }
    }

    /// The number of regular files, or [`ArchiveError::Unsafe`].
    pub fn finish(self) -> Result<u64, ArchiveError> {
        if self.invalid {
            Err(ArchiveError::Unsafe)
        } else {
            Ok(self.files)
        }
    }
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Checks every entry of the archive at `file` against the policy; the number of regular
/// files when it passes.
pub fn validate_archive(file: &Path) -> Result<u64, ArchiveError> {
    let reader = fs::File::open(file).map_err(|e| ArchiveError::fs(e, "open", file))?;
    let mut archive = tar::Archive::new(io::BufReader::new(reader));
    let mut policy = ArchivePolicy::default();
    for entry in archive.entries().map_err(|_| ArchiveError::Format)? {
        let entry = entry.map_err(|_| ArchiveError::Format)?;
        let flag = entry.header().entry_type().as_byte();
        if is_meta(flag) {
            continue;
        }
        let path = lossy(&entry.path_bytes());
        let link = entry.link_name_bytes().map(|l| lossy(&l));
        policy.check(
            &path,
            EntryKind::from_type_flag(flag),
            entry.size(),
            link.as_deref(),
        );
    }
    policy.finish()
}

// ---------------------------------------------------------------------------------------------
// Extraction

/// Extracts an archive that passed [`validate_archive`] into the existing directory `dest`
/// (node-tar `x({cwd: dest, strict: true})`): modes as recorded (the process umask applies),
/// file mtimes restored, owners restored when running as root, existing non-directories
/// replaced, never through a symbolic link. Special entries fail ([`ArchiveError::Unsafe`]).
pub fn extract_archive(file: &Path, dest: &Path) -> Result<(), ArchiveError> {
    extract(file, dest, false)
}

/// [`extract_archive`] as GNU tar reads hard links: a hard-link target loses its leading `/`
/// and everything up to its last `..` component ([`gnu_hard_link_target`]). FIFOs and other
/// special entries are skipped: GNU tar archives a FIFO as a FIFO entry, and a FIFO created on
/// the host would hang whoever opens it later, so it is never created.
pub fn extract_archive_skipping_specials(file: &Path, dest: &Path) -> Result<(), ArchiveError> {
    extract(file, dest, true)
}

/// A hard-link target as GNU tar extracts it (`safer_name_suffix`): without a leading `/` and
/// without everything up to its last `..` component.
pub fn gnu_hard_link_target(link: &str) -> String {
    let parts = path_parts(link);
    let start = parts.iter().rposition(|p| *p == "..").map_or(0, |i| i + 1);
    parts[start..].join("/")
}

/// Every entry is created relative to a directory handle of its parent, reached from the
/// destination handle without following any link ([`crate::confined`]); a link on the way is
/// [`ArchiveError::SymlinkTraversal`], whatever created it (this archive or the host).
fn extract(file: &Path, dest: &Path, gnu: bool) -> Result<(), ArchiveError> {
    use crate::confined::{Confined, DirError, Existing};
    let reader = fs::File::open(file).map_err(|e| ArchiveError::fs(e, "open", file))?;
    let mut archive = tar::Archive::new(io::BufReader::new(reader));
    let root = Confined::open(dest).map_err(|e| match e.raw_os_error() {
        Some(40) | Some(20) if is_symlink(dest) => ArchiveError::SymlinkTraversal,
        _ => ArchiveError::fs(e, "open", dest),
    })?;
    let as_root = current_uid() == Some(0);
    // The regular files this extraction created (hard links may only point at one of them).
    let mut created: std::collections::HashSet<String> = std::collections::HashSet::new();
    for entry in archive.entries().map_err(|_| ArchiveError::Format)? {
        let mut entry = entry.map_err(|_| ArchiveError::Format)?;
        let flag = entry.header().entry_type().as_byte();
        if is_meta(flag) {
            continue;
        }
        let path = lossy(&entry.path_bytes());
        // A policy violation here means the caller skipped validation.
        if !is_confined_entry_path(&path) {
            return Err(ArchiveError::Unsafe);
        }
        let parts = path_parts(&path);
        let Some((name, parents)) = parts.split_last() else {
            // The root itself: it exists already and keeps its mode.
            continue;
        };
        let target = parts.iter().fold(dest.to_path_buf(), |p, s| p.join(s));
        let kind = EntryKind::from_type_flag(flag);
        if let EntryKind::Other(_) = kind {
            if gnu {
                continue;
            }
            return Err(ArchiveError::Unsafe);
        }
        let mode = entry.header().mode().unwrap_or(0o644) & 0o7777;
        let dir_error = |e: DirError, upto: usize| match e {
            DirError::Symlink => ArchiveError::SymlinkTraversal,
            DirError::Unsafe => ArchiveError::Unsafe,
            DirError::Io(error, depth) => {
                let at = parts[..depth.min(upto)]
                    .iter()
                    .fold(dest.to_path_buf(), |p, s| p.join(s));
                ArchiveError::fs(error, "mkdir", &at)
            }
        };
        let parent = root
            .dir(parents, true, 0o777)
            .map_err(|e| dir_error(e, parents.len()))?;
        let key = parts.join("/");
        let fs_err = |e: io::Error, syscall: &'static str| ArchiveError::fs(e, syscall, &target);
        match kind {
            EntryKind::Directory => match root.existing(&parent, name) {
                Existing::Directory => {}
                Existing::Symlink => return Err(ArchiveError::SymlinkTraversal),
                Existing::Other { .. } => {
                    root.clear(&parent, name).map_err(|e| fs_err(e, "unlink"))?;
                    root.mkdir(&parent, name, mode)
                        .map_err(|e| fs_err(e, "mkdir"))?;
                }
                Existing::Missing => root
                    .mkdir(&parent, name, mode)
                    .map_err(|e| fs_err(e, "mkdir"))?,
            },
            EntryKind::File | EntryKind::OldFile => {
                root.clear(&parent, name).map_err(|e| fs_err(e, "open"))?;
                let mut out = root
                    .create_file(&parent, name, mode)
                    .map_err(|e| fs_err(e, "open"))?;
                io::copy(&mut entry, &mut out).map_err(|_| ArchiveError::Format)?;
                if let Ok(mtime) = entry.header().mtime() {
                    let _ = out.set_modified(UNIX_EPOCH + Duration::from_secs(mtime));
                }
                created.insert(key.clone());
            }
            EntryKind::SymbolicLink => {
                let link = entry
                    .link_name_bytes()
                    .map(|l| lossy(&l))
                    .filter(|l| symlink_target_confined(&path, l))
                    .ok_or(ArchiveError::Unsafe)?;
                root.clear(&parent, name).map_err(|e| fs_err(e, "open"))?;
                created.remove(&key);
                root.symlink(&link, &parent, name)
                    .map_err(|e| fs_err(e, "symlink"))?;
            }
            EntryKind::Link => {
                let mut link = entry
                    .link_name_bytes()
                    .map(|l| lossy(&l))
                    .ok_or(ArchiveError::Unsafe)?;
                if gnu {
                    link = gnu_hard_link_target(&link);
                }
                if !is_confined_entry_path(&link) || link.starts_with('/') {
                    return Err(ArchiveError::Unsafe);
                }
                let source_parts = path_parts(&link);
                let source_key = source_parts.join("/");
                let Some((source_name, source_parents)) = source_parts.split_last() else {
                    return Err(ArchiveError::Unsafe);
                };
                if source_key == key || !created.contains(&source_key) {
                    return Err(ArchiveError::Unsafe);
                }
                let source_dir = root
                    .dir(source_parents, false, 0)
                    .map_err(|e| dir_error(e, source_parents.len()))?;
                if root.existing(&source_dir, source_name) != (Existing::Other { regular: true }) {
                    return Err(ArchiveError::Unsafe);
                }
                root.clear(&parent, name).map_err(|e| fs_err(e, "open"))?;
                root.hard_link(&source_dir, source_name, &parent, name)
                    .map_err(|e| fs_err(e, "link"))?;
                created.insert(key.clone());
            }
            EntryKind::Other(_) => unreachable!("handled above"),
        }
        // node-tar preserves owners when it runs as root (its `preserveOwner` default).
        if as_root && kind != EntryKind::Link {
            let (uid, gid) = (entry.header().uid(), entry.header().gid());
            if let (Ok(uid), Ok(gid)) = (uid, gid) {
                root.chown(&parent, name, uid as u32, gid as u32);
            }
        }
    }
    Ok(())
}

fn is_symlink(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

// ---------------------------------------------------------------------------------------------
// Packing (node-tar's layout)

/// What [`pack_directory`] wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PackSummary {
    /// Regular-file entries (`File`).
    pub files: u64,
    /// Archive size in bytes.
    pub bytes: u64,
}

/// Writes the archive of directory `root` to `out` as node-tar did. `follow` follows symbolic
/// links (`follow: true`); `keep` sees each entry's path as node-tar's filter did (`.` for the
/// root, `./a`, `./dir/b`) and prunes what it refuses (a refused directory is not descended).
/// Sockets, FIFOs and devices are skipped.
pub fn pack_directory(
    root: &Path,
    follow: bool,
    keep: &dyn Fn(&str) -> bool,
    out: &mut dyn Write,
) -> Result<PackSummary, ArchiveError> {
    let mut writer = CountingWriter { out, bytes: 0 };
    let mut files = 0;
    let mut links: HashMap<(u64, u64), PathBuf> = HashMap::new();
    // With `follow`, every directory is entered once: a second visit (a link loop, or two
    // links to one directory) fails instead of copying the tree again and again.
    let mut directories: HashSet<(u64, u64)> = HashSet::new();
    let mut queue: VecDeque<(String, PathBuf)> = VecDeque::new();
    queue.push_back((".".to_owned(), root.to_path_buf()));
    let user = std::env::var("USER").unwrap_or_default();
    let my_uid = current_uid();
    while let Some((job_path, absolute)) = queue.pop_front() {
        let meta = if follow {
            fs::metadata(&absolute).map_err(|e| ArchiveError::fs(e, "stat", &absolute))?
        } else {
            fs::symlink_metadata(&absolute).map_err(|e| ArchiveError::fs(e, "lstat", &absolute))?
        };
        if !keep(&job_path) {
            continue;
        }
        let file_type = meta.file_type();
        let uname = if Some(meta.uid()) == my_uid {
            user.as_str()
        } else {
            ""
        };
        let mut header = HeaderFields {
            path: job_path.clone(),
            linkpath: None,
            mode: meta.mode() & 0o7777,
            uid: meta.uid() as u64,
            gid: meta.gid() as u64,
            size: 0,
            mtime_ms: ms(meta.mtime(), meta.mtime_nsec()),
            atime_ms: ms(meta.atime(), meta.atime_nsec()),
            ctime_ms: ms(meta.ctime(), meta.ctime_nsec()),
            flag: b'0',
            uname: uname.to_owned(),
            dev: meta.dev(),
            ino: meta.ino(),
            nlink: meta.nlink(),
        };
        if file_type.is_dir() {
            if follow && !directories.insert((meta.dev(), meta.ino())) {
                return Err(ArchiveError::RepeatedDirectory { path: absolute });
            }
            if !header.path.ends_with('/') {
                header.path.push('/');
            }
            header.flag = b'5';
            header.mode = dir_mode(header.mode);
            header.write(&mut writer)?;
            let base = if job_path == "./" {
                String::new()
            } else {
                format!("{}/", job_path.trim_end_matches('/'))
            };
            let entries =
                fs::read_dir(&absolute).map_err(|e| ArchiveError::fs(e, "scandir", &absolute))?;
            let mut names = Vec::new();
            for entry in entries {
                let entry = entry.map_err(|e| ArchiveError::fs(e, "scandir", &absolute))?;
                names.push(entry.file_name());
            }
            // libuv's scandir (Node's readdir) sorts names by their bytes.
            names.sort_by(|a, b| a.as_encoded_bytes().cmp(b.as_encoded_bytes()));
            for name in names {
                let text = name.to_string_lossy().into_owned();
                queue.push_back((format!("{base}{text}"), absolute.join(&name)));
            }
        } else if file_type.is_symlink() {
            let link =
                fs::read_link(&absolute).map_err(|e| ArchiveError::fs(e, "readlink", &absolute))?;
            header.flag = b'2';
            header.linkpath = Some(link.to_string_lossy().into_owned());
            header.write(&mut writer)?;
        } else if file_type.is_file() {
            if meta.nlink() > 1 {
                let key = (meta.dev(), meta.ino());
                if let Some(first) = links.get(&key) {
                    let relative = first.strip_prefix(root).unwrap_or(first);
                    header.flag = b'1';
                    header.linkpath = Some(relative.to_string_lossy().into_owned());
                    header.write(&mut writer)?;
                    continue;
                }
                links.insert(key, absolute.clone());
            }
            header.size = meta.len();
            header.write(&mut writer)?;
            files += 1;
            let source =
                fs::File::open(&absolute).map_err(|e| ArchiveError::fs(e, "open", &absolute))?;
            let copied = io::copy(&mut source.take(meta.len()), &mut writer)
                .map_err(|e| ArchiveError::fs(e, "read", &absolute))?;
            if copied != meta.len() {
                return Err(ArchiveError::fs(
                    io::Error::new(io::ErrorKind::UnexpectedEof, "encountered unexpected EOF"),
                    "read",
                    &absolute,
                ));
            }
            pad(&mut writer, meta.len())?;
        }
        // Other types: node-tar writes nothing for them.
    }
    writer
        .write_all(&[0; BLOCK * 2])
        .map_err(|e| ArchiveError::fs(e, "write", root))?;
    Ok(PackSummary {
        files,
        bytes: writer.bytes,
    })
}

/// Walks directory `root` following symbolic links, as `tar -h` would, and fails with
/// [`ArchiveError::RepeatedDirectory`] at the first directory reached a second time (by device
/// and inode: a link loop such as `a -> .`, or two links to one directory). `skip` sees each
/// entry's name and prunes it (an excluded directory is not walked). Memory is bounded by the
/// tree itself: every directory is read once. Returns the number of entries visited.
pub fn check_followed_tree(root: &Path, skip: &dyn Fn(&str) -> bool) -> Result<u64, ArchiveError> {
    let mut directories: HashSet<(u64, u64)> = HashSet::new();
    let mut queue: VecDeque<PathBuf> = VecDeque::new();
    queue.push_back(root.to_path_buf());
    let mut visited = 0;
    while let Some(path) = queue.pop_front() {
        visited += 1;
        let meta = match fs::metadata(&path) {
            Ok(meta) => meta,
            // A dangling link or an unreadable entry: left to the archiver to report.
            Err(_) => continue,
        };
        if !meta.is_dir() {
            continue;
        }
        if !directories.insert((meta.dev(), meta.ino())) {
            return Err(ArchiveError::RepeatedDirectory { path });
        }
        let Ok(entries) = fs::read_dir(&path) else {
            continue;
        };
        let mut names: Vec<_> = entries.flatten().map(|entry| entry.file_name()).collect();
        names.sort_by(|a, b| a.as_encoded_bytes().cmp(b.as_encoded_bytes()));
        for name in names {
            if !skip(&name.to_string_lossy()) {
                queue.push_back(path.join(name));
            }
        }
    }
    Ok(visited)
}

fn current_uid() -> Option<u32> {
    // `/proc/self` belongs to the process's effective uid.
    fs::metadata("/proc/self").map(|m| m.uid()).ok()
}

fn ms(secs: i64, nanos: i64) -> i64 {
    // Node's Date of a stat time: Math.round(sec * 1e3 + nsec / 1e6).
    (secs as f64 * 1e3 + nanos as f64 / 1e6).round() as i64
}

/// node-tar's `modeFix` for directories: readable implies searchable.
fn dir_mode(mut mode: u32) -> u32 {
    if mode & 0o400 != 0 {
        mode |= 0o100;
    }
    if mode & 0o40 != 0 {
        mode |= 0o10;
    }
    if mode & 0o4 != 0 {
        mode |= 0o1;
    }
    mode
}

struct CountingWriter<'a> {
    out: &'a mut dyn Write,
    bytes: u64,
}

impl Write for CountingWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.out.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

fn pad(writer: &mut CountingWriter<'_>, size: u64) -> Result<(), ArchiveError> {
    let rest = (BLOCK as u64 - size % BLOCK as u64) % BLOCK as u64;
    writer
        .write_all(&vec![0; rest as usize])
        .map_err(|e| ArchiveError::fs(e, "write", Path::new("")))
}

struct HeaderFields {
    path: String,
    linkpath: Option<String>,
    mode: u32,
    uid: u64,
    gid: u64,
    size: u64,
    mtime_ms: i64,
    atime_ms: i64,
    ctime_ms: i64,
    flag: u8,
    uname: String,
    dev: u64,
    ino: u64,
    nlink: u64,
}

/// `padOctal`: `size - 1` octal digits where they fit, then a space and NUL as node-tar wrote.
fn octal(buf: &mut [u8], value: u64) -> bool {
    let size = buf.len();
    let digits = format!("{value:o}");
    if digits.len() > size - 1 {
        return true;
    }
    let text = if digits.len() == size - 1 {
        format!("{digits}\0")
    } else {
        format!("{}{digits} \0", "0".repeat(size - digits.len() - 2))
    };
    buf.copy_from_slice(&text.as_bytes()[..size]);
    false
}

/// Writes `text` into `buf`; true when node-tar would need PAX for it.
fn string(buf: &mut [u8], text: &str) -> bool {
    let bytes = text.as_bytes();
    let n = bytes.len().min(buf.len());
    buf[..n].copy_from_slice(&bytes[..n]);
    text.chars().map(char::len_utf16).sum::<usize>() != bytes.len() || bytes.len() > buf.len()
}

fn basename(path: &str) -> &str {
    let trimmed = path.trim_end_matches('/');
    trimmed.rsplit('/').next().unwrap_or(trimmed)
}

/// node-tar's `splitPrefix` (prefix field of 130 bytes: atime/ctime are set).
fn split_prefix(path: &str) -> (String, String, bool) {
    const NAME: usize = 100;
    const PREFIX: usize = 130;
    if path.len() < NAME {
        return (path.to_owned(), String::new(), false);
    }
    let mut prefix = posix_dirname(path);
    let mut name = basename(path).to_owned();
    loop {
        if name.len() <= NAME && prefix.len() <= PREFIX {
            return (name, prefix, false);
        }
        if name.len() > NAME && prefix.len() <= PREFIX {
            return (truncate(&name, NAME - 1), prefix, true);
        }
        name = format!("{}/{name}", basename(&prefix));
        prefix = posix_dirname(&prefix);
        if prefix == "." || prefix == "/" {
            return (truncate(path, NAME - 1), String::new(), true);
        }
    }
}

fn truncate(text: &str, units: usize) -> String {
    text.chars().take(units).collect()
}

impl HeaderFields {
    fn write(&self, writer: &mut CountingWriter<'_>) -> Result<(), ArchiveError> {
        let (block, need_pax) = self.encode();
        let result = if need_pax {
            writer
                .write_all(&self.pax())
                .and_then(|()| writer.write_all(&block))
        } else {
            writer.write_all(&block)
        };
        result.map_err(|e| ArchiveError::fs(e, "write", Path::new("")))
    }

    fn encode(&self) -> ([u8; BLOCK], bool) {
        let mut b = [0u8; BLOCK];
        let (name, prefix, mut need_pax) = split_prefix(&self.path);
        need_pax |= string(&mut b[0..100], &name);
        need_pax |= octal(&mut b[100..108], self.mode as u64);
        need_pax |= octal(&mut b[108..116], self.uid);
        need_pax |= octal(&mut b[116..124], self.gid);
        need_pax |= octal(&mut b[124..136], self.size);
        let mtime = self.mtime_ms.max(0) as u64 / 1000;
        need_pax |= octal(&mut b[136..148], mtime);
        b[156] = self.flag;
        if let Some(link) = &self.linkpath {
            need_pax |= string(&mut b[157..257], link);
        }
        b[257..263].copy_from_slice(b"ustar\0");
        b[263..265].copy_from_slice(b"00");
        need_pax |= string(&mut b[265..297], &self.uname);
        need_pax |= string(&mut b[345..475], &prefix);
        let sum: u64 = b[..148]
            .iter()
            .chain(&b[156..])
            .map(|&x| x as u64)
            .sum::<u64>()
            + 8 * 0x20;
        octal(&mut b[148..156], sum);
        (b, need_pax)
    }

    /// node-tar's PAX header for this entry: the fields in its order, each `len key=value\n`.
    fn pax(&self) -> Vec<u8> {
        let secs = |ms: i64| js_number(ms as f64 / 1000.0);
        let mut body = String::new();
        let mut field = |key: &str, value: String| {
            let line = format!(" {key}={value}\n");
            let len = line.len();
            let mut digits = len.to_string().len();
            if len + digits >= 10usize.pow(digits as u32) {
                digits += 1;
            }
            body.push_str(&format!("{}{line}", len + digits));
        };
        field("path", self.path.clone());
        field("ctime", secs(self.ctime_ms));
        field("atime", secs(self.atime_ms));
        field("SCHILY.dev", self.dev.to_string());
        field("SCHILY.ino", self.ino.to_string());
        field("SCHILY.nlink", self.nlink.to_string());
        field("gid", self.gid.to_string());
        if let Some(link) = &self.linkpath {
            field("linkpath", link.clone());
        }
        field("mtime", secs(self.mtime_ms));
        field("size", self.size.to_string());
        field("uid", self.uid.to_string());
        field("uname", self.uname.clone());
        let body = body.into_bytes();
        let mut header = HeaderFields {
            path: truncate(&format!("PaxHeader/{}", basename(&self.path)), 99),
            linkpath: None,
            mode: if self.mode == 0 { 0o644 } else { self.mode },
            uid: self.uid,
            gid: self.gid,
            size: body.len() as u64,
            mtime_ms: self.mtime_ms,
            atime_ms: self.atime_ms,
            ctime_ms: self.ctime_ms,
            flag: b'x',
            uname: self.uname.clone(),
            dev: 0,
            ino: 0,
            nlink: 0,
        };
        header.linkpath = Some(String::new());
        let (block, _) = header.encode();
        let mut out = block.to_vec();
        out.extend_from_slice(&body);
        out.resize(BLOCK * (1 + body.len().div_ceil(BLOCK)), 0);
        out
    }
}

/// A JS number's `toString` for the values stat times produce.
fn js_number(value: f64) -> String {
    if value.fract() == 0.0 {
        format!("{}", value as i64)
    } else {
        format!("{value}")
    }
}

// ---------------------------------------------------------------------------------------------
// Exclusion globs (Node's `path.matchesGlob`, a minimatch subset)

/// Whether an archive entry is excluded: the name without a leading `./` and a trailing `/`
/// matches a pattern `p` as `p`, `p/**`, `**/p` or `**/p/**`.
pub fn excluded(name: &str, patterns: &[String]) -> bool {
    let name = name.strip_prefix("./").unwrap_or(name);
    let name = name.strip_suffix('/').unwrap_or(name);
    patterns.iter().any(|p| {
        [
            p.clone(),
            format!("{p}/**"),
            format!("**/{p}"),
            format!("**/{p}/**"),
        ]
        .iter()
        .any(|glob| matches_glob(name, glob))
    })
}

/// `path.matchesGlob(path, pattern)` on POSIX: `*`, `?`, `[...]`, `**` segments and `{a,b}`
/// alternatives; wildcards never match a leading `.` of a segment (minimatch without `dot`).
pub fn matches_glob(path: &str, pattern: &str) -> bool {
    let pattern = pattern.replace('\\', "/");
    let parts: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    expand_braces(&pattern).iter().any(|p| {
        let segments: Vec<&str> = p.split('/').filter(|s| !s.is_empty()).collect();
        match_segments(&parts, &segments)
    })
}

fn expand_braces(pattern: &str) -> Vec<String> {
    let bytes = pattern.as_bytes();
    let Some(open) = pattern.find('{') else {
        return vec![pattern.to_owned()];
    };
    let mut depth = 0;
    let mut close = None;
    let mut commas = Vec::new();
    for (i, &c) in bytes.iter().enumerate().skip(open) {
        match c {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    close = Some(i);
                    break;
                }
            }
            b',' if depth == 1 => commas.push(i),
            _ => {}
        }
    }
    let Some(close) = close.filter(|_| !commas.is_empty()) else {
        return vec![pattern.to_owned()];
    };
    let (head, tail) = (&pattern[..open], &pattern[close + 1..]);
    let mut bounds = vec![open];
    bounds.extend(&commas);
    bounds.push(close);
    let mut out = Vec::new();
    for w in bounds.windows(2) {
        let alt = &pattern[w[0] + 1..w[1]];
        out.extend(expand_braces(&format!("{head}{alt}{tail}")));
    }
    out
}

fn match_segments(path: &[&str], pattern: &[&str]) -> bool {
    match pattern.split_first() {
        None => path.is_empty(),
        Some((&"**", rest)) => {
            if match_segments(path, rest) {
                return true;
            }
            match path.split_first() {
                Some((first, tail)) if !first.starts_with('.') => match_segments(tail, pattern),
                _ => false,
            }
        }
        Some((seg, rest)) => match path.split_first() {
            Some((first, tail)) => match_segment(first, seg) && match_segments(tail, rest),
            None => false,
        },
    }
}

fn match_segment(name: &str, pattern: &str) -> bool {
    // `.` and `..` only ever match themselves.
    if name == "." || name == ".." {
        return name == pattern;
    }
    if name.starts_with('.') && !pattern.starts_with('.') {
        return false;
    }
    let name: Vec<char> = name.chars().collect();
    let pattern: Vec<char> = pattern.chars().collect();
    wildcard(&name, &pattern)
}

fn wildcard(name: &[char], pattern: &[char]) -> bool {
    match pattern.split_first() {
        None => name.is_empty(),
        Some(('*', rest)) => (0..=name.len()).any(|i| wildcard(&name[i..], rest)),
        Some(('?', rest)) => !name.is_empty() && wildcard(&name[1..], rest),
        Some(('[', rest)) => {
            let Some(end) = rest.iter().skip(1).position(|&c| c == ']').map(|p| p + 1) else {
                return name.first() == Some(&'[') && wildcard(&name[1..], rest);
            };
            let Some(&c) = name.first() else {
                return false;
            };
            let mut class = &rest[..end];
            let negate = matches!(class.first(), Some('!' | '^'));
            if negate {
                class = &class[1..];
            }
            let mut hit = false;
            let mut i = 0;
            while i < class.len() {
                if i + 2 < class.len() && class[i + 1] == '-' {
                    hit |= class[i] <= c && c <= class[i + 2];
                    i += 3;
                } else {
                    hit |= class[i] == c;
                    i += 1;
                }
            }
            hit != negate && wildcard(&name[1..], &rest[end + 1..])
        }
        Some((p, rest)) => name.first() == Some(p) && wildcard(&name[1..], rest),
    }
}

/// Sets `path`'s permission bits exactly (no umask), as `fs.chmod`.
pub fn chmod(path: &Path, mode: u32) -> Result<(), ArchiveError> {
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
        .map_err(|e| ArchiveError::fs(e, "chmod", path))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `<tmp>/archive-loop-<name>-<pid>/{root/sub/deep/file, outside/file}`; returns root.
    fn loop_tree(name: &str) -> PathBuf {
        let top = std::env::temp_dir().join(format!("archive-loop-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&top);
        let dir = top.join("root");
        fs::create_dir_all(dir.join("sub/deep")).unwrap();
        fs::write(dir.join("sub/deep/file"), b"x").unwrap();
        fs::create_dir_all(top.join("outside")).unwrap();
        fs::write(top.join("outside/file"), b"y").unwrap();
        dir
    }

    /// Issue 15: `followSymlinks` on `a -> .` and `b -> .` used to walk `a/b/a/b/…` (2^40
    /// paths) until ELOOP; it now fails at the first directory seen twice, in a few steps.
    #[test]
    fn following_a_link_loop_fails_at_the_first_repeat() {
        let dir = loop_tree("loop");
        std::os::unix::fs::symlink(".", dir.join("a")).unwrap();
        std::os::unix::fs::symlink(".", dir.join("b")).unwrap();
        match check_followed_tree(&dir, &|_| false) {
            Err(ArchiveError::RepeatedDirectory { path }) => assert_eq!(path, dir.join("a")),
            other => panic!("expected a repeated directory, got {other:?}"),
        }
        // Excluding the links leaves an ordinary tree: root, sub, deep, file.
        assert_eq!(
            check_followed_tree(&dir, &|name| name == "a" || name == "b").unwrap(),
            4
        );
        let mut out = Vec::new();
        let error = pack_directory(&dir, true, &|_| true, &mut out).unwrap_err();
        assert!(
            matches!(&error, ArchiveError::RepeatedDirectory { path } if path == &dir.join("a")),
            "{error:?}"
        );
        assert!(
            error
                .node_message()
                .starts_with("ELOOP: too many symbolic links encountered, stat '")
        );
        // Only the root's header was written before the repeat was seen: nothing grew.
        assert_eq!(out.len(), BLOCK);
        // Without following, the links are archived as links.
        let mut out = Vec::new();
        pack_directory(&dir, false, &|_| true, &mut out).unwrap();
        fs::remove_dir_all(dir.parent().unwrap()).unwrap();
    }

    /// Issue 15: two links to one directory (no loop) repeat it too; a deep ladder of such
    /// pairs would copy 2^n trees, so the second visit fails.
    #[test]
    fn following_two_links_to_one_directory_fails() {
        let dir = loop_tree("twice");
        std::os::unix::fs::symlink("../outside", dir.join("x")).unwrap();
        std::os::unix::fs::symlink("../outside", dir.join("y")).unwrap();
        match check_followed_tree(&dir, &|_| false) {
            // Breadth first: root, sub, x, y — `y` is the second visit of `outside`.
            Err(ArchiveError::RepeatedDirectory { path }) => assert_eq!(path, dir.join("y")),
            other => panic!("expected a repeated directory, got {other:?}"),
        }
        let mut out = Vec::new();
        let error = pack_directory(&dir, true, &|_| true, &mut out).unwrap_err();
        assert!(
            matches!(&error, ArchiveError::RepeatedDirectory { path } if path == &dir.join("y")),
            "{error:?}"
        );
        // One link to it is fine: root, sub, x, deep, x/file, deep/file.
        fs::remove_file(dir.join("y")).unwrap();
        assert_eq!(check_followed_tree(&dir, &|_| false).unwrap(), 6);
        let mut out = Vec::new();
        pack_directory(&dir, true, &|_| true, &mut out).unwrap();
        // A link to a directory that is also in the tree repeats it as well.
        std::os::unix::fs::symlink("sub/deep", dir.join("z")).unwrap();
        assert!(matches!(
            check_followed_tree(&dir, &|_| false),
            Err(ArchiveError::RepeatedDirectory { .. })
        ));
        fs::remove_dir_all(dir.parent().unwrap()).unwrap();
    }

    /// Regression (found by the reliability fuzzer): a host path with a NUL byte read as std's
    /// "file name contained an unexpected NUL byte, open '…'" instead of Node's fs error.
    #[test]
    fn a_nul_in_a_path_fails_like_node_fs() {
        let path = Path::new("/a\0b");
        let error = fs::File::open(path).unwrap_err();
        assert_eq!(
            node_fs_message(&error, "open", path),
            "The argument 'path' must be a string, Uint8Array, or URL without null bytes. Received '/a\\x00b'"
        );
        assert!(
            node_fs_message(&error, "copyfile", path).starts_with("The argument 'src' must be ")
        );
        assert_eq!(inspect_string("it's\n"), "\"it's\\n\"");
        assert_eq!(inspect_string("a'b\"c"), "`a'b\"c`");
        assert_eq!(
            inspect_string("a\u{7f}\u{1}\u{b}\u{8}\u{c}\\z"),
            "'a\\x7F\\x01\\x0B\\b\\f\\\\z'"
        );
    }

    #[test]
    fn normalize_and_dirname_follow_node() {
        assert_eq!(
            posix_normalize("/paperclip-workspace/./a//b/"),
            "/paperclip-workspace/a/b/"
        );
        assert_eq!(posix_normalize("/a/../../b"), "/b");
        assert_eq!(posix_normalize("./sub/../../x"), "../x");
        assert_eq!(posix_normalize(""), ".");
        assert_eq!(posix_dirname("./sub/link"), "./sub");
        assert_eq!(posix_dirname("link"), ".");
        assert_eq!(posix_dirname("/a"), "/");
        assert_eq!(posix_join("./sub", "../x"), "x");
        assert_eq!(posix_join(".", "../x"), "../x");
    }

    #[test]
    fn policy_rejects_escapes_and_specials() {
        let verdict = |entries: &[(&str, EntryKind, u64, Option<&str>)]| {
            let mut policy = ArchivePolicy::default();
            for (p, k, s, l) in entries {
                policy.check(p, *k, *s, *l);
            }
            policy.finish().ok()
        };
        use EntryKind::*;
        assert_eq!(
            verdict(&[
                ("./", Directory, 0, None),
                ("./a", File, 3, None),
                ("./l", SymbolicLink, 0, Some("a"))
            ]),
            Some(1)
        );
        assert_eq!(
            verdict(&[("./sub/l", SymbolicLink, 0, Some("../a"))]),
            Some(0)
        );
        assert_eq!(verdict(&[("./l", SymbolicLink, 0, Some("../a"))]), None);
        assert_eq!(verdict(&[("./l", SymbolicLink, 0, Some("/etc"))]), None);
        assert_eq!(verdict(&[("./l", SymbolicLink, 0, None)]), None);
        assert_eq!(verdict(&[("./h", Link, 0, Some("sub/../../x"))]), None);
        assert_eq!(verdict(&[("../x", File, 0, None)]), None);
        assert_eq!(verdict(&[("/x", File, 0, None)]), None);
        assert_eq!(verdict(&[("a\\b", File, 0, None)]), None);
        assert_eq!(verdict(&[("./fifo", Other(b'6'), 0, None)]), None);
        assert_eq!(
            verdict(&[
                ("./a", File, EXTRACTION_LIMIT, None),
                ("./b", File, 0, None)
            ]),
            Some(2)
        );
        assert_eq!(
            verdict(&[
                ("./a", File, EXTRACTION_LIMIT, None),
                ("./b", File, 1, None)
            ]),
            None
        );
    }

    #[test]
    fn globs_follow_minimatch_basics() {
        let p = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(excluded("./node_modules", &p(&["node_modules"])));
        assert!(excluded("./a/node_modules/", &p(&["node_modules"])));
        assert!(excluded("./a/b.log", &p(&["*.log"])));
        assert!(!excluded("./a/.b.log", &p(&["*.log"])));
        assert!(excluded("./.git", &p(&[".git"])));
        assert!(excluded("./x/y", &p(&["x"])));
        assert!(!excluded("./xy", &p(&["x"])));
        assert!(excluded("./a.txt", &p(&["{a,b}.txt"])));
        assert!(excluded("./c1", &p(&["c[0-9]"])));
        assert!(!excluded(".", &p(&["x"])));
    }

    #[test]
    fn octal_fields_match_node_tar() {
        let mut b = [0u8; 8];
        octal(&mut b, 0o644);
        assert_eq!(&b, b"000644 \0");
        let mut b = [0u8; 12];
        octal(&mut b, 5);
        assert_eq!(&b, b"0000000005 \0");
    }

    #[test]
    fn packs_node_tar_layout_and_round_trips() {
        let dir = std::env::temp_dir().join(format!("archive-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("src/sub")).unwrap();
        fs::write(dir.join("src/a.txt"), b"hello").unwrap();
        fs::write(dir.join("src/sub/b.bin"), vec![7u8; 700]).unwrap();
        fs::write(dir.join("src/skip.log"), b"x").unwrap();
        std::os::unix::fs::symlink("a.txt", dir.join("src/link")).unwrap();
        let mut bytes = Vec::new();
        let keep = |name: &str| !excluded(name, &["*.log".to_owned()]);
        let summary = pack_directory(&dir.join("src"), false, &keep, &mut bytes).unwrap();
        // ./, a.txt(1+1), link, sub/, sub/b.bin(1+2), EOF(2)
        assert_eq!(summary.bytes, 512 * (1 + 2 + 1 + 1 + 3 + 2));
        assert_eq!(summary.bytes, bytes.len() as u64);
        assert_eq!(summary.files, 2);
        let names: Vec<String> = tar::Archive::new(&bytes[..])
            .entries()
            .unwrap()
            .map(|e| lossy(&e.unwrap().path_bytes()))
            .collect();
        assert_eq!(names[0], "./");
        assert!(names.contains(&"./sub/b.bin".to_owned()));
        fs::write(dir.join("a.tar"), &bytes).unwrap();
        assert_eq!(validate_archive(&dir.join("a.tar")).unwrap(), 2);
        fs::create_dir(dir.join("out")).unwrap();
        extract_archive(&dir.join("a.tar"), &dir.join("out")).unwrap();
        assert_eq!(fs::read(dir.join("out/sub/b.bin")).unwrap(), vec![7u8; 700]);
        assert_eq!(
            fs::read_link(dir.join("out/link")).unwrap(),
            Path::new("a.txt")
        );
        assert!(!dir.join("out/skip.log").exists());
        fs::remove_dir_all(&dir).unwrap();
    }
}
