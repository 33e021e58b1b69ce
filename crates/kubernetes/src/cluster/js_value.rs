//! Reading API responses the way the original's JS does: `a?.b ?? fallback` property access and
//! template-literal stringification.

use serde_json::Value;

use crate::js::js_number_to_string;

/// `value?.[key]` with `??` semantics folded in: `None` for a missing key, a `null` value, or a
/// value that is not an object (JS reads `undefined` from those).
pub fn prop<'a>(value: Option<&'a Value>, key: &str) -> Option<&'a Value> {
    value?.as_object()?.get(key).filter(|v| !v.is_null())
}

/// `value?.[key]` as a string, when it is one.
pub fn prop_str<'a>(value: Option<&'a Value>, key: &str) -> Option<&'a str> {
    prop(value, key).and_then(Value::as_str)
}

/// The elements of `value` if it is an array, else none (`Array.isArray(x) ? x : []`).
pub fn array_items(value: Option<&Value>) -> &[Value] {
    value.and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// `${value}` in a template literal (ECMA-262 ToString).
pub fn js_template(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => n
            .as_f64()
            .map_or_else(|| n.to_string(), js_number_to_string),
        Value::Bool(b) => b.to_string(),
        Value::Null => "null".into(),
        // Array.prototype.toString joins with "," and prints null/undefined as "".
        Value::Array(items) => items
            .iter()
            .map(|item| {
                if item.is_null() {
                    String::new()
                } else {
                    js_template(item)
                }
            })
            .collect::<Vec<_>>()
            .join(","),
        Value::Object(_) => "[object Object]".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn prop_reads_like_optional_chaining_with_nullish_fallback() {
        let v = json!({"a": {"b": 1, "n": null}, "s": "x"});
        assert_eq!(prop(prop(Some(&v), "a"), "b"), Some(&json!(1)));
        assert_eq!(prop(prop(Some(&v), "a"), "n"), None);
        assert_eq!(prop(prop(Some(&v), "s"), "b"), None);
        assert_eq!(prop(None, "a"), None);
    }

    #[test]
    fn template_stringification_follows_js() {
        assert_eq!(js_template(&json!("Running")), "Running");
        assert_eq!(js_template(&json!(3)), "3");
        assert_eq!(js_template(&json!(1.5)), "1.5");
        assert_eq!(js_template(&json!(false)), "false");
        assert_eq!(js_template(&json!([1, null, "a"])), "1,,a");
        assert_eq!(js_template(&json!({"k": 1})), "[object Object]");
    }
}
