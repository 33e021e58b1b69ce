//! Streaming UTF-8 decoding for text frames: a multi-byte character split across two reads
//! must come out whole, and invalid bytes become U+FFFD (as the provider's decoder does).

#[derive(Debug, Default)]
pub struct Utf8Stream {
    pending: Vec<u8>,
}

impl Utf8Stream {
    /// Decodes `chunk`, holding back an incomplete trailing sequence for the next call.
    pub fn push(&mut self, chunk: &[u8]) -> String {
        self.pending.extend_from_slice(chunk);
        let mut out = String::with_capacity(self.pending.len());
        let mut rest: &[u8] = &self.pending;
        loop {
            match std::str::from_utf8(rest) {
                Ok(text) => {
                    out.push_str(text);
                    rest = &[];
                    break;
                }
                Err(e) => {
                    let (valid, after) = rest.split_at(e.valid_up_to());
                    out.push_str(std::str::from_utf8(valid).unwrap_or_default());
                    match e.error_len() {
                        Some(bad) => {
                            out.push('\u{FFFD}');
                            rest = &after[bad..];
                        }
                        // Incomplete sequence at the end: wait for the next chunk.
                        None => {
                            rest = after;
                            break;
                        }
                    }
                }
            }
        }
        self.pending = rest.to_vec();
        out
    }

    /// Flushes at end of stream: an incomplete sequence becomes one U+FFFD.
    pub fn finish(&mut self) -> String {
        if self.pending.is_empty() {
            String::new()
        } else {
            self.pending.clear();
            "\u{FFFD}".to_string()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Utf8Stream;

    #[test]
    fn joins_split_characters_and_replaces_invalid_bytes() {
        let mut d = Utf8Stream::default();
        let euro = "€".as_bytes();
        assert_eq!(d.push(&euro[..1]), "");
        assert_eq!(d.push(&euro[1..]), "€");
        assert_eq!(d.push(b"a\xffb"), "a\u{FFFD}b");
        assert_eq!(d.push(&euro[..2]), "");
        assert_eq!(d.finish(), "\u{FFFD}");
    }
}
