//! The path forms an archive entry may have. Node's `path.posix` itself is `js_compat::path`,
//! re-exported from `archive` under its old `posix_*` names.

/// An archive path that stays inside the root: relative, no `..` segment, no `\`, no NUL.
pub fn is_confined_entry_path(path: &str) -> bool {
    !path.starts_with('/')
        && !path.split('/').any(|s| s == "..")
        && !path.contains('\\')
        && !path.contains('\0')
}

/// The components of an archive path: `./a//b/` is `["a", "b"]`.
pub fn path_parts(path: &str) -> Vec<&str> {
    path.split('/')
        .filter(|s| !s.is_empty() && *s != ".")
        .collect()
}

/// A hard-link target as GNU tar extracts it (`safer_name_suffix`): without a leading `/` and
/// without everything up to its last `..` component.
pub fn gnu_hard_link_target(link: &str) -> String {
    let parts = path_parts(link);
    let start = parts.iter().rposition(|p| *p == "..").map_or(0, |i| i + 1);
    parts[start..].join("/")
}

#[cfg(test)]
mod tests {
    use crate::archive::{posix_dirname, posix_join, posix_normalize};

    #[test]
    fn normalize_and_dirname_follow_node() {
        assert_eq!(
            posix_normalize("/paperclip-workspace/./a//b/"),
            "/paperclip-workspace/a/b/"
        );
        assert_eq!(posix_normalize("/a/../../b"), "/b");
        assert_eq!(posix_normalize("./sub/../../x"), "../x");
        assert_eq!(posix_normalize(""), ".");
        assert_eq!(posix_dirname("./sub/link"), "./sub");
        assert_eq!(posix_dirname("link"), ".");
        assert_eq!(posix_dirname("/a"), "/");
        assert_eq!(posix_join("./sub", "../x"), "x");
        assert_eq!(posix_join(".", "../x"), "../x");
    }
}
