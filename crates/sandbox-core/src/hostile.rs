//! The host-side half of the hostile-sandbox suites (`tests/hostile_sync.rs` in each provider
//! crate, `tests/hostile_extract.rs` here): what a host tree holds, taken before and after a
//! hostile archive or sync, so that a test can say nothing outside the destination changed.
//! Each suite keeps its own attacks, except [`ESCAPING_TREES`], the pod trees the Kubernetes
//! suites on the emulator and on the real node share.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Asserts that every link under `dest` resolves inside it (or dangles): what a sync out of a
/// hostile pod may leave in its destination.
pub fn assert_links_stay_inside(dest: &Path) {
    let real = std::fs::canonicalize(dest).expect("the destination resolves");
    for (path, what) in snapshot(dest, None) {
        if let (true, Ok(resolved)) = (what.starts_with("->"), std::fs::canonicalize(&path)) {
            assert!(resolved.starts_with(&real), "{} escapes", path.display());
        }
    }
}

/// Every path under `root` (links not followed), except `skip` and what is under it, with what
/// it is: `-> target` for a link, `dir` for a directory, a file's bytes and link count (a hard
/// link made to a host file changes the count). Panics on a tree it cannot read.
pub fn snapshot(root: &Path, skip: Option<&Path>) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir)
            .expect("a readable directory")
            .flatten()
        {
            let path = entry.path();
            if Some(path.as_path()) == skip {
                continue;
            }
            let meta = std::fs::symlink_metadata(&path).expect("a readable entry");
            let what = if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&path).expect("a readable link");
                format!("-> {}", target.display())
            } else if meta.is_dir() {
                stack.push(path.clone());
                "dir".to_owned()
            } else {
                let bytes = std::fs::read(&path).expect("a readable file");
                format!("{bytes:?} nlink={}", meta.nlink())
            };
            out.insert(path, what);
        }
    }
    out
}

/// A tree a root agent builds in its sandbox with one ordinary shell command, holding a link
/// that a sync-out of the tree must refuse: it escapes the destination, as text or only
/// through a chain of links. Shared by the Kubernetes suites on the emulator's pods and on the
/// real node.
pub struct EscapingTree {
    /// The directory the script makes, under the workspace; the sync-out source.
    pub dir: &'static str,
    /// The shell script, `{W}` standing for the workspace.
    pub script: &'static str,
    /// The refused link as the refusal names it (`member -> target`), where that is fixed.
    pub refused: Option<&'static str>,
}

impl EscapingTree {
    /// The script for the workspace `workspace`.
    pub fn script(&self, workspace: &str) -> String {
        self.script.replace("{W}", workspace)
    }
}

/// The escaping trees: a link named `x -> y` (a listing parser splitting at its first ` -> `
/// would read a harmless link), a chain confined only as text (`d -> .`, then `up -> d/..`,
/// the destination's parent, then `v -> up/victim`), an absolute link to `/etc/passwd` and a
/// `../../..` one level down.
pub const ESCAPING_TREES: &[EscapingTree] = &[
    EscapingTree {
        dir: "named",
        script: "mkdir -p {W}/named && ln -s /etc/passwd '{W}/named/x -> y'",
        refused: None,
    },
    EscapingTree {
        dir: "chain",
        script: "mkdir -p {W}/chain && ln -s . {W}/chain/d && ln -s d/.. {W}/chain/up \
                 && ln -s up/victim {W}/chain/v",
        refused: None,
    },
    EscapingTree {
        dir: "absolute",
        script: "mkdir -p {W}/absolute && echo x > {W}/absolute/f && ln -s /etc/passwd {W}/absolute/passwd",
        refused: Some("passwd -> /etc/passwd"),
    },
    EscapingTree {
        dir: "updots",
        script: "mkdir -p {W}/updots/d && echo x > {W}/updots/f && ln -s ../../.. {W}/updots/d/l",
        refused: Some("d/l -> ../../.."),
    },
];
