//! Extraction writes small regular files on writer threads while it reads on
//! (`archive/writers.rs`). Whatever comes after such a file must see it on disk, exactly as a
//! one-thread extraction would: a hard link to it, a link or directory replacing it, a path
//! under it, the same name again; and of several failures the first in archive order is the one
//! reported. Each archive puts the dependent entry right after the file it depends on, behind
//! enough other files that the writers are busy.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

mod common;
use common::Scene;
use sandbox_core::archive::{ArchiveError, extract_archive, extract_archive_skipping_specials};

enum Member<'a> {
    File(&'a str, Vec<u8>),
    Dir(&'a str),
    Symlink(&'a str, &'a str),
    Hard(&'a str, &'a str),
}

fn archive(members: &[Member<'_>]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for member in members {
        let mut header = tar::Header::new_gnu();
        header.set_mode(0o644);
        header.set_mtime(1_700_000_000);
        let (kind, name, link, body): (_, _, _, &[u8]) = match member {
            Member::File(name, body) => (tar::EntryType::Regular, *name, None, body),
            Member::Dir(name) => (tar::EntryType::Directory, *name, None, b""),
            Member::Symlink(name, to) => (tar::EntryType::Symlink, *name, Some(*to), b""),
            Member::Hard(name, to) => (tar::EntryType::Link, *name, Some(*to), b""),
        };
        header.set_entry_type(kind);
        header.set_size(body.len() as u64);
        if let Some(link) = link {
            header.set_link_name(link).unwrap();
        }
        builder.append_data(&mut header, name, body).unwrap();
    }
    builder.into_inner().unwrap()
}

/// `count` files `fill/<n>`, each as large as the writers take: while they are written, the
/// reading thread is already at the entries after them.
fn filler(count: usize) -> Vec<Member<'static>> {
    (0..count)
        .map(|n| {
            let name = Box::leak(format!("fill/{n}").into_boxed_str());
            Member::File(name, vec![b'f'; 1024 * 1024])
        })
        .collect()
}

/// `members` as an archive file in `scene`, extracted into its `dest`.
fn extract(scene: &Scene, members: &[Member<'_>]) -> Result<(), ArchiveError> {
    let file = scene.0.join("a.tar");
    std::fs::write(&file, archive(members)).unwrap();
    extract_archive(&file, &scene.dest())
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap()
}

#[test]
fn a_hard_link_right_after_its_source_links_the_written_file() {
    let scene = Scene::new("extract-order");
    let mut members = filler(16);
    for n in 0..64 {
        let name = Box::leak(format!("src/{n}").into_boxed_str());
        let link = Box::leak(format!("links/{n}").into_boxed_str());
        members.push(Member::File(name, format!("content {n}").into_bytes()));
        members.push(Member::Hard(link, name));
    }
    extract(&scene, &members).unwrap();
    for n in 0..64 {
        let source = scene.dest().join(format!("src/{n}"));
        let link = scene.dest().join(format!("links/{n}"));
        assert_eq!(read(&link), format!("content {n}").into_bytes());
        assert_eq!(
            std::fs::metadata(&source).unwrap().ino(),
            std::fs::metadata(&link).unwrap().ino()
        );
    }
}

#[test]
fn a_link_or_directory_after_a_file_of_the_same_name_replaces_it() {
    let scene = Scene::new("extract-order");
    let mut members = filler(16);
    members.extend([
        Member::File("became-link", b"file".to_vec()),
        Member::Symlink("became-link", "fill/0"),
        Member::File("became-dir", b"file".to_vec()),
        Member::Dir("became-dir"),
        Member::File("became-dir/inside", b"inside".to_vec()),
    ]);
    extract(&scene, &members).unwrap();
    let link = scene.dest().join("became-link");
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(std::fs::read_link(&link).unwrap(), Path::new("fill/0"));
    assert!(scene.dest().join("became-dir").is_dir());
    assert_eq!(read(&scene.dest().join("became-dir/inside")), b"inside");
}

#[test]
fn a_path_under_a_file_just_written_replaces_the_file_with_a_directory() {
    let scene = Scene::new("extract-order");
    let mut members = filler(16);
    members.extend([
        Member::File("p", b"file".to_vec()),
        Member::File("p/q", b"under".to_vec()),
    ]);
    extract(&scene, &members).unwrap();
    assert!(scene.dest().join("p").is_dir());
    assert_eq!(read(&scene.dest().join("p/q")), b"under");
}

#[test]
fn the_same_name_again_keeps_the_last_content_whatever_the_sizes() {
    let scene = Scene::new("extract-order");
    let large = vec![b'L'; 3 * 1024 * 1024 / 2]; // above the writers' size bound
    let mut members = filler(16);
    members.extend([
        Member::File("small-then-small", b"first".to_vec()),
        Member::File("small-then-small", b"second".to_vec()),
        Member::File("small-then-large", b"first".to_vec()),
        Member::File("small-then-large", large.clone()),
        Member::File("large-then-small", large.clone()),
        Member::File("large-then-small", b"second".to_vec()),
    ]);
    extract(&scene, &members).unwrap();
    assert_eq!(read(&scene.dest().join("small-then-small")), b"second");
    assert_eq!(read(&scene.dest().join("small-then-large")), large);
    assert_eq!(read(&scene.dest().join("large-then-small")), b"second");
}

#[test]
fn every_file_is_written_with_its_content_mode_and_mtime() {
    let scene = Scene::new("extract-order");
    let members: Vec<Member<'_>> = (0..500)
        .map(|n| {
            let name = Box::leak(format!("d{}/f{n}", n % 7).into_boxed_str());
            Member::File(name, vec![(n % 251) as u8; n * 37 % 9000])
        })
        .collect();
    extract(&scene, &members).unwrap();
    for n in 0..500 {
        let path = scene.dest().join(format!("d{}/f{n}", n % 7));
        assert_eq!(read(&path), vec![(n % 251) as u8; n * 37 % 9000]);
        let meta = std::fs::metadata(&path).unwrap();
        assert_eq!(meta.mtime(), 1_700_000_000);
        assert_eq!(meta.mode() & 0o777 & !0o022, 0o644 & !0o022);
    }
}

#[test]
fn of_several_failing_files_the_first_in_archive_order_is_reported() {
    // A directory on the host where the archive has a file: that file fails (EISDIR).
    for gnu in [false, true] {
        let scene = Scene::new("extract-order");
        for name in ["first", "second", "third"] {
            std::fs::create_dir(scene.dest().join(name)).unwrap();
        }
        // `second` fails on the reading thread (too large for the writers), most likely before
        // a writer has reached `first`.
        let mut members = filler(16);
        members.push(Member::File("first", b"x".to_vec()));
        members.push(Member::File("second", vec![b'x'; 2 * 1024 * 1024]));
        members.push(Member::File("third", b"x".to_vec()));
        let file = scene.0.join("a.tar");
        std::fs::write(&file, archive(&members)).unwrap();
        let failed = if gnu {
            extract_archive_skipping_specials(&file, &scene.dest())
        } else {
            extract_archive(&file, &scene.dest())
        };
        match failed {
            Err(ArchiveError::Fs {
                error,
                syscall,
                path,
            }) => {
                assert_eq!(error.raw_os_error(), Some(21), "{error}");
                assert_eq!(syscall, "open");
                assert_eq!(path, scene.dest().join("first"));
            }
            other => panic!("expected the failure of `first`, got {other:?}"),
        }
    }
}
