//! Standard (RFC 4648 §4) base64 with padding, and the two decoding rules of the original:
//!
//! - process output (`data_base64` of a frame): the text must match the canonical-shape pattern
//!   `^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$`; the unused low bits of
//!   the last character are ignored, as Node's `Buffer.from(text, "base64")` ignores them;
//! - duplex writes (the SDK's `decodeChannelBytes`): a non-empty string whose decoding encodes
//!   back to exactly the same text, i.e. the shape above *and* zero unused bits.

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn value(c: u8) -> Option<u32> {
    match c {
        b'A'..=b'Z' => Some(u32::from(c - b'A')),
        b'a'..=b'z' => Some(u32::from(c - b'a') + 26),
        b'0'..=b'9' => Some(u32::from(c - b'0') + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    }
}

/// Padded standard base64 (`Buffer.prototype.toString("base64")`).
pub fn encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Decodes text of the canonical shape; `None` for any other text. With `strict`, non-zero
/// unused bits in the last character are refused too.
fn decode(text: &str, strict: bool) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    if !bytes.len().is_multiple_of(4) {
        return None;
    }
    let mut out = Vec::with_capacity(bytes.len() / 4 * 3);
    let quads = bytes.len() / 4;
    for (index, quad) in bytes.chunks(4).enumerate() {
        let last = index + 1 == quads;
        let padding = match (quad[2], quad[3]) {
            (b'=', b'=') if last => 2,
            (_, b'=') if last => 1,
            _ => 0,
        };
        let mut n = 0u32;
        for (i, c) in quad[..4 - padding].iter().enumerate() {
            n |= value(*c)? << (18 - 6 * i);
        }
        let produced = 3 - padding;
        if strict && padding > 0 && n & ((1 << (8 * padding)) - 1) != 0 {
            return None;
        }
        out.extend((0..produced).map(|i| (n >> (16 - 8 * i)) as u8));
    }
    Some(out)
}

/// `data_base64` of a process output frame: canonical shape (empty allowed), unused bits
/// ignored.
pub fn decode_frame_data(text: &str) -> Option<Vec<u8>> {
    decode(text, false)
}

/// The SDK's `decodeChannelBytes(value)`: bytes of a non-empty string whose decoding re-encodes
/// to the same text, else `None` (a protocol error, never empty input).
pub fn decode_channel_bytes(value: Option<&serde_json::Value>) -> Option<Vec<u8>> {
    match value {
        Some(serde_json::Value::String(text)) if !text.is_empty() => decode(text, true),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn encodes_like_node() {
        assert_eq!(encode(b""), "");
        assert_eq!(encode(b"h"), "aA==");
        assert_eq!(encode(b"hi"), "aGk=");
        assert_eq!(encode(b"hi!"), "aGkh");
        assert_eq!(encode(&[0xfb, 0xff, 0xbf]), "+/+/");
    }

    #[test]
    fn frame_data_follows_the_pattern_and_ignores_unused_bits() {
        assert_eq!(decode_frame_data(""), Some(vec![]));
        assert_eq!(decode_frame_data("aGk="), Some(b"hi".to_vec()));
        // Unused bits set: the pattern matches and Node ignores them.
        assert_eq!(decode_frame_data("aGl="), Some(b"hi".to_vec()));
        for bad in [
            "aGk", "aGk==", "a===", "aG=k", "aG k", "aGk=\n", "a-_=", "====", "aGk=aGk=",
        ] {
            assert_eq!(decode_frame_data(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn channel_bytes_must_round_trip() {
        let d = |v: serde_json::Value| decode_channel_bytes(Some(&v));
        assert_eq!(d(json!("aGk=")), Some(b"hi".to_vec()));
        assert_eq!(d(json!("aGkh")), Some(b"hi!".to_vec()));
        assert_eq!(d(json!("+/+/")), Some(vec![0xfb, 0xff, 0xbf]));
        for bad in [
            json!(""),
            json!("aGk"),
            json!("aGl="),
            json!("a+/="),
            json!("aGk=\n"),
            json!(" aGk="),
            json!("-_-_"),
            json!(null),
            json!(5),
            json!(["aGk="]),
        ] {
            assert_eq!(d(bad.clone()), None, "{bad}");
        }
        assert_eq!(decode_channel_bytes(None), None);
    }
}
