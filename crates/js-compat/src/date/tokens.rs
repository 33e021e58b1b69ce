//! V8's date-string tokens: numbers, the symbols `: - + . )`, words (month and zone names,
//! AM/PM, `T`), white space, and everything else (parenthesised comments included).

use crate::string::is_whitespace as is_js_whitespace;

/// V8 keeps at most this many significant digits of a numeral.
const MAX_SIGNIFICANT_DIGITS: usize = 9;

/// What a keyword word means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum KeywordType {
    /// An unknown word.
    Invalid,
    MonthName,
    TimeZoneName,
    TimeSeparator,
    AmPm,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Token {
    EndOfInput,
    /// The ISO parser's "give up": the whole string is invalid.
    Invalid,
    /// A character no rule uses (and parenthesised comments).
    Unknown,
    WhiteSpace,
    /// Digits: their value (capped at nine significant digits) and their count.
    Number {
        value: i64,
        length: usize,
    },
    /// One of `: - + . )`.
    Symbol(u16),
    /// A word: its meaning, its value (month 1–12, zone hours, AM/PM hour offset) and length.
    Keyword {
        kind: KeywordType,
        value: i64,
        length: usize,
    },
}

impl Token {
    pub(super) fn is_number(self) -> bool {
        matches!(self, Token::Number { .. })
    }

    pub(super) fn is_fixed_length_number(self, n: usize) -> bool {
        matches!(self, Token::Number { length, .. } if length == n)
    }

    pub(super) fn number(self) -> i64 {
        match self {
            Token::Number { value, .. } => value,
            _ => 0,
        }
    }

    pub(super) fn is_symbol(self, c: u8) -> bool {
        self == Token::Symbol(c as u16)
    }

    /// `+` gives 1, `-` gives -1.
    pub(super) fn ascii_sign(self) -> Option<i64> {
        match self {
            Token::Symbol(c) if c == b'+' as u16 => Some(1),
            Token::Symbol(c) if c == b'-' as u16 => Some(-1),
            _ => None,
        }
    }

    pub(super) fn is_keyword_type(self, wanted: KeywordType) -> bool {
        matches!(self, Token::Keyword { kind, .. } if kind == wanted)
    }

    /// The single letter `Z` (UTC).
    pub(super) fn is_keyword_z(self) -> bool {
        matches!(
            self,
            Token::Keyword {
                kind: KeywordType::TimeZoneName,
                value: 0,
                length: 1
            }
        )
    }
}

/// The words V8 knows: month names (any word starting with the first three letters), AM/PM,
/// zone names and `T`.
const KEYWORDS: [(&[u8; 3], KeywordType, i64); 27] = [
    (b"jan", KeywordType::MonthName, 1),
    (b"feb", KeywordType::MonthName, 2),
    (b"mar", KeywordType::MonthName, 3),
    (b"apr", KeywordType::MonthName, 4),
    (b"may", KeywordType::MonthName, 5),
    (b"jun", KeywordType::MonthName, 6),
    (b"jul", KeywordType::MonthName, 7),
    (b"aug", KeywordType::MonthName, 8),
    (b"sep", KeywordType::MonthName, 9),
    (b"oct", KeywordType::MonthName, 10),
    (b"nov", KeywordType::MonthName, 11),
    (b"dec", KeywordType::MonthName, 12),
    (b"am\0", KeywordType::AmPm, 0),
    (b"pm\0", KeywordType::AmPm, 12),
    (b"ut\0", KeywordType::TimeZoneName, 0),
    (b"utc", KeywordType::TimeZoneName, 0),
    (b"z\0\0", KeywordType::TimeZoneName, 0),
    (b"gmt", KeywordType::TimeZoneName, 0),
    (b"cdt", KeywordType::TimeZoneName, -5),
    (b"cst", KeywordType::TimeZoneName, -6),
    (b"edt", KeywordType::TimeZoneName, -4),
    (b"est", KeywordType::TimeZoneName, -5),
    (b"mdt", KeywordType::TimeZoneName, -6),
    (b"mst", KeywordType::TimeZoneName, -7),
    (b"pdt", KeywordType::TimeZoneName, -7),
    (b"pst", KeywordType::TimeZoneName, -8),
    (b"t\0\0", KeywordType::TimeSeparator, 0),
];

fn lookup_keyword(prefix: [u32; 3], length: usize) -> (KeywordType, i64) {
    for (word, kind, value) in KEYWORDS {
        let same_prefix = word.iter().zip(prefix).all(|(&w, p)| w as u32 == p);
        // Only month names may be longer than their three-letter key ("January").
        if same_prefix && (length <= 3 || kind == KeywordType::MonthName) {
            return (kind, value);
        }
    }
    (KeywordType::Invalid, 0)
}

/// Splits the string (UTF-16 code units) into tokens, with one token of lookahead.
pub(super) struct Tokenizer<'a> {
    units: &'a [u16],
    pos: usize,
    next: Token,
}

impl<'a> Tokenizer<'a> {
    pub(super) fn new(units: &'a [u16]) -> Self {
        let mut tokenizer = Tokenizer {
            units,
            pos: 0,
            next: Token::EndOfInput,
        };
        tokenizer.next = tokenizer.scan();
        tokenizer
    }

    pub(super) fn peek(&self) -> Token {
        self.next
    }

    pub(super) fn next(&mut self) -> Token {
        let current = self.next;
        self.next = self.scan();
        current
    }

    pub(super) fn skip_symbol(&mut self, c: u8) -> bool {
        if self.next.is_symbol(c) {
            self.next();
            true
        } else {
            false
        }
    }

    fn current(&self) -> Option<u16> {
        self.units.get(self.pos).copied()
    }

    /// White space or a line terminator: a white-space token.
    fn is_white_space(unit: u16) -> bool {
        char::from_u32(unit as u32).is_some_and(is_js_whitespace)
    }

    /// What ends a word: white space proper. The line terminators U+2028 and U+2029 do not end
    /// a word (they are above `A`), so `Jan 5 2026\u{2029}` is a date followed by an unknown word.
    fn ends_word(unit: u16) -> bool {
        Self::is_white_space(unit) && unit != 0x2028 && unit != 0x2029
    }

    fn scan(&mut self) -> Token {
        let start = self.pos;
        let Some(c) = self.current() else {
            return Token::EndOfInput;
        };
        if (b'0' as u16..=b'9' as u16).contains(&c) {
            return self.read_number(start);
        }
        if [b':', b'-', b'+', b'.', b')']
            .iter()
            .any(|&s| s as u16 == c)
        {
            self.pos += 1;
            return Token::Symbol(c);
        }
        // Every code unit from `A` up, letters or not, is part of a word, except white space.
        if c >= b'A' as u16 && !Self::ends_word(c) {
            let mut prefix = [0u32; 3];
            let mut length = 0;
            while let Some(c) = self
                .current()
                .filter(|&c| c >= b'A' as u16 && !Self::ends_word(c))
            {
                if length < 3 {
                    // ASCII letters fold to lower case; other units cannot match a keyword.
                    prefix[length] = c as u32 | 0x20;
                }
                length += 1;
                self.pos += 1;
            }
            let (kind, value) = lookup_keyword(prefix, length);
            return Token::Keyword {
                kind,
                value,
                length,
            };
        }
        if Self::is_white_space(c) {
            self.pos += 1;
            return Token::WhiteSpace;
        }
        if c == b'(' as u16 {
            // A parenthesised comment, nesting included, up to its balancing `)`.
            let mut depth = 0usize;
            loop {
                match self.current() {
                    Some(c) if c == b')' as u16 => depth = depth.saturating_sub(1),
                    Some(c) if c == b'(' as u16 => depth += 1,
                    _ => {}
                }
                self.pos += 1;
                if depth == 0 || self.current().is_none() {
                    break;
                }
            }
            return Token::Unknown;
        }
        self.pos += 1;
        Token::Unknown
    }

    /// Digits after leading zeros count towards the value up to nine of them; the rest are
    /// read but ignored. The length counts every digit, leading zeros included.
    fn read_number(&mut self, start: usize) -> Token {
        let digit = |c: u16| (b'0' as u16..=b'9' as u16).contains(&c);
        while self.current() == Some(b'0' as u16) {
            self.pos += 1;
        }
        let mut value = 0i64;
        let mut significant = 0;
        while let Some(c) = self.current().filter(|&c| digit(c)) {
            if significant < MAX_SIGNIFICANT_DIGITS {
                value = value * 10 + (c - b'0' as u16) as i64;
            }
            significant += 1;
            self.pos += 1;
        }
        Token::Number {
            value,
            length: self.pos - start,
        }
    }
}

/// The first three digits of a fraction of a second, whatever its length (`5` is 500 ms,
/// `1234` is 123 ms).
pub(super) fn read_milliseconds(token: Token) -> i64 {
    let Token::Number { mut value, length } = token else {
        return 0;
    };
    match length {
        1 => value *= 100,
        2 => value *= 10,
        3 => {}
        _ => {
            let mut length = length.min(MAX_SIGNIFICANT_DIGITS);
            let mut factor = 1;
            while length > 3 {
                factor *= 10;
                length -= 1;
            }
            value /= factor;
        }
    }
    value
}
