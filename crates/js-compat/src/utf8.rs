//! Streaming UTF-8 decoding as `TextDecoder` (`decode(bytes, {stream: true})`) and Node's
//! `StringDecoder("utf8")` do it: a sequence split across chunks decodes whole, each maximal
//! invalid subpart becomes one U+FFFD, an incomplete sequence at the end becomes one U+FFFD;
//! `TextDecoder` drops a leading BOM, `StringDecoder` keeps it.
//!
//! The decoding is `encoding_rs`, the WHATWG Encoding Standard's decoder (the standard
//! `TextDecoder` is defined by), which both rules follow.

use encoding_rs::{CoderResult, Decoder, UTF_8};

#[derive(Debug)]
pub struct Utf8Decoder {
    decoder: Decoder,
}

impl Default for Utf8Decoder {
    fn default() -> Self {
        Self::new()
    }
}

impl Utf8Decoder {
    /// `new TextDecoder()`: drops a leading BOM.
    pub fn new() -> Self {
        Self {
            decoder: UTF_8.new_decoder_with_bom_removal(),
        }
    }

    /// Node's `StringDecoder("utf8")`: keeps a leading BOM.
    pub fn keeping_bom() -> Self {
        Self {
            decoder: UTF_8.new_decoder_without_bom_handling(),
        }
    }

    /// Decodes the next chunk (`decoder.decode(bytes, {stream: true})`).
    pub fn decode(&mut self, bytes: &[u8]) -> String {
        let mut out = String::new();
        self.run(bytes, false, &mut out);
        out
    }

    /// [`Utf8Decoder::decode`], appending to `out` instead of a new string (no second copy
    /// for a reader that accumulates text).
    pub fn decode_into(&mut self, bytes: &[u8], out: &mut String) {
        self.run(bytes, false, out);
    }

    /// Flushes the end of the input (`decoder.decode()` / `decoder.end()`). The decoder may be
    /// used again afterwards, as a new one that keeps any BOM.
    pub fn finish(&mut self) -> String {
        let mut text = String::new();
        self.run(&[], true, &mut text);
        self.decoder = UTF_8.new_decoder_without_bom_handling();
        text
    }

    fn run(&mut self, mut bytes: &[u8], last: bool, out: &mut String) {
        loop {
            let needed = self
                .decoder
                .max_utf8_buffer_length(bytes.len())
                .unwrap_or(bytes.len().saturating_mul(3).saturating_add(16));
            out.reserve(needed);
            let (result, read, _) = self.decoder.decode_to_string(bytes, out, last);
            bytes = &bytes[read..];
            match result {
                CoderResult::InputEmpty => return,
                CoderResult::OutputFull => continue,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_sequences_and_replacement() {
        let mut d = Utf8Decoder::new();
        assert_eq!(d.decode(b"\xEF\xBB"), "");
        assert_eq!(d.decode(b"\xBFa\xC3"), "a");
        assert_eq!(d.decode(b"\xA9\xFFb\xF0\x9F"), "\u{e9}\u{fffd}b");
        assert_eq!(d.finish(), "\u{fffd}");
        assert_eq!(d.finish(), "");
        // Maximal subparts: E0 80 is two errors, ED A0 80 (a surrogate) three.
        let mut d = Utf8Decoder::new();
        assert_eq!(
            d.decode(b"\xE0\x80x\xED\xA0\x80"),
            "\u{fffd}\u{fffd}x\u{fffd}\u{fffd}\u{fffd}"
        );
        let mut d = Utf8Decoder::keeping_bom();
        assert_eq!(d.decode(b"\xEF\xBB\xBFz"), "\u{feff}z");
        // Only the first BOM goes.
        let mut d = Utf8Decoder::new();
        assert_eq!(d.decode(b"\xEF\xBB\xBF\xEF\xBB\xBFz"), "\u{feff}z");
    }

    /// Inputs fed byte by byte and whole, with what `new TextDecoder().decode(...)` returned in
    /// Node 20 (as code points).
    #[test]
    fn matches_text_decoder() {
        let cases: &[(&[u8], &str)] = &[
            (b"\xF0\x9F\x98\x80", "\u{1f600}"),
            (b"\xF0\x9F\x98", "\u{fffd}"),
            (b"\xF0\x9F\x98a", "\u{fffd}a"),
            (b"\xC0\xAF", "\u{fffd}\u{fffd}"),
            (b"\xF4\x90\x80\x80", "\u{fffd}\u{fffd}\u{fffd}\u{fffd}"),
            (b"\xE2\x82", "\u{fffd}"),
            (b"\x80\x80", "\u{fffd}\u{fffd}"),
            (b"a\xEF\xBB\xBFb", "a\u{feff}b"),
        ];
        for (bytes, text) in cases {
            let mut whole = Utf8Decoder::new();
            let mut got = whole.decode(bytes);
            got.push_str(&whole.finish());
            assert_eq!(got, *text, "{bytes:?} whole");
            let mut split = Utf8Decoder::new();
            let mut got: String = bytes.iter().map(|b| split.decode(&[*b])).collect();
            got.push_str(&split.finish());
            assert_eq!(got, *text, "{bytes:?} byte by byte");
        }
    }
}
