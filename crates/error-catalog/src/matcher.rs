//! Message templates as matchers: literal text must match exactly, each `${…}` part matches any
//! text (including none).

use std::cmp::Reverse;

/// A compiled template: literal pieces around the interpolations.
///
/// `pieces.len() == holes + 1`; the message must start with the first piece, end with the last,
/// and contain the others in order in between.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Template {
    pieces: Vec<String>,
}

impl Template {
    /// Compiles a contract template. `${…}` may nest braces (`${a ? `: ${b}` : ""}` is one
    /// interpolation). The escape `\n` in literal text stands for a newline (contract lines are
    /// single lines). Leading and trailing whitespace of the template is ignored, as it is of
    /// the message.
    pub fn compile(template: &str) -> Template {
        let mut pieces = vec![String::new()];
        let mut chars = template.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '$' if chars.peek() == Some(&'{') => {
                    chars.next();
                    let mut depth = 1usize;
                    for inner in chars.by_ref() {
                        match inner {
                            '{' => depth += 1,
                            '}' => {
                                depth -= 1;
                                if depth == 0 {
                                    break;
                                }
                            }
                            _ => {}
                        }
                    }
                    pieces.push(String::new());
                }
                '\\' if chars.peek() == Some(&'n') => {
                    chars.next();
                    pieces.last_mut().expect("non-empty").push('\n');
                }
                _ => pieces.last_mut().expect("non-empty").push(c),
            }
        }
        let first = pieces.first_mut().expect("non-empty");
        *first = first.trim_start().to_owned();
        let last = pieces.last_mut().expect("non-empty");
        *last = last.trim_end().to_owned();
        Template { pieces }
    }

    /// Number of interpolated parts.
    pub fn holes(&self) -> usize {
        self.pieces.len() - 1
    }

    /// Number of literal characters: the specificity of the template.
    pub fn literal_len(&self) -> usize {
        self.pieces.iter().map(|p| p.chars().count()).sum()
    }

    /// Sort key, smallest = most specific.
    pub fn rank(&self) -> (Reverse<usize>, usize) {
        (Reverse(self.literal_len()), self.holes())
    }

    /// Whether the (already trimmed) message is an instance of this template.
    pub fn matches(&self, message: &str) -> bool {
        let (first, rest) = self.pieces.split_first().expect("non-empty");
        if rest.is_empty() {
            return message == first;
        }
        let Some(mut tail) = message.strip_prefix(first.as_str()) else {
            return false;
        };
        let (last, middle) = rest.split_last().expect("non-empty");
        // With only "any text" wildcards, taking the leftmost occurrence of each middle piece
        // is optimal: it leaves the longest remainder for the pieces after it.
        for piece in middle {
            match tail.find(piece.as_str()) {
                Some(at) => tail = &tail[at + piece.len()..],
                None => return false,
            }
        }
        tail.ends_with(last.as_str())
    }

    /// The template with every interpolation replaced by `fill` (used by tests and docs).
    pub fn instantiate(&self, fill: &str) -> String {
        self.pieces.join(fill)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_interpolations_are_one_hole() {
        let t = Template::compile(
            "Kubernetes ${input.label} failed (exit ${result.exitCode})${detail ? `: ${detail}` : \"\"}",
        );
        assert_eq!(t.holes(), 3);
        assert!(t.matches("Kubernetes syncIn file transfer failed (exit 42): ESCAPE"));
        assert!(t.matches("Kubernetes syncIn file transfer failed (exit 42)"));
        assert!(!t.matches("Kubernetes syncIn file transfer failed exit 42"));
    }

    #[test]
    fn literal_templates_match_exactly() {
        let t = Template::compile("Invalid");
        assert!(t.matches("Invalid"));
        assert!(!t.matches("Invalid url"));
        assert_eq!(t.holes(), 0);
    }

    #[test]
    fn newline_escape_and_trailing_whitespace() {
        let t = Template::compile("${a}\\nPolicy denied.${b} Ask ${c}.\\n");
        assert!(t.matches("curl: failed\nPolicy denied. No grant. Ask x."));
        assert!(!t.matches("curl: failed Policy denied. Ask x."));
    }

    #[test]
    fn middle_pieces_must_not_overlap() {
        let t = Template::compile("a${x}aa${y}a");
        assert!(t.matches("aaaa"));
        assert!(!t.matches("aaa"));
    }
}
