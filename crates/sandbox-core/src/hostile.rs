//! The host-side half of the hostile-sandbox suites (`tests/hostile_sync.rs` in each provider
//! crate, `tests/hostile_extract.rs` here): what a host tree holds, taken before and after a
//! hostile archive or sync, so that a test can say nothing outside the destination changed.
//! Each suite keeps its own attacks; this is only the before-and-after.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

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
