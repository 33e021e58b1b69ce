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

mod extract;
mod follow;
mod glob;
mod node_fs_errors;
mod paths;
mod policy;
mod read;
mod stream;
mod write;

use std::fs;
use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

pub use extract::{extract_archive, extract_archive_skipping_specials};
pub use follow::check_followed_tree;
pub use glob::{excluded, matches_glob};
pub use js_compat::path::{
    dirname as posix_dirname, join as posix_join, normalize as posix_normalize,
};
pub use node_fs_errors::node_fs_message;
pub use paths::{gnu_hard_link_target, is_confined_entry_path, path_parts};
pub use policy::{ArchivePolicy, EntryKind, Violation, symlink_target_confined};
pub use read::validate_archive;
pub use stream::{
    CheckedReader, EXTENDED_HEADER_LIMIT, StreamCheck, entry_error, open_checked, read_checked,
};
pub use write::{PackSummary, pack_directory};

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
    /// Extraction would write an entry through the symbolic link at `path` (inside the
    /// destination, or the destination itself). Each provider has its catalogued message for it.
    SymlinkTraversal { path: PathBuf },
    /// A PAX extended header or a GNU long-name / long-link member declares `size` bytes, over
    /// [`EXTENDED_HEADER_LIMIT`]: refused before it is read into memory. Each provider has its
    /// catalogued message for it.
    ExtendedHeaderTooLarge { size: u64 },
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

    /// The text the original (Node, node-tar) failed with for this error, or would have:
    /// [`ArchiveError::Unsafe`], [`ArchiveError::SymlinkTraversal`],
    /// [`ArchiveError::ExtendedHeaderTooLarge`] and [`ArchiveError::RepeatedDirectory`] are
    /// given each provider's catalogued message by the callers instead.
    pub fn node_message(&self) -> String {
        match self {
            ArchiveError::Unsafe => "unsafe archive".to_owned(),
            ArchiveError::Fs {
                error,
                syscall,
                path,
            } => node_fs_message(error, syscall, path),
            ArchiveError::Format => "TAR_BAD_ARCHIVE: Unrecognized archive format".to_owned(),
            ArchiveError::SymlinkTraversal { .. } => {
                "Cannot extract through symbolic link".to_owned()
            }
            ArchiveError::ExtendedHeaderTooLarge { .. } => {
                "TAR_BAD_ARCHIVE: Unrecognized archive format".to_owned()
            }
            ArchiveError::RepeatedDirectory { path } => node_fs_message(
                &io::Error::from_raw_os_error(40), // ELOOP
                "stat",
                path,
            ),
        }
    }
}

fn current_uid() -> Option<u32> {
    // `/proc/self` belongs to the process's effective uid.
    fs::metadata("/proc/self").map(|m| m.uid()).ok()
}

/// Sets `path`'s permission bits exactly (no umask), as `fs.chmod`.
pub fn chmod(path: &Path, mode: u32) -> Result<(), ArchiveError> {
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
        .map_err(|e| ArchiveError::fs(e, "chmod", path))
}
