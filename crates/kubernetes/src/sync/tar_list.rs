//! The member checks of a sandbox-authored archive before the host extracts it
//! (`assertTarballEntriesConfined`, spec §16.3 step 4): the `tar -tvf` listing is parsed line
//! by line, and an unparseable line, an escaping member or an escaping link target refuses the
//! whole archive.

use super::paths::{posix_dirname, posix_join, posix_path_escapes};

/// JavaScript's `\s`.
fn js_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202f}'
                | '\u{205f}'
                | '\u{3000}'
                | '\u{feff}'
    )
}

/// `^(\S+)\s+\S+\s+\d+\s+\S+\s+\S+\s+(.*)$` → (perms, name).
fn match_listing_line(line: &str) -> Option<(&str, &str)> {
    fn token<'a>(rest: &mut &'a str) -> Option<&'a str> {
        let end = rest.find(js_space).unwrap_or(rest.len());
        if end == 0 {
            return None;
        }
        let (tok, tail) = rest.split_at(end);
        let spaces = tail.find(|c| !js_space(c)).unwrap_or(tail.len());
        if spaces == 0 {
            return None;
        }
        *rest = &tail[spaces..];
        Some(tok)
    }
    let mut rest = line;
    let perms = token(&mut rest)?;
    token(&mut rest)?;
    let size = token(&mut rest)?;
    if !size.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    token(&mut rest)?;
    token(&mut rest)?;
    // `.` matches neither line terminator.
    if rest.contains(['\n', '\r', '\u{2028}', '\u{2029}']) {
        return None;
    }
    Some((perms, rest))
}

/// A41.
pub fn unparseable_listing_message(line: &str) -> String {
    format!("Kubernetes syncOut refusing tarball with an unparseable entry listing: {line}")
}

/// Checks a `tar -tvf` listing.
pub fn assert_listing_confined(listing: &str) -> Result<(), String> {
    for line in listing.split('\n').filter(|l| !l.trim().is_empty()) {
        let Some((perms, full_name)) = match_listing_line(line) else {
            return Err(unparseable_listing_message(line));
        };
        let type_flag = perms.chars().next();
        let mut name = full_name;
        let mut link_target: Option<&str> = None;
        match type_flag {
            Some('l') => {
                let Some(idx) = name.find(" -> ") else {
                    return Err(format!(
                        "Kubernetes syncOut refusing unparseable symlink entry: {line}"
                    ));
                };
                link_target = Some(&name[idx + 4..]);
                name = &name[..idx];
            }
            Some('h') => {
                let Some(idx) = name.find(" link to ") else {
                    return Err(format!(
                        "Kubernetes syncOut refusing unparseable hardlink entry: {line}"
                    ));
                };
                link_target = Some(&name[idx + 9..]);
                name = &name[..idx];
            }
            _ => {}
        }
        let clean = name.trim_end_matches('/');
        if !clean.is_empty() && posix_path_escapes(clean) {
            return Err(format!(
                "Kubernetes syncOut refusing tarball member that escapes the extraction dir: {name}"
            ));
        }
        if let Some(target) = link_target {
            let resolved = posix_join(&posix_dirname(clean), target);
            if target.starts_with('/') || posix_path_escapes(&resolved) {
                return Err(format!(
                    "Kubernetes syncOut refusing tarball link whose target escapes the extraction dir: {name} -> {target}"
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const DATE: &str = "2026-01-01 00:00";

    #[test]
    fn accepts_in_tree_entries_and_links() {
        let listing = format!(
            "-rw-r--r-- u/g 5 {DATE} a.txt\ndrwxr-xr-x u/g 0 {DATE} dir/\nlrwxrwxrwx u/g 0 {DATE} dir/l -> ../a.txt\nhrw-r--r-- u/g 0 {DATE} b link to a.txt\n-rw-r--r-- u/g 3 {DATE} name with  spaces\n"
        );
        assert_eq!(assert_listing_confined(&listing), Ok(()));
    }

    #[test]
    fn refuses_escapes_and_unparseable_lines() {
        let check = |l: &str| assert_listing_confined(l).unwrap_err();
        assert_eq!(
            check(&format!("-rw-r--r-- u/g 5 {DATE} ../x")),
            "Kubernetes syncOut refusing tarball member that escapes the extraction dir: ../x"
        );
        assert_eq!(
            check(&format!("-rw-r--r-- u/g 5 {DATE} /etc/x")),
            "Kubernetes syncOut refusing tarball member that escapes the extraction dir: /etc/x"
        );
        assert_eq!(
            check(&format!("lrwxrwxrwx u/g 0 {DATE} l -> /etc/passwd")),
            "Kubernetes syncOut refusing tarball link whose target escapes the extraction dir: l -> /etc/passwd"
        );
        assert_eq!(
            check(&format!("lrwxrwxrwx u/g 0 {DATE} d/l -> ../../x")),
            "Kubernetes syncOut refusing tarball link whose target escapes the extraction dir: d/l -> ../../x"
        );
        assert_eq!(
            check(&format!("hrw-r--r-- u/g 0 {DATE} h link to ../x")),
            "Kubernetes syncOut refusing tarball link whose target escapes the extraction dir: h link to ../x"
                .replace("h link to ../x", "h -> ../x")
        );
        assert_eq!(
            check(&format!("lrwxrwxrwx u/g 0 {DATE} dangling")),
            format!(
                "Kubernetes syncOut refusing unparseable symlink entry: lrwxrwxrwx u/g 0 {DATE} dangling"
            )
        );
        assert_eq!(
            check(&format!("hrw-r--r-- u/g 0 {DATE} lonely")),
            format!(
                "Kubernetes syncOut refusing unparseable hardlink entry: hrw-r--r-- u/g 0 {DATE} lonely"
            )
        );
        assert_eq!(
            check(&format!("crw-r--r-- u/g 1,3 {DATE} null")),
            format!(
                "Kubernetes syncOut refusing tarball with an unparseable entry listing: crw-r--r-- u/g 1,3 {DATE} null"
            )
        );
    }
}
