//! The container image reference grammar (distribution/reference, the one containerd and the
//! kubelet parse with), and the `imageRegistry` value read against it.
//!
//! Why here, and why our own: a reference that does not parse ends as a pod stuck in
//! `InvalidImageName`, and the original only noticed at its deadline. Both the config schema
//! (`imageRegistry`, at validation) and acquire (every runtime image, before the cluster is
//! touched) need the same grammar, and `config` is the lowest layer of the crate, so the grammar
//! lives here and `builders` re-exports it. The grammar is short; the crates that implement it
//! (`oci-spec`'s and `docker_credential`'s parsers) each differ from distribution on a point we
//! need (a digest's algorithm, the name length, or a domain without a dot read as a path), and
//! none says *what* is wrong in words an operator can act on, which is the point of the check.
//!
//! The grammar, as distribution writes it:
//!
//! ```text
//! reference  := name [ ":" tag ] [ "@" digest ]
//! name       := [domain "/"] path-component ["/" path-component]*     (at most 255 characters)
//! domain     := (domain-name | "[" ipv6 "]") [":" port]
//! domain-name:= domain-component ["." domain-component]*
//! domain-component := [a-zA-Z0-9] | [a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]
//! path-component   := [a-z0-9]+ ((("." | "_" | "__" | "-"+) [a-z0-9]+))*
//! tag        := [\w][\w.-]{0,127}
//! digest     := algorithm ":" hex                       (sha256: 64, sha384: 96, sha512: 128)
//! ```
//!
//! Digests are held to go-digest's check, which the runtime applies after the grammar: only the
//! three registered algorithms, each with its exact lower-case hex length. A port is also held
//! to 1–65535 (the grammar takes any digits; no registry listens on port 0 or 99999).
//!
//! The reasons returned are short, say what is wrong with which part, and quote only the part
//! at fault (never a user name or password, which is refused without being quoted).

/// The longest name (domain and path, without tag or digest) distribution accepts.
pub const NAME_TOTAL_LENGTH_MAX: usize = 255;

/// Checks `reference` against the image-reference grammar. `Err` holds a short reason that says
/// which part is wrong and why.
pub fn check_image_reference(reference: &str) -> Result<(), String> {
    if reference.is_empty() {
        return Err("it is empty".into());
    }
    if let Some(reason) = forbidden_characters(reference) {
        return Err(reason);
    }
    if reference.contains("://") {
        return Err(
            "it starts with a URL scheme; an image reference has none (write host/path:tag)".into(),
        );
    }
    let (rest, digest) = match reference.split_once('@') {
        Some((rest, digest)) => (rest, Some(digest)),
        None => (reference, None),
    };
    // The tag is after the last `:` of the last path component (a `:` before a `/` is a port).
    let last_slash = rest.rfind('/').map_or(0, |at| at + 1);
    let (name, tag) = match rest[last_slash..].rfind(':') {
        Some(colon) => (
            &rest[..last_slash + colon],
            Some(&rest[last_slash + colon + 1..]),
        ),
        None => (rest, None),
    };
    check_name(name)?;
    if let Some(tag) = tag {
        check_tag(tag)?;
    }
    if let Some(digest) = digest {
        check_digest(digest)?;
    }
    Ok(())
}

/// Reads an `imageRegistry` value: `https://host[:port][/path]`, `http://…`, or the bare
/// `host[:port][/path]`. Returns the prefix the image references get: the value without its
/// scheme and trailing slashes. `Err` holds the reason the value is refused.
pub fn parse_image_registry(value: &str) -> Result<String, String> {
    if value.trim().is_empty() {
        return Err("it is empty".into());
    }
    if let Some(reason) = forbidden_characters(value) {
        return Err(reason);
    }
    let rest = match value.split_once("://") {
        Some((scheme, rest)) => {
            if !scheme.eq_ignore_ascii_case("https") && !scheme.eq_ignore_ascii_case("http") {
                return Err(format!(
                    "the scheme \"{scheme}\" is not https or http (or leave the scheme out)"
                ));
            }
            rest
        }
        None => value,
    };
    if rest.contains(['?', '#']) {
        return Err("it has a query or fragment (`?` or `#`); write only host and path".into());
    }
    let rest = rest.trim_end_matches('/');
    let (host_port, path) = rest.split_once('/').unwrap_or((rest, ""));
    if host_port.contains('@') {
        return Err("it holds a user name or password (`…@`); give registry credentials through imagePullSecrets instead".into());
    }
    if host_port.is_empty() {
        return Err("it has no registry host".into());
    }
    let domain = check_domain(host_port)?;
    if !domain.is_recognised_registry() {
        return Err(format!(
            "\"{host_port}\" has no dot or port and is not localhost, so the container runtime would read it as a Docker Hub path, not a registry host (write the registry's full host, e.g. docker.io/{host_port})"
        ));
    }
    if !path.is_empty() {
        for component in path.split('/') {
            check_path_component(component)?;
        }
    }
    Ok(rest.to_string())
}

/// Whitespace, control characters and anything outside ASCII appear nowhere in either form.
fn forbidden_characters(value: &str) -> Option<String> {
    if value.chars().any(char::is_whitespace) {
        return Some("it holds a space or another whitespace character".into());
    }
    if value.chars().any(|c| c.is_control() || !c.is_ascii()) {
        return Some("it holds a control or non-ASCII character".into());
    }
    None
}

/// What a domain part was read as.
struct Domain<'a> {
    host: &'a str,
    has_port: bool,
    ipv6: bool,
}

impl Domain<'_> {
    /// distribution's rule for telling a registry host from a Docker Hub path's first
    /// component: a dot, a port, `localhost`, an IPv6 literal or an upper-case letter.
    fn is_recognised_registry(&self) -> bool {
        self.has_port
            || self.ipv6
            || self.host.contains('.')
            || self.host == "localhost"
            || self.host.chars().any(|c| c.is_ascii_uppercase())
    }
}

/// `domain := (domain-name | "[" ipv6 "]") [":" port]`.
fn check_domain(text: &str) -> Result<Domain<'_>, String> {
    let (host, port, ipv6) = if let Some(inner) = text.strip_prefix('[') {
        let Some((address, after)) = inner.split_once(']') else {
            return Err(format!(
                "the host \"{text}\" opens an IPv6 address it does not close"
            ));
        };
        if address.is_empty() || !address.chars().all(|c| c.is_ascii_hexdigit() || c == ':') {
            return Err(format!("the host \"{text}\" is not a valid IPv6 address"));
        }
        let port = match after {
            "" => None,
            _ => match after.strip_prefix(':') {
                Some(port) => Some(port),
                None => {
                    return Err(format!(
                        "the host \"{text}\" has text after its IPv6 address"
                    ));
                }
            },
        };
        (&text[..address.len() + 2], port, true)
    } else {
        match text.split_once(':') {
            Some((host, port)) => (host, Some(port), false),
            None => (text, None, false),
        }
    };
    if !ipv6 && !is_domain_name(host) {
        return Err(format!(
            "the host \"{host}\" is not a host name (letters, digits and `-` in dot-separated labels, none starting or ending with `-`)"
        ));
    }
    if let Some(port) = port {
        let valid = !port.is_empty()
            && port.len() <= 5
            && port.bytes().all(|b| b.is_ascii_digit())
            && (1..=65535).contains(&port.parse::<u32>().unwrap_or(0));
        if !valid {
            return Err(format!(
                "the port \"{port}\" is not a number from 1 to 65535"
            ));
        }
    }
    Ok(Domain {
        host,
        has_port: port.is_some(),
        ipv6,
    })
}

/// `domain-component ("." domain-component)*`.
fn is_domain_name(host: &str) -> bool {
    !host.is_empty()
        && host.split('.').all(|label| {
            let bytes = label.as_bytes();
            !bytes.is_empty()
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_alphanumeric() || *b == b'-')
                && bytes[0] != b'-'
                && bytes[bytes.len() - 1] != b'-'
        })
}

/// `[domain "/"] path-component ("/" path-component)*`, at most 255 characters.
fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("it has no repository name".into());
    }
    if name.len() > NAME_TOTAL_LENGTH_MAX {
        return Err(format!(
            "its name is {} characters long, over the {NAME_TOTAL_LENGTH_MAX} allowed",
            name.len()
        ));
    }
    let components: Vec<&str> = name.split('/').collect();
    // Every component a path component: a name without a domain (Docker Hub's).
    let all_paths: Result<(), String> = components
        .iter()
        .try_for_each(|component| check_path_component(component));
    if all_paths.is_ok() {
        return Ok(());
    }
    // Otherwise the first component must be a domain and the rest path components.
    if components.len() > 1 && check_domain(components[0]).is_ok() {
        return components[1..]
            .iter()
            .try_for_each(|component| check_path_component(component));
    }
    if components.len() > 1
        && components[0].contains([':', '[', '.'])
        && let Err(reason) = check_domain(components[0])
    {
        return Err(reason);
    }
    all_paths
}

/// `[a-z0-9]+ ((("." | "_" | "__" | "-"+) [a-z0-9]+))*`.
fn check_path_component(component: &str) -> Result<(), String> {
    if component.is_empty() {
        return Err("the path has an empty component (`//`, or a `/` at an end)".into());
    }
    if component.bytes().any(|b| b.is_ascii_uppercase()) {
        return Err(format!(
            "the repository path component \"{component}\" has upper-case letters; repository paths are lower-case"
        ));
    }
    if !is_path_component(component.as_bytes()) {
        return Err(format!(
            "the repository path component \"{component}\" is not lower-case letters and digits joined by `.`, `_`, `__` or `-`"
        ));
    }
    Ok(())
}

fn is_alnum(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

fn is_path_component(bytes: &[u8]) -> bool {
    let mut i = 0;
    let run = |i: &mut usize| {
        let start = *i;
        while *i < bytes.len() && is_alnum(bytes[*i]) {
            *i += 1;
        }
        *i > start
    };
    if !run(&mut i) {
        return false;
    }
    while i < bytes.len() {
        // A separator: `.`, `_`, `__`, or one or more `-`.
        match bytes[i] {
            b'.' => i += 1,
            b'_' => {
                i += 1;
                if i < bytes.len() && bytes[i] == b'_' {
                    i += 1;
                }
            }
            b'-' => {
                while i < bytes.len() && bytes[i] == b'-' {
                    i += 1;
                }
            }
            _ => return false,
        }
        if !run(&mut i) {
            return false;
        }
    }
    true
}

/// `[\w][\w.-]{0,127}`.
fn check_tag(tag: &str) -> Result<(), String> {
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let bytes = tag.as_bytes();
    let valid = !bytes.is_empty()
        && bytes.len() <= 128
        && word(bytes[0])
        && bytes.iter().all(|&b| word(b) || b == b'.' || b == b'-');
    if valid {
        Ok(())
    } else {
        Err(format!(
            "the tag \"{tag}\" is not 1 to 128 letters, digits, `_`, `.` or `-` starting with a letter, digit or `_`"
        ))
    }
}

/// `algorithm ":" hex`, held to go-digest's registered algorithms and lengths.
fn check_digest(digest: &str) -> Result<(), String> {
    let Some((algorithm, hex)) = digest.split_once(':') else {
        return Err(format!(
            "the digest \"{digest}\" is not algorithm:hex (e.g. sha256: and 64 hex digits)"
        ));
    };
    let length = match algorithm {
        "sha256" => 64,
        "sha384" => 96,
        "sha512" => 128,
        _ => {
            return Err(format!(
                "the digest algorithm \"{algorithm}\" is not sha256, sha384 or sha512"
            ));
        }
    };
    let hex_ok = hex.len() == length
        && hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    if hex_ok {
        Ok(())
    } else {
        Err(format!(
            "the {algorithm} digest is not {length} lower-case hex digits"
        ))
    }
}

#[cfg(test)]
mod tests;
