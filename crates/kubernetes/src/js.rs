//! JavaScript semantics this crate needs beyond `sandbox_core::json`: truthiness, number
//! formatting, UTF-16 string length, `toLowerCase`, and `JSON.stringify(value, null, 2)`.
//!
//! The original is TypeScript, and some of its outputs are JS-formatted text (a `ZodError`'s
//! message is its issue list pretty-printed by `JSON.stringify`), so these rules decide bytes the
//! host sees.

use sandbox_core::json::js_entries;
use serde_json::Value;

pub use sandbox_core::json::{js_string_length, js_truthy};

/// `s.toLowerCase()` in JS.
///
/// V8 uses ICU's full default (root-locale) lower-casing: SpecialCasing's unconditional
/// mappings (`İ` -> `i` + U+0307) plus the context-sensitive Final_Sigma rule. Rust's
/// `str::to_lowercase` implements the same two rules; it was checked against Node 20 for every
/// code point and for the Final_Sigma contexts, with no difference. The unit tests pin the
/// cases the namespace derivation depends on.
pub fn js_to_lower_case(s: &str) -> String {
    s.to_lowercase()
}

/// A JS number as a JSON value that serialises the way `JSON.stringify` writes it: integral
/// values become JSON integers (`900`, not `900.0`).
pub fn js_number_value(number: f64) -> Value {
    const TWO_POW_63: f64 = 9_223_372_036_854_775_808.0;
    if number.fract() == 0.0 && number.abs() < TWO_POW_63 {
        // `-0` prints as `0` in JS.
        Value::from(number as i64)
    } else {
        serde_json::Number::from_f64(number).map_or(Value::Null, Value::Number)
    }
}

/// `String(number)` in JS (ECMA-262 Number::toString with radix 10).
pub fn js_number_to_string(number: f64) -> String {
    if number.is_nan() {
        return "NaN".into();
    }
    if number == 0.0 {
        return "0".into();
    }
    if number.is_infinite() {
        return if number > 0.0 {
            "Infinity"
        } else {
            "-Infinity"
        }
        .into();
    }
    if number < 0.0 {
        return format!("-{}", js_number_to_string(-number));
    }
    // Rust's `{:e}` gives the shortest round-tripping digits, as the JS algorithm requires.
    let scientific = format!("{number:e}");
    let (mantissa, exponent) = scientific
        .split_once('e')
        .expect("`{:e}` always has an exponent");
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let k = digits.len() as i64;
    // The decimal point sits after `n` digits: value = 0.d1d2… × 10^n.
    let n = exponent
        .parse::<i64>()
        .expect("`{:e}` exponent is an integer")
        + 1;
    if k <= n && n <= 21 {
        format!("{digits}{}", "0".repeat((n - k) as usize))
    } else if 0 < n && n <= 21 {
        format!("{}.{}", &digits[..n as usize], &digits[n as usize..])
    } else if -6 < n && n <= 0 {
        format!("0.{}{digits}", "0".repeat((-n) as usize))
    } else {
        let e = n - 1;
        let sign = if e < 0 { '-' } else { '+' };
        if k == 1 {
            format!("{digits}e{sign}{}", e.abs())
        } else {
            format!("{}.{}e{sign}{}", &digits[..1], &digits[1..], e.abs())
        }
    }
}

/// `JSON.stringify(value, null, 2)`.
///
/// Differs from serde_json's pretty printer in the ways JS does: numbers use JS formatting and
/// object keys are listed in JS property order (array-index keys first).
pub fn json_stringify_pretty(value: &Value) -> String {
    let mut out = String::new();
    write_pretty(value, 0, &mut out);
    out
}

fn write_pretty(value: &Value, depth: usize, out: &mut String) {
    const INDENT: &str = "  ";
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => out.push_str(&i.to_string()),
            (_, Some(u)) => out.push_str(&u.to_string()),
            _ => out.push_str(&js_number_to_string(n.as_f64().unwrap_or(f64::NAN))),
        },
        Value::String(s) => out.push_str(&quote(s)),
        Value::Array(items) if items.is_empty() => out.push_str("[]"),
        Value::Array(items) => {
            out.push_str("[\n");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(",\n");
                }
                out.push_str(&INDENT.repeat(depth + 1));
                write_pretty(item, depth + 1, out);
            }
            out.push('\n');
            out.push_str(&INDENT.repeat(depth));
            out.push(']');
        }
        Value::Object(map) if map.is_empty() => out.push_str("{}"),
        Value::Object(map) => {
            out.push_str("{\n");
            for (i, (key, item)) in js_entries(map).into_iter().enumerate() {
                if i > 0 {
                    out.push_str(",\n");
                }
                out.push_str(&INDENT.repeat(depth + 1));
                out.push_str(&quote(key));
                out.push_str(": ");
                write_pretty(item, depth + 1, out);
            }
            out.push('\n');
            out.push_str(&INDENT.repeat(depth));
            out.push('}');
        }
    }
}

/// JSON string quoting. serde_json escapes exactly what `JSON.stringify` escapes (`"`, `\`,
/// the short forms `\b \f \n \r \t`, other C0 controls as lower-case `\u00xx`); Rust strings
/// cannot hold the lone surrogates JS would additionally escape.
fn quote(s: &str) -> String {
    serde_json::to_string(s).expect("strings always serialise")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn truthiness_follows_js() {
        assert!(!js_truthy(None));
        assert!(!js_truthy(Some(&json!(null))));
        assert!(!js_truthy(Some(&json!(""))));
        assert!(!js_truthy(Some(&json!(0))));
        assert!(!js_truthy(Some(&json!(0.0))));
        assert!(!js_truthy(Some(&json!(false))));
        assert!(js_truthy(Some(&json!(" "))));
        assert!(js_truthy(Some(&json!([]))));
        assert!(js_truthy(Some(&json!({}))));
        assert!(js_truthy(Some(&json!(-1))));
    }

    #[test]
    fn numbers_print_like_js() {
        let cases = [
            (900.0, "900"),
            (0.5, "0.5"),
            (-2.5, "-2.5"),
            (1e21, "1e+21"),
            (1e20, "100000000000000000000"),
            (123456789012345680000.0, "123456789012345680000"),
            (1.5e-7, "1.5e-7"),
            (0.000001, "0.000001"),
            (1e-7, "1e-7"),
            (-0.0, "0"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
        ];
        for (number, text) in cases {
            assert_eq!(js_number_to_string(number), text, "{number:?}");
        }
    }

    #[test]
    fn number_values_drop_the_fraction_when_integral() {
        assert_eq!(
            serde_json::to_string(&js_number_value(900.0)).unwrap(),
            "900"
        );
        assert_eq!(serde_json::to_string(&js_number_value(-0.0)).unwrap(), "0");
        assert_eq!(serde_json::to_string(&js_number_value(1.5)).unwrap(), "1.5");
    }

    #[test]
    fn pretty_print_matches_json_stringify() {
        let value = json!([{"code": "custom", "path": [], "keys": {}, "n": 1, "list": ["a", 0]}]);
        assert_eq!(
            json_stringify_pretty(&value),
            "[\n  {\n    \"code\": \"custom\",\n    \"path\": [],\n    \"keys\": {},\n    \"n\": 1,\n    \"list\": [\n      \"a\",\n      0\n    ]\n  }\n]"
        );
        assert_eq!(json_stringify_pretty(&json!([])), "[]");
        assert_eq!(
            json_stringify_pretty(&json!("a\u{1}\"\\\n")),
            "\"a\\u0001\\\"\\\\\\n\""
        );
        assert_eq!(
            json_stringify_pretty(&json!({"b": 1, "2": 2})),
            "{\n  \"2\": 2,\n  \"b\": 1\n}"
        );
        assert_eq!(json_stringify_pretty(&json!(0.5)), "0.5");
    }

    #[test]
    fn utf16_length() {
        assert_eq!(js_string_length("abc"), 3);
        assert_eq!(js_string_length("é"), 1);
        assert_eq!(js_string_length("🚀"), 2);
    }

    #[test]
    fn lower_case_follows_js() {
        assert_eq!(js_to_lower_case("\u{212A}elvin"), "kelvin");
        assert_eq!(js_to_lower_case("İ"), "i\u{307}");
        assert_eq!(js_to_lower_case("ΣΙΣΥΦΟΣ"), "σισυφος");
        assert_eq!(js_to_lower_case("Σ"), "σ");
        assert_eq!(js_to_lower_case("Α.Σ"), "α.ς");
        assert_eq!(js_to_lower_case("ＡＢＣ"), "ａｂｃ");
        assert_eq!(js_to_lower_case("Straße"), "straße");
    }
}
