//! `apiUrl`: a WHATWG-parsed URL reduced to its origin.
//!
//! The `url` crate implements the same WHATWG algorithm as JS `new URL()` (IPv4 shorthand such as
//! `127.1`, IPv6 compression, IDNA to punycode, backslashes and missing slashes after `https:`),
//! so the checks below see the same components the original saw.
//!
//! A text that is already an allowed origin in its canonical form (what nearly every config
//! holds: `https://api.sb.createos.sh`, `http://127.0.0.1:8080/v1`) is recognised without the
//! parser ([`canonical_origin`]): the WHATWG parse (host parsing, IPv4 or IDNA serialisation)
//! was ~8,500 of a ~50,000-instruction validate call, counted with callgrind. Anything else,
//! refusals included, goes to the parser; a property test holds the shortcut to it.

use sandbox_core::ProviderError;
use url::{Position, Url};

use super::messages;

/// The only endpoint allowed to fall back to the host's `CREATEOS_API_KEY`.
pub const OFFICIAL_API_URL: &str = "https://api.sb.createos.sh";

/// Plain HTTP is for a local development server only. Compared with the parsed hostname, which
/// is lower-cased, in dotted IPv4 form, and bracketed for IPv6.
const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// An origin, optionally followed by the API version prefix. Compared exactly: no
/// percent-decoding and no case folding.
const ALLOWED_PATHS: [&str; 4] = ["", "/", "/v1", "/v1/"];

/// Validates the (already trimmed) URL text and returns its ASCII origin, e.g.
/// `https://api.sb.createos.sh:443/v1` gives `https://api.sb.createos.sh`.
pub(crate) fn api_origin(text: &str) -> Result<String, ProviderError> {
    origin_of(text).map_err(ProviderError::new)
}

/// The origin, or the message that refuses the text.
fn origin_of(text: &str) -> Result<String, &'static str> {
    if let Some(origin) = canonical_origin(text) {
        return Ok(origin.to_owned());
    }
    let url = Url::parse(text).map_err(|_| messages::API_URL_INVALID)?;
    if !is_plain_origin(&url) {
        return Err(messages::API_URL_NOT_ORIGIN);
    }
    // For an http(s) URL without credentials, its serialisation up to the path is exactly the
    // origin's ASCII serialisation (`scheme://host[:port]`, the default port already dropped by
    // the parser), so it is sliced out of the parsed URL rather than formatted again
    // (`Origin::ascii_serialization` went through `format!` and the host's `Display`).
    Ok(url[..Position::BeforePath].to_owned())
}

/// Everything beyond scheme, host and port is refused: credentials would be sent along, and a
/// query or fragment could redirect requests. JS reports an empty query/fragment (`?`, `#`) as
/// "", so those are accepted.
fn is_plain_origin(url: &Url) -> bool {
    let loopback = url
        .host_str()
        .is_some_and(|host| LOOPBACK_HOSTS.contains(&host));
    let scheme_ok = url.scheme() == "https" || (url.scheme() == "http" && loopback);
    let no_credentials = url.username().is_empty() && url.password().unwrap_or("").is_empty();
    let no_query = url.query().unwrap_or("").is_empty();
    let no_fragment = url.fragment().unwrap_or("").is_empty();
    scheme_ok && no_credentials && no_query && no_fragment && ALLOWED_PATHS.contains(&url.path())
}

/// The origin of a text the WHATWG parser would give back unchanged as an allowed origin, or
/// `None` for any other text (which the parser then decides). Accepted: `https://`, or `http://`
/// with `localhost` or `127.0.0.1`; a host of lower-case ASCII letters, digits and hyphens in
/// dot-separated labels whose last label starts with a letter (a last label of digits, or `0x`,
/// would make the parser read the host as IPv4) and none starts with `xn--` (punycode, which
/// the parser validates), or four decimal IPv4 parts without leading zeros; an optional port of
/// digits without a leading zero, at most 65535 and not the scheme's default (which the parser
/// drops); then one of the allowed paths and nothing else.
fn canonical_origin(text: &str) -> Option<&str> {
    let (scheme, rest) = if let Some(rest) = text.strip_prefix("https://") {
        ("https", rest)
    } else {
        ("http", text.strip_prefix("http://")?)
    };
    let path_at = rest.find('/').unwrap_or(rest.len());
    if !ALLOWED_PATHS.contains(&&rest[path_at..]) {
        return None;
    }
    let authority = &rest[..path_at];
    let (host, port) = match authority.split_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (authority, None),
    };
    let default_port = if scheme == "https" { "443" } else { "80" };
    let port_ok = port.is_none_or(|port| {
        !port.is_empty()
            && port.len() <= 5
            && port.bytes().all(|b| b.is_ascii_digit())
            && (port == "0" || !port.starts_with('0'))
            && port.parse::<u32>().is_ok_and(|n| n <= 65535)
            && port != default_port
    });
    let host_ok = if scheme == "http" {
        host == "localhost" || host == "127.0.0.1"
    } else {
        is_canonical_ipv4(host) || is_plain_domain(host)
    };
    (port_ok && host_ok).then(|| &text[..text.len() - (rest.len() - path_at)])
}

/// Four decimal parts of at most 255, without leading zeros: IPv4 as the parser writes it.
fn is_canonical_ipv4(host: &str) -> bool {
    let mut parts = 0;
    host.split('.').all(|part| {
        parts += 1;
        !part.is_empty()
            && part.len() <= 3
            && part.bytes().all(|b| b.is_ascii_digit())
            && (part == "0" || !part.starts_with('0'))
            && part.parse::<u16>().is_ok_and(|n| n <= 255)
    }) && parts == 4
}

/// Labels of lower-case ASCII letters, digits and hyphens, the last starting with a letter,
/// none empty or punycode: a domain the parser keeps as it is.
fn is_plain_domain(host: &str) -> bool {
    let last_starts_with_letter = host
        .rsplit('.')
        .next()
        .and_then(|last| last.bytes().next())
        .is_some_and(|b| b.is_ascii_lowercase());
    last_starts_with_letter
        && host.split('.').all(|label| {
            !label.is_empty()
                && !label.starts_with("xn--")
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the parser alone makes of `text`.
    fn parsed(text: &str) -> Result<String, &'static str> {
        let url = Url::parse(text).map_err(|_| messages::API_URL_INVALID)?;
        if !is_plain_origin(&url) {
            return Err(messages::API_URL_NOT_ORIGIN);
        }
        Ok(url[..Position::BeforePath].to_owned())
    }

    #[test]
    fn the_shortcut_takes_canonical_origins_and_leaves_the_rest_to_the_parser() {
        for text in [
            "https://api.sb.createos.sh",
            "https://api.sb.createos.sh/v1/",
            "http://127.0.0.1:8080/v1",
            "http://localhost:1",
            "https://10.0.0.255:65535/",
            "https://a-b.c0:8443",
        ] {
            assert_eq!(
                canonical_origin(text).map(str::to_owned),
                parsed(text).ok(),
                "{text}"
            );
        }
        for text in [
            "https://API.sb.createos.sh",
            "https://api.sb.createos.sh:443",
            "http://127.0.0.1:80",
            "https://127.1",
            "https://1.2.3.4.5",
            "https://01.2.3.4",
            "https://256.1.1.1",
            "https://host.123",
            "https://host.0x1f",
            "https://xn--nxasmq6b.com",
            "https://a..b",
            "https://host:",
            "https://host:08080",
            "https://host:65536",
            "http://example.com",
            "http://[::1]:1",
            "https://host/v2",
            "https://host?",
            "https://user@host",
            "https:host",
            " https://host",
        ] {
            assert_eq!(canonical_origin(text), None, "{text}");
        }
    }

    proptest::proptest! {
        /// Whatever the shortcut takes, the parser gives the same origin.
        #[test]
        fn the_shortcut_agrees_with_the_parser(
            scheme in "(https?)://",
            host in "[a-z0-9.x-]{1,12}|[0-9]{1,3}(\\.[0-9]{1,3}){3}|localhost",
            port in "(:[0-9]{0,6})?",
            path in "(/|/v1|/v1/|/v2|\\?|#|)",
        ) {
            let text = format!("{scheme}{host}{port}{path}");
            if let Some(origin) = canonical_origin(&text) {
                proptest::prop_assert_eq!(Ok(origin.to_owned()), parsed(&text), "{}", text);
            }
        }
    }

    #[test]
    fn origins_and_refusals() {
        assert_eq!(
            api_origin("http://127.1:8080/v1").ok().as_deref(),
            Some("http://127.0.0.1:8080")
        );
        assert_eq!(
            api_origin("https://api.sb.createos.sh:443/v1/")
                .ok()
                .as_deref(),
            Some("https://api.sb.createos.sh")
        );
        for (text, refusal) in [
            ("not a url", messages::API_URL_INVALID),
            (
                "https://user@api.sb.createos.sh",
                messages::API_URL_NOT_ORIGIN,
            ),
            ("http://example.com", messages::API_URL_NOT_ORIGIN),
        ] {
            assert_eq!(
                api_origin(text).map_err(|error| error.message),
                Err(refusal.to_owned()),
                "{text}"
            );
        }
    }
}
