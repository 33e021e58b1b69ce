//! Reading a received archive: the whole-archive check before anything is extracted.

use std::path::Path;

use super::ArchiveError;
use super::policy::{ArchivePolicy, EntryKind, is_meta};
use super::stream::{entry_error, open_checked};

pub(crate) fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Checks every entry of the archive at `file` against the policy; the number of regular
/// files when it passes.
pub fn validate_archive(file: &Path) -> Result<u64, ArchiveError> {
    let mut archive = open_checked(file)?;
    let mut policy = ArchivePolicy::default();
    for entry in archive.entries().map_err(entry_error)? {
        let entry = entry.map_err(entry_error)?;
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
