//! Base64 as Node's `Buffer` writes and reads it, and the two stricter readings the original
//! applied to protocol fields.
//!
//! The `base64` crate does the coding. Node's `Buffer.from(text, "base64")` is lenient in ways
//! no engine configuration expresses (it stops at the first `=`, skips every character outside
//! both alphabets, mixes the standard and URL-safe alphabets, and drops a last lone character),
//! so [`decode_lenient`] is a thin prefilter that rewrites the text into canonical unpadded
//! base64 and hands it to the crate.

use base64::Engine;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, STANDARD};
use base64::engine::{DecodePaddingMode, general_purpose};

/// Canonical padding, unused low bits of the last character ignored (as Node ignores them).
const CANONICAL_IGNORING_BITS: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new()
        .with_decode_allow_trailing_bits(true)
        .with_decode_padding_mode(DecodePaddingMode::RequireCanonical),
);

/// Unpadded, unused bits ignored: the second half of [`decode_lenient`].
const UNPADDED_IGNORING_BITS: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    general_purpose::NO_PAD.with_decode_allow_trailing_bits(true),
);

/// Padded standard base64 (`buffer.toString("base64")`).
pub fn encode(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

/// `Buffer.from(text, "base64")`: decodes up to the first `=`, ignoring characters outside the
/// alphabet (`-` and `_` count as `+` and `/`); a trailing partial group yields the whole bytes
/// it holds.
pub fn decode_lenient(text: &str) -> Vec<u8> {
    let body = text.split('=').next().unwrap_or_default();
    let mut canonical: Vec<u8> = body
        .bytes()
        .filter_map(|c| match c {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'+' | b'/' => Some(c),
            b'-' => Some(b'+'),
            b'_' => Some(b'/'),
            _ => None,
        })
        .collect();
    // A single character past the last whole group holds fewer than 8 bits: no byte.
    if canonical.len() % 4 == 1 {
        canonical.pop();
    }
    UNPADDED_IGNORING_BITS
        .decode(&canonical)
        .expect("the prefilter leaves canonical unpadded base64")
}

/// Text of the canonical padded shape
/// `^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$` (empty allowed), decoded
/// with the unused bits of the last character ignored; `None` for any other text.
pub fn decode_canonical(text: &str) -> Option<Vec<u8>> {
    CANONICAL_IGNORING_BITS.decode(text).ok()
}

/// Text that is exactly the encoding of its bytes (the canonical shape with zero unused bits),
/// decoded; `None` for any other text.
pub fn decode_exact(text: &str) -> Option<Vec<u8>> {
    STANDARD.decode(text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_like_node() {
        assert_eq!(encode(b""), "");
        assert_eq!(encode(b"h"), "aA==");
        assert_eq!(encode(b"hi"), "aGk=");
        assert_eq!(encode(b"ab"), "YWI=");
        assert_eq!(encode(b"hi!"), "aGkh");
        assert_eq!(encode(&[0xfb, 0xff, 0xbf]), "+/+/");
        assert_eq!(encode("héllo world".as_bytes()), "aMOpbGxvIHdvcmxk");
    }

    /// `Buffer.from(text, "base64")` in Node 20, as hex.
    const NODE_LENIENT: &[(&str, &str)] = &[
        ("", ""),
        ("YQ==YQ==", "61"),
        ("YWJj", "616263"),
        ("YWI", "6162"),
        ("YQ", "61"),
        ("Y", ""),
        ("YWJjZ", "616263"),
        ("aGl=", "6869"),
        ("a G\nk =", "6869"),
        ("-_-_", "fbffbf"),
        ("+/-_", "fbffbf"),
        ("=YWJj", ""),
        ("YW=Jj", "61"),
        ("Y*W$J.j", "616263"),
        ("éYWJj", "616263"),
        ("YWJjYQ", "61626361"),
        ("////", "ffffff"),
    ];

    #[test]
    fn lenient_decode_matches_node() {
        for (text, hex) in NODE_LENIENT {
            let got: String = decode_lenient(text)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            assert_eq!(got, *hex, "{text:?}");
        }
    }

    #[test]
    fn canonical_decode_follows_the_pattern_and_ignores_unused_bits() {
        assert_eq!(decode_canonical(""), Some(vec![]));
        assert_eq!(decode_canonical("aGk="), Some(b"hi".to_vec()));
        assert_eq!(decode_canonical("aGl="), Some(b"hi".to_vec()));
        for bad in [
            "aGk", "aGk==", "a===", "aG=k", "aG k", "aGk=\n", "a-_=", "====", "aGk=aGk=", "a",
        ] {
            assert_eq!(decode_canonical(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn exact_decode_refuses_unused_bits() {
        assert_eq!(decode_exact("aGk="), Some(b"hi".to_vec()));
        assert_eq!(decode_exact("aGkh"), Some(b"hi!".to_vec()));
        assert_eq!(decode_exact("+/+/"), Some(vec![0xfb, 0xff, 0xbf]));
        for bad in ["aGk", "aGl=", "a+/=", "aGk=\n", " aGk=", "-_-_", "aG=="] {
            assert_eq!(decode_exact(bad), None, "{bad:?}");
        }
    }

    /// Every string of up to five characters over a small alphabet that exercises each rule,
    /// against the canonical-shape pattern decoded by hand.
    #[test]
    fn canonical_and_exact_agree_with_the_pattern_exhaustively() {
        fn by_hand(text: &str, exact: bool) -> Option<Vec<u8>> {
            let value = |c: u8| match c {
                b'A' => Some(0u32),
                b'B' => Some(1),
                b'/' => Some(63),
                _ => None,
            };
            let bytes = text.as_bytes();
            if !bytes.len().is_multiple_of(4) {
                return None;
            }
            let mut out = Vec::new();
            let quads = bytes.len() / 4;
            for (i, quad) in bytes.chunks(4).enumerate() {
                let last = i + 1 == quads;
                let padding = match (quad[2], quad[3]) {
                    (b'=', b'=') if last => 2,
                    (_, b'=') if last => 1,
                    _ => 0,
                };
                let mut n = 0u32;
                for (j, c) in quad[..4 - padding].iter().enumerate() {
                    n |= value(*c)? << (18 - 6 * j);
                }
                if exact && padding > 0 && n & ((1 << (8 * padding)) - 1) != 0 {
                    return None;
                }
                out.extend((0..3 - padding).map(|j| (n >> (16 - 8 * j)) as u8));
            }
            Some(out)
        }
        let alphabet = ["A", "B", "/", "=", "-", " "];
        let mut texts = vec![String::new()];
        let mut level = vec![String::new()];
        for _ in 0..5 {
            level = level
                .iter()
                .flat_map(|t| alphabet.iter().map(move |c| format!("{t}{c}")))
                .collect();
            texts.extend(level.iter().cloned());
        }
        for text in &texts {
            assert_eq!(decode_canonical(text), by_hand(text, false), "{text:?}");
            assert_eq!(decode_exact(text), by_hand(text, true), "{text:?}");
        }
    }
}
