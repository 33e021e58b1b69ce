//! POSIX path helpers (Node's `path.posix`) and the path forms an archive entry may have.

/// `path.posix.normalize`.
pub fn posix_normalize(path: &str) -> String {
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
pub fn posix_dirname(path: &str) -> String {
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

/// `path.posix.join(a, b)`.
pub fn posix_join(a: &str, b: &str) -> String {
    let joined = [a, b]
        .iter()
        .filter(|p| !p.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join("/");
    posix_normalize(&joined)
}

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
    use super::*;

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
