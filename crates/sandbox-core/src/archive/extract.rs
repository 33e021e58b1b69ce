//! Extraction of a checked archive into a host directory, through directory handles only.

use std::fs;
use std::io;
use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

use super::paths::{gnu_hard_link_target, is_confined_entry_path, path_parts};
use super::policy::{EntryKind, is_meta, symlink_target_confined};
use super::read::lossy;
use super::stream::{entry_error, open_checked};
use super::{ArchiveError, current_uid};
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
    use crate::confined::{Confined, DirError, Existing};
    let mut archive = open_checked(file)?;
    let root = Confined::open(dest).map_err(|e| match e.raw_os_error() {
        Some(40) | Some(20) if is_symlink(dest) => ArchiveError::SymlinkTraversal {
            path: dest.to_owned(),
        },
        _ => ArchiveError::fs(e, "open", dest),
    })?;
    let as_root = current_uid() == Some(0);
    // The regular files this extraction created (hard links may only point at one of them).
    let mut created: std::collections::HashSet<String> = std::collections::HashSet::new();
    for entry in archive.entries().map_err(entry_error)? {
        let mut entry = entry.map_err(entry_error)?;
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
            DirError::Symlink(depth) => ArchiveError::SymlinkTraversal {
                path: parts[..depth.min(upto)]
                    .iter()
                    .fold(dest.to_path_buf(), |p, s| p.join(s)),
            },
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
                Existing::Symlink => {
                    return Err(ArchiveError::SymlinkTraversal {
                        path: target.clone(),
                    });
                }
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
                copy_sparse(&mut entry, &mut out).map_err(|e| match e {
                    CopyError::Read(e) => entry_error(e),
                    CopyError::Write(e) => fs_err(e, "write"),
                })?;
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
