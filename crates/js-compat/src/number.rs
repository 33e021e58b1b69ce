//! JS numbers: `Number#toString` (radix 10), ToInt32 (`x | 0`), and numbers as JSON values
//! that `JSON.stringify` would write.
//!
//! `Number#toString` is the `ryu-js` crate: Ryū's shortest round-trip digits laid out by
//! ECMA-262 Number::toString (exponent from `1e21` up and below `1e-6`, `NaN`, `Infinity`,
//! `-0` as `0`), the same algorithm V8 uses. The table below was recorded from Node 20.

use serde_json::Value;

/// `String(number)` in JS.
pub fn to_string(number: f64) -> String {
    ryu_js::Buffer::new().format(number).to_owned()
}

/// ECMA-262 ToInt32 (`x | 0`): truncated, wrapped modulo 2^32 into the signed range; `NaN` and
/// the infinities are 0.
pub fn to_int32(x: f64) -> i32 {
    if !x.is_finite() {
        return 0;
    }
    let modulo = x.trunc().rem_euclid(4_294_967_296.0);
    (modulo as u64 as u32) as i32
}

/// A JS number as a JSON value that serialises the way `JSON.stringify` writes it: integral
/// values become JSON integers (`900`, not `900.0`; `-0` is `0`).
pub fn json_value(number: f64) -> Value {
    const TWO_POW_63: f64 = 9_223_372_036_854_775_808.0;
    if number.fract() == 0.0 && number.abs() < TWO_POW_63 {
        Value::from(number as i64)
    } else {
        serde_json::Number::from_f64(number).map_or(Value::Null, Value::Number)
    }
}

/// The value serde_json parses from the text `JSON.stringify` writes for `number`: `null` for
/// `NaN` and the infinities, a safe integer (`-0` as `0`) as that integer, a fraction as the
/// double itself. Beyond 2^53 the text is not the double's exact value (`2 ** 63` is written
/// `9223372036854776000`, shortest digits then zeros), so such a number's text is parsed.
pub fn parsed_json_value(number: f64) -> Value {
    const MAX_SAFE: f64 = 9_007_199_254_740_991.0;
    if !number.is_finite() {
        return Value::Null;
    }
    if number.fract() == 0.0 {
        if number.abs() <= MAX_SAFE {
            return Value::from(number as i64);
        }
        return serde_json::from_str(&to_string(number)).unwrap_or(Value::Null);
    }
    serde_json::Number::from_f64(number).map_or(Value::Null, Value::Number)
}

/// A JSON value as JS writes it back: a number is re-made by [`json_value`] (integral doubles
/// lose their fraction), anything else is unchanged.
pub fn normalized(value: &Value) -> Value {
    match value {
        Value::Number(n) if n.is_f64() => n.as_f64().map_or_else(|| value.clone(), json_value),
        _ => value.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `String(n)` in Node 20.
    const NODE_RESULTS: &[(f64, &str)] = &[
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
        (5e-324, "5e-324"),
        (-1e-7, "-1e-7"),
        (123e-20, "1.23e-18"),
        (9007199254740993.0, "9007199254740992"),
        (1e16, "10000000000000000"),
        (0.1, "0.1"),
        (100.0, "100"),
        (1.0 / 3.0, "0.3333333333333333"),
        (f64::NAN, "NaN"),
        (f64::INFINITY, "Infinity"),
        (f64::NEG_INFINITY, "-Infinity"),
    ];

    #[test]
    fn to_string_matches_node() {
        for (number, text) in NODE_RESULTS {
            assert_eq!(to_string(*number), *text, "{number:?}");
        }
    }

    /// `x | 0` in Node 20.
    #[test]
    fn to_int32_matches_node() {
        let cases = [
            (0.0, 0),
            (1.5, 1),
            (-1.5, -1),
            (-1.0, -1),
            (2_147_483_648.0, -2_147_483_648),
            (4_294_967_301.0, 5),
            (-2_147_483_649.0, 2_147_483_647),
            (1_767_225_600_000.0 / 32.0, -608_774_848),
            (f64::NAN, 0),
            (f64::INFINITY, 0),
            (1e21, -559_939_584),
        ];
        for (x, int32) in cases {
            assert_eq!(to_int32(x), int32, "{x}");
        }
    }

    #[test]
    fn parsed_json_values_are_what_serde_json_parses_from_the_json_text() {
        let two_pow_64 = 18_446_744_073_709_551_616.0;
        let numbers = [
            0.0,
            -0.0,
            1.0,
            -1.0,
            900.0,
            0.5,
            -2.5,
            0.1,
            1.5e-7,
            1e-7,
            5e-324,
            1e20,
            -1e20,
            1e21,
            -1e21,
            9_007_199_254_740_993.0,
            9_223_372_036_854_775_808.0,
            -9_223_372_036_854_775_808.0,
            -9_223_372_036_854_777_856.0,
            two_pow_64,
            two_pow_64 - 2048.0,
            123_456_789_012_345_680_000.0,
            f64::MAX,
            f64::MIN,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ];
        for number in numbers {
            // `JSON.stringify(number)`: Number#toString, or `null` when not finite.
            let text = if number.is_finite() {
                to_string(number)
            } else {
                "null".into()
            };
            let parsed: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(parsed_json_value(number), parsed, "{number:e} ({text})");
            let same_kind = |a: &Value, b: &Value| match (a, b) {
                (Value::Number(a), Value::Number(b)) => {
                    (a.is_u64(), a.is_i64(), a.is_f64()) == (b.is_u64(), b.is_i64(), b.is_f64())
                }
                _ => true,
            };
            assert!(same_kind(&parsed_json_value(number), &parsed), "{text}");
        }
    }

    #[test]
    fn json_values_drop_the_fraction_when_integral() {
        let text = |v: Value| serde_json::to_string(&v).unwrap();
        assert_eq!(text(json_value(900.0)), "900");
        assert_eq!(text(json_value(-0.0)), "0");
        assert_eq!(text(json_value(1.5)), "1.5");
        assert_eq!(text(json_value(1e16)), "10000000000000000");
        assert_eq!(text(json_value(f64::NAN)), "null");
        assert_eq!(text(normalized(&json!(1.0))), "1");
        assert_eq!(text(normalized(&json!(1.5))), "1.5");
        assert_eq!(text(normalized(&json!(u64::MAX))), u64::MAX.to_string());
        assert_eq!(text(normalized(&json!("1.0"))), "\"1.0\"");
    }
}
