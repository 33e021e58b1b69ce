//! File-system operations confined to one destination directory, by directory handles.
//!
//! Everything a sandbox sends back is written by an agent, so host-side extraction never
//! resolves a path string: the destination is opened once ([`Confined::open`]) and every entry
//! is created relative to a handle of its parent, which is reached one component at a time with
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)` (plain `openat(O_NOFOLLOW)` where the kernel
//! has no `openat2`). A component `..`, or a symbolic link anywhere on the way, is refused by the
//! kernel, so no entry can land outside the destination or be written through a link, whatever
//! the archive says and whatever is already on the host. Files are created with
//! `O_CREAT | O_EXCL | O_NOFOLLOW`, links with `symlinkat` / `linkat` (never following).
//!
//! Why `rustix`: it exposes exactly these system calls (`openat2` with its resolve flags,
//! `mkdirat`, `symlinkat`, `linkat`, `unlinkat`, `statat`) as safe, owned-fd functions, with no
//! policy of its own. `cap-std` was the alternative; it resolves paths inside its sandbox by
//! following in-tree symlinks, which is precisely what extraction must never do.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags};

/// What is at a name inside a directory handle (never following a link).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Existing {
    Missing,
    Directory,
    Symlink,
    /// A regular file, FIFO, device or socket.
    Other {
        regular: bool,
    },
}

/// A destination directory, held open for the whole extraction.
pub struct Confined {
    root: OwnedFd,
}

fn io_error(e: rustix::io::Errno) -> io::Error {
    io::Error::from_raw_os_error(e.raw_os_error())
}

/// Opens `name` (one component) under `dir` as a directory, never through a link.
fn open_dir_beneath(dir: &impl AsFd, name: &str) -> io::Result<OwnedFd> {
    debug_assert!(!name.contains('/') && name != ".." && !name.is_empty());
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    match rustix::fs::openat2(
        dir,
        name,
        flags,
        Mode::empty(),
        ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS,
    ) {
        Err(rustix::io::Errno::NOSYS) => {
            rustix::fs::openat(dir, name, flags, Mode::empty()).map_err(io_error)
        }
        other => other.map_err(io_error),
    }
}

impl Confined {
    /// Opens the existing directory `dest` (itself not a symbolic link).
    pub fn open(dest: &Path) -> io::Result<Confined> {
        let root = rustix::fs::open(
            dest,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(io_error)?;
        Ok(Confined { root })
    }

    /// A handle of the directory reached by `parts` from the root; missing directories are
    /// created with `mode` when `create` (a non-directory in the way is replaced, as node-tar
    /// does). A symbolic link on the way is [`DirError::Symlink`], never followed.
    pub fn dir(&self, parts: &[&str], create: bool, mode: u32) -> Result<OwnedFd, DirError> {
        let mut current = rustix::io::dup(&self.root).map_err(|e| DirError::Io(io_error(e), 0))?;
        for (depth, part) in parts.iter().enumerate() {
            if part.is_empty() || *part == "." || *part == ".." || part.contains('/') {
                return Err(DirError::Unsafe);
            }
            current = match open_dir_beneath(&current, part) {
                Ok(fd) => fd,
                Err(e) => match self.existing(&current, part) {
                    Existing::Symlink => return Err(DirError::Symlink(depth + 1)),
                    Existing::Missing if create => {
                        rustix::fs::mkdirat(&current, *part, Mode::from_raw_mode(mode))
                            .map_err(|e| DirError::Io(io_error(e), depth + 1))?;
                        open_dir_beneath(&current, part).map_err(|e| DirError::Io(e, depth + 1))?
                    }
                    Existing::Other { .. } if create => {
                        // node-tar replaces a non-directory that stands where a parent must be.
                        rustix::fs::unlinkat(&current, *part, AtFlags::empty())
                            .map_err(|e| DirError::Io(io_error(e), depth + 1))?;
                        rustix::fs::mkdirat(&current, *part, Mode::from_raw_mode(mode))
                            .map_err(|e| DirError::Io(io_error(e), depth + 1))?;
                        open_dir_beneath(&current, part).map_err(|e| DirError::Io(e, depth + 1))?
                    }
                    _ => return Err(DirError::Io(e, depth + 1)),
                },
            };
        }
        Ok(current)
    }

    /// What is at `name` in `dir`, without following a link.
    pub fn existing(&self, dir: &impl AsFd, name: &str) -> Existing {
        match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
            Err(_) => Existing::Missing,
            Ok(st) => match FileType::from_raw_mode(st.st_mode) {
                FileType::Directory => Existing::Directory,
                FileType::Symlink => Existing::Symlink,
                FileType::RegularFile => Existing::Other { regular: true },
                _ => Existing::Other { regular: false },
            },
        }
    }

    /// Removes a non-directory at `name` so a new entry can take its place (never a directory).
    pub fn clear(&self, dir: &impl AsFd, name: &str) -> io::Result<()> {
        match self.existing(dir, name) {
            Existing::Missing => Ok(()),
            Existing::Directory => Err(io::Error::from_raw_os_error(21)),
            _ => rustix::fs::unlinkat(dir, name, AtFlags::empty()).map_err(io_error),
        }
    }

    /// Creates the regular file `name` in `dir`, exclusively, never through a link.
    pub fn create_file(&self, dir: &impl AsFd, name: &str, mode: u32) -> io::Result<File> {
        let fd = rustix::fs::openat(
            dir,
            name,
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(mode),
        )
        .map_err(io_error)?;
        Ok(File::from(fd))
    }

    pub fn mkdir(&self, dir: &impl AsFd, name: &str, mode: u32) -> io::Result<()> {
        rustix::fs::mkdirat(dir, name, Mode::from_raw_mode(mode)).map_err(io_error)
    }

    pub fn symlink(&self, target: &str, dir: &impl AsFd, name: &str) -> io::Result<()> {
        rustix::fs::symlinkat(target, dir, name).map_err(io_error)
    }

    /// A hard link `name` in `dir` to `source_name` in `source_dir` (the link itself, never
    /// the target of a link).
    pub fn hard_link(
        &self,
        source_dir: &impl AsFd,
        source_name: &str,
        dir: &impl AsFd,
        name: &str,
    ) -> io::Result<()> {
        rustix::fs::linkat(source_dir, source_name, dir, name, AtFlags::empty()).map_err(io_error)
    }

    /// `lchown` relative to `dir`.
    pub fn chown(&self, dir: &impl AsFd, name: &str, uid: u32, gid: u32) {
        let _ = rustix::fs::chownat(
            dir,
            name,
            Some(rustix::fs::Uid::from_raw(uid)),
            Some(rustix::fs::Gid::from_raw(gid)),
            AtFlags::SYMLINK_NOFOLLOW,
        );
    }
}

/// Why [`Confined::dir`] could not reach a directory.
#[derive(Debug)]
pub enum DirError {
    /// The component of this depth (1-based) is a symbolic link.
    Symlink(usize),
    /// A component is empty, `.`, `..` or has a slash.
    Unsafe,
    /// A system call failed at the component of this depth (1-based).
    Io(io::Error, usize),
}
