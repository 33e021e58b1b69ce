//! The two parsers V8 runs in turn: the ECMAScript date-time format first, then its legacy
//! rules over whatever the first one could not use.

use super::Fields;
use super::composers::{
    DayComposer, NONE, TimeComposer, TimeZoneComposer, between, is_day, is_hour, is_minute,
    is_month,
};
use super::tokens::{KeywordType, Token, Tokenizer, read_milliseconds};

pub(super) fn parse_fields(units: &[u16]) -> Option<Fields> {
    let mut scanner = Tokenizer::new(units);
    let mut day = DayComposer::default();
    let mut time = TimeComposer::new();
    let mut tz = TimeZoneComposer::new();

    let first_unhandled = parse_iso(&mut scanner, &mut day, &mut time, &mut tz);
    if first_unhandled == Token::Invalid {
        return None;
    }
    let mut has_read_number = !day.comp.is_empty();
    let mut token = first_unhandled;
    // Whatever the ISO parser left is read by the legacy rules.
    while token != Token::EndOfInput {
        match token {
            Token::Number { value: n, .. } => {
                has_read_number = true;
                if scanner.skip_symbol(b':') {
                    if scanner.skip_symbol(b':') {
                        // `n::` — hours and a zero minute.
                        if !time.is_empty() {
                            return None;
                        }
                        time.add(n);
                        time.add(0);
                    } else {
                        if !time.add(n) {
                            return None;
                        }
                        if scanner.peek().is_symbol(b'.') {
                            scanner.next();
                        }
                    }
                } else if scanner.skip_symbol(b'.') && time.is_expecting(n) {
                    time.add(n);
                    if !scanner.peek().is_number() {
                        return None;
                    }
                    let ms = read_milliseconds(scanner.next());
                    time.add_final(ms);
                } else if tz.is_expecting(n) {
                    tz.minute = n;
                } else if time.is_expecting(n) {
                    time.add_final(n);
                    // A completed time must be followed by the end, white space, `Z` or a sign.
                    let peek = scanner.peek();
                    let allowed = matches!(peek, Token::EndOfInput | Token::WhiteSpace)
                        || peek.is_keyword_z()
                        || peek.ascii_sign().is_some();
                    if !allowed {
                        return None;
                    }
                } else {
                    if !day.add(n) {
                        return None;
                    }
                    scanner.skip_symbol(b'-');
                }
            }
            Token::Keyword { kind, value, .. } => {
                if kind == KeywordType::AmPm && !time.is_empty() {
                    time.hour_offset = Some(value);
                } else if kind == KeywordType::MonthName {
                    day.named_month = Some(value);
                    scanner.skip_symbol(b'-');
                } else if kind == KeywordType::TimeZoneName && has_read_number {
                    tz.set(value);
                } else {
                    // Unknown words may only precede the first number, and must be separated
                    // from it.
                    if has_read_number || scanner.peek().is_number() {
                        return None;
                    }
                }
            }
            Token::Symbol(_)
                if token.ascii_sign().is_some() && (tz.is_utc() || !time.is_empty()) =>
            {
                // A zone offset after a time or after `UTC`/`GMT`: `+8`, `-0800`, `+08:00`.
                tz.set_sign(token.ascii_sign().unwrap_or(1));
                let (mut n, mut length) = (0, 0);
                if let Token::Number {
                    value,
                    length: digits,
                } = scanner.peek()
                {
                    scanner.next();
                    n = value;
                    length = digits;
                }
                has_read_number = true;
                if scanner.peek().is_symbol(b':') {
                    tz.hour = n;
                    tz.minute = NONE;
                } else if length == 1 || length == 2 {
                    tz.hour = n;
                    tz.minute = 0;
                } else if length == 3 || length == 4 {
                    tz.hour = n / 100;
                    tz.minute = n % 100;
                } else {
                    return None;
                }
            }
            Token::Symbol(_)
                if (token.ascii_sign().is_some() || token.is_symbol(b')')) && has_read_number =>
            {
                return None;
            }
            _ => {}
        }
        token = scanner.next();
    }

    let (year, month, day_of_month) = day.write()?;
    let [hour, minute, second, millisecond] = time.write()?;
    let utc_offset_sec = tz.write()?;
    Some(Fields {
        year,
        month,
        day: day_of_month,
        hour,
        minute,
        second,
        millisecond,
        utc_offset_sec,
    })
}

/// The ECMAScript format `[±YY]YYYY[-MM[-DD]][THH:mm[:ss[.s+]][Z|±HH:mm|±HHmm]]`. Returns
/// `EndOfInput` when the whole string was read, `Invalid` when it started out right but went
/// wrong after the `T`, or the first token it could not use (the legacy rules go on from there,
/// with what was read so far).
fn parse_iso(
    scanner: &mut Tokenizer<'_>,
    day: &mut DayComposer,
    time: &mut TimeComposer,
    tz: &mut TimeZoneComposer,
) -> Token {
    if let Some(sign) = scanner.peek().ascii_sign() {
        // Keep the sign token, so the legacy rules see it.
        let sign_token = scanner.next();
        if !scanner.peek().is_fixed_length_number(6) {
            return sign_token;
        }
        let year = scanner.next().number();
        if sign < 0 && year == 0 {
            return sign_token;
        }
        day.add(sign * year);
    } else if scanner.peek().is_fixed_length_number(4) {
        let year = scanner.next().number();
        day.add(year);
    } else {
        return scanner.next();
    }
    if scanner.skip_symbol(b'-') {
        if !scanner.peek().is_fixed_length_number(2) || !is_month(scanner.peek().number()) {
            return scanner.next();
        }
        let month = scanner.next().number();
        day.add(month);
        if scanner.skip_symbol(b'-') {
            if !scanner.peek().is_fixed_length_number(2) || !is_day(scanner.peek().number()) {
                return scanner.next();
            }
            let day_of_month = scanner.next().number();
            day.add(day_of_month);
        }
    }
    if !scanner.peek().is_keyword_type(KeywordType::TimeSeparator) {
        if scanner.peek() != Token::EndOfInput {
            return scanner.next();
        }
    } else {
        scanner.next();
        if !scanner.peek().is_fixed_length_number(2) || !between(scanner.peek().number(), 0, 24) {
            return Token::Invalid;
        }
        // 24:00[:00[.000]] is allowed, no other time in hour 24.
        let hour_is_24 = scanner.peek().number() == 24;
        let hour = scanner.next().number();
        time.add(hour);
        if !scanner.skip_symbol(b':') {
            return Token::Invalid;
        }
        let two_digits_in = |scanner: &Tokenizer<'_>, valid: fn(i64) -> bool| {
            let peek = scanner.peek();
            peek.is_fixed_length_number(2)
                && valid(peek.number())
                && !(hour_is_24 && peek.number() > 0)
        };
        if !two_digits_in(scanner, is_minute) {
            return Token::Invalid;
        }
        let minute = scanner.next().number();
        time.add(minute);
        if scanner.skip_symbol(b':') {
            if !two_digits_in(scanner, is_minute) {
                return Token::Invalid;
            }
            let second = scanner.next().number();
            time.add(second);
            if scanner.skip_symbol(b'.') {
                let peek = scanner.peek();
                if !peek.is_number() || (hour_is_24 && peek.number() > 0) {
                    return Token::Invalid;
                }
                // Any number of fraction digits, at least one.
                let ms = read_milliseconds(scanner.next());
                time.add(ms);
            }
        }
        if scanner.peek().is_keyword_z() {
            scanner.next();
            tz.set(0);
        } else if let Some(sign) = scanner.peek().ascii_sign() {
            scanner.next();
            tz.set_sign(sign);
            if scanner.peek().is_fixed_length_number(4) {
                // The `±hhmm` extension.
                let hour_minute = scanner.next().number();
                let (hour, minute) = (hour_minute / 100, hour_minute % 100);
                if !is_hour(hour) || !is_minute(minute) {
                    return Token::Invalid;
                }
                tz.hour = hour;
                tz.minute = minute;
            } else {
                if !scanner.peek().is_fixed_length_number(2) || !is_hour(scanner.peek().number()) {
                    return Token::Invalid;
                }
                tz.hour = scanner.next().number();
                if !scanner.skip_symbol(b':') {
                    return Token::Invalid;
                }
                if !scanner.peek().is_fixed_length_number(2) || !is_minute(scanner.peek().number())
                {
                    return Token::Invalid;
                }
                tz.minute = scanner.next().number();
            }
        }
        if scanner.peek() != Token::EndOfInput {
            return Token::Invalid;
        }
    }
    // Date-only forms without a zone are UTC; date-time forms are local time.
    if tz.is_empty() && time.is_empty() {
        tz.set(0);
    }
    day.is_iso_date = true;
    Token::EndOfInput
}
