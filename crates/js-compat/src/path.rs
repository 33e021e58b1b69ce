//! Node's `path.posix`: `normalize`, `dirname`, `basename` and `join`, ported from Node's `lib/path.js`
//! algorithm (no crate reproduces its rules for `..` past the root, doubled leading slashes
//! and trailing separators).

/// `path.posix.normalize`.
pub fn normalize(path: &str) -> String {
    if path.is_empty() {
        return ".".to_owned();
    }
    let absolute = path.starts_with('/');
    let trailing = path.ends_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|p| *p != "..") {
                    parts.pop();
                } else if !absolute {
                    parts.push("..");
                }
            }
            other => parts.push(other),
        }
    }
    let mut out = parts.join("/");
    if out.is_empty() && !absolute {
        out.push('.');
    }
    if !out.is_empty() && trailing {
        out.push('/');
    }
    if absolute { format!("/{out}") } else { out }
}

/// `path.posix.dirname`.
pub fn dirname(path: &str) -> String {
    if path.is_empty() {
        return ".".to_owned();
    }
    let bytes = path.as_bytes();
    let rooted = bytes[0] == b'/';
    let mut end = None;
    let mut matched_slash = true;
    for i in (1..bytes.len()).rev() {
        if bytes[i] == b'/' {
            if !matched_slash {
                end = Some(i);
                break;
            }
        } else {
            matched_slash = false;
        }
    }
    match end {
        None if rooted => "/".to_owned(),
        None => ".".to_owned(),
        Some(1) if rooted => "//".to_owned(),
        Some(end) => path[..end].to_owned(),
    }
}

/// `path.posix.basename(path)` (without the extension argument).
pub fn basename(path: &str) -> &str {
    let trimmed = path.trim_end_matches('/');
    trimmed.rsplit('/').next().unwrap_or_default()
}

/// `path.posix.join(a, b)`.
pub fn join(a: &str, b: &str) -> String {
    let joined = [a, b]
        .iter()
        .filter(|p| !p.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join("/");
    normalize(&joined)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `[path, path.posix.dirname(path), path.posix.normalize(path)]` in Node 20.
    const NODE_RESULTS: &[(&str, &str, &str)] = &[
        ("", ".", "."),
        ("/", "/", "/"),
        ("//", "/", "/"),
        ("///", "/", "/"),
        ("a", ".", "a"),
        ("/a", "/", "/a"),
        ("//a", "//", "/a"),
        ("///a", "//", "/a"),
        ("/a/b", "/a", "/a/b"),
        ("/a/b/c", "/a/b", "/a/b/c"),
        ("/a/b/", "/a", "/a/b/"),
        ("/a//b", "/a/", "/a/b"),
        ("a//b", "a/", "a/b"),
        ("a/b//", "a", "a/b/"),
        ("./a", ".", "a"),
        ("../a", "..", "../a"),
        ("/..", "/", "/"),
        ("a/../..", "a/..", ".."),
        ("a/./b/", "a/.", "a/b/"),
        ("//a//b//", "//a/", "/a/b/"),
        ("/a/b/../../..", "/a/b/../..", "/"),
        ("foo/bar/../../../x/", "foo/bar/../../..", "../x/"),
    ];

    #[test]
    fn dirname_and_normalize_match_node() {
        for (path, dir, normal) in NODE_RESULTS {
            assert_eq!(dirname(path), *dir, "dirname({path:?})");
            assert_eq!(normalize(path), *normal, "normalize({path:?})");
        }
    }

    /// `path.posix.basename` in Node 20.
    #[test]
    fn basename_matches_node() {
        for (path, base) in [
            ("", ""),
            ("/", ""),
            ("//", ""),
            ("a", "a"),
            ("/a", "a"),
            ("a/", "a"),
            ("a//", "a"),
            ("/workspace/a/b.txt", "b.txt"),
            ("/workspace/dir/", "dir"),
            ("./x", "x"),
            (".", "."),
            ("..", ".."),
            ("/a/b/..", ".."),
            ("a\\b", "a\\b"),
        ] {
            assert_eq!(basename(path), base, "basename({path:?})");
        }
    }

    #[test]
    fn join_matches_node() {
        for (a, b, joined) in [
            ("/w", ".x", "/w/.x"),
            ("", "a", "a"),
            ("a", "", "a"),
            ("", "", "."),
            ("/w/", "/x/", "/w/x/"),
            ("/w", "../x", "/x"),
            ("w", "/", "w/"),
        ] {
            assert_eq!(join(a, b), joined, "join({a:?}, {b:?})");
        }
    }
}
