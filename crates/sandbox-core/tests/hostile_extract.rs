//! Forged archives against host-side extraction (link chains confined only as text, hard links
//! through in-archive links, and a property test over random trees of links, hard links, `..`
//! names, FIFOs and devices):
//! whatever an archive holds, nothing outside the destination changes, no link created in it
//! resolves outside it, and nothing panics. Extraction is also run *without* validation, to
//! show the directory-handle layer confines on its own.

use std::collections::BTreeMap;
use std::path::PathBuf;

use proptest::prelude::*;
use sandbox_core::archive::{
    ArchiveError, extract_archive, extract_archive_skipping_specials, validate_archive,
};
use sandbox_core::hostile::snapshot;

#[derive(Debug, Clone)]
enum Forged {
    File(String),
    Dir(String),
    Symlink(String, String),
    Hard(String, String),
    Fifo(String),
    Device(String),
}

fn header(kind: tar::EntryType, name: &str, link: &str, size: u64) -> tar::Header {
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(kind);
    h.set_size(size);
    h.set_mode(0o755);
    let old = h.as_old_mut();
    let n = name.len().min(99);
    old.name[..n].copy_from_slice(&name.as_bytes()[..n]);
    let l = link.len().min(99);
    old.linkname[..l].copy_from_slice(&link.as_bytes()[..l]);
    h.set_cksum();
    h
}

fn forge(entries: &[Forged]) -> Vec<u8> {
    use tar::EntryType as T;
    let mut b = tar::Builder::new(Vec::new());
    for e in entries {
        let (h, body): (tar::Header, &[u8]) = match e {
            Forged::File(n) => (header(T::Regular, n, "", 6), b"forged"),
            Forged::Dir(n) => (header(T::Directory, n, "", 0), b""),
            Forged::Symlink(n, t) => (header(T::Symlink, n, t, 0), b""),
            Forged::Hard(n, t) => (header(T::Link, n, t, 0), b""),
            Forged::Fifo(n) => (header(T::Fifo, n, "", 0), b""),
            Forged::Device(n) => (header(T::Char, n, "", 0), b""),
        };
        b.append(&h, body).unwrap();
    }
    b.into_inner().unwrap()
}

/// A fresh parent with `victim/keep`, `secret` and an empty `dest`; removed on drop.
struct Scene(PathBuf);

impl Scene {
    fn new() -> Scene {
        use std::sync::atomic::{AtomicU64, Ordering};
        static N: AtomicU64 = AtomicU64::new(0);
        let root = std::env::temp_dir().join(format!(
            "hostile-extract-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("victim")).unwrap();
        std::fs::create_dir(root.join("dest")).unwrap();
        std::fs::write(root.join("victim/keep"), b"host").unwrap();
        std::fs::write(root.join("secret"), b"secret").unwrap();
        Scene(root)
    }
    fn dest(&self) -> PathBuf {
        self.0.join("dest")
    }
}

impl Drop for Scene {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Nothing outside `dest` changed, every link inside resolves inside (or dangles), no FIFO or
/// device was created, and no file inside shares an inode with one outside.
fn assert_confined(scene: &Scene, before: &BTreeMap<PathBuf, String>) {
    let dest = scene.dest();
    assert_eq!(
        &snapshot(&scene.0, Some(&dest)),
        before,
        "outside the destination changed"
    );
    let real = std::fs::canonicalize(&dest).unwrap();
    for path in snapshot(&dest, None).keys() {
        let meta = std::fs::symlink_metadata(path).unwrap();
        let ft = meta.file_type();
        use std::os::unix::fs::FileTypeExt;
        assert!(!ft.is_fifo() && !ft.is_char_device() && !ft.is_block_device());
        if let (true, Ok(resolved)) = (ft.is_symlink(), std::fs::canonicalize(path)) {
            assert!(
                resolved.starts_with(&real),
                "{} resolves outside",
                path.display()
            );
        }
    }
}

fn run(entries: &[Forged], validated: bool, gnu: bool) -> Result<(), ArchiveError> {
    let scene = Scene::new();
    let before = snapshot(&scene.0, Some(&scene.dest()));
    let archive = scene.0.join("archive.tar");
    std::fs::write(&archive, forge(entries)).unwrap();
    let before = {
        let mut b = before;
        b.insert(
            archive.clone(),
            format!("{:?} nlink=1", std::fs::read(&archive).unwrap()),
        );
        b
    };
    let result = (|| {
        if validated {
            validate_archive(&archive)?;
        }
        if gnu {
            extract_archive_skipping_specials(&archive, &scene.dest())
        } else {
            extract_archive(&archive, &scene.dest())
        }
    })();
    assert_confined(&scene, &before);
    if result.is_err() && validated {
        // A refusal by validation leaves the destination as it was.
        if matches!(result, Err(ArchiveError::Unsafe)) {
            assert!(std::fs::read_dir(scene.dest()).unwrap().next().is_none());
        }
    }
    result
}

use Forged::*;

fn s(x: &str) -> String {
    x.to_owned()
}

#[test]
fn createos_link_chains_that_normalise_as_text_are_refused() {
    // `d -> .`, `e -> d/..` (the destination's parent), `p -> e/secret`, `r -> e/e/e` ...
    let chains = vec![
        vec![
            Symlink(s("d"), s(".")),
            Symlink(s("e"), s("d/..")),
            Symlink(s("p"), s("e/secret")),
        ],
        vec![Symlink(s("a"), s(".")), Symlink(s("sub/up"), s("../a/.."))],
        vec![
            Symlink(s("up"), s("../..")),
            Symlink(s("x"), s("up/etc/passwd")),
        ],
    ];
    for chain in chains {
        for validated in [true, false] {
            assert!(
                matches!(run(&chain, validated, false), Err(ArchiveError::Unsafe)),
                "{chain:?}"
            );
        }
    }
}

#[test]
fn a_hard_link_through_an_in_archive_link_never_reaches_a_host_file() {
    let forged = vec![
        Symlink(s("d"), s(".")),
        Symlink(s("e"), s("d/..")),
        Hard(s("h"), s("e/secret")),
    ];
    for validated in [true, false] {
        assert!(run(&forged, validated, false).is_err());
    }
    // Without the (refused) links: a hard link to a path that is not an earlier file.
    let forged = vec![Symlink(s("d"), s(".")), Hard(s("h"), s("d/x"))];
    assert!(run(&forged, true, false).is_err());
    // Writing through an in-archive link is refused by the directory handles alone.
    let forged = vec![Symlink(s("d"), s(".")), File(s("d/x"))];
    match run(&forged, false, false) {
        // The link named is the in-archive one, inside the destination.
        Err(ArchiveError::SymlinkTraversal { path }) => assert!(path.ends_with("d"), "{path:?}"),
        other => panic!("expected a symlink traversal, got {other:?}"),
    }
}

#[test]
fn confined_links_and_hard_links_extract() {
    let forged = vec![
        Dir(s("sub/")),
        File(s("sub/a")),
        Symlink(s("sub/l"), s("../sub/a")),
        Hard(s("h"), s("sub/a")),
        Fifo(s("f")),
    ];
    assert!(
        run(&forged, true, false).is_err(),
        "a FIFO is unsafe for CreateOS"
    );
    run(&forged, false, true).unwrap();
}

fn name() -> impl Strategy<Value = String> {
    let part = prop_oneof![
        Just("a"),
        Just("b"),
        Just(".."),
        Just("."),
        Just("victim"),
        Just("")
    ];
    proptest::collection::vec(part, 1..4).prop_map(|p| p.join("/"))
}

fn target() -> impl Strategy<Value = String> {
    prop_oneof![
        name(),
        name().prop_map(|n| format!("/{n}")),
        name().prop_map(|n| format!("../{n}")),
        Just(s("/etc/passwd")),
        Just(s("../secret")),
    ]
}

fn forged() -> impl Strategy<Value = Forged> {
    prop_oneof![
        name().prop_map(File),
        name().prop_map(Dir),
        (name(), target()).prop_map(|(n, t)| Symlink(n, t)),
        (name(), target()).prop_map(|(n, t)| Hard(n, t)),
        name().prop_map(Fifo),
        name().prop_map(Device),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn nothing_outside_the_destination_ever_changes(
        entries in proptest::collection::vec(forged(), 1..10),
        validated in any::<bool>(),
        gnu in any::<bool>(),
    ) {
        let _ = run(&entries, validated, gnu);
    }
}
