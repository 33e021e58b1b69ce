//! Reading API responses the way the original's JS does: `a?.b ?? fallback` property access and
//! `Array.isArray(x) ? x : []`.

use serde_json::Value;

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
}
