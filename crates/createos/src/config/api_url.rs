//! `apiUrl`: a WHATWG-parsed URL reduced to its origin.
//!
//! The `url` crate implements the same WHATWG algorithm as JS `new URL()` (IPv4 shorthand such as
//! `127.1`, IPv6 compression, IDNA to punycode, backslashes and missing slashes after `https:`),
//! so the checks below see the same components the original saw.

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

#[cfg(test)]
mod tests {
    use super::*;

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
