//! The JSON text of a hook's outcome: what `serde_json::to_writer` writes for a
//! [`serde_json::Value`], byte for byte, except that strings are escaped by `json-escape-simd`
//! (napi-rs's crate of sonic-rs's SIMD kernels, picked at run time by CPU feature).
//!
//! Why not serde_json's own writer: its escaping loop looks at every byte on its own and cannot
//! be replaced through its `Formatter`, and an outcome is mostly strings (a validate result
//! carries the kubeconfig, an execute result its output): the loop was the largest single cost
//! of the text, ~9 instructions a byte (bench/profile/README.md §2, round 4). Numbers, the one
//! other thing with a choice of spelling, are still written by serde_json.

use serde_json::Value;

/// Appends `value`'s JSON text to `out`.
pub fn write_value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        // Writing to a Vec cannot fail, nor can a `Number` (always finite).
        Value::Number(number) => serde_json::to_writer(&mut *out, number).unwrap_or(()),
        Value::String(text) => write_str(out, text),
        Value::Array(items) => {
            out.push(b'[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(b',');
                }
                write_value(out, item);
            }
            out.push(b']');
        }
        Value::Object(fields) => {
            out.push(b'{');
            for (index, (key, field)) in fields.iter().enumerate() {
                if index > 0 {
                    out.push(b',');
                }
                write_str(out, key);
                out.push(b':');
                write_value(out, field);
            }
            out.push(b'}');
        }
    }
}

/// Appends `text` as a JSON string, quotes included.
pub fn write_str(out: &mut Vec<u8>, text: &str) {
    json_escape_simd::escape_into(text, out);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(value: &Value) -> String {
        let mut out = Vec::new();
        write_value(&mut out, value);
        String::from_utf8(out).expect("UTF-8")
    }

    #[test]
    fn writes_what_serde_json_writes() {
        // Every ASCII character, at every offset of a SIMD register (the kernels take 16 or 32
        // bytes at a time), and characters of every UTF-8 length, U+2028 among them.
        let ascii: String = (0u8..=0x7f).map(char::from).collect();
        let mut strings: Vec<String> = (0..40)
            .map(|pad| format!("{}{ascii}", "x".repeat(pad)))
            .collect();
        strings.push("é ü ☃ \u{2028}\u{2029} 😀 \u{feff}".into());
        strings.push(String::new());
        strings.push("apiVersion: v1\nkind: Config\n\"quoted\" \\ back\tslash\r\n".repeat(40));
        for s in &strings {
            let value = Value::String(s.clone());
            assert_eq!(
                text(&value),
                serde_json::to_string(&value).unwrap(),
                "{s:?}"
            );
        }
        let nested = json!({
            "ok": true, "none": null, "no": false, "n": [0, -1, 1.5, 1e300, -0.0, 9007199254740993u64],
            "normalizedConfig": {"kubeconfig": strings[10], "": {}, "list": [[], {}, "a\"b"]},
        });
        assert_eq!(text(&nested), serde_json::to_string(&nested).unwrap());
    }
}
