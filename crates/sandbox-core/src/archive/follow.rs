//! Walking a host tree the way `tar -h` will, to stop at the first directory reached twice.

use std::collections::{HashSet, VecDeque};
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::ArchiveError;

/// Walks directory `root` following symbolic links, as `tar -h` would, and fails with
/// [`ArchiveError::RepeatedDirectory`] at the first directory reached a second time (by device
/// and inode: a link loop such as `a -> .`, or two links to one directory). `skip` sees each
/// entry's name and prunes it (an excluded directory is not walked). Memory is bounded by the
/// tree itself: every directory is read once. Returns the number of entries visited.
pub fn check_followed_tree(root: &Path, skip: &dyn Fn(&str) -> bool) -> Result<u64, ArchiveError> {
    let mut directories: HashSet<(u64, u64)> = HashSet::new();
    let mut queue: VecDeque<PathBuf> = VecDeque::new();
    queue.push_back(root.to_path_buf());
    let mut visited = 0;
    while let Some(path) = queue.pop_front() {
        visited += 1;
        let meta = match fs::metadata(&path) {
            Ok(meta) => meta,
            // A dangling link or an unreadable entry: left to the archiver to report.
            Err(_) => continue,
        };
        if !meta.is_dir() {
            continue;
        }
        if !directories.insert((meta.dev(), meta.ino())) {
            return Err(ArchiveError::RepeatedDirectory { path });
        }
        let Ok(entries) = fs::read_dir(&path) else {
            continue;
        };
        let mut names: Vec<_> = entries.flatten().map(|entry| entry.file_name()).collect();
        names.sort_by(|a, b| a.as_encoded_bytes().cmp(b.as_encoded_bytes()));
        for name in names {
            if !skip(&name.to_string_lossy()) {
                queue.push_back(path.join(name));
            }
        }
    }
    Ok(visited)
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::archive::{BLOCK, pack_directory};

    /// `<tmp>/archive-loop-<name>-<pid>/{root/sub/deep/file, outside/file}`; returns root.
    fn loop_tree(name: &str) -> PathBuf {
        let top = std::env::temp_dir().join(format!("archive-loop-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&top);
        let dir = top.join("root");
        fs::create_dir_all(dir.join("sub/deep")).unwrap();
        fs::write(dir.join("sub/deep/file"), b"x").unwrap();
        fs::create_dir_all(top.join("outside")).unwrap();
        fs::write(top.join("outside/file"), b"y").unwrap();
        dir
    }

    /// A hostile tree: `followSymlinks` on `a -> .` and `b -> .` used to walk `a/b/a/b/…` (2^40
    /// paths) until ELOOP; it now fails at the first directory seen twice, in a few steps.
    #[test]
    fn following_a_link_loop_fails_at_the_first_repeat() {
        let dir = loop_tree("loop");
        std::os::unix::fs::symlink(".", dir.join("a")).unwrap();
        std::os::unix::fs::symlink(".", dir.join("b")).unwrap();
        match check_followed_tree(&dir, &|_| false) {
            Err(ArchiveError::RepeatedDirectory { path }) => assert_eq!(path, dir.join("a")),
            other => panic!("expected a repeated directory, got {other:?}"),
        }
        // Excluding the links leaves an ordinary tree: root, sub, deep, file.
        assert_eq!(
            check_followed_tree(&dir, &|name| name == "a" || name == "b").unwrap(),
            4
        );
        let mut out = Vec::new();
        let error = pack_directory(&dir, true, &|_| true, &mut out).unwrap_err();
        assert!(
            matches!(&error, ArchiveError::RepeatedDirectory { path } if path == &dir.join("a")),
            "{error:?}"
        );
        assert!(
            error
                .node_message()
                .starts_with("ELOOP: too many symbolic links encountered, stat '")
        );
        // Only the root's header was written before the repeat was seen: nothing grew.
        assert_eq!(out.len(), BLOCK);
        // Without following, the links are archived as links.
        let mut out = Vec::new();
        pack_directory(&dir, false, &|_| true, &mut out).unwrap();
        fs::remove_dir_all(dir.parent().unwrap()).unwrap();
    }

    /// Two links to one directory (no loop) repeat it too; a deep ladder of such
    /// pairs would copy 2^n trees, so the second visit fails.
    #[test]
    fn following_two_links_to_one_directory_fails() {
        let dir = loop_tree("twice");
        std::os::unix::fs::symlink("../outside", dir.join("x")).unwrap();
        std::os::unix::fs::symlink("../outside", dir.join("y")).unwrap();
        match check_followed_tree(&dir, &|_| false) {
            // Breadth first: root, sub, x, y — `y` is the second visit of `outside`.
            Err(ArchiveError::RepeatedDirectory { path }) => assert_eq!(path, dir.join("y")),
            other => panic!("expected a repeated directory, got {other:?}"),
        }
        let mut out = Vec::new();
        let error = pack_directory(&dir, true, &|_| true, &mut out).unwrap_err();
        assert!(
            matches!(&error, ArchiveError::RepeatedDirectory { path } if path == &dir.join("y")),
            "{error:?}"
        );
        // One link to it is fine: root, sub, x, deep, x/file, deep/file.
        fs::remove_file(dir.join("y")).unwrap();
        assert_eq!(check_followed_tree(&dir, &|_| false).unwrap(), 6);
        let mut out = Vec::new();
        pack_directory(&dir, true, &|_| true, &mut out).unwrap();
        // A link to a directory that is also in the tree repeats it as well.
        std::os::unix::fs::symlink("sub/deep", dir.join("z")).unwrap();
        assert!(matches!(
            check_followed_tree(&dir, &|_| false),
            Err(ArchiveError::RepeatedDirectory { .. })
        ));
        fs::remove_dir_all(dir.parent().unwrap()).unwrap();
    }
}
