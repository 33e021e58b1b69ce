//! JS string methods: `trim` (and `trimEnd`), `length` and `slice` in UTF-16 code units,
//! `toLowerCase`.
//!
//! Rust strings cannot hold the lone surrogates a JS string may, so these work on well-formed
//! text only; the providers replace lone surrogates at the JSON boundary (see
//! [`crate::json::lone_surrogates_replaced`]).

/// Characters `String.prototype.trim` removes: WhiteSpace and LineTerminator of ECMA-262. NEL
/// (U+0085) is not one of them, unlike in Rust's `char::is_whitespace`.
pub fn is_whitespace(c: char) -> bool {
    matches!(
        c,
        '\u{0009}'
            | '\u{000A}'
            | '\u{000B}'
            | '\u{000C}'
            | '\u{000D}'
            | '\u{0020}'
            | '\u{00A0}'
            | '\u{1680}'
            | '\u{2000}'
            ..='\u{200A}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202F}'
                | '\u{205F}'
                | '\u{3000}'
                | '\u{FEFF}'
    )
}

/// `s.trim()`.
pub fn trim(s: &str) -> &str {
    s.trim_matches(is_whitespace)
}

/// `s.trimEnd()`.
pub fn trim_end(s: &str) -> &str {
    s.trim_end_matches(is_whitespace)
}

/// `s.length`: the number of UTF-16 code units.
///
/// Counted on bytes, not chars, because it runs on every chunk of streamed output. ASCII (the
/// usual output) is one unit per byte, checked a word at a time. Otherwise each character is
/// one unit except those outside the BMP (4-byte UTF-8 sequences), which are two: the bytes that
/// start a character plus the bytes that start a 4-byte one.
pub fn utf16_len(s: &str) -> usize {
    if s.is_ascii() {
        return s.len();
    }
    s.bytes()
        .map(|b| usize::from((b as i8) >= -0x40) + usize::from(b >= 0xF0))
        .sum()
}

/// `s.slice(start, end)`, over UTF-16 code units; negative positions count from the end. A cut
/// through a surrogate pair leaves half a character, which a Rust string cannot hold: it becomes
/// U+FFFD, as it does wherever Node turns such a string into UTF-8.
pub fn slice(s: &str, start: i64, end: Option<i64>) -> String {
    let units: Vec<u16> = s.encode_utf16().collect();
    let len = units.len() as i64;
    let clamp = |i: i64| if i < 0 { (len + i).max(0) } else { i.min(len) };
    let from = clamp(start);
    let to = clamp(end.unwrap_or(len));
    if from >= to {
        return String::new();
    }
    String::from_utf16_lossy(&units[from as usize..to as usize])
}

/// `s.toLowerCase()`.
///
/// V8 uses ICU's full default (root-locale) lower-casing: SpecialCasing's unconditional
/// mappings (`İ` -> `i` + U+0307) plus the context-sensitive Final_Sigma rule. Rust's
/// `str::to_lowercase` implements the same two rules; it was checked against Node 20 for every
/// code point and for the Final_Sigma contexts, with no difference. The tests pin the cases the
/// Kubernetes namespace derivation depends on.
pub fn to_lower_case(s: &str) -> String {
    s.to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn length_counts_utf16_units() {
        for text in [
            "",
            "plain ascii",
            "é",
            "€ euro",
            "😀",
            "a😀b€é\u{10FFFF}\u{7F}\u{80}\u{7FF}\u{800}\u{FFFF}\u{10000}",
        ] {
            let by_chars: usize = text.chars().map(char::len_utf16).sum();
            assert_eq!(utf16_len(text), by_chars, "{text:?}");
        }
        assert_eq!(utf16_len("abc"), 3);
        assert_eq!(utf16_len("é"), 1);
        assert_eq!(utf16_len("🚀"), 2);
        assert_eq!(utf16_len("a\u{1f600}é"), 4);
        assert_eq!(utf16_len("€"), 1);
    }

    #[test]
    fn trim_follows_js() {
        assert_eq!(trim("\u{feff}\u{3000} a b \n\u{2028}"), "a b");
        assert_eq!(trim("\u{0085}x"), "\u{0085}x", "NEL is not JS whitespace");
        assert_eq!(trim_end(" a \u{a0}\t"), " a");
        assert_eq!(
            trim("\u{180e}x"),
            "\u{180e}x",
            "U+180E stopped being white space"
        );
    }

    /// `s.slice(...)` in Node 20 (lone surrogates shown as U+FFFD).
    #[test]
    fn slice_matches_node() {
        assert_eq!(slice("abcdef", 0, Some(-2)), "abcd");
        assert_eq!(slice("abcdef", -2, None), "ef");
        assert_eq!(slice("ab", -5, None), "ab");
        assert_eq!(slice("ab", 3, None), "");
        assert_eq!(slice("abc", 2, Some(1)), "");
        assert_eq!(slice("abc", -10, Some(2)), "ab");
        assert_eq!(slice("a😀b", 0, Some(2)), "a\u{fffd}");
        assert_eq!(slice("a😀b", 2, None), "\u{fffd}b");
    }

    #[test]
    fn lower_case_follows_js() {
        assert_eq!(to_lower_case("\u{212A}elvin"), "kelvin");
        assert_eq!(to_lower_case("İ"), "i\u{307}");
        assert_eq!(to_lower_case("ΣΙΣΥΦΟΣ"), "σισυφος");
        assert_eq!(to_lower_case("Σ"), "σ");
        assert_eq!(to_lower_case("Α.Σ"), "α.ς");
        assert_eq!(to_lower_case("ＡＢＣ"), "ａｂｃ");
        assert_eq!(to_lower_case("Straße"), "straße");
    }
}
