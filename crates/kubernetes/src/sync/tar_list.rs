//! The member checks of a sandbox-authored archive before the host extracts it
//! (`assertTarballEntriesConfined` of syncOut), and the extraction itself.
//!
//! The original parsed host `tar -tvf` text, which a name such as `x -> y` fools, and extracted
//! with host `tar`, which follows links the archive itself planted. Here the archive is read by
//! the `tar` crate and checked entry by entry with the shared policy
//! ([`sandbox_core::archive::ArchivePolicy`]: confined names, symbolic links that stay inside
//! however links combine, hard links only to earlier files of the same archive), then extracted
//! through directory handles that never follow a link ([`sandbox_core::confined`]). FIFOs,
//! sockets and other special entries (GNU tar archives a FIFO as a FIFO entry) are skipped: they
//! are never created on the host; a device node refuses the archive (as the original's listing
//! check did). The whole archive is checked before anything is written, so a
//! refusal leaves the destination as it was.

use std::io::Read;
use std::path::Path;

use sandbox_core::archive::{
    ArchiveError, ArchivePolicy, EntryKind, Violation, entry_error,
    extract_archive_skipping_specials, gnu_hard_link_target, open_checked, read_checked,
};

/// The message of a sync-out whose archive listing has a line that does not parse (A41 in the error
/// reference).
pub fn unparseable_listing_message(line: &str) -> String {
    format!("Kubernetes syncOut refusing tarball with an unparseable entry listing: {line}")
}

/// The message of a sync-out archive member whose name leads outside the extraction dir (A44 in the
/// error reference).
pub fn escaping_member_message(name: &str) -> String {
    format!("Kubernetes syncOut refusing tarball member that escapes the extraction dir: {name}")
}

/// The message of a sync-out archive link whose target leads outside the extraction dir (A45 in the
/// error reference).
pub fn escaping_link_message(name: &str, target: &str) -> String {
    format!(
        "Kubernetes syncOut refusing tarball link whose target escapes the extraction dir: {name} -> {target}"
    )
}

/// An entry would be written through a link in the destination (never done).
pub fn through_symlink_message(path: &Path) -> String {
    format!(
        "Kubernetes syncOut refusing to write a tarball member through the symbolic link {}",
        path.display()
    )
}

/// A PAX header or GNU long name / long link over the bound.
pub fn extended_header_message(size: u64) -> String {
    format!(
        "Kubernetes syncOut refusing tarball with an extended header of {size} bytes (a PAX header or GNU long name), over the 1 MiB limit"
    )
}

/// Why an archive is refused: the catalogued message, or the fs error as Node words it.
fn archive_error_message(error: ArchiveError) -> String {
    match error {
        ArchiveError::Format => {
            unparseable_listing_message("the archive is not a readable tar stream")
        }
        ArchiveError::SymlinkTraversal { path } => through_symlink_message(&path),
        ArchiveError::ExtendedHeaderTooLarge { size } => extended_header_message(size),
        // The check above refused everything extraction refuses; this is a defensive net.
        ArchiveError::Unsafe => escaping_member_message("an entry the archive check refused"),
        other => other.node_message(),
    }
}

/// Checks every member of the archive at `file`; the first refusal's message.
pub fn assert_archive_confined(file: &Path) -> Result<(), String> {
    // Extended headers over the bound are refused before the `tar` crate reads them.
    let archive = open_checked(file).map_err(archive_error_message)?;
    check_members(archive)
}

/// [`assert_archive_confined`] of the archive `reader` yields (the stream as it arrives): the
/// same check of the same bytes, so the same verdict as on the file they are written to.
pub fn assert_stream_confined(reader: impl Read) -> Result<(), String> {
    check_members(read_checked(reader))
}

fn check_members(mut archive: tar::Archive<impl Read>) -> Result<(), String> {
    let mut policy = ArchivePolicy::default();
    let entries = archive
        .entries()
        .map_err(|e| archive_error_message(entry_error(e)))?;
    for entry in entries {
        let entry = entry.map_err(|e| archive_error_message(entry_error(e)))?;
        let flag = entry.header().entry_type().as_byte();
        if matches!(flag, b'x' | b'g' | b'L' | b'K') {
            continue;
        }
        let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let kind = EntryKind::from_type_flag(flag);
        let link = entry.link_name_bytes().map(|l| {
            let l = String::from_utf8_lossy(l.as_ref()).into_owned();
            // GNU tar strips a leading `/` or `../` from hard-link targets, in the listing and
            // when extracting (so does the extraction here).
            if kind == EntryKind::Link {
                gnu_hard_link_target(&l)
            } else {
                l
            }
        });
        // Device nodes never reach the host: the original's listing check could not parse
        // their `major,minor` size column and refused the archive; so does this one.
        if matches!(flag, b'3' | b'4') {
            return Err(unparseable_listing_message(&format!(
                "{} is a device node",
                name
            )));
        }
        // Special entries are skipped at extraction, so their size never lands.
        let size = if matches!(kind, EntryKind::Other(_)) {
            0
        } else {
            entry.size()
        };
        match policy.violation(&name, kind, size, link.as_deref()) {
            None | Some(Violation::Special) | Some(Violation::OverLimit) => {}
            Some(Violation::Path) => return Err(escaping_member_message(&name)),
            Some(Violation::Link) => {
                return Err(escaping_link_message(&name, link.as_deref().unwrap_or("")));
            }
        }
    }
    Ok(())
}

/// Extracts a checked archive into the existing directory `dest`.
pub fn extract_confined(file: &Path, dest: &Path) -> Result<(), String> {
    extract_archive_skipping_specials(file, dest).map_err(archive_error_message)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    fn archive(build: impl FnOnce(&mut tar::Builder<Vec<u8>>)) -> tempfile::NamedTempFile {
        let mut builder = tar::Builder::new(Vec::new());
        build(&mut builder);
        let bytes = builder.into_inner().unwrap();
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), bytes).unwrap();
        file
    }

    fn link(b: &mut tar::Builder<Vec<u8>>, kind: tar::EntryType, name: &str, target: &str) {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(kind);
        h.set_size(0);
        h.set_mode(0o777);
        h.set_cksum();
        b.append_link(&mut h, name, target).unwrap();
    }

    /// Appends a regular file member (also used by the other sync modules' tests).
    pub(in crate::sync) fn file(b: &mut tar::Builder<Vec<u8>>, name: &str, data: &[u8]) {
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        b.append_data(&mut h, name, data).unwrap();
    }

    #[test]
    fn accepts_in_tree_entries_and_links() {
        let a = archive(|b| {
            file(b, "a.txt", b"hello");
            link(b, tar::EntryType::Symlink, "dir/l", "../a.txt");
            link(b, tar::EntryType::Link, "b", "a.txt");
        });
        assert_eq!(assert_archive_confined(a.path()), Ok(()));
    }

    #[test]
    fn refuses_escapes_the_listing_parser_let_through() {
        let check = |build: &dyn Fn(&mut tar::Builder<Vec<u8>>)| {
            assert_archive_confined(archive(|b| build(b)).path()).unwrap_err()
        };
        // A name with ` -> ` in it fooled the listing parser into reading `y -> /etc/passwd`.
        assert_eq!(
            check(&|b| link(b, tar::EntryType::Symlink, "x -> y", "/etc/passwd")),
            escaping_link_message("x -> y", "/etc/passwd")
        );
        // Confined as text only: `d/..` through `d -> .` is the destination's parent.
        assert_eq!(
            check(&|b| {
                link(b, tar::EntryType::Symlink, "d", ".");
                link(b, tar::EntryType::Symlink, "up", "d/..");
            }),
            escaping_link_message("up", "d/..")
        );
        assert_eq!(
            check(&|b| link(b, tar::EntryType::Symlink, "s/up", "../..")),
            escaping_link_message("s/up", "../..")
        );
        // A hard link to anything but an earlier file of this archive.
        assert_eq!(
            check(&|b| {
                link(b, tar::EntryType::Symlink, "d", ".");
                link(b, tar::EntryType::Link, "h", "d/passwd");
            }),
            escaping_link_message("h", "d/passwd")
        );
    }
}
