//! Extraction of a checked archive into a host directory, through directory handles only.

use std::collections::HashSet;
use std::fs;
use std::io::{self, Read};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use super::paths::{gnu_hard_link_target, is_confined_entry_path, path_parts};
use super::policy::{EntryKind, is_meta, symlink_target_confined};
use super::read::lossy;
use super::stream::{entry_error, open_checked};
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
/// [`ArchiveError::SymlinkTraversal`], whatever created it (this archive or the host).
fn extract(file: &Path, dest: &Path, gnu: bool) -> Result<(), ArchiveError> {
    let mut archive = open_checked(file)?;
    let mut extraction = Extraction::open(dest, gnu)?;
    for entry in archive.entries().map_err(entry_error)? {
        let mut entry = entry.map_err(entry_error)?;
        extraction.entry(&mut entry)?;
    }
    Ok(())
}

/// One extraction in progress: the destination's handle and what the entries so far created.
struct Extraction<'d> {
    root: Confined,
    dest: &'d Path,
    /// GNU tar's reading: hard-link targets as [`gnu_hard_link_target`], special entries skipped.
    gnu: bool,
    /// Owners are restored only when running as root.
    as_root: bool,
    /// The regular files this extraction created (hard links may only point at one of them).
    created: HashSet<String>,
}

/// Where one entry goes: its parent directory's handle and its name there,
/// its host path (for errors) and its key (the parts joined by `/`).
struct Place<'p> {
    parent: OwnedFd,
    name: &'p str,
    target: PathBuf,
    key: String,
}

impl Place<'_> {
    fn fs_err(&self, error: io::Error, syscall: &'static str) -> ArchiveError {
        ArchiveError::fs(error, syscall, &self.target)
    }
}

/// The host path of the first `depth` (at most `upto`) parts below `dest`.
fn host_path(dest: &Path, parts: &[&str], depth: usize, upto: usize) -> PathBuf {
    parts[..depth.min(upto)]
        .iter()
        .fold(dest.to_path_buf(), |p, s| p.join(s))
}

/// A failure to reach the directory of `parts[..upto]` as the archive error it is.
fn dir_error(dest: &Path, parts: &[&str], error: DirError, upto: usize) -> ArchiveError {
    match error {
        DirError::Symlink(depth) => ArchiveError::SymlinkTraversal {
            path: host_path(dest, parts, depth, upto),
        },
        DirError::Unsafe => ArchiveError::Unsafe,
        DirError::Io(error, depth) => {
            ArchiveError::fs(error, "mkdir", &host_path(dest, parts, depth, upto))
        }
    }
}

impl<'d> Extraction<'d> {
    fn open(dest: &'d Path, gnu: bool) -> Result<Self, ArchiveError> {
        let root = Confined::open(dest).map_err(|e| match e.raw_os_error() {
            Some(40) | Some(20) if is_symlink(dest) => ArchiveError::SymlinkTraversal {
                path: dest.to_owned(),
            },
            _ => ArchiveError::fs(e, "open", dest),
        })?;
        Ok(Self {
            root,
            dest,
            gnu,
            as_root: current_uid() == Some(0),
            created: HashSet::new(),
        })
    }

    /// Creates one entry (or skips it: metadata entries, the root itself, special entries in
    /// GNU mode), its parent directories first, then restores its owner when running as root.
    fn entry<R: Read>(&mut self, entry: &mut tar::Entry<'_, R>) -> Result<(), ArchiveError> {
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
        let target = parts.iter().fold(self.dest.to_path_buf(), |p, s| p.join(s));
        let kind = EntryKind::from_type_flag(flag);
        if let EntryKind::Other(_) = kind {
            if self.gnu {
                return Ok(());
            }
            return Err(ArchiveError::Unsafe);
        }
        let mode = entry.header().mode().unwrap_or(0o644) & 0o7777;
        let parent = self
            .root
            .dir(parents, true, 0o777)
            .map_err(|e| dir_error(self.dest, &parts, e, parents.len()))?;
        let place = Place {
            parent,
            name,
            target,
            key: parts.join("/"),
        };
        match kind {
            EntryKind::Directory => self.directory(&place, mode)?,
            EntryKind::File | EntryKind::OldFile => self.file(entry, &place, mode)?,
            EntryKind::SymbolicLink => self.symlink(entry, &path, &place)?,
            EntryKind::Link => self.hard_link(entry, &place)?,
            EntryKind::Other(_) => unreachable!("handled above"),
        }
        // node-tar preserves owners when it runs as root (its `preserveOwner` default).
        if self.as_root && kind != EntryKind::Link {
            let (uid, gid) = (entry.header().uid(), entry.header().gid());
            if let (Ok(uid), Ok(gid)) = (uid, gid) {
                self.root.chown(&place.parent, name, uid as u32, gid as u32);
            }
        }
        Ok(())
    }

    /// A directory: an existing one is kept as it is, anything else but a link replaced.
    fn directory(&self, place: &Place<'_>, mode: u32) -> Result<(), ArchiveError> {
        let (root, parent, name) = (&self.root, &place.parent, place.name);
        match root.existing(parent, name) {
            Existing::Directory => {}
            Existing::Symlink => {
                return Err(ArchiveError::SymlinkTraversal {
                    path: place.target.clone(),
                });
            }
            Existing::Other { .. } => {
                root.clear(parent, name)
                    .map_err(|e| place.fs_err(e, "unlink"))?;
                root.mkdir(parent, name, mode)
                    .map_err(|e| place.fs_err(e, "mkdir"))?;
            }
            Existing::Missing => root
                .mkdir(parent, name, mode)
                .map_err(|e| place.fs_err(e, "mkdir"))?,
        }
        Ok(())
    }

    /// A regular file, written sparse, with its recorded mtime.
    fn file<R: Read>(
        &mut self,
        entry: &mut tar::Entry<'_, R>,
        place: &Place<'_>,
        mode: u32,
    ) -> Result<(), ArchiveError> {
        let (root, parent, name) = (&self.root, &place.parent, place.name);
        root.clear(parent, name)
            .map_err(|e| place.fs_err(e, "open"))?;
        let mut out = root
            .create_file(parent, name, mode)
            .map_err(|e| place.fs_err(e, "open"))?;
        copy_sparse(entry, &mut out).map_err(|e| match e {
            CopyError::Read(e) => entry_error(e),
            CopyError::Write(e) => place.fs_err(e, "write"),
        })?;
        if let Ok(mtime) = entry.header().mtime() {
            let _ = out.set_modified(UNIX_EPOCH + Duration::from_secs(mtime));
        }
        self.created.insert(place.key.clone());
        Ok(())
    }

    /// A symbolic link, only to a target inside the destination.
    fn symlink<R: Read>(
        &mut self,
        entry: &tar::Entry<'_, R>,
        path: &str,
        place: &Place<'_>,
    ) -> Result<(), ArchiveError> {
        let link = entry
            .link_name_bytes()
            .map(|l| lossy(&l))
            .filter(|l| symlink_target_confined(path, l))
            .ok_or(ArchiveError::Unsafe)?;
        let (root, parent, name) = (&self.root, &place.parent, place.name);
        root.clear(parent, name)
            .map_err(|e| place.fs_err(e, "open"))?;
        self.created.remove(&place.key);
        root.symlink(&link, parent, name)
            .map_err(|e| place.fs_err(e, "symlink"))?;
        Ok(())
    }

    /// A hard link, only to a regular file this extraction created (and not to itself).
    fn hard_link<R: Read>(
        &mut self,
        entry: &tar::Entry<'_, R>,
        place: &Place<'_>,
    ) -> Result<(), ArchiveError> {
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
        if source_key == place.key || !self.created.contains(&source_key) {
            return Err(ArchiveError::Unsafe);
        }
        let root = &self.root;
        let source_dir = root
            .dir(source_parents, false, 0)
            // The path named is on the link source's way, where the failure was.
            .map_err(|e| dir_error(self.dest, &source_parts, e, source_parents.len()))?;
        if root.existing(&source_dir, source_name) != (Existing::Other { regular: true }) {
            return Err(ArchiveError::Unsafe);
        }
        root.clear(&place.parent, place.name)
            .map_err(|e| place.fs_err(e, "open"))?;
        root.hard_link(&source_dir, source_name, &place.parent, place.name)
            .map_err(|e| place.fs_err(e, "link"))?;
        self.created.insert(place.key.clone());
        Ok(())
    }
}

fn is_symlink(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}
