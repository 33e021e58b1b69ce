//! JSON as JS reads and writes it: `JSON.parse` of text holding lone surrogate escapes,
//! `JSON.stringify(value, null, 2)`, and the property order of JS objects.
//!
//! serde_json does the parsing and the string escaping; what differs in JS is handled here:
//! JS strings may hold unpaired surrogates (serde_json refuses their escapes), numbers print as
//! `Number#toString`, and an object lists its array-index keys first, ascending, before the
//! others in insertion order (`Object.entries`, `JSON.stringify`).

use serde_json::{Map, Value};

/// `object[key]`: the property, `None` when absent. The same answer as `Map::get`, found by
/// comparing keys in a small object: hook params and configs are objects of a few keys read
/// field by field (a config schema asks for each of its ~20 fields), and serde_json's map
/// hashes every lookup with SipHash, several times the cost of comparing a few short keys,
/// most of which differ in length.
pub fn get<'a>(object: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    const SCAN_UP_TO: usize = 12;
    if object.len() <= SCAN_UP_TO {
        object
            .iter()
            .find_map(|(name, value)| (name == key).then_some(value))
    } else {
        object.get(key)
    }
}

/// `JSON.parse(text)`, `None` where it throws. Lone surrogate escapes (`"\ud800"`), which JS
/// accepts and serde_json refuses, are read as U+FFFD: the original turned such strings into
/// UTF-8 at once, which made each unpaired surrogate a U+FFFD.
pub fn parse(text: &str) -> Option<Value> {
    match serde_json::from_str(text) {
        Ok(value) => Some(value),
        Err(_) if text.contains("\\u") => {
            serde_json::from_str(&lone_surrogates_replaced(text)?).ok()
        }
        Err(_) => None,
    }
}

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

/// `JSON.stringify(value)`.
pub fn stringify(value: &Value) -> String {
    let mut out = String::new();
    write(value, "", 0, &mut out);
    out
}

/// `JSON.stringify(value, null, 2)`.
pub fn stringify_pretty(value: &Value) -> String {
    let mut out = String::new();
    write(value, "  ", 0, &mut out);
    out
}

/// ECMA-262 SerializeJSONProperty with the gap `indent` (empty for the compact form). Differs
/// from serde_json's writers in the ways JS does: numbers use `Number#toString` (a JSON integer
/// beyond 2^53 is the double JS would have read) and object keys are listed in JS property
/// order (array-index keys first).
fn write(value: &Value, indent: &str, depth: usize, out: &mut String) {
    let newline = |depth: usize, out: &mut String| {
        if !indent.is_empty() {
            out.push('\n');
            out.push_str(&indent.repeat(depth));
        }
    };
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&crate::number::to_string(n.as_f64().unwrap_or(f64::NAN))),
        Value::String(s) => out.push_str(&quote(s)),
        Value::Array(items) if items.is_empty() => out.push_str("[]"),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(depth + 1, out);
                write(item, indent, depth + 1, out);
            }
            newline(depth, out);
            out.push(']');
        }
        Value::Object(map) if map.is_empty() => out.push_str("{}"),
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in entries(map).into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(depth + 1, out);
                out.push_str(&quote(key));
                out.push_str(if indent.is_empty() { ":" } else { ": " });
                write(item, indent, depth + 1, out);
            }
            newline(depth, out);
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
pub fn entries(object: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut indexed: Vec<(&String, &Value)> =
        object.iter().filter(|(k, _)| is_array_index(k)).collect();
    indexed.sort_by_key(|(k, _)| k.parse::<u64>().unwrap_or(u64::MAX));
    indexed.extend(object.iter().filter(|(k, _)| !is_array_index(k)));
    indexed
}

/// Assigning `object[key] = value` in JS, for a plain object built by the original code.
/// `__proto__` is an accessor on plain objects: assigning a string to it does nothing.
pub fn assign(object: &mut Map<String, Value>, key: String, value: Value) {
    if key == "__proto__" {
        return;
    }
    object.insert(key, value);
}

/// Reorders an object the way JS would list it after building it key by key (array-index keys
/// first). Needed where a map taken from input is emitted with `JSON.stringify`.
pub fn ordered(object: Map<String, Value>) -> Map<String, Value> {
    if !object.keys().any(|k| is_array_index(k)) {
        return object;
    }
    let entries: Vec<(String, Value)> = entries(&object)
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
    fn get_answers_as_map_get_in_small_and_large_objects() {
        for size in [0usize, 1, 5, 12, 13, 40] {
            let object: Map<String, Value> =
                (0..size).map(|i| (format!("k{i}"), json!(i))).collect();
            for key in ["k0", "k4", "k11", "k12", "k39", "absent", "", "k"] {
                assert_eq!(get(&object, key), object.get(key), "{size} {key}");
            }
        }
    }

    #[test]
    fn parse_reads_unpaired_surrogates_as_replacement_characters() {
        assert_eq!(
            parse(r#"{"stdout":"a\ud800b\udc00c\ud83d\ude00"}"#),
            Some(json!({"stdout": "a\u{fffd}b\u{fffd}c\u{1f600}"}))
        );
        assert_eq!(parse(r#"{"x":"\\ud800"}"#), Some(json!({"x": "\\ud800"})));
        assert_eq!(parse("{"), None);
    }

    #[test]
    fn pretty_print_matches_json_stringify() {
        let value = json!([{"code": "custom", "path": [], "keys": {}, "n": 1, "list": ["a", 0]}]);
        assert_eq!(
            stringify_pretty(&value),
            "[\n  {\n    \"code\": \"custom\",\n    \"path\": [],\n    \"keys\": {},\n    \"n\": 1,\n    \"list\": [\n      \"a\",\n      0\n    ]\n  }\n]"
        );
        assert_eq!(stringify_pretty(&json!([])), "[]");
        assert_eq!(
            stringify_pretty(&json!("a\u{1}\"\\\n")),
            "\"a\\u0001\\\"\\\\\\n\""
        );
        assert_eq!(
            stringify_pretty(&json!({"b": 1, "2": 2})),
            "{\n  \"2\": 2,\n  \"b\": 1\n}"
        );
        assert_eq!(stringify_pretty(&json!(0.5)), "0.5");
    }

    /// `JSON.stringify(v)` in Node 20.
    #[test]
    fn compact_stringify_matches_node() {
        let cases = [
            (json!({"a": 1.5}), r#"{"a":1.5}"#),
            (json!("soon \"ish\""), r#""soon \"ish\"""#),
            (
                json!({"b": [1.0, null, {}], "1": true, "a": []}),
                r#"{"1":true,"b":[1,null,{}],"a":[]}"#,
            ),
            (json!(1e21), "1e+21"),
            (json!(9007199254740993u64), "9007199254740992"),
            (json!("\u{7f}\u{1f}é"), "\"\u{7f}\\u001fé\""),
        ];
        for (value, text) in cases {
            assert_eq!(stringify(&value), text, "{value}");
        }
    }

    #[test]
    fn entries_put_array_indices_first() {
        let obj = json!({"b": 1, "10": 2, "a": 3, "2": 4, "01": 5});
        let keys: Vec<&str> = entries(obj.as_object().unwrap())
            .into_iter()
            .map(|(k, _)| k.as_str())
            .collect();
        assert_eq!(keys, ["2", "10", "b", "a", "01"]);
    }

    #[test]
    fn proto_assignment_is_dropped() {
        let mut map = Map::new();
        assign(&mut map, "__proto__".into(), json!("x"));
        assign(&mut map, "k".into(), json!("v"));
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
