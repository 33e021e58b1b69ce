//! Exclusion globs (Node's `path.matchesGlob`, a minimatch subset).

/// Whether an archive entry is excluded: the name without a leading `./` and a trailing `/`
/// matches a pattern `p` as `p`, `p/**`, `**/p` or `**/p/**`.
pub fn excluded(name: &str, patterns: &[String]) -> bool {
    let name = name.strip_prefix("./").unwrap_or(name);
    let name = name.strip_suffix('/').unwrap_or(name);
    patterns.iter().any(|p| {
        [
            p.clone(),
            format!("{p}/**"),
            format!("**/{p}"),
            format!("**/{p}/**"),
        ]
        .iter()
        .any(|glob| matches_glob(name, glob))
    })
}

/// `path.matchesGlob(path, pattern)` on POSIX: `*`, `?`, `[...]`, `**` segments and `{a,b}`
/// alternatives; wildcards never match a leading `.` of a segment (minimatch without `dot`).
pub fn matches_glob(path: &str, pattern: &str) -> bool {
    let pattern = pattern.replace('\\', "/");
    let parts: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    expand_braces(&pattern).iter().any(|p| {
        let segments: Vec<&str> = p.split('/').filter(|s| !s.is_empty()).collect();
        match_segments(&parts, &segments)
    })
}

fn expand_braces(pattern: &str) -> Vec<String> {
    let bytes = pattern.as_bytes();
    let Some(open) = pattern.find('{') else {
        return vec![pattern.to_owned()];
    };
    let mut depth = 0;
    let mut close = None;
    let mut commas = Vec::new();
    for (i, &c) in bytes.iter().enumerate().skip(open) {
        match c {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    close = Some(i);
                    break;
                }
            }
            b',' if depth == 1 => commas.push(i),
            _ => {}
        }
    }
    let Some(close) = close.filter(|_| !commas.is_empty()) else {
        return vec![pattern.to_owned()];
    };
    let (head, tail) = (&pattern[..open], &pattern[close + 1..]);
    let mut bounds = vec![open];
    bounds.extend(&commas);
    bounds.push(close);
    let mut out = Vec::new();
    for w in bounds.windows(2) {
        let alt = &pattern[w[0] + 1..w[1]];
        out.extend(expand_braces(&format!("{head}{alt}{tail}")));
    }
    out
}

fn match_segments(path: &[&str], pattern: &[&str]) -> bool {
    match pattern.split_first() {
        None => path.is_empty(),
        Some((&"**", rest)) => {
            if match_segments(path, rest) {
                return true;
            }
            match path.split_first() {
                Some((first, tail)) if !first.starts_with('.') => match_segments(tail, pattern),
                _ => false,
            }
        }
        Some((seg, rest)) => match path.split_first() {
            Some((first, tail)) => match_segment(first, seg) && match_segments(tail, rest),
            None => false,
        },
    }
}

fn match_segment(name: &str, pattern: &str) -> bool {
    // `.` and `..` only ever match themselves.
    if name == "." || name == ".." {
        return name == pattern;
    }
    if name.starts_with('.') && !pattern.starts_with('.') {
        return false;
    }
    let name: Vec<char> = name.chars().collect();
    let pattern: Vec<char> = pattern.chars().collect();
    wildcard(&name, &pattern)
}

fn wildcard(name: &[char], pattern: &[char]) -> bool {
    match pattern.split_first() {
        None => name.is_empty(),
        Some(('*', rest)) => (0..=name.len()).any(|i| wildcard(&name[i..], rest)),
        Some(('?', rest)) => !name.is_empty() && wildcard(&name[1..], rest),
        Some(('[', rest)) => {
            let Some(end) = rest.iter().skip(1).position(|&c| c == ']').map(|p| p + 1) else {
                return name.first() == Some(&'[') && wildcard(&name[1..], rest);
            };
            let Some(&c) = name.first() else {
                return false;
            };
            let mut class = &rest[..end];
            let negate = matches!(class.first(), Some('!' | '^'));
            if negate {
                class = &class[1..];
            }
            let mut hit = false;
            let mut i = 0;
            while i < class.len() {
                if i + 2 < class.len() && class[i + 1] == '-' {
                    hit |= class[i] <= c && c <= class[i + 2];
                    i += 3;
                } else {
                    hit |= class[i] == c;
                    i += 1;
                }
            }
            hit != negate && wildcard(&name[1..], &rest[end + 1..])
        }
        Some((p, rest)) => name.first() == Some(p) && wildcard(&name[1..], rest),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_follow_minimatch_basics() {
        let p = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(excluded("./node_modules", &p(&["node_modules"])));
        assert!(excluded("./a/node_modules/", &p(&["node_modules"])));
        assert!(excluded("./a/b.log", &p(&["*.log"])));
        assert!(!excluded("./a/.b.log", &p(&["*.log"])));
        assert!(excluded("./.git", &p(&[".git"])));
        assert!(excluded("./x/y", &p(&["x"])));
        assert!(!excluded("./xy", &p(&["x"])));
        assert!(excluded("./a.txt", &p(&["{a,b}.txt"])));
        assert!(excluded("./c1", &p(&["c[0-9]"])));
        assert!(!excluded(".", &p(&["x"])));
    }
}
