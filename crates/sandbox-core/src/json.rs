//! JavaScript semantics that the original providers' results depend on.
//!
//! The originals are TypeScript, so their observable behaviour follows JS rules: what `trim()`
//! strips, what `typeof` says, the order `Object.entries` walks keys in. These helpers reproduce
//! exactly those rules over `serde_json::Value`.

use serde_json::{Map, Value};

/// JSON text whose `\uXXXX` escapes of lone UTF-16 surrogates are replaced by `\ufffd`, or
/// `None` when it has none.
///
/// A JavaScript string may hold an unpaired surrogate (a prompt cut inside an emoji), and
/// `JSON.stringify` writes one as such an escape: valid JSON, but not Unicode, so serde_json
/// refuses it. U+FFFD is what Node writes for a lone surrogate wherever a string becomes UTF-8
/// (the wire, a file, a hash), so the params keep the meaning the original gave them. Escaped
/// pairs stay. Backslashes only occur inside strings in valid JSON, so no string tracking is
/// needed.
pub fn lone_surrogates_replaced(text: &str) -> Option<String> {
    fn hex4(bytes: &[u8]) -> Option<u16> {
        let digits = std::str::from_utf8(bytes.get(..4)?).ok()?;
        u16::from_str_radix(digits, 16).ok()
    }
    let bytes = text.as_bytes();
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            i += 1;
            continue;
        }
        if bytes.get(i + 1) != Some(&b'u') {
            i += 2;
            continue;
        }
        let Some(unit) = hex4(&bytes[i + 2..]) else {
            i += 2;
            continue;
        };
        let paired_low = || {
            bytes.get(i + 6) == Some(&b'\\')
                && bytes.get(i + 7) == Some(&b'u')
                && hex4(&bytes[(i + 8).min(bytes.len())..])
                    .is_some_and(|low| (0xDC00..0xE000).contains(&low))
        };
        match unit {
            0xD800..0xDC00 if paired_low() => i += 12,
            0xD800..0xE000 => {
                let out = out.get_or_insert_with(|| String::with_capacity(text.len()));
                out.push_str(&text[copied..i]);
                out.push_str("\\ufffd");
                i += 6;
                copied = i;
            }
            _ => i += 6,
        }
    }
    out.map(|mut out| {
        out.push_str(&text[copied..]);
        out
    })
}

/// Characters JS `String.prototype.trim` removes: WhiteSpace and LineTerminator of ECMA-262.
pub fn is_js_whitespace(c: char) -> bool {
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

/// JS `s.trim()`.
pub fn js_trim(s: &str) -> &str {
    s.trim_matches(is_js_whitespace)
}

/// JS `value == null` (both `null` and a missing key, which arrive as `None`/`Null`).
pub fn is_nullish(value: Option<&Value>) -> bool {
    matches!(value, None | Some(Value::Null))
}

/// JS truthiness of a property that may be absent (`None` is `undefined`), as in
/// `if (!params.providerLeaseId)`. JSON has no `NaN`, so only zero is a falsy number.
pub fn js_truthy(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => false,
        Some(Value::Bool(flag)) => *flag,
        Some(Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0),
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(_) | Value::Object(_)) => true,
    }
}

/// JS `s.length`: the number of UTF-16 code units.
///
/// Counted on bytes, not chars, because it runs on every chunk of streamed output. ASCII (the
/// usual output) is one unit per byte, checked a word at a time. Otherwise each character is
/// one unit except those outside the BMP (4-byte UTF-8 sequences), which are two: the bytes that
/// start a character plus the bytes that start a 4-byte one.
pub fn js_string_length(s: &str) -> usize {
    if s.is_ascii() {
        return s.len();
    }
    s.bytes()
        .map(|b| usize::from((b as i8) >= -0x40) + usize::from(b >= 0xF0))
        .sum()
}

/// JS `typeof value` for a JSON value.
pub fn js_typeof(value: &Value) -> &'static str {
    match value {
        Value::Null | Value::Array(_) | Value::Object(_) => "object",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
    }
}

/// JS `Number.isInteger(value)`. JSON numbers are finite, so only the fraction matters.
pub fn is_js_integer(value: &Value) -> bool {
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

/// The number as an `f64`, if the value is a JSON number.
pub fn as_js_number(value: &Value) -> Option<f64> {
    value.as_f64()
}

/// Whether `key` is an array index in JS terms (a canonical decimal below 2^32 - 1). JS objects
/// list such keys first, in ascending numeric order, before all other keys.
pub fn is_array_index(key: &str) -> bool {
    if key.is_empty() || key.len() > 10 || !key.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    if key.len() > 1 && key.starts_with('0') {
        return false;
    }
    key.parse::<u64>().is_ok_and(|n| n < u32::MAX as u64)
}

/// `Object.entries(object)` order: array-index keys ascending, then the rest in insertion order.
pub fn js_entries(object: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut indexed: Vec<(&String, &Value)> =
        object.iter().filter(|(k, _)| is_array_index(k)).collect();
    indexed.sort_by_key(|(k, _)| k.parse::<u64>().unwrap_or(u64::MAX));
    indexed.extend(object.iter().filter(|(k, _)| !is_array_index(k)));
    indexed
}

/// Assigning `object[key] = value` in JS, for a plain object built by the original code.
/// `__proto__` is an accessor on plain objects: assigning a string to it does nothing.
pub fn js_assign(object: &mut Map<String, Value>, key: String, value: Value) {
    if key == "__proto__" {
        return;
    }
    object.insert(key, value);
}

/// Reorders an object the way JS would list it after building it key by key (array-index keys
/// first). Needed where a map taken from input is emitted with `JSON.stringify`.
pub fn js_ordered(object: Map<String, Value>) -> Map<String, Value> {
    if !object.keys().any(|k| is_array_index(k)) {
        return object;
    }
    let entries: Vec<(String, Value)> = js_entries(&object)
        .into_iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    entries.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn string_length_counts_utf16_units() {
        for text in [
            "",
            "plain ascii",
            "é",
            "€ euro",
            "😀",
            "a😀b€é\u{10FFFF}\u{7F}\u{80}\u{7FF}\u{800}\u{FFFF}\u{10000}",
        ] {
            let by_chars: usize = text.chars().map(char::len_utf16).sum();
            assert_eq!(js_string_length(text), by_chars, "{text:?}");
        }
        assert_eq!(js_string_length("😀"), 2);
        assert_eq!(js_string_length("€"), 1);
    }

    #[test]
    fn trim_follows_js() {
        assert_eq!(js_trim("\u{feff}\u{3000} a b \n\u{2028}"), "a b");
        assert_eq!(
            js_trim("\u{0085}x"),
            "\u{0085}x",
            "NEL is not JS whitespace"
        );
    }

    #[test]
    fn integers_follow_number_is_integer() {
        assert!(is_js_integer(&json!(3)));
        assert!(is_js_integer(&json!(3.0)));
        assert!(!is_js_integer(&json!(1.5)));
        assert!(!is_js_integer(&json!("3")));
    }

    #[test]
    fn entries_put_array_indices_first() {
        let obj = json!({"b": 1, "10": 2, "a": 3, "2": 4, "01": 5});
        let keys: Vec<&str> = js_entries(obj.as_object().unwrap())
            .into_iter()
            .map(|(k, _)| k.as_str())
            .collect();
        assert_eq!(keys, ["2", "10", "b", "a", "01"]);
    }

    #[test]
    fn proto_assignment_is_dropped() {
        let mut map = Map::new();
        js_assign(&mut map, "__proto__".into(), json!("x"));
        js_assign(&mut map, "k".into(), json!("v"));
        assert_eq!(Value::Object(map), json!({"k": "v"}));
    }

    #[test]
    fn lone_surrogate_escapes_become_replacement_characters() {
        let fixed = |t: &str| lone_surrogates_replaced(t);
        assert_eq!(fixed(r#"{"a":"plain \n \u00e9"}"#), None);
        assert_eq!(fixed(r#"["\ud83d\ude00"]"#), None, "an escaped pair stays");
        assert_eq!(fixed(r#"["x\ud83d"]"#).as_deref(), Some(r#"["x\ufffd"]"#));
        assert_eq!(fixed(r#"["\ude00y"]"#).as_deref(), Some(r#"["\ufffdy"]"#));
        assert_eq!(
            fixed(r#"{"\ud800":"\udbff\ud83d\ude00\udc00"}"#).as_deref(),
            Some(r#"{"\ufffd":"\ufffd\ud83d\ude00\ufffd"}"#)
        );
        // An escaped backslash followed by the text "ud800" is not an escape.
        assert_eq!(fixed(r#"["\\ud800"]"#), None);
        assert_eq!(fixed(r#"["\ud800"#).as_deref(), Some(r#"["\ufffd"#));
        let parsed: Value = serde_json::from_str(&fixed(r#"{"s":"a\ud800b"}"#).unwrap()).unwrap();
        assert_eq!(parsed["s"], "a\u{FFFD}b");
    }
}
