//! The safety policy of a received archive: which entry types, paths and link targets are
//! allowed, and the running sum of declared sizes (see the module docs of [`super`]).

use super::paths::{is_confined_entry_path, path_parts};
use super::{ArchiveError, EXTRACTION_LIMIT};

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
pub(crate) fn is_meta(flag: u8) -> bool {
    matches!(flag, b'x' | b'g' | b'L' | b'K')
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
#[cfg(test)]
mod tests {
    use super::*;

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
}
