//! A streaming UTF-8 decoder with the WHATWG `TextDecoder` rules the original relied on: a
//! sequence split across chunks decodes whole, each maximal invalid subpart becomes one U+FFFD,
//! an incomplete sequence at the end becomes one U+FFFD, and a leading BOM is dropped.

#[derive(Debug, Default)]
pub struct Utf8Decoder {
    /// The start of a sequence that the next chunk may complete (at most 3 bytes).
    carry: Vec<u8>,
    /// Whether any text was produced yet (the BOM is only dropped at the very start).
    started: bool,
    /// Keep a leading BOM (`StringDecoder` does, `TextDecoder` does not).
    keep_bom: bool,
}

impl Utf8Decoder {
    /// `new TextDecoder()`: drops a leading BOM.
    pub fn new() -> Self {
        Self::default()
    }

    /// Node's `StringDecoder("utf8")`: keeps a leading BOM.
    pub fn keeping_bom() -> Self {
        Self {
            keep_bom: true,
            ..Self::default()
        }
    }

    /// Decodes the next chunk (`decoder.decode(bytes, {stream: true})`).
    pub fn decode(&mut self, bytes: &[u8]) -> String {
        let mut input = std::mem::take(&mut self.carry);
        input.extend_from_slice(bytes);
        let mut out = String::with_capacity(input.len());
        let mut rest = input.as_slice();
        loop {
            match std::str::from_utf8(rest) {
                Ok(text) => {
                    out.push_str(text);
                    break;
                }
                Err(error) => {
                    let (valid, after) = rest.split_at(error.valid_up_to());
                    // SAFETY-free: `valid` was just checked.
                    out.push_str(std::str::from_utf8(valid).unwrap_or_default());
                    match error.error_len() {
                        Some(len) => {
                            out.push('\u{FFFD}');
                            rest = &after[len..];
                        }
                        None => {
                            self.carry = after.to_vec();
                            break;
                        }
                    }
                }
            }
        }
        self.emit(out)
    }

    /// Flushes the end of the input (`decoder.decode()` / `decoder.end()`).
    pub fn finish(&mut self) -> String {
        if self.carry.is_empty() {
            return String::new();
        }
        self.carry.clear();
        self.emit("\u{FFFD}".to_owned())
    }

    fn emit(&mut self, mut text: String) -> String {
        if !self.started && !text.is_empty() {
            self.started = true;
            if !self.keep_bom && text.starts_with('\u{FEFF}') {
                text.drain(..'\u{FEFF}'.len_utf8());
            }
        }
        text
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
        // Maximal subparts: E0 80 is two errors, ED A0 80 (a surrogate) three.
        let mut d = Utf8Decoder::new();
        assert_eq!(
            d.decode(b"\xE0\x80x\xED\xA0\x80"),
            "\u{fffd}\u{fffd}x\u{fffd}\u{fffd}\u{fffd}"
        );
        let mut d = Utf8Decoder::keeping_bom();
        assert_eq!(d.decode(b"\xEF\xBB\xBFz"), "\u{feff}z");
    }
}
