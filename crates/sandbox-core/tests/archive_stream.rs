//! The streaming bounds of a received archive (`sandbox_core::archive::StreamCheck`): extended
//! headers over the bound are refused before the `tar` crate reads them into memory, and the
//! check follows the crate's framing exactly (long names, PAX headers, a PAX `size` overriding
//! the header's), in whatever pieces the bytes arrive.

use std::path::PathBuf;

use proptest::prelude::*;
use sandbox_core::archive::{
    ArchiveError, EXTENDED_HEADER_LIMIT, StreamCheck, extract_archive, validate_archive,
};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "archive-stream-{name}-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn header(kind: tar::EntryType, path: &str, size: u64) -> tar::Header {
    let mut h = tar::Header::new_ustar();
    h.set_entry_type(kind);
    h.set_path(path).unwrap();
    h.set_size(size);
    h.set_mode(0o644);
    h.set_cksum();
    h
}

/// A raw extended member (`x`, `L`, `K`) of `size` bytes, then a file `./f`.
fn with_extension(flag: u8, size: usize) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    let mut body = vec![b'a'; size];
    if flag == b'x' {
        // One well-formed record filling the size: "<len> comment=<aaa…>\n".
        let text = format!("{size} comment=");
        body[..text.len()].copy_from_slice(text.as_bytes());
        body[size - 1] = b'\n';
    }
    b.append(
        &header(tar::EntryType::new(flag), "././@LongLink", size as u64),
        &body[..],
    )
    .unwrap();
    b.append(&header(tar::EntryType::Regular, "./f", 1), &b"x"[..])
        .unwrap();
    b.into_inner().unwrap()
}

fn feed_in_pieces(bytes: &[u8], piece: usize, check: &mut StreamCheck) -> Result<(), ArchiveError> {
    for chunk in bytes.chunks(piece.max(1)) {
        check.feed(chunk)?;
    }
    Ok(())
}

/// Bounded memory: the `tar` crate reads a PAX header or GNU long name whole into memory; a hostile
/// archive declaring gigabytes is now refused at its header block.
#[test]
fn extended_headers_over_the_bound_are_refused_at_their_header() {
    let over = EXTENDED_HEADER_LIMIT as usize + 1;
    for flag in [b'x', b'L', b'K', b'g'] {
        let archive = with_extension(flag, over);
        // Only the header block is needed to refuse.
        let mut check = StreamCheck::new();
        match check.feed(&archive[..512]) {
            Err(ArchiveError::ExtendedHeaderTooLarge { size }) => assert_eq!(size, over as u64),
            other => panic!("{}: expected a refusal, got {other:?}", flag as char),
        }
        let dir = scratch(&format!("over-{}", flag as char));
        let file = dir.join("a.tar");
        std::fs::write(&file, &archive).unwrap();
        assert!(
            matches!(
                validate_archive(&file),
                Err(ArchiveError::ExtendedHeaderTooLarge { .. })
            ),
            "{}",
            flag as char
        );
        std::fs::create_dir(dir.join("out")).unwrap();
        assert!(matches!(
            extract_archive(&file, &dir.join("out")),
            Err(ArchiveError::ExtendedHeaderTooLarge { .. })
        ));
        assert!(std::fs::read_dir(dir.join("out")).unwrap().next().is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }
    // A header declaring 8 GiB with nothing behind it: refused without reading anything more.
    let mut check = StreamCheck::new();
    let giant = header(tar::EntryType::XHeader, "PaxHeader/f", 8 << 30);
    assert!(matches!(
        check.feed(giant.as_bytes()),
        Err(ArchiveError::ExtendedHeaderTooLarge { size }) if size == 8 << 30
    ));
}

#[test]
fn extended_headers_within_the_bound_pass() {
    for flag in [b'x', b'L', b'K'] {
        let archive = with_extension(flag, EXTENDED_HEADER_LIMIT as usize);
        let mut check = StreamCheck::new();
        feed_in_pieces(&archive, 1000, &mut check).unwrap();
        assert_eq!(check.declared(), 1, "{}", flag as char);
    }
}

/// A PAX `size` record overrides the header's size (as in the crate, GNU tar and node-tar): the
/// check follows it, so the member behind cannot hide an extended header from it.
#[test]
fn a_pax_size_overrides_the_header_size() {
    let mut b = tar::Builder::new(Vec::new());
    b.append_pax_extensions([("size", &b"1536"[..])]).unwrap();
    // The header says 0 bytes; 1536 follow, and they look like a giant long-name header.
    let hidden = header(tar::EntryType::GNULongName, "././@LongLink", 1 << 40);
    let mut data = hidden.as_bytes().to_vec();
    data.resize(1536, 0);
    data[1024] = b'z';
    b.append(&header(tar::EntryType::Regular, "./f", 0), &data[..])
        .unwrap();
    // Builder pads by the header's size (0): the 1536 bytes are already whole blocks.
    b.append(&header(tar::EntryType::Regular, "./g", 0), &b""[..])
        .unwrap();
    let archive = b.into_inner().unwrap();
    let mut check = StreamCheck::new();
    feed_in_pieces(&archive, 100, &mut check).unwrap();
    assert_eq!(check.declared(), 1536);
    // The crate agrees: `./f` is 1536 bytes, `./g` follows.
    let sizes: Vec<(String, u64)> = tar::Archive::new(&archive[..])
        .entries()
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                String::from_utf8_lossy(&e.path_bytes()).into_owned(),
                e.size(),
            )
        })
        .collect();
    assert_eq!(sizes, vec![("f".into(), 1536), ("g".into(), 0)]);
}

#[test]
fn the_declared_limit_refuses_at_the_header_that_passes_it() {
    let mut b = tar::Builder::new(Vec::new());
    b.append(
        &header(tar::EntryType::Regular, "./a", 600),
        &[1u8; 600][..],
    )
    .unwrap();
    b.append(
        &header(tar::EntryType::Regular, "./b", 500),
        &[1u8; 500][..],
    )
    .unwrap();
    let archive = b.into_inner().unwrap();
    let mut check = StreamCheck::with_declared_limit(1000);
    // ./a (header + 2 blocks) passes; the header of ./b is refused as it arrives.
    check.feed(&archive[..512 * 3]).unwrap();
    assert!(matches!(
        check.feed(&archive[512 * 3..512 * 4]),
        Err(ArchiveError::Unsafe)
    ));
    let mut check = StreamCheck::with_declared_limit(1100);
    check.feed(&archive).unwrap();
    assert_eq!(check.declared(), 1100);
}

#[derive(Debug, Clone)]
enum Member {
    File { name: String, size: usize },
    LongName { name: String, size: usize },
    Pax { name: String, size: usize },
    Symlink { name: String, target: String },
}

fn member() -> impl Strategy<Value = Member> {
    let name = "[a-z]{1,8}";
    prop_oneof![
        (name, 0usize..3000).prop_map(|(name, size)| Member::File { name, size }),
        (name, 100usize..400, 0usize..1500).prop_map(|(n, len, size)| Member::LongName {
            name: n.repeat(len / n.len() + 1),
            size
        }),
        (name, 0usize..1500).prop_map(|(name, size)| Member::Pax { name, size }),
        (name, "[a-z]{1,300}").prop_map(|(name, target)| Member::Symlink { name, target }),
    ]
}

fn build(members: &[Member]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for (i, m) in members.iter().enumerate() {
        match m {
            Member::File { name, size } => {
                let mut h = tar::Header::new_gnu();
                h.set_size(*size as u64);
                h.set_mode(0o644);
                b.append_data(&mut h, format!("{i}{name}"), &vec![7u8; *size][..])
                    .unwrap();
            }
            Member::LongName { name, size } => {
                // The GNU header: a name over 100 bytes becomes an `L` member.
                let mut h = tar::Header::new_gnu();
                h.set_size(*size as u64);
                h.set_mode(0o644);
                b.append_data(&mut h, format!("{i}{name}"), &vec![8u8; *size][..])
                    .unwrap();
            }
            Member::Pax { name, size } => {
                b.append_pax_extensions([("path", format!("{i}{name}").as_bytes())])
                    .unwrap();
                let h = header(tar::EntryType::Regular, &format!("{i}"), *size as u64);
                b.append(&h, &vec![9u8; *size][..]).unwrap();
            }
            Member::Symlink { name, target } => {
                let mut h = tar::Header::new_gnu();
                h.set_entry_type(tar::EntryType::Symlink);
                h.set_size(0);
                b.append_link(&mut h, format!("{i}{name}"), target).unwrap();
            }
        }
    }
    b.into_inner().unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Whatever pieces the bytes come in, the check sums exactly the member sizes the crate
    /// reports and refuses nothing within the bounds.
    #[test]
    fn the_check_follows_the_crates_framing(members in prop::collection::vec(member(), 0..12),
                                            piece in 1usize..2000) {
        let archive = build(&members);
        let mut check = StreamCheck::new();
        prop_assert!(feed_in_pieces(&archive, piece, &mut check).is_ok());
        let crate_sum: u64 = tar::Archive::new(&archive[..])
            .entries()
            .unwrap()
            .map(|e| e.unwrap().size())
            .sum();
        prop_assert_eq!(check.declared(), crate_sum);
    }
}
