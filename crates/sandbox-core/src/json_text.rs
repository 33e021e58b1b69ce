//! JSON text written straight into a buffer: what `serde_json::to_writer` writes for a
//! [`serde_json::Value`], byte for byte, except that strings are escaped by `json-escape-simd`
//! (napi-rs's crate of sonic-rs's SIMD kernels, picked at run time by CPU feature).
//!
//! Two users. The napi layer writes each hook's outcome with [`write_value`]. And a provider
//! whose result is built from typed data (a validate result: `normalizedConfig` from the parsed
//! config) writes it here field by field with [`ObjectWriter`] and hands over [`JsonText`],
//! instead of building a `Value` (a map insert with SipHash and an allocated key per field) only
//! for the bridge to walk it once into text and drop it (bench/profile/README.md §2, round 5).
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

/// The room [`write_str`] reserves past the end of its buffer for a string of `len` bytes: its
/// SIMD kernels store whole registers speculatively, up to six bytes per byte of input. A
/// buffer sized with it for its long strings is never regrown (copied) while it is written.
pub const fn escape_room(len: usize) -> usize {
    len * 6 + 32 + 3
}

/// Appends `text` as a JSON string, quotes included.
pub fn write_str(out: &mut Vec<u8>, text: &str) {
    json_escape_simd::escape_into(text, out);
}

/// The text of one JSON value, written by a provider from its typed data ([`ObjectWriter`]).
/// Only this module makes one, so it always holds exactly one well-formed value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonText(String);

impl JsonText {
    /// Writes one object with `fields`.
    pub fn object(capacity: usize, fields: impl FnOnce(&mut ObjectWriter<'_>)) -> JsonText {
        let mut out = Vec::with_capacity(capacity);
        let mut object = ObjectWriter::start(&mut out);
        fields(&mut object);
        object.finish();
        // Only whole strings (escaped from `&str`) and ASCII punctuation were written.
        JsonText(String::from_utf8(out).unwrap_or_default())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The same value as a tree (tests, and a consumer that needs to look inside).
    pub fn to_value(&self) -> Value {
        serde_json::from_str(&self.0).unwrap_or(Value::Null)
    }
}

/// Writes one JSON object into a buffer, a field at a time, in the order they are given. Keys
/// are escaped like any string, so a key is never trusted to be plain.
pub struct ObjectWriter<'a> {
    out: &'a mut Vec<u8>,
    empty: bool,
}

impl<'a> ObjectWriter<'a> {
    /// Opens an object at the end of `out`; [`finish`](Self::finish) closes it.
    pub fn start(out: &'a mut Vec<u8>) -> Self {
        out.push(b'{');
        ObjectWriter { out, empty: true }
    }

    /// Writes `key` and its colon, and returns the buffer for the caller to write the field's
    /// value into (exactly one JSON value).
    pub fn key(&mut self, key: &str) -> &mut Vec<u8> {
        if !self.empty {
            self.out.push(b',');
        }
        self.empty = false;
        write_str(self.out, key);
        self.out.push(b':');
        self.out
    }

    pub fn string(&mut self, key: &str, value: &str) {
        write_str(self.key(key), value);
    }

    pub fn bool(&mut self, key: &str, value: bool) {
        self.key(key)
            .extend_from_slice(if value { b"true" } else { b"false" });
    }

    pub fn null(&mut self, key: &str) {
        self.key(key).extend_from_slice(b"null");
    }

    /// A string, or `null` for `None`.
    pub fn string_or_null(&mut self, key: &str, value: Option<&str>) {
        match value {
            Some(value) => self.string(key, value),
            None => self.null(key),
        }
    }

    /// An array of strings.
    pub fn strings<S: AsRef<str>>(&mut self, key: &str, values: &[S]) {
        let out = self.key(key);
        out.push(b'[');
        for (index, value) in values.iter().enumerate() {
            if index > 0 {
                out.push(b',');
            }
            write_str(out, value.as_ref());
        }
        out.push(b']');
    }

    /// An object of string values, in the order given.
    pub fn string_map<K: AsRef<str>, V: AsRef<str>>(
        &mut self,
        key: &str,
        entries: impl IntoIterator<Item = (K, V)>,
    ) {
        self.object(key, |object| {
            for (name, value) in entries {
                object.string(name.as_ref(), value.as_ref());
            }
        });
    }

    /// A nested object with `fields`.
    pub fn object(&mut self, key: &str, fields: impl FnOnce(&mut ObjectWriter<'_>)) {
        let mut object = ObjectWriter::start(self.key(key));
        fields(&mut object);
        object.finish();
    }

    /// A non-negative integer.
    pub fn u64(&mut self, key: &str, value: u64) {
        // Writing to a Vec cannot fail.
        serde_json::to_writer(self.key(key), &value).unwrap_or(());
    }

    /// Any value, as [`write_value`] writes it.
    pub fn value(&mut self, key: &str, value: &Value) {
        write_value(self.key(key), value);
    }

    /// Closes the object.
    pub fn finish(self) {
        self.out.push(b'}');
    }
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

    #[test]
    fn object_writer_writes_what_serde_json_writes_for_the_same_object() {
        let odd = "line\nbreak \"quoted\" \u{2028} é";
        let written = JsonText::object(16, |object| {
            object.bool("ok", true);
            object.string(odd, odd);
            object.string_or_null("none", None);
            object.string_or_null("some", Some(""));
            object.strings("empty", &[] as &[&str]);
            object.strings("list", &["a", odd]);
            object.string_map("map", [("k", "v"), (odd, odd)]);
            object.value("tree", &json!({"n": [1, -2.5, null]}));
            object.object("nested", |inner| inner.u64("max", u64::MAX));
            object.null("last");
        });
        let expected = json!({
            "ok": true, odd: odd, "none": null, "some": "", "empty": [], "list": ["a", odd],
            "map": {"k": "v", odd: odd}, "tree": {"n": [1, -2.5, null]},
            "nested": {"max": u64::MAX}, "last": null,
        });
        assert_eq!(written.as_str(), serde_json::to_string(&expected).unwrap());
        assert_eq!(written.to_value(), expected);
        assert_eq!(JsonText::object(0, |_| {}).as_str(), "{}");
    }
}
