//! `encodeURIComponent`, by the `percent-encoding` crate with the set JS leaves alone
//! (`A-Z a-z 0-9 - _ . ! ~ * ' ( )`). Text is encoded as UTF-8 with upper-case hex; the lone
//! surrogates on which JS throws cannot occur in a Rust string.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

/// Every byte but the unreserved marks of ECMA-262's `encodeURIComponent`.
const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'!')
    .remove(b'~')
    .remove(b'*')
    .remove(b'\'')
    .remove(b'(')
    .remove(b')');

/// `encodeURIComponent(text)`.
pub fn encode_uri_component(text: &str) -> String {
    utf8_percent_encode(text, COMPONENT).to_string()
}

#[cfg(test)]
mod tests {
    use super::encode_uri_component;

    /// `encodeURIComponent` in Node 20.
    #[test]
    fn matches_node() {
        let cases = [
            (
                "/paperclip-workspace/a b/é~'()*!",
                "%2Fpaperclip-workspace%2Fa%20b%2F%C3%A9~'()*!",
            ),
            ("sandbox-1", "sandbox-1"),
            ("a+b=c&d?e#f%g", "a%2Bb%3Dc%26d%3Fe%23f%25g"),
            ("\u{0}\u{7f}😀", "%00%7F%F0%9F%98%80"),
            ("-_.!~*'()", "-_.!~*'()"),
            (
                ",;:@$[]{}|\\^`\"<>",
                "%2C%3B%3A%40%24%5B%5D%7B%7D%7C%5C%5E%60%22%3C%3E",
            ),
            ("", ""),
        ];
        for (text, encoded) in cases {
            assert_eq!(encode_uri_component(text), encoded, "{text:?}");
        }
    }
}
