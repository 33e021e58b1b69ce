//! JS value semantics the hooks depend on, beyond those in `sandbox_core::json`: truthiness,
//! strict equality, `JSON.parse` leniency and number printing.

use sandbox_core::{ErrorClass, ProviderError};
use serde_json::{Map, Value};

/// `params.lease`, failing as the original's first read of `params.lease.providerLeaseId` did
/// when there is no lease object at all.
pub(crate) fn lease_of(params: &Value) -> Result<&Value, ProviderError> {
    let what = match params.get("lease") {
        Some(Value::Null) => "null",
        None => "undefined",
        Some(lease) => return Ok(lease),
    };
    Err(ProviderError::new(format!(
        "Cannot read properties of {what} (reading 'providerLeaseId')"
    ))
    .with_class(ErrorClass::TypeError))
}

pub(crate) use sandbox_core::json::{js_string_length as utf16_len, js_truthy as truthy};

/// JS `a === b` for values that came from JSON. Two absent values are equal (`undefined`), an
/// absent value never equals `null`, and objects or arrays are never equal (they are distinct
/// objects in JS even with the same contents).
pub(crate) fn strict_eq(a: Option<&Value>, b: Option<&Value>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(Value::Null), Some(Value::Null)) => true,
        (Some(Value::Bool(x)), Some(Value::Bool(y))) => x == y,
        (Some(Value::Number(x)), Some(Value::Number(y))) => x.as_f64() == y.as_f64(),
        (Some(Value::String(x)), Some(Value::String(y))) => x == y,
        _ => false,
    }
}

/// `value ?? null` for an optional string.
pub(crate) fn opt_str(value: Option<&str>) -> Value {
    value.map_or(Value::Null, Value::from)
}

/// `obj[key]` where `obj` may be any value: only objects have our (camelCase) properties.
pub(crate) fn prop<'a>(target: Option<&'a Value>, key: &str) -> Option<&'a Value> {
    target.and_then(|t| t.as_object()).and_then(|m| m.get(key))
}

/// Inserts `key` unless the value is `undefined`, as `JSON.stringify` of `{key: value}` would.
pub(crate) fn insert_defined(map: &mut Map<String, Value>, key: &str, value: Option<&Value>) {
    if let Some(value) = value {
        map.insert(key.to_owned(), value.clone());
    }
}

/// A number as JS prints it back: integral doubles lose their fraction (`1.0` is `1`).
pub(crate) fn js_number(value: &Value) -> Value {
    match value {
        Value::Number(n) if n.is_f64() => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0 => {
                Value::from(f as i64)
            }
            _ => value.clone(),
        },
        _ => value.clone(),
    }
}

/// `JSON.parse(text)`. serde_json refuses unpaired UTF-16 surrogate escapes (`"\ud800"`) that
/// JS accepts; the original turned such strings into UTF-8 at once, which made each unpaired
/// surrogate a U+FFFD, so they are rewritten to `\ufffd` and parsed again.
pub(crate) fn json_parse(text: &str) -> Option<Value> {
    match serde_json::from_str(text) {
        Ok(value) => Some(value),
        Err(_) if text.contains("\\u") => {
            serde_json::from_str(&sandbox_core::json::lone_surrogates_replaced(text)?).ok()
        }
        Err(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn truthiness_and_strict_equality() {
        assert!(!truthy(None));
        assert!(!truthy(Some(&json!(""))));
        assert!(!truthy(Some(&json!(0))));
        assert!(truthy(Some(&json!("x"))));
        assert!(truthy(Some(&json!({}))));
        assert!(strict_eq(None, None));
        assert!(!strict_eq(None, Some(&Value::Null)));
        assert!(strict_eq(Some(&json!(600)), Some(&json!(600.0))));
        assert!(!strict_eq(Some(&json!([])), Some(&json!([]))));
    }

    #[test]
    fn unpaired_surrogates_parse_as_replacement_characters() {
        assert_eq!(
            json_parse(r#"{"stdout":"a\ud800b\udc00c\ud83d\ude00"}"#),
            Some(json!({"stdout": "a\u{fffd}b\u{fffd}c\u{1f600}"}))
        );
        assert_eq!(
            json_parse(r#"{"x":"\\ud800"}"#),
            Some(json!({"x": "\\ud800"}))
        );
        assert_eq!(json_parse("{"), None);
    }

    #[test]
    fn numbers_print_like_js() {
        assert_eq!(js_number(&json!(1.0)).to_string(), "1");
        assert_eq!(js_number(&json!(1.5)).to_string(), "1.5");
        assert_eq!(utf16_len("a\u{1f600}é"), 4);
    }
}
