//! JavaScript's `Date.parse` and `Date.prototype.toISOString`, as V8 implements them.
//!
//! A requested lease deadline is whatever string the caller sent, and the original accepts it
//! exactly when `Date.parse` returns a number. V8 first tries the ECMAScript date-time format
//! (`YYYY-MM-DDTHH:mm:ss.sssZ` and its shortenings) and then falls back to its "legacy" parser,
//! which accepts forms like `Thu, 01 Jan 2026 06:00:00 GMT` or `1/2/2026 10:00 PST`. Both are
//! reproduced here, token for token, so the same strings parse to the same instants: no date
//! crate accepts V8's legacy forms.
//!
//! One difference is deliberate: strings without a zone that V8 reads as *local* time (ISO
//! date-times without offset, most legacy forms) are read as UTC, as they would be by a Node
//! process running with `TZ=UTC`. The host's zone is not available without a zone database.
//!
//! The calendar is `jiff`'s proleptic Gregorian one. jiff's dates span the years ±9999 while a
//! JS time value reaches ±275,760 years (and `Date.parse` composes years up to ±1,000,000 before
//! clipping), so a date is moved by whole 400-year cycles into jiff's range first: the Gregorian
//! calendar repeats exactly every 400 years (146,097 days), which keeps the result exact.

mod composers;
mod parser;
mod tokens;

use parser::parse_fields;

/// Largest magnitude of a time value, in ms (ECMA-262 TimeClip).
const MAX_TIME_MS: f64 = 8.64e15;
const MS_PER_DAY: f64 = 86_400_000.0;

/// `Date.parse(text)`: ms since the epoch, or `None` where JS gives `NaN`.
pub fn parse(text: &str) -> Option<f64> {
    let units: Vec<u16> = text.encode_utf16().collect();
    let fields = parse_fields(&units)?;
    let day = make_day(
        fields.year as f64,
        (fields.month - 1) as f64,
        fields.day as f64,
    );
    let time = fields.hour as f64 * 3_600_000.0
        + fields.minute as f64 * 60_000.0
        + fields.second as f64 * 1000.0
        + fields.millisecond as f64;
    let local = day? * MS_PER_DAY + time;
    let utc = local - fields.utc_offset_sec.unwrap_or(0) as f64 * 1000.0;
    time_clip(utc)
}

/// `new Date(ms).toISOString()`: `YYYY-MM-DDTHH:mm:ss.sssZ`, with a signed six-digit year
/// outside 0000–9999. `None` where JS throws (an invalid time value).
pub fn to_iso_string(ms: f64) -> Option<String> {
    let ms = time_clip(ms)?;
    let days = (ms / MS_PER_DAY).floor();
    let ms_in_day = (ms - days * MS_PER_DAY) as i64;
    let (year, month, day) = civil_from_days(days as i64);
    let year_text = if (0..=9999).contains(&year) {
        format!("{year:04}")
    } else {
        format!("{}{:06}", if year < 0 { '-' } else { '+' }, year.abs())
    };
    Some(format!(
        "{year_text}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        ms_in_day / 3_600_000,
        ms_in_day / 60_000 % 60,
        ms_in_day / 1000 % 60,
        ms_in_day % 1000
    ))
}

/// ECMA-262 TimeClip: out-of-range times are invalid; `-0` becomes `+0`.
fn time_clip(ms: f64) -> Option<f64> {
    if !ms.is_finite() || ms.abs() > MAX_TIME_MS {
        return None;
    }
    Some(ms.trunc() + 0.0)
}

/// ECMA-262 MakeDay, for the ranges V8 accepts (years within ±1,000,000). `month` is 0-based and
/// a day past the month's end rolls over.
fn make_day(year: f64, month: f64, date: f64) -> Option<f64> {
    if !(-1_000_000.0..=1_000_000.0).contains(&year) || !date.is_finite() {
        return None;
    }
    let mut y = year as i64;
    let mut m = month as i64;
    y += m.div_euclid(12);
    m = m.rem_euclid(12);
    Some(days_from_civil(y, m as u32 + 1, 1) as f64 + date - 1.0)
}

/// Days in one 400-year Gregorian cycle.
const DAYS_PER_CYCLE: i64 = 146_097;
/// The first day of the cycle of years jiff computes in (1970 to 2369).
const EPOCH: jiff::civil::Date = jiff::civil::Date::constant(1970, 1, 1);

/// Days since 1970-01-01 of a proleptic-Gregorian date (month 1–12).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let cycles = (year - 1970).div_euclid(400);
    let shifted = year - cycles * 400;
    let date = jiff::civil::Date::new(shifted as i16, month as i8, day as i8)
        .expect("a year of 1970..=2369 and a valid month and day make a jiff date");
    date.duration_since(EPOCH).as_secs() / 86_400 + cycles * DAYS_PER_CYCLE
}

/// The date of a day count since 1970-01-01.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let cycles = days.div_euclid(DAYS_PER_CYCLE);
    let in_cycle = days.rem_euclid(DAYS_PER_CYCLE);
    let date = EPOCH
        .checked_add(jiff::SignedDuration::from_secs(in_cycle * 86_400))
        .expect("less than 400 years after 1970 is a jiff date");
    (
        i64::from(date.year()) + cycles * 400,
        date.month() as u32,
        date.day() as u32,
    )
}

/// `new Date().toISOString()`.
pub fn now_iso_string() -> String {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_millis() as f64);
    to_iso_string(ms).expect("the clock is within the range of Date")
}

/// A parsed date: fields as written, and the zone offset (`None` = local time).
pub(crate) struct Fields {
    pub(crate) year: i64,
    pub(crate) month: i64,
    pub(crate) day: i64,
    pub(crate) hour: i64,
    pub(crate) minute: i64,
    pub(crate) second: i64,
    pub(crate) millisecond: i64,
    pub(crate) utc_offset_sec: Option<i64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each string with what `Date.parse` returned for it in Node 20.20 under `TZ=UTC` (`None`
    /// for `NaN`). The parser was also compared with Node on 170,000 generated strings (random
    /// token soups, mutations of ISO and RFC 1123 dates, zone offsets) with no difference.
    const NODE_RESULTS: &[(&str, Option<f64>)] = &[
        ("2026-01-01T01:00:00.000Z", Some(1767229200000.0)),
        ("2026-01-01T02:30:00+02:00", Some(1767227400000.0)),
        ("Thu, 01 Jan 2026 06:00:00 GMT", Some(1767247200000.0)),
        ("", None),
        ("tomorrow", None),
        ("2026-01", Some(1767225600000.0)),
        ("2026-02-31", Some(1772496000000.0)),
        ("2026-01-01T24:00:00Z", Some(1767312000000.0)),
        ("2026-01-01T24:00:01Z", None),
        ("2026-01-01T23:59:60Z", None),
        ("2026-01-01T10:00Z", Some(1767261600000.0)),
        ("2026-01-01t10:00:00z", Some(1767261600000.0)),
        ("2026-01-01 10:00:00", Some(1767261600000.0)),
        ("2026-01-01T10:00:00.12Z", Some(1767261600120.0)),
        ("2026-01-01T10:00:00+0530", Some(1767241800000.0)),
        ("2026-01-01T10:00:00+05", None),
        ("2026-01-01T10:00:00+24:00", None),
        ("+002026-01-01T00:00:00Z", Some(1767225600000.0)),
        ("-000000-01-01T00:00:00Z", None),
        ("+275760-09-13T00:00:00.000Z", Some(8640000000000000.0)),
        ("+275760-09-13T00:00:00.001Z", None),
        ("Jan 5", Some(978652800000.0)),
        ("5 Jan 2026", Some(1767571200000.0)),
        ("January 5, 2026 10:00 PM", Some(1767650400000.0)),
        ("1/2/26", Some(1767312000000.0)),
        ("12/31/1999 23:59:59", Some(946684799000.0)),
        ("2026/1/2 3:4:5", Some(1767323045000.0)),
        (
            "Mon Jan 05 2026 10:00:00 GMT+0100 (Central European Standard Time)",
            Some(1767603600000.0),
        ),
        ("Mon, 05 Jan 2026 10:00:00 +0100", Some(1767603600000.0)),
        ("05 Jan 2026 10:00:00 EST", Some(1767625200000.0)),
        ("05 Jan 2026 10:00 PDT", Some(1767632400000.0)),
        ("Jan 5 2026 10:00:00 UTC+8", Some(1767578400000.0)),
        ("Jan 5 2026 10:00:00 GMT-0800", Some(1767636000000.0)),
        ("Jan 5 2026 10:00:00 GMT-08:00", Some(1767636000000.0)),
        ("Jan 5 2026 10pm", None),
        ("Jan 5 2026 10:00pm", None),
        ("Jan 5 2026 10:00 pm", Some(1767650400000.0)),
        ("Jan 5 2026 13:00 pm", None),
        ("2026-01-05T10:00:00.000Z (comment)", None),
        ("(c) Jan 5 2026", Some(1767571200000.0)),
        ("Jan (x(y)z) 5 2026", Some(1767571200000.0)),
        ("Jan 5 2026 10:00:00.5", Some(1767607200500.0)),
        ("Jan 5 2026 10::", Some(1767607200000.0)),
        ("10:00 Jan 5 2026", Some(1767607200000.0)),
        ("2026-01-01T", None),
        ("foo 2026", Some(1767225600000.0)),
        ("2026foo", None),
        ("2026-01-03 Sat", None),
        ("3.1.2026", Some(1772323200000.0)),
        ("2026-1-2", Some(1767312000000.0)),
        ("99-01-02", Some(915235200000.0)),
        ("05-Jan-2026", Some(1767571200000.0)),
        ("  2026-01-01  ", Some(1767225600000.0)),
        ("2026-01-01T00:00:00Z ", None),
        ("Jan 5 2026 +0100", None),
        ("Jan 5 2026 UTC+0100", Some(1767567600000.0)),
        ("Jan 5 2026 10:00 +01:00", Some(1767603600000.0)),
        ("Jan 5 2026 10:00 +12345", None),
        ("Jan 5 2026 10:00 GMT+", None),
        ("2026-01-01T10:00:00.000+01:00", Some(1767258000000.0)),
        ("2026-01-01T10:00:00.000-1:00", None),
        ("1/2/3000000", None),
        ("Dec 31 275760", None),
        ("Sep 13 275760", Some(8640000000000000.0)),
        ("Sep 14 275760", None),
        ("Feb 29 2024", Some(1709164800000.0)),
        ("Jan 0 2026", None),
        ("13/1/2026", None),
        ("2026 12 31", Some(1798675200000.0)),
        ("Jan 5 2026)", None),
        ("Jan 5 2026 10:00 - 3", None),
        ("z 2026", Some(1767225600000.0)),
        ("UTC 2026 Jan 5", Some(1767571200000.0)),
        ("Jan 5 2026 utc", Some(1767571200000.0)),
        ("Jan 5 2026 cdt", Some(1767589200000.0)),
        ("jAnUaRy 5 2026", Some(1767571200000.0)),
        ("Ja 5 2026", None),
        ("2026-06-15T12:30:45.678901Z", Some(1781526645678.0)),
        ("20260615", None),
        ("2026-06-15T1230", None),
        ("1767225600000", None),
        ("+1", Some(978307200000.0)),
        ("12:00 Jan 1 2026 pm", Some(1767268800000.0)),
        ("Jan 1 2026 12:00:00.000.000", Some(1767268800000.0)),
        ("Jan 1 2026 25:00", None),
        ("Jan 1 2026 24:00:01", None),
        ("Jan 1 2026 12 pm", None),
        ("2026-01-01T12:00:00.000Z[UTC]", None),
        ("2026-01-01T12:00:00+00:00Z", None),
        ("2026-01-01T12:00:00ZZ", None),
        (" 2026-01-01", Some(1767225600000.0)),
        ("Ｊan 5 2026", None),
        ("Jan 5 2026  ", None),
        ("Jan 5 2026 ПН", None),
        ("Jan 5 2026 @", Some(1767571200000.0)),
        ("[Jan 5 2026]", None),
        ("Jan 5 2026 10:00:00 GMT+0100 (CET)", Some(1767603600000.0)),
        ("+2026-01-01", Some(1767225600000.0)),
        ("+020260-01-01", Some(577176624000000.0)),
        ("-002026-01-01T00:00:00Z", Some(-126101577600000.0)),
        ("2026-01-00", None),
        ("2026-1-01", Some(1767225600000.0)),
        ("2026-01-01T1:00", None),
        ("2026-01-01T01:00:0", None),
        ("2026-01-01T01:00:00+1:00", None),
        ("Jan 5 2026 EST+1", None),
        ("Jan 5 2026 +1 EST", None),
        ("Jan 5 2026 10:00 EST 11", Some(1767625200000.0)),
        ("50 Jan 5", Some(-630806400000.0)),
        ("Jan 5 50", Some(-630806400000.0)),
        ("1000 1 1", Some(-30610224000000.0)),
        ("49/1/1", Some(2493072000000.0)),
        ("1/1/50", Some(-631152000000.0)),
        ("Jan 1 0", Some(946684800000.0)),
        // Offsets: V8 wraps hours × 3600 at 32 bits and refuses totals above 2^31 - 1 seconds.
        ("Jan 5 2026 10:00 +300000:00", Some(687607200000.0)),
        ("Jan 5 2026 10:00 +1193047:00", Some(1767605296000.0)),
        ("Jan 5 2026 10:00 +1193046:00", None),
        ("Jan 5 2026 10:00 +596523:00", Some(-379875600000.0)),
        ("Jan 5 2026 10:00 +596524:00", None),
        ("Jan 5 2026 10:00 GMT+99", Some(1767250800000.0)),
        // U+2028 and U+2029 are word characters to V8's date parser, other white space is not.
        ("\u{2028}Jan 5 2026", None),
        ("Jan\u{2028}5 2026", Some(1767571200000.0)),
        ("Jan 5 2026\u{2029}", None),
        ("Jan 5 2026\u{3000}", Some(1767571200000.0)),
        ("Jan 5 2026\u{85}", None),
    ];

    #[test]
    fn matches_node() {
        for (text, expected) in NODE_RESULTS {
            assert_eq!(parse(text), *expected, "Date.parse({text:?})");
        }
    }

    /// `new Date(ms).toISOString()` in Node 20.
    const NODE_ISO_STRINGS: &[(f64, &str)] = &[
        (0.0, "1970-01-01T00:00:00.000Z"),
        (1700000000123.0, "2023-11-14T22:13:20.123Z"),
        (951782400000.0, "2000-02-29T00:00:00.000Z"),
        (-1.0, "1969-12-31T23:59:59.999Z"),
        (-86400000.0, "1969-12-31T00:00:00.000Z"),
        (-62167219200000.0, "0000-01-01T00:00:00.000Z"),
        (-62167219200001.0, "-000001-12-31T23:59:59.999Z"),
        (-62198755200000.0, "-000001-01-01T00:00:00.000Z"),
        (253402300799999.0, "9999-12-31T23:59:59.999Z"),
        (253402300800000.0, "+010000-01-01T00:00:00.000Z"),
        (-8640000000000000.0, "-271821-04-20T00:00:00.000Z"),
        (8640000000000000.0, "+275760-09-13T00:00:00.000Z"),
        (4102444800000.0, "2100-01-01T00:00:00.000Z"),
        (-2208988800000.0, "1900-01-01T00:00:00.000Z"),
        (951868800000.0, "2000-03-01T00:00:00.000Z"),
        (13569465600000.0, "2400-01-01T00:00:00.000Z"),
        (-12219292800000.0, "1582-10-15T00:00:00.000Z"),
        (1000000000000000.0, "+033658-09-27T01:46:40.000Z"),
        (-1000000000000000.0, "-029719-04-05T22:13:20.000Z"),
    ];

    #[test]
    fn iso_strings_match_node() {
        for (ms, text) in NODE_ISO_STRINGS {
            assert_eq!(to_iso_string(*ms).as_deref(), Some(*text), "{ms}");
            assert_eq!(parse(text), Some(*ms), "{text}");
        }
        assert_eq!(to_iso_string(f64::NAN), None);
        assert_eq!(now_iso_string().len(), 24);
    }

    /// The 400-year shift against a plain day count: every day of two whole cycles on each side
    /// of the epoch converts to a date and back to the same count, one day after the previous.
    #[test]
    fn day_counts_and_dates_are_inverse() {
        let mut previous = civil_from_days(-2 * DAYS_PER_CYCLE - 1);
        for days in -2 * DAYS_PER_CYCLE..2 * DAYS_PER_CYCLE {
            let (year, month, day) = civil_from_days(days);
            assert_eq!(days_from_civil(year, month, 1) + i64::from(day) - 1, days);
            let next_day = (year, month, day) > previous && (day == previous.2 + 1 || day == 1);
            assert!(next_day, "{previous:?} then {:?}", (year, month, day));
            previous = (year, month, day);
        }
    }

    #[test]
    fn iso_strings_round_trip() {
        for text in [
            "2026-01-01T00:00:00.000Z",
            "1970-01-01T00:00:00.000Z",
            "+275760-09-13T00:00:00.000Z",
            "-000001-01-01T00:00:00.000Z",
            "0000-03-01T00:00:00.000Z",
        ] {
            let ms = parse(text).unwrap();
            assert_eq!(to_iso_string(ms).as_deref(), Some(text));
        }
        assert_eq!(to_iso_string(8.64e15 + 1.0), None);
        assert_eq!(
            to_iso_string(1_767_225_630_000.0).as_deref(),
            Some("2026-01-01T00:00:30.000Z")
        );
    }
}
