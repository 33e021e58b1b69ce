//! JSON text written straight into a buffer: what `serde_json::to_writer` writes for a
//! [`serde_json::Value`], byte for byte, except that strings are escaped by `json-escape-simd`
//! (napi-rs's crate of sonic-rs's SIMD kernels, picked at run time by CPU feature).
//!
//! Two users. The napi layer writes each hook's outcome with [`write_value`]. And a provider
//! whose result is built from typed data (a validate result: `normalizedConfig` from the parsed
//! config) writes it here field by field with [`ObjectWriter`] and hands over [`JsonText`],
//! instead of building a `Value` (a map insert with SipHash and an allocated key per field) only
//! for the bridge to walk it once into text and drop it.
//!
//! Why not serde_json's own writer: its escaping loop looks at every byte on its own and cannot
//! be replaced through its `Formatter`, and an outcome is mostly strings (a validate result
//! carries the kubeconfig, an execute result its output): the loop was the largest single cost
//! of the text, ~9 instructions a byte (counted with callgrind). Numbers, the one
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

/// A string field at least this long is held beside the text ([`JsonText`]): V8's `JSON.parse`
/// makes a string from escaped JSON at ~10 instructions a byte (a kubeconfig's newlines are
/// escapes), while napi copies it in at ~1; handing one string over by napi costs ~2,500
/// instructions, so below this the text is cheaper.
pub const BESIDE_MIN_BYTES: usize = 512;

/// What a placeholder of a string held beside the text is in the text: `null`.
const PLACEHOLDER: &[u8] = b"null";

/// The room a string field of `len` bytes takes in an [`ObjectWriter`]'s buffer: the escaper's
/// reserve ([`escape_room`]) when it is written into the text, its placeholder when it is held
/// beside. A buffer sized with it for its long strings is never regrown while it is written.
pub const fn string_field_room(len: usize) -> usize {
    if len < BESIDE_MIN_BYTES {
        escape_room(len)
    } else {
        PLACEHOLDER.len()
    }
}

/// A long string field held beside a [`JsonText`]: in the text its value is `null`, at byte
/// `at`; `path` is the keys from the text's value down to the field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Beside {
    pub path: Vec<String>,
    pub at: usize,
    pub text: String,
}

/// The text of one JSON value, written by a provider from its typed data ([`ObjectWriter`]),
/// with its long string fields held beside it ([`Beside`]): the bridge hands those to JS
/// without `JSON.parse` reading them, or splices them back in ([`JsonText::write_to`]).
/// Only this module makes one, so its text is always exactly one well-formed value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonText {
    text: String,
    beside: Vec<Beside>,
}

impl JsonText {
    /// Writes one object with `fields`.
    pub fn object(capacity: usize, fields: impl FnOnce(&mut ObjectWriter<'_>)) -> JsonText {
        let mut out = Vec::with_capacity(capacity);
        let mut beside = Vec::new();
        let mut path = Vec::new();
        let mut object = ObjectWriter::open(&mut out, &mut beside, &mut path);
        fields(&mut object);
        object.finish();
        // Only whole strings (escaped from `&str`) and ASCII punctuation were written.
        JsonText {
            text: String::from_utf8(out).unwrap_or_default(),
            beside,
        }
    }

    /// The text with a `null` where each string held beside it goes.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The strings held beside the text, in the order they were written.
    pub fn beside(&self) -> &[Beside] {
        &self.beside
    }

    /// The whole value's text (the strings beside it escaped into their places) appended to
    /// `out`.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        let mut from = 0;
        for beside in &self.beside {
            out.extend_from_slice(&self.text.as_bytes()[from..beside.at]);
            write_str(out, &beside.text);
            from = beside.at + PLACEHOLDER.len();
        }
        out.extend_from_slice(&self.text.as_bytes()[from..]);
    }

    /// The room [`write_to`](Self::write_to) needs, so a buffer sized with it is not regrown.
    pub fn written_room(&self) -> usize {
        self.text.len()
            + self
                .beside
                .iter()
                .map(|beside| escape_room(beside.text.len()))
                .sum::<usize>()
    }

    /// The whole value's text.
    pub fn to_text(&self) -> String {
        let mut out = Vec::with_capacity(self.written_room());
        self.write_to(&mut out);
        String::from_utf8(out).unwrap_or_default()
    }

    /// The same value as a tree (tests, and a consumer that needs to look inside).
    pub fn to_value(&self) -> Value {
        serde_json::from_str(&self.to_text()).unwrap_or(Value::Null)
    }
}

/// Writes one JSON object into a buffer, a field at a time, in the order they are given. Keys
/// are escaped like any string, so a key is never trusted to be plain. A string field of
/// [`BESIDE_MIN_BYTES`] or more is held beside the text ([`Beside`]).
pub struct ObjectWriter<'a> {
    out: &'a mut Vec<u8>,
    beside: &'a mut Vec<Beside>,
    /// The keys from the outermost object down to this one.
    path: &'a mut Vec<String>,
    empty: bool,
}

impl<'a> ObjectWriter<'a> {
    fn open(out: &'a mut Vec<u8>, beside: &'a mut Vec<Beside>, path: &'a mut Vec<String>) -> Self {
        out.push(b'{');
        ObjectWriter {
            out,
            beside,
            path,
            empty: true,
        }
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
        if value.len() < BESIDE_MIN_BYTES {
            write_str(self.key(key), value);
            return;
        }
        let at = self.key(key).len();
        self.out.extend_from_slice(PLACEHOLDER);
        let mut path = self.path.clone();
        path.push(key.to_owned());
        self.beside.push(Beside {
            path,
            at,
            text: value.to_owned(),
        });
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
        self.key(key);
        self.path.push(key.to_owned());
        let mut object = ObjectWriter::open(self.out, self.beside, self.path);
        fields(&mut object);
        object.finish();
        self.path.pop();
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
        assert_eq!(written.to_text(), serde_json::to_string(&expected).unwrap());
        assert_eq!(written.to_value(), expected);
        assert!(written.beside().is_empty());
        assert_eq!(JsonText::object(0, |_| {}).to_text(), "{}");
        let short = "s".repeat(BESIDE_MIN_BYTES - 1);
        let long = "l".repeat(BESIDE_MIN_BYTES);
        let sized = |text: &str| {
            let room = 64 + string_field_room(text.len());
            let written = JsonText::object(room, |object| object.string("k", text));
            (
                written.text().len() <= room,
                written.text.capacity() == room,
            )
        };
        assert_eq!(
            sized(&short),
            (true, true),
            "written into the text, in its room"
        );
        assert_eq!(
            sized(&long),
            (true, true),
            "held beside, its placeholder's room"
        );
    }

    #[test]
    fn long_string_fields_are_held_beside_the_text_and_spliced_back_exactly() {
        let long = "apiVersion: v1\n\"quoted\" é ☃ 😀\t".repeat(40);
        let just_under = "x".repeat(BESIDE_MIN_BYTES - 1);
        let just_at = "y".repeat(BESIDE_MIN_BYTES);
        let written = JsonText::object(16, |object| {
            object.bool("ok", true);
            object.string("first", &long);
            object.object("normalizedConfig", |inner| {
                inner.string("short", "s");
                inner.string("kubeconfig", &long);
                inner.object("deeper", |deeper| deeper.string("at", &just_at));
                inner.string("under", &just_under);
            });
            object.string("last", &just_at);
        });
        let expected = json!({
            "ok": true, "first": long,
            "normalizedConfig": {"short": "s", "kubeconfig": long, "deeper": {"at": just_at}, "under": just_under},
            "last": just_at,
        });
        assert_eq!(written.to_text(), serde_json::to_string(&expected).unwrap());
        let paths: Vec<Vec<&str>> = written
            .beside()
            .iter()
            .map(|beside| beside.path.iter().map(String::as_str).collect())
            .collect();
        assert_eq!(
            paths,
            [
                vec!["first"],
                vec!["normalizedConfig", "kubeconfig"],
                vec!["normalizedConfig", "deeper", "at"],
                vec!["last"],
            ]
        );
        // The text alone: each held string is `null` at its offset, the rest as written.
        let text: Value = serde_json::from_str(written.text()).unwrap();
        assert_eq!(text["normalizedConfig"]["kubeconfig"], Value::Null);
        assert_eq!(text["normalizedConfig"]["under"], json!(just_under));
        for beside in written.beside() {
            assert_eq!(&written.text()[beside.at..beside.at + 4], "null");
        }
        let mut out = Vec::with_capacity(written.written_room());
        let capacity = out.capacity();
        written.write_to(&mut out);
        assert_eq!(out.capacity(), capacity, "sized once");
    }
}
