//! The captured output of a command: the last 4 194 304 UTF-16 units of each stream (JS string
//! length), with `outputTruncated` once anything was cut. Live logs get every chunk uncut.

use sandbox_core::{HostSink, OutputStream};

use js_compat::string;

/// Captured tail per stream, in UTF-16 units.
pub const MAX_CAPTURE_UNITS: usize = 4_194_304;

/// Compact the buffer once this many bytes at its front are dead.
const COMPACT_AFTER_BYTES: usize = 1 << 20;

/// The tail of one stream. Cutting is amortised: the dead front is dropped in bulk.
#[derive(Debug, Default)]
pub struct Tail {
    buf: String,
    /// Byte offset of the live text in `buf`.
    start: usize,
    /// UTF-16 length of the live text, including the split-pair unit below.
    units: usize,
    /// The cut fell inside a surrogate pair, leaving JS a lone low surrogate in front. A Rust
    /// string cannot hold one; it is kept as one unit and rendered as U+FFFD.
    split_pair: bool,
    limit: usize,
}

impl Tail {
    pub fn new() -> Self {
        Self::with_limit(MAX_CAPTURE_UNITS)
    }

    pub fn with_limit(limit: usize) -> Self {
        Self {
            limit,
            ..Self::default()
        }
    }

    /// Appends `text`; returns whether anything had to be cut.
    pub fn push(&mut self, text: &str) -> bool {
        self.buf.push_str(text);
        self.units += string::utf16_len(text);
        if self.units <= self.limit {
            return false;
        }
        let mut excess = self.units - self.limit;
        if self.split_pair {
            self.split_pair = false;
            excess -= 1;
            self.units -= 1;
        }
        let live = &self.buf[self.start..];
        // The common case, ASCII output: every byte is one unit, so the cut is `excess` bytes.
        if live.len() >= excess && live.as_bytes()[..excess].is_ascii() {
            self.start += excess;
            self.units -= excess;
            self.compact();
            return true;
        }
        let mut cut = 0;
        for c in live.chars() {
            if excess == 0 {
                break;
            }
            cut += c.len_utf8();
            let width = c.len_utf16();
            if width <= excess {
                excess -= width;
                self.units -= width;
            } else {
                // Half of a pair goes: its low surrogate stays, one unit long.
                excess = 0;
                self.units -= 1;
                self.split_pair = true;
            }
        }
        self.start += cut;
        self.compact();
        true
    }

    /// Drops the dead front once it is large and at least half the buffer, so each byte is
    /// moved at most about once more.
    fn compact(&mut self) {
        if self.start >= COMPACT_AFTER_BYTES && self.start * 2 >= self.buf.len() {
            self.buf.drain(..self.start);
            self.start = 0;
        }
    }

    pub fn text(&self) -> String {
        let mut text = String::with_capacity(self.buf.len() - self.start + 3);
        if self.split_pair {
            text.push('\u{FFFD}');
        }
        text.push_str(&self.buf[self.start..]);
        text
    }
}

/// stdout and stderr of one command, and whether either was cut.
pub struct Output<'a> {
    stdout: Tail,
    stderr: Tail,
    truncated: bool,
    log: Option<&'a dyn HostSink>,
}

impl<'a> Output<'a> {
    /// `log` receives every non-empty chunk as it arrives (`ctx.execution.log`).
    pub fn new(log: Option<&'a dyn HostSink>) -> Self {
        Self {
            stdout: Tail::new(),
            stderr: Tail::new(),
            truncated: false,
            log,
        }
    }

    /// Keeps the chunk's tail, then logs the chunk itself (awaiting the host, so a fast command
    /// is paced by a slow consumer). The chunk is moved to the log, not copied.
    pub async fn append(&mut self, stream: OutputStream, text: String) {
        if text.is_empty() {
            return;
        }
        let tail = match stream {
            OutputStream::Stdout => &mut self.stdout,
            OutputStream::Stderr => &mut self.stderr,
        };
        if tail.push(&text) {
            self.truncated = true;
        }
        if let Some(log) = self.log {
            log.execution_log(stream, text).await;
        }
    }

    pub fn stdout(&self) -> String {
        self.stdout.text()
    }

    pub fn stderr(&self) -> String {
        self.stderr.text()
    }

    pub fn truncated(&self) -> bool {
        self.truncated
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_tail_in_utf16_units() {
        let mut t = Tail::with_limit(4);
        assert!(!t.push("ab"));
        assert!(!t.push("cd"));
        assert!(t.push("e"));
        assert_eq!(t.text(), "bcde");
        // An astral char is two units; cutting through it leaves one (lone) unit.
        assert!(t.push("\u{1F600}"));
        assert_eq!(t.text(), "de\u{1F600}");
        assert!(t.push("x"));
        assert_eq!(t.text(), "e\u{1F600}x");
        let mut t = Tail::with_limit(3);
        t.push("a\u{1F600}");
        assert!(t.push("b"));
        // JS: "a\ud83d\ude00b".slice(-3) is the whole pair and "b".
        assert_eq!(t.text(), "\u{1F600}b");
        assert!(t.push("c"));
        assert_eq!(t.text(), "\u{FFFD}bc");
        assert!(t.push("d"));
        assert_eq!(t.text(), "bcd");
    }

    /// JS semantics, the slow way: all UTF-16 units, the last `limit` of them, a lone
    /// surrogate rendered as U+FFFD.
    fn js_tail(chunks: &[String], limit: usize) -> String {
        let units: Vec<u16> = chunks.iter().flat_map(|c| c.encode_utf16()).collect();
        String::from_utf16_lossy(&units[units.len().saturating_sub(limit)..])
    }

    proptest::proptest! {
        #[test]
        fn matches_js_slicing_for_any_mix_of_chunks(
            chunks in proptest::collection::vec("[a-z0-9 ]{0,12}|[é€😀x]{1,4}", 1..60),
            limit in 1usize..40,
        ) {
            let mut t = Tail::with_limit(limit);
            let mut cut = false;
            for chunk in &chunks {
                cut |= t.push(chunk);
            }
            proptest::prop_assert_eq!(t.text(), js_tail(&chunks, limit));
            let total: usize = chunks.iter().map(|c| c.encode_utf16().count()).sum();
            proptest::prop_assert_eq!(cut, total > limit);
        }
    }

    #[test]
    fn large_outputs_stay_bounded() {
        let mut t = Tail::with_limit(10);
        for i in 0..200_000 {
            t.push(if i % 2 == 0 { "0123456789" } else { "é" });
        }
        assert_eq!(t.text(), "123456789é");
        assert!(t.buf.len() < 4 * COMPACT_AFTER_BYTES);
    }
}
