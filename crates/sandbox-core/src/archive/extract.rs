//! Extraction of a checked archive into a host directory, through directory handles only.

use std::collections::HashSet;
use std::fs;
use std::io::{self, Read};
use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::Arc;

use super::paths::{gnu_hard_link_target, is_confined_entry_path, path_parts};
use super::policy::{EntryKind, is_meta, symlink_target_confined};
use super::read::lossy;
use super::stream::{entry_error, open_checked};
use super::writers::{FileJob, NewFile, WRITER_FILE_BYTES, Writers, create_file};
use super::{ArchiveError, current_uid};
use crate::confined::{Confined, DirError, Existing};
use crate::sparse::{CopyError, copy_sparse};

/// Extracts an archive that passed [`validate_archive`](super::validate_archive) into the existing
/// directory `dest` (node-tar `x({cwd: dest, strict: true})`): modes as recorded (the process umask
/// applies), file mtimes restored, owners restored when running as root, existing non-directories
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

/// Every entry is created relative to a directory handle of its parent, reached from the
/// destination handle without following any link ([`crate::confined`]); a link on the way is
/// [`ArchiveError::SymlinkTraversal`], whatever created it (this archive or the host). Regular
/// files up to [`WRITER_FILE_BYTES`] are written on writer threads ([`super::writers`]) while
/// the next members are read.
fn extract(file: &Path, dest: &Path, gnu: bool) -> Result<(), ArchiveError> {
    let mut archive = open_checked(file)?;
    let root = Confined::open(dest).map_err(|e| match e.raw_os_error() {
        Some(40) | Some(20) if is_symlink(dest) => ArchiveError::SymlinkTraversal {
            path: dest.to_owned(),
        },
        _ => ArchiveError::fs(e, "open", dest),
    })?;
    let mut extraction = Extraction {
        root: &root,
        dest,
        gnu,
        as_root: current_uid() == Some(0),
        created: HashSet::new(),
        handed_over: HashSet::new(),
        last_parent: None,
    };
    std::thread::scope(|scope| {
        let mut writers = Writers::new(scope, &root);
        for (index, entry) in archive.entries().map_err(entry_error)?.enumerate() {
            if writers.failed() {
                break;
            }
            let outcome = entry
                .map_err(entry_error)
                .and_then(|entry| extraction.entry(entry, index, &mut writers));
            if let Err(failure) = outcome {
                return Err(writers.first_failure(index, failure));
            }
        }
        writers.settle()
    })
}

/// The state of one extraction between entries.
struct Extraction<'a> {
    root: &'a Confined,
    dest: &'a Path,
    gnu: bool,
    as_root: bool,
    /// The regular files this extraction created (hard links may only point at one of them).
    created: HashSet<String>,
    /// Files handed to the writers since they last settled.
    handed_over: HashSet<String>,
    /// The parent directory of the last regular file and its handle (members of one directory
    /// come one after another): valid until an entry other than a regular file, since creating
    /// a regular file never changes a directory.
    last_parent: Option<(String, Arc<OwnedFd>)>,
}

impl Extraction<'_> {
    fn entry(
        &mut self,
        mut entry: tar::Entry<'_, impl Read>,
        index: usize,
        writers: &mut Writers<'_, '_>,
    ) -> Result<(), ArchiveError> {
        let flag = entry.header().entry_type().as_byte();
        if is_meta(flag) {
            return Ok(());
        }
        let path = lossy(&entry.path_bytes());
        // A policy violation here means the caller skipped validation.
        if !is_confined_entry_path(&path) {
            return Err(ArchiveError::Unsafe);
        }
        let parts = path_parts(&path);
        let Some((name, parents)) = parts.split_last() else {
            // The root itself: it exists already and keeps its mode.
            return Ok(());
        };
        let dest = self.dest;
        let target = parts.iter().fold(dest.to_path_buf(), |p, s| p.join(s));
        let kind = EntryKind::from_type_flag(flag);
        if let EntryKind::Other(_) = kind {
            if self.gnu {
                return Ok(());
            }
            return Err(ArchiveError::Unsafe);
        }
        let mode = entry.header().mode().unwrap_or(0o644) & 0o7777;
        let key = parts.join("/");
        let owner = self
            .as_root
            .then(|| {
                Some((
                    entry.header().uid().ok()? as u32,
                    entry.header().gid().ok()? as u32,
                ))
            })
            .flatten();
        let fs_err = |e: io::Error, syscall: &'static str| ArchiveError::fs(e, syscall, &target);
        if kind.is_file() {
            // A name handed over already, or under one, must see that file on disk first.
            if self.under_handed_over(&parts) {
                writers.settle()?;
                self.handed_over.clear();
            }
            let file = NewFile {
                parent: self.parent(parents)?,
                name: (*name).to_owned(),
                target: target.clone(),
                mode,
                mtime: entry.header().mtime().ok(),
                owner,
            };
            if entry.size() <= WRITER_FILE_BYTES {
                let mut content = Vec::with_capacity(entry.size() as usize);
                entry.read_to_end(&mut content).map_err(entry_error)?;
                writers.hand_over(FileJob {
                    index,
                    file,
                    content,
                });
                self.handed_over.insert(key.clone());
            } else {
                create_file(self.root, &file, |out| {
                    copy_sparse(&mut entry, out).map(drop).map_err(|e| match e {
                        CopyError::Read(e) => entry_error(e),
                        CopyError::Write(e) => fs_err(e, "write"),
                    })
                })?;
            }
            self.created.insert(key);
            return Ok(());
        }
        // Anything else may change the tree, and must see every file before it on disk.
        writers.settle()?;
        self.handed_over.clear();
        self.last_parent = None;
        let root = self.root;
        let parent = self.open_dir(parents)?;
        match kind {
            EntryKind::Directory => match root.existing(&*parent, name) {
                Existing::Directory => {}
                Existing::Symlink => {
                    return Err(ArchiveError::SymlinkTraversal {
                        path: target.clone(),
                    });
                }
                Existing::Other { .. } => {
                    root.clear(&*parent, name)
                        .map_err(|e| fs_err(e, "unlink"))?;
                    root.mkdir(&*parent, name, mode)
                        .map_err(|e| fs_err(e, "mkdir"))?;
                }
                Existing::Missing => root
                    .mkdir(&*parent, name, mode)
                    .map_err(|e| fs_err(e, "mkdir"))?,
            },
            EntryKind::SymbolicLink => {
                let link = entry
                    .link_name_bytes()
                    .map(|l| lossy(&l))
                    .filter(|l| symlink_target_confined(&path, l))
                    .ok_or(ArchiveError::Unsafe)?;
                root.clear(&*parent, name).map_err(|e| fs_err(e, "open"))?;
                self.created.remove(&key);
                root.symlink(&link, &*parent, name)
                    .map_err(|e| fs_err(e, "symlink"))?;
            }
            EntryKind::Link => {
                let mut link = entry
                    .link_name_bytes()
                    .map(|l| lossy(&l))
                    .ok_or(ArchiveError::Unsafe)?;
                if self.gnu {
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
                if source_key == key || !self.created.contains(&source_key) {
                    return Err(ArchiveError::Unsafe);
                }
                let source_dir = root
                    .dir(source_parents, false, 0)
                    .map_err(|e| dir_error(dest, &parts, e, source_parents.len()))?;
                if root.existing(&source_dir, source_name) != (Existing::Other { regular: true }) {
                    return Err(ArchiveError::Unsafe);
                }
                root.clear(&*parent, name).map_err(|e| fs_err(e, "open"))?;
                root.hard_link(&source_dir, source_name, &*parent, name)
                    .map_err(|e| fs_err(e, "link"))?;
                self.created.insert(key);
                // A hard link keeps its source's owner (node-tar does not chown it).
                return Ok(());
            }
            EntryKind::File | EntryKind::OldFile | EntryKind::Other(_) => {
                unreachable!("handled above")
            }
        }
        if let Some((uid, gid)) = owner {
            root.chown(&*parent, name, uid, gid);
        }
        Ok(())
    }

    /// Whether `parts` or a directory on its way is a file handed to the writers since they
    /// last settled.
    fn under_handed_over(&self, parts: &[&str]) -> bool {
        if self.handed_over.is_empty() {
            return false;
        }
        let mut prefix = String::new();
        parts.iter().any(|part| {
            if !prefix.is_empty() {
                prefix.push('/');
            }
            prefix.push_str(part);
            self.handed_over.contains(&prefix)
        })
    }

    /// A regular file's parent directory: [`open_dir`](Self::open_dir), reusing the last
    /// handle while it is valid (see `last_parent`).
    fn parent(&mut self, parents: &[&str]) -> Result<Arc<OwnedFd>, ArchiveError> {
        let joined = parents.join("/");
        if let Some((cached, handle)) = &self.last_parent
            && *cached == joined
        {
            return Ok(Arc::clone(handle));
        }
        let handle = self.open_dir(parents)?;
        self.last_parent = Some((joined, Arc::clone(&handle)));
        Ok(handle)
    }

    /// A handle of the directory `parents`, missing directories created (mode 0777, less the
    /// umask).
    fn open_dir(&self, parents: &[&str]) -> Result<Arc<OwnedFd>, ArchiveError> {
        self.root
            .dir(parents, true, 0o777)
            .map(Arc::new)
            .map_err(|e| dir_error(self.dest, parents, e, parents.len()))
    }
}

/// The error for [`Confined::dir`] failing at component `depth` (1-based) of `parts`, at most
/// `upto` components deep.
fn dir_error(dest: &Path, parts: &[&str], error: DirError, upto: usize) -> ArchiveError {
    let at = |depth: usize| {
        parts[..depth.min(upto)]
            .iter()
            .fold(dest.to_path_buf(), |p, s| p.join(s))
    };
    match error {
        DirError::Symlink(depth) => ArchiveError::SymlinkTraversal { path: at(depth) },
        DirError::Unsafe => ArchiveError::Unsafe,
        DirError::Io(error, depth) => ArchiveError::fs(error, "mkdir", &at(depth)),
    }
}

fn is_symlink(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}
