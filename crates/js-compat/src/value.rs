//! JS value semantics over `serde_json::Value`: truthiness, `typeof`, `===`, `Number.isInteger`,
//! ToString (`${value}` and `String(value)`), property reads, and V8's `TypeError` text for a
//! property read on `undefined` or `null`.
//!
//! A property that may be absent is an `Option<&Value>`: `None` is `undefined`. JSON has no
//! `NaN` and no `undefined` inside values, so those cases only arise from absence.

use serde_json::{Map, Value};

/// JS truthiness (`if (value)`). JSON has no `NaN`, so only zero is a falsy number.
pub fn truthy(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => false,
        Some(Value::Bool(flag)) => *flag,
        Some(Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0),
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(_) | Value::Object(_)) => true,
    }
}

/// JS `value == null`: `null` or absent.
pub fn is_nullish(value: Option<&Value>) -> bool {
    matches!(value, None | Some(Value::Null))
}

/// `"undefined"` or `"null"` for a nullish value, as V8 names the receiver in its messages.
pub fn nullish_name(value: Option<&Value>) -> Option<&'static str> {
    match value {
        None => Some("undefined"),
        Some(Value::Null) => Some("null"),
        Some(_) => None,
    }
}

/// V8's `TypeError` message for reading `property` of `undefined` or `null` (`receiver`).
pub fn cannot_read_properties(receiver: &str, property: &str) -> String {
    format!("Cannot read properties of {receiver} (reading '{property}')")
}

/// JS `typeof value` for a JSON value.
pub fn type_of(value: &Value) -> &'static str {
    match value {
        Value::Null | Value::Array(_) | Value::Object(_) => "object",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
    }
}

/// JS `Number.isInteger(value)`. JSON numbers are finite, so only the fraction matters.
pub fn is_integer(value: &Value) -> bool {
    match value {
        Value::Number(n) => {
            n.is_i64()
                || n.is_u64()
                || n.as_f64()
                    .is_some_and(|f| f.is_finite() && f.fract() == 0.0)
        }
        _ => false,
    }
}

/// JS `a === b`. Two absent values are equal (`undefined`), an absent value never equals
/// `null`, and objects or arrays are never equal (distinct objects in JS, whatever they hold).
pub fn strict_eq(a: Option<&Value>, b: Option<&Value>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(Value::Null), Some(Value::Null)) => true,
        (Some(Value::Bool(x)), Some(Value::Bool(y))) => x == y,
        (Some(Value::Number(x)), Some(Value::Number(y))) => x.as_f64() == y.as_f64(),
        (Some(Value::String(x)), Some(Value::String(y))) => x == y,
        _ => false,
    }
}

/// ECMA-262 ToString of a present value, as in `${value}` or `String(value)`: numbers print as
/// `Number#toString`, arrays join their elements with `,` (null elements as empty), objects
/// are `[object Object]`.
pub fn to_string(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => crate::number::to_string(n.as_f64().unwrap_or(f64::NAN)),
        Value::Bool(b) => b.to_string(),
        Value::Null => "null".into(),
        Value::Array(items) => items
            .iter()
            .map(|item| {
                if item.is_null() {
                    String::new()
                } else {
                    to_string(item)
                }
            })
            .collect::<Vec<_>>()
            .join(","),
        Value::Object(_) => "[object Object]".into(),
    }
}

/// ToString of a value that may be absent: `undefined` prints as `undefined`.
pub fn to_string_or_undefined(value: Option<&Value>) -> String {
    value.map_or_else(|| "undefined".into(), to_string)
}

/// `target[key]` where `target` may be any value (or absent): only objects have properties of
/// our (camelCase) names; a `null` property stays `Some(Null)`.
pub fn prop<'a>(target: Option<&'a Value>, key: &str) -> Option<&'a Value> {
    target.and_then(Value::as_object).and_then(|m| m.get(key))
}

/// `target?.[key] ?? fallback`, the fallback left to the caller: `None` for a missing key, a
/// `null` value, or a target that is not an object (JS reads `undefined` from those). Unlike
/// [`prop`], a `null` property reads as absent.
pub fn prop_nullish<'a>(target: Option<&'a Value>, key: &str) -> Option<&'a Value> {
    prop(target, key).filter(|v| !v.is_null())
}

/// [`prop_nullish`] as a string, when it is one.
pub fn prop_str<'a>(target: Option<&'a Value>, key: &str) -> Option<&'a str> {
    prop_nullish(target, key).and_then(Value::as_str)
}

/// The elements of `value` if it is an array, else none: `Array.isArray(x) ? x : []`.
pub fn array_items(value: Option<&Value>) -> &[Value] {
    value.and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// V8's `TypeError` text for calling something that is not a function: `${expression} is not a
/// function` (e.g. `input.toLowerCase is not a function`).
pub fn not_a_function(expression: &str) -> String {
    format!("{expression} {NOT_A_FUNCTION}")
}

/// V8's `TypeError` text for spreading or iterating a value that is not iterable.
pub fn not_iterable(expression: &str) -> String {
    format!("{expression} {NOT_ITERABLE}")
}

/// How V8's not-a-function `TypeError` text ends (after the expression).
pub const NOT_A_FUNCTION: &str = "is not a function";
/// How V8's not-iterable `TypeError` text ends (after the expression).
pub const NOT_ITERABLE: &str = "is not iterable";

/// `value ?? null` for an optional string.
pub fn opt_str(value: Option<&str>) -> Value {
    value.map_or(Value::Null, Value::from)
}

/// Sets `key` unless the value is `undefined`, as `JSON.stringify({key: value})` would write it.
pub fn insert_defined(map: &mut Map<String, Value>, key: &str, value: Option<&Value>) {
    if let Some(value) = value {
        map.insert(key.to_owned(), value.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nullish_props_read_like_optional_chaining() {
        let v = json!({"a": {"b": 1, "n": null, "s": "x"}, "list": [1, 2]});
        assert_eq!(prop_nullish(prop(Some(&v), "a"), "b"), Some(&json!(1)));
        assert_eq!(prop_nullish(prop(Some(&v), "a"), "n"), None);
        assert_eq!(prop(prop(Some(&v), "a"), "n"), Some(&Value::Null));
        assert_eq!(prop_nullish(prop(Some(&v), "list"), "b"), None);
        assert_eq!(prop_nullish(None, "a"), None);
        assert_eq!(prop_str(prop(Some(&v), "a"), "s"), Some("x"));
        assert_eq!(prop_str(prop(Some(&v), "a"), "b"), None);
        assert_eq!(array_items(prop(Some(&v), "list")), &[json!(1), json!(2)]);
        assert!(array_items(prop(Some(&v), "a")).is_empty());
    }

    #[test]
    fn v8_type_error_texts() {
        assert_eq!(
            not_a_function("input.toLowerCase"),
            "input.toLowerCase is not a function"
        );
        assert_eq!(not_iterable("params.args"), "params.args is not iterable");
    }

    #[test]
    fn truthiness_follows_js() {
        assert!(!truthy(None));
        assert!(!truthy(Some(&json!(null))));
        assert!(!truthy(Some(&json!(""))));
        assert!(!truthy(Some(&json!(0))));
        assert!(!truthy(Some(&json!(0.0))));
        assert!(!truthy(Some(&json!(-0.0))));
        assert!(!truthy(Some(&json!(false))));
        assert!(truthy(Some(&json!(" "))));
        assert!(truthy(Some(&json!("x"))));
        assert!(truthy(Some(&json!([]))));
        assert!(truthy(Some(&json!({}))));
        assert!(truthy(Some(&json!(-1))));
    }

    #[test]
    fn strict_equality_follows_js() {
        assert!(strict_eq(None, None));
        assert!(!strict_eq(None, Some(&Value::Null)));
        assert!(strict_eq(Some(&Value::Null), Some(&Value::Null)));
        assert!(strict_eq(Some(&json!(600)), Some(&json!(600.0))));
        assert!(!strict_eq(Some(&json!("1")), Some(&json!(1))));
        assert!(!strict_eq(Some(&json!([])), Some(&json!([]))));
        assert!(!strict_eq(Some(&json!({})), Some(&json!({}))));
    }

    #[test]
    fn typeof_and_is_integer_follow_js() {
        assert_eq!(type_of(&json!(null)), "object");
        assert_eq!(type_of(&json!([])), "object");
        assert_eq!(type_of(&json!(1)), "number");
        assert_eq!(type_of(&json!("")), "string");
        assert_eq!(type_of(&json!(true)), "boolean");
        assert!(is_integer(&json!(3)));
        assert!(is_integer(&json!(3.0)));
        assert!(is_integer(&json!(u64::MAX)));
        assert!(!is_integer(&json!(1.5)));
        assert!(!is_integer(&json!("3")));
    }

    /// `String(v)` in Node 20 for each value.
    #[test]
    fn to_string_matches_node() {
        let cases = [
            (json!("s"), "s"),
            (json!(1), "1"),
            (json!(1.0), "1"),
            (json!(-0.0), "0"),
            (json!(1.5e300), "1.5e+300"),
            (json!(1e21), "1e+21"),
            (json!(true), "true"),
            (json!(null), "null"),
            (
                json!([1, null, "a", [2, 3], {}]),
                "1,,a,2,3,[object Object]",
            ),
            (json!([]), ""),
            (json!({"a": 1}), "[object Object]"),
        ];
        for (value, text) in cases {
            assert_eq!(to_string(&value), text, "{value}");
        }
        assert_eq!(to_string_or_undefined(None), "undefined");
        assert_eq!(to_string(&json!([null, 1, "a"])), ",1,a");
        assert_eq!(to_string(&json!("Running")), "Running");
        assert_eq!(to_string(&json!(3)), "3");
        assert_eq!(to_string(&json!(1.5)), "1.5");
        assert_eq!(to_string(&json!(false)), "false");
        assert_eq!(to_string(&json!([1, null, "a"])), "1,,a");
        assert_eq!(to_string(&json!({"k": 1})), "[object Object]");
    }

    #[test]
    fn property_reads() {
        let v = json!({"a": {"b": 1, "n": null}, "s": "x"});
        assert_eq!(prop(prop(Some(&v), "a"), "b"), Some(&json!(1)));
        assert_eq!(prop(prop(Some(&v), "a"), "n"), Some(&Value::Null));
        assert_eq!(prop(prop(Some(&v), "s"), "b"), None);
        assert_eq!(prop(None, "a"), None);
        assert_eq!(nullish_name(None), Some("undefined"));
        assert_eq!(nullish_name(Some(&Value::Null)), Some("null"));
        assert_eq!(nullish_name(Some(&json!(0))), None);
    }

    /// The text of `undefined.x` and `null.x` in Node 20.
    #[test]
    fn property_read_type_error_matches_v8() {
        assert_eq!(
            cannot_read_properties("undefined", "providerLeaseId"),
            "Cannot read properties of undefined (reading 'providerLeaseId')"
        );
        assert_eq!(
            cannot_read_properties("null", "0"),
            "Cannot read properties of null (reading '0')"
        );
    }
}
