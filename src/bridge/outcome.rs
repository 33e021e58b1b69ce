//! How a hook's outcome gets out to JavaScript: as one object, `{value}`, `{error}` or `{}`
//! (resolved with `undefined`), which plugin-kit's `settle` unwraps.
//!
//! The object is made by V8's `JSON.parse` from the outcome's JSON text: V8 builds objects from
//! JSON several times faster than napi can property by property. For a synchronous hook the
//! caller's JS half parses the text ([`Written::into_text_or_js`]); a promise settles with the
//! object made here ([`Outcome::into_js`]). Long strings are the exception: each string of [`LONG_STRING_BYTES`] or more is left out of
//! the text (`null` in its place) and set in its place by napi after the parse, because V8 makes
//! a string from escaped JSON at ~10 instructions a byte (a kubeconfig's newlines are escapes)
//! while napi copies one in at ~1, for ~2,500 instructions a string. An ASCII string of
//! [`EXTERNAL_STRING_BYTES`] or more (an execute result's output tail: CreateOS keeps up to 4 Mi
//! characters, Kubernetes the last 8 MiB of each stream) is not copied at all but handed to V8
//! as an external string ([`external_latin1`]).
//!
//! The text is written by [`OutcomeWriter`], a serde serializer, from either form of a hook's
//! value (a `serde_json::Value` tree, or a typed value that serializes itself): what
//! `serde_json::to_writer` writes, byte for byte, except that strings are escaped by
//! `json-escape-simd` (napi-rs's crate of sonic-rs's SIMD kernels): serde_json's escaping loop
//! looks at every byte on its own and cannot be replaced through its `Formatter`, and an outcome
//! is mostly strings (~9 instructions a byte, the largest single cost of the text, counted with
//! callgrind). The long strings of a tree are moved out of it, not copied ([`take_long_strings`]).

use napi::bindgen_prelude::FunctionRef;
use napi::{Env, sys};
use sandbox_core::{HookValue, ProviderError, ProviderResult};
use serde::ser::{self, Serialize};
use serde_json::Value;

use crate::bridge::strings::{RawValue, create_string};
use crate::napi_status::check;

/// A string at least this long is set in its place by napi rather than parsed by V8 (see the
/// module docs): below it, handing a string over costs more than parsing it.
pub const LONG_STRING_BYTES: usize = 512;

/// An ASCII string at least this long goes to V8 without a copy ([`external_latin1`]).
pub const EXTERNAL_STRING_BYTES: usize = 256 * 1024;

/// The first allocation for an outcome's JSON text: most outcomes fit.
const OUTCOME_TEXT_CAPACITY: usize = 2048;

/// A failure as data: plugin-kit turns it into `Error` with exactly this `message`, `name`, and
/// a numeric `code` when present (the SDK forwards numeric codes to the host).
#[derive(Debug)]
pub struct NativeError {
    pub message: String,
    pub name: String,
    pub code: Option<i64>,
}

/// A hook's outcome. `value` absent means the hook resolved with `undefined`.
#[derive(Debug)]
pub struct Outcome {
    pub value: Option<HookValue>,
    pub error: Option<NativeError>,
}

impl Outcome {
    pub fn value(value: impl Into<HookValue>) -> Self {
        Self {
            value: Some(value.into()),
            error: None,
        }
    }

    pub fn nothing() -> Self {
        Self {
            value: None,
            error: None,
        }
    }

    pub fn error(err: ProviderError) -> Self {
        Self {
            value: None,
            error: Some(NativeError {
                message: err.message,
                name: err.class.as_str().to_owned(),
                code: err.code,
            }),
        }
    }

    /// The outcome's text (`{"value":…}`, `{"error":{message, name, code?}}` or `{}`) with a
    /// `null` in place of each long string, and those strings with their paths.
    pub fn write(self) -> Written {
        let mut writer = OutcomeWriter::default();
        writer.out.push(b'{');
        if let Some(value) = self.value {
            writer.out.extend_from_slice(br#""value":"#);
            writer.path.push(Step::Key {
                from: 1,
                to: r#""value""#.len() + 1,
            });
            let written = match value {
                HookValue::Tree(mut tree) => {
                    if holds_long_string(&tree) {
                        let path = writer.path.clone();
                        take_long_strings(&mut tree, path, &writer.out, &mut writer.long);
                    }
                    tree.serialize(&mut writer)
                }
                HookValue::Typed(typed) => typed.serialize(&mut writer),
            };
            writer.path.pop();
            if let Err(error) = written {
                // Only a typed value can fail (a map key that is not a string): a bug, said so.
                return Outcome::error(ProviderError::new(format!(
                    "paperclip-sandbox-native internal error: a hook's value did not serialize ({error})"
                )))
                .write();
            }
        }
        if let Some(error) = &self.error {
            if writer.out.len() > 1 {
                writer.out.push(b',');
            }
            writer.out.extend_from_slice(br#""error":{"message":"#);
            write_str(&mut writer.out, &error.message);
            writer.out.extend_from_slice(br#","name":"#);
            write_str(&mut writer.out, &error.name);
            if let Some(code) = error.code {
                writer.out.extend_from_slice(br#","code":"#);
                writer
                    .out
                    .extend_from_slice(itoa::Buffer::new().format(code).as_bytes());
            }
            writer.out.push(b'}');
        }
        writer.out.push(b'}');
        Written {
            // Only whole strings and ASCII punctuation were written: always UTF-8.
            text: String::from_utf8(writer.out).unwrap_or_default(),
            long: writer.long,
        }
    }

    /// The outcome as the JS object plugin-kit settles (see the module docs). `parse` is this
    /// env's `JSON.parse`.
    pub fn into_js(
        self,
        env: &Env,
        parse: &FunctionRef<RawValue, RawValue>,
    ) -> napi::Result<RawValue> {
        self.write().into_js(env, parse)
    }
}

impl From<ProviderResult<Option<HookValue>>> for Outcome {
    fn from(result: ProviderResult<Option<HookValue>>) -> Self {
        match result {
            Ok(Some(value)) => Outcome::value(value),
            Ok(None) => Outcome::nothing(),
            Err(err) => Outcome::error(err),
        }
    }
}

/// An outcome written out: its text, and the long strings left out of it.
pub struct Written {
    pub text: String,
    pub long: Vec<LongString>,
}

/// A string left out of the text: in it, `null` at `path`.
pub struct LongString {
    pub path: Vec<PathKey>,
    pub text: String,
}

/// One step from the outcome object down to a long string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathKey {
    Key(String),
    Index(u32),
}

impl Written {
    /// The text alone when no long string was held out of it (the caller's JS half parses it:
    /// a plain call there, where calling `JSON.parse` from here pays for entering JavaScript from
    /// native code, ~2,000-3,000 instructions counted with callgrind), else
    /// [`into_js`](Self::into_js)'s object.
    pub fn into_text_or_js(
        self,
        env: &Env,
        parse: &FunctionRef<RawValue, RawValue>,
    ) -> napi::Result<RawValue> {
        if self.long.is_empty() {
            // SAFETY: `env` is the current env, on its JS thread (a hook call's).
            return Ok(RawValue(unsafe { create_string(env.raw(), &self.text)? }));
        }
        self.into_js(env, parse)
    }

    /// The object `JSON.parse` makes of the text, each long string set in its place.
    pub fn into_js(
        self,
        env: &Env,
        parse: &FunctionRef<RawValue, RawValue>,
    ) -> napi::Result<RawValue> {
        // SAFETY: `env` is the current env, on its JS thread (a hook call or a promise's
        // resolution), inside a handle scope.
        let text = unsafe { create_string(env.raw(), &self.text)? };
        let outcome = parse.borrow_back(env)?.call(RawValue(text))?.0;
        for long in self.long {
            // SAFETY: as above; `outcome` is the live object just parsed, whose every path leads
            // to where a `null` was written.
            unsafe { set_in_place(env.raw(), outcome, long)? };
        }
        Ok(RawValue(outcome))
    }
}

/// Sets `long` at its path in `outcome`.
///
/// # Safety
/// `env` is the current env, on its JS thread, inside a handle scope; `outcome` a live object
/// of it.
unsafe fn set_in_place(
    env: sys::napi_env,
    outcome: sys::napi_value,
    long: LongString,
) -> napi::Result<()> {
    let Some((last, parents)) = long.path.split_last() else {
        return Ok(());
    };
    let mut object = outcome;
    for step in parents {
        let mut inner = std::ptr::null_mut();
        let status = match step {
            PathKey::Key(key) => {
                // SAFETY: `env` is the current env, on its JS thread (this function's contract).
                let key = unsafe { create_string(env, key)? };
                // SAFETY: `object` and `key` are live handles of this scope; `inner` a local.
                unsafe { sys::napi_get_property(env, object, key, &mut inner) }
            }
            // SAFETY: `object` is a live handle of this scope (an array here); `inner` a local.
            PathKey::Index(index) => unsafe {
                sys::napi_get_element(env, object, *index, &mut inner)
            },
        };
        check(status, "a hook's outcome (an object on a string's path)")?;
        object = inner;
    }
    let text = long.text;
    let string = if text.len() >= EXTERNAL_STRING_BYTES && text.is_ascii() {
        // SAFETY: `env` as this function's contract gives it; `text` is ASCII.
        unsafe { external_latin1(env, text)? }
    } else {
        // SAFETY: `env` is the current env, on its JS thread.
        unsafe { create_string(env, &text)? }
    };
    let status = match last {
        PathKey::Key(key) => {
            // SAFETY: `env` is the current env, on its JS thread.
            let key = unsafe { create_string(env, key)? };
            // SAFETY: `object`, `key` and `string` are live handles of this scope.
            unsafe { sys::napi_set_property(env, object, key, string) }
        }
        // SAFETY: `object` and `string` are live handles of this scope.
        PathKey::Index(index) => unsafe { sys::napi_set_element(env, object, *index, string) },
    };
    check(status, "a hook's outcome (a string set in its place)")
}

/// Whether `tree` holds a string [`take_long_strings`] would move out (most outcomes hold none,
/// and are not walked twice).
fn holds_long_string(tree: &Value) -> bool {
    match tree {
        Value::String(text) => text.len() >= LONG_STRING_BYTES,
        Value::Array(items) => items.iter().any(holds_long_string),
        Value::Object(fields) => fields.values().any(holds_long_string),
        _ => false,
    }
}

/// Moves every long string out of `tree` (a `null` left in its place) into `long`, with its
/// path below `path` (whose keys are read from `out`, the text written so far): moved, not
/// copied, as a large execute output is megabytes.
fn take_long_strings(
    tree: &mut Value,
    mut path: Vec<Step>,
    out: &[u8],
    long: &mut Vec<LongString>,
) {
    fn walk(tree: &mut Value, path: &mut Vec<Step>, out: &[u8], long: &mut Vec<LongString>) {
        match tree {
            Value::String(text) if text.len() >= LONG_STRING_BYTES => {
                let text = std::mem::take(text);
                *tree = Value::Null;
                long.push(LongString {
                    path: materialize(path, out),
                    text,
                });
            }
            Value::Array(items) => {
                for (index, item) in items.iter_mut().enumerate() {
                    path.push(Step::Index(index as u32));
                    walk(item, path, out, long);
                    path.pop();
                }
            }
            Value::Object(fields) => {
                for (key, field) in fields.iter_mut() {
                    path.push(Step::Owned(key.clone()));
                    walk(field, path, out, long);
                    path.pop();
                }
            }
            _ => {}
        }
    }
    walk(tree, &mut path, out, long);
}

/// One step of the path the writer is at: a key written into the text (its quoted, escaped
/// bytes `from..to`), a key held as it is, or an array index.
#[derive(Clone)]
enum Step {
    Key { from: usize, to: usize },
    Owned(String),
    Index(u32),
}

/// The path, with each key read back from the text.
fn materialize(path: &[Step], out: &[u8]) -> Vec<PathKey> {
    path.iter()
        .map(|step| match step {
            Step::Key { from, to } => {
                PathKey::Key(serde_json::from_slice(&out[*from..*to]).unwrap_or_default())
            }
            Step::Owned(key) => PathKey::Key(key.clone()),
            Step::Index(index) => PathKey::Index(*index),
        })
        .collect()
}

/// Appends `text` as a JSON string, quotes included.
fn write_str(out: &mut Vec<u8>, text: &str) {
    json_escape_simd::escape_into(text, out);
}

/// Writes one value's JSON text (see the module docs), holding long strings out of it.
struct OutcomeWriter {
    out: Vec<u8>,
    /// Where in the value the writer is: the path a long string is found at.
    path: Vec<Step>,
    long: Vec<LongString>,
}

impl Default for OutcomeWriter {
    fn default() -> Self {
        Self {
            out: Vec::with_capacity(OUTCOME_TEXT_CAPACITY),
            path: Vec::new(),
            long: Vec::new(),
        }
    }
}

type WriteResult = Result<(), serde_json::Error>;

impl OutcomeWriter {
    fn integer(&mut self, value: impl itoa::Integer) -> WriteResult {
        self.out
            .extend_from_slice(itoa::Buffer::new().format(value).as_bytes());
        Ok(())
    }

    /// A float as serde_json writes it (shortest round-trip digits; `null` when not finite).
    fn float<F: Serialize>(&mut self, value: F) -> WriteResult {
        serde_json::to_writer(&mut self.out, &value)
    }
}

impl<'a> ser::Serializer for &'a mut OutcomeWriter {
    type Ok = ();
    type Error = serde_json::Error;
    type SerializeSeq = Compound<'a>;
    type SerializeTuple = Compound<'a>;
    type SerializeTupleStruct = Compound<'a>;
    type SerializeTupleVariant = Compound<'a>;
    type SerializeMap = Compound<'a>;
    type SerializeStruct = Compound<'a>;
    type SerializeStructVariant = Compound<'a>;

    fn serialize_bool(self, value: bool) -> WriteResult {
        self.out
            .extend_from_slice(if value { b"true" } else { b"false" });
        Ok(())
    }
    fn serialize_i8(self, value: i8) -> WriteResult {
        self.integer(value)
    }
    fn serialize_i16(self, value: i16) -> WriteResult {
        self.integer(value)
    }
    fn serialize_i32(self, value: i32) -> WriteResult {
        self.integer(value)
    }
    fn serialize_i64(self, value: i64) -> WriteResult {
        self.integer(value)
    }
    fn serialize_i128(self, value: i128) -> WriteResult {
        self.integer(value)
    }
    fn serialize_u8(self, value: u8) -> WriteResult {
        self.integer(value)
    }
    fn serialize_u16(self, value: u16) -> WriteResult {
        self.integer(value)
    }
    fn serialize_u32(self, value: u32) -> WriteResult {
        self.integer(value)
    }
    fn serialize_u64(self, value: u64) -> WriteResult {
        self.integer(value)
    }
    fn serialize_u128(self, value: u128) -> WriteResult {
        self.integer(value)
    }
    fn serialize_f32(self, value: f32) -> WriteResult {
        self.float(value)
    }
    fn serialize_f64(self, value: f64) -> WriteResult {
        self.float(value)
    }
    fn serialize_char(self, value: char) -> WriteResult {
        self.serialize_str(value.encode_utf8(&mut [0; 4]))
    }
    fn serialize_str(self, value: &str) -> WriteResult {
        if value.len() >= LONG_STRING_BYTES {
            self.long.push(LongString {
                path: materialize(&self.path, &self.out),
                text: value.to_owned(),
            });
            self.out.extend_from_slice(b"null");
        } else {
            write_str(&mut self.out, value);
        }
        Ok(())
    }
    fn serialize_bytes(self, value: &[u8]) -> WriteResult {
        use ser::SerializeSeq;
        let mut seq = self.serialize_seq(Some(value.len()))?;
        for byte in value {
            seq.serialize_element(byte)?;
        }
        seq.end()
    }
    fn serialize_none(self) -> WriteResult {
        self.serialize_unit()
    }
    fn serialize_some<T: ?Sized + Serialize>(self, value: &T) -> WriteResult {
        value.serialize(self)
    }
    fn serialize_unit(self) -> WriteResult {
        self.out.extend_from_slice(b"null");
        Ok(())
    }
    fn serialize_unit_struct(self, _name: &'static str) -> WriteResult {
        self.serialize_unit()
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> WriteResult {
        self.serialize_str(variant)
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        _name: &'static str,
        value: &T,
    ) -> WriteResult {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> WriteResult {
        use ser::SerializeMap;
        let mut map = self.serialize_map(Some(1))?;
        map.serialize_entry(variant, value)?;
        map.end()
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Compound<'a>, serde_json::Error> {
        self.out.push(b'[');
        self.path.push(Step::Index(0));
        Ok(Compound {
            writer: self,
            first: true,
            close: b"]",
        })
    }
    fn serialize_tuple(self, len: usize) -> Result<Compound<'a>, serde_json::Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        len: usize,
    ) -> Result<Compound<'a>, serde_json::Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Compound<'a>, serde_json::Error> {
        self.open_variant(variant)?;
        let mut seq = self.serialize_seq(Some(len))?;
        seq.close = b"]}";
        Ok(seq)
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Compound<'a>, serde_json::Error> {
        self.out.push(b'{');
        self.path.push(Step::Key { from: 0, to: 0 });
        Ok(Compound {
            writer: self,
            first: true,
            close: b"}",
        })
    }
    fn serialize_struct(
        self,
        _name: &'static str,
        len: usize,
    ) -> Result<Compound<'a>, serde_json::Error> {
        self.serialize_map(Some(len))
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Compound<'a>, serde_json::Error> {
        self.open_variant(variant)?;
        let mut map = self.serialize_map(Some(len))?;
        map.close = b"}}";
        Ok(map)
    }
}

impl OutcomeWriter {
    /// `{"variant":` of an enum variant with content, whose value follows (closed with it).
    fn open_variant(&mut self, variant: &str) -> WriteResult {
        self.out.push(b'{');
        let from = self.out.len();
        write_str(&mut self.out, variant);
        let to = self.out.len();
        self.out.push(b':');
        // Stays for the content; the content's own step is pushed on top of it.
        self.path.push(Step::Key { from, to });
        Ok(())
    }
}

/// An array or object being written (an enum variant's too, closed with its wrapper).
pub struct Compound<'a> {
    writer: &'a mut OutcomeWriter,
    first: bool,
    close: &'static [u8],
}

impl Compound<'_> {
    fn separate(&mut self) {
        if !self.first {
            self.writer.out.push(b',');
        }
        self.first = false;
    }

    fn end_compound(self) -> WriteResult {
        self.writer.path.pop();
        if self.close.len() == 2 {
            // The variant's step (`open_variant`).
            self.writer.path.pop();
        }
        self.writer.out.extend_from_slice(self.close);
        Ok(())
    }

    fn element<T: ?Sized + Serialize>(&mut self, value: &T) -> WriteResult {
        let index = if self.first {
            0
        } else {
            match self.writer.path.last() {
                Some(Step::Index(index)) => index + 1,
                _ => 0,
            }
        };
        self.separate();
        if let Some(step) = self.writer.path.last_mut() {
            *step = Step::Index(index);
        }
        value.serialize(&mut *self.writer)
    }

    fn key<T: ?Sized + Serialize>(&mut self, key: &T) -> WriteResult {
        self.separate();
        let from = self.writer.out.len();
        key.serialize(KeyWriter(&mut self.writer.out))?;
        let to = self.writer.out.len();
        self.writer.out.push(b':');
        if let Some(step) = self.writer.path.last_mut() {
            *step = Step::Key { from, to };
        }
        Ok(())
    }
}

impl ser::SerializeSeq for Compound<'_> {
    type Ok = ();
    type Error = serde_json::Error;
    fn serialize_element<T: ?Sized + Serialize>(&mut self, value: &T) -> WriteResult {
        self.element(value)
    }
    fn end(self) -> WriteResult {
        self.end_compound()
    }
}

impl ser::SerializeTuple for Compound<'_> {
    type Ok = ();
    type Error = serde_json::Error;
    fn serialize_element<T: ?Sized + Serialize>(&mut self, value: &T) -> WriteResult {
        self.element(value)
    }
    fn end(self) -> WriteResult {
        self.end_compound()
    }
}

impl ser::SerializeTupleStruct for Compound<'_> {
    type Ok = ();
    type Error = serde_json::Error;
    fn serialize_field<T: ?Sized + Serialize>(&mut self, value: &T) -> WriteResult {
        self.element(value)
    }
    fn end(self) -> WriteResult {
        self.end_compound()
    }
}

impl ser::SerializeTupleVariant for Compound<'_> {
    type Ok = ();
    type Error = serde_json::Error;
    fn serialize_field<T: ?Sized + Serialize>(&mut self, value: &T) -> WriteResult {
        self.element(value)
    }
    fn end(self) -> WriteResult {
        self.end_compound()
    }
}

impl ser::SerializeMap for Compound<'_> {
    type Ok = ();
    type Error = serde_json::Error;
    fn serialize_key<T: ?Sized + Serialize>(&mut self, key: &T) -> WriteResult {
        self.key(key)
    }
    fn serialize_value<T: ?Sized + Serialize>(&mut self, value: &T) -> WriteResult {
        value.serialize(&mut *self.writer)
    }
    fn end(self) -> WriteResult {
        self.end_compound()
    }
}

impl ser::SerializeStruct for Compound<'_> {
    type Ok = ();
    type Error = serde_json::Error;
    fn serialize_field<T: ?Sized + Serialize>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> WriteResult {
        self.key(key)?;
        value.serialize(&mut *self.writer)
    }
    fn end(self) -> WriteResult {
        self.end_compound()
    }
}

impl ser::SerializeStructVariant for Compound<'_> {
    type Ok = ();
    type Error = serde_json::Error;
    fn serialize_field<T: ?Sized + Serialize>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> WriteResult {
        self.key(key)?;
        value.serialize(&mut *self.writer)
    }
    fn end(self) -> WriteResult {
        self.end_compound()
    }
}

/// An object key: a string (or a character or an integer, quoted, as serde_json writes them);
/// anything else fails, as serde_json's does.
struct KeyWriter<'a>(&'a mut Vec<u8>);

fn not_a_key() -> serde_json::Error {
    ser::Error::custom("an object key must be a string")
}

impl KeyWriter<'_> {
    fn quoted(self, value: impl itoa::Integer) -> WriteResult {
        self.0.push(b'"');
        self.0
            .extend_from_slice(itoa::Buffer::new().format(value).as_bytes());
        self.0.push(b'"');
        Ok(())
    }
}

impl ser::Serializer for KeyWriter<'_> {
    type Ok = ();
    type Error = serde_json::Error;
    type SerializeSeq = ser::Impossible<(), serde_json::Error>;
    type SerializeTuple = ser::Impossible<(), serde_json::Error>;
    type SerializeTupleStruct = ser::Impossible<(), serde_json::Error>;
    type SerializeTupleVariant = ser::Impossible<(), serde_json::Error>;
    type SerializeMap = ser::Impossible<(), serde_json::Error>;
    type SerializeStruct = ser::Impossible<(), serde_json::Error>;
    type SerializeStructVariant = ser::Impossible<(), serde_json::Error>;

    fn serialize_str(self, value: &str) -> WriteResult {
        write_str(self.0, value);
        Ok(())
    }
    fn serialize_char(self, value: char) -> WriteResult {
        self.serialize_str(value.encode_utf8(&mut [0; 4]))
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> WriteResult {
        self.serialize_str(variant)
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        value: &T,
    ) -> WriteResult {
        value.serialize(self)
    }
    fn serialize_i8(self, value: i8) -> WriteResult {
        self.quoted(value)
    }
    fn serialize_i16(self, value: i16) -> WriteResult {
        self.quoted(value)
    }
    fn serialize_i32(self, value: i32) -> WriteResult {
        self.quoted(value)
    }
    fn serialize_i64(self, value: i64) -> WriteResult {
        self.quoted(value)
    }
    fn serialize_u8(self, value: u8) -> WriteResult {
        self.quoted(value)
    }
    fn serialize_u16(self, value: u16) -> WriteResult {
        self.quoted(value)
    }
    fn serialize_u32(self, value: u32) -> WriteResult {
        self.quoted(value)
    }
    fn serialize_u64(self, value: u64) -> WriteResult {
        self.quoted(value)
    }
    fn serialize_bool(self, _: bool) -> WriteResult {
        Err(not_a_key())
    }
    fn serialize_f32(self, _: f32) -> WriteResult {
        Err(not_a_key())
    }
    fn serialize_f64(self, _: f64) -> WriteResult {
        Err(not_a_key())
    }
    fn serialize_bytes(self, _: &[u8]) -> WriteResult {
        Err(not_a_key())
    }
    fn serialize_none(self) -> WriteResult {
        Err(not_a_key())
    }
    fn serialize_some<T: ?Sized + Serialize>(self, _: &T) -> WriteResult {
        Err(not_a_key())
    }
    fn serialize_unit(self) -> WriteResult {
        Err(not_a_key())
    }
    fn serialize_unit_struct(self, _: &'static str) -> WriteResult {
        Err(not_a_key())
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> WriteResult {
        Err(not_a_key())
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, serde_json::Error> {
        Err(not_a_key())
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, serde_json::Error> {
        Err(not_a_key())
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, serde_json::Error> {
        Err(not_a_key())
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, serde_json::Error> {
        Err(not_a_key())
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, serde_json::Error> {
        Err(not_a_key())
    }
    fn serialize_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStruct, serde_json::Error> {
        Err(not_a_key())
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, serde_json::Error> {
        Err(not_a_key())
    }
}

// Node-API 10 (Node >= 20.4; package.json requires 24.11), declared here rather than through
// napi-sys's `napi10` feature, which would raise the version the whole addon declares.
unsafe extern "C" {
    fn node_api_create_external_string_latin1(
        env: sys::napi_env,
        text: *const std::ffi::c_char,
        length: isize,
        finalize: Option<
            unsafe extern "C" fn(sys::napi_env, *mut std::ffi::c_void, *mut std::ffi::c_void),
        >,
        hint: *mut std::ffi::c_void,
        result: *mut sys::napi_value,
        copied: *mut bool,
    ) -> sys::napi_status;
}

/// An ASCII string handed to V8 without a copy: V8 keeps a small string object pointing at the
/// Rust buffer and frees the buffer (the finalizer) when it collects that object. V8 puts
/// external strings in its old space, so that happens at a full GC.
///
/// The buffer's size is reported with `napi_adjust_external_memory` for as long as it lives:
/// V8 checks its external-memory limit (a full GC once it has grown by 64 MiB) only when that
/// count changes, and an external string alone does not change it. Unreported, a series of
/// large executes kept every earlier result until something else started a full GC: 8 MiB a
/// run without end (measured: 108 MiB of dead results after 13 runs). A copy does no better:
/// measured, the copies ended up in V8's old large-object space (promoted by a scavenge while
/// the reply was still being written), where they too wait for a full GC.
///
/// # Safety
/// `env` is the current env, on its JS thread, inside a handle scope; `text` is ASCII.
unsafe fn external_latin1(env: sys::napi_env, text: String) -> napi::Result<sys::napi_value> {
    unsafe extern "C" fn finalize(
        env: sys::napi_env,
        _data: *mut std::ffi::c_void,
        hint: *mut std::ffi::c_void,
    ) {
        // SAFETY: `hint` is the box leaked below, finalized exactly once by Node.
        let text = unsafe { Box::from_raw(hint.cast::<String>()) };
        // SAFETY: `env` is the env Node finalizes in; adjusting external memory is allowed
        // in a finalizer (it touches no JS value).
        unsafe { report_external_bytes(env, -(text.len() as i64)) };
    }
    let text = Box::new(text);
    let (data, length) = (text.as_ptr(), text.len());
    let hint = Box::into_raw(text);
    let mut value = std::ptr::null_mut();
    let mut copied = false;
    // Reported first, so that the finalizer's decrease always has its increase, even when V8
    // copies instead (`copied`) and Node has run the finalizer already; either way the buffer
    // is Node's now. A failure (only for strings past V8's length limit, far above what a
    // result holds) leaves it unowned: it is leaked rather than risk freeing it twice, and
    // its report is taken back.
    // SAFETY: `env` is the current env, on its JS thread (this function's contract).
    unsafe { report_external_bytes(env, length as i64) };
    // SAFETY: `env` as above. `data`/`length` are the boxed string's buffer, which does not
    // move (the `String` is boxed and its heap buffer is never touched again here) and lives
    // until `finalize` frees it through `hint`, the same box; the bytes are ASCII (this
    // function's contract), so valid Latin-1. `value` and `copied` are locals.
    let status = unsafe {
        node_api_create_external_string_latin1(
            env,
            data.cast(),
            length as isize,
            Some(finalize),
            hint.cast(),
            &mut value,
            &mut copied,
        )
    };
    if status != sys::Status::napi_ok {
        // SAFETY: `env` as above.
        unsafe { report_external_bytes(env, -(length as i64)) };
    }
    check(status, "a hook's outcome (an external string)")?;
    Ok(value)
}

/// Tells V8 that `change` bytes outside its heap were kept alive (or let go) by JS values.
/// Its status is not checked: it fails only for a null env, and a missed report changes
/// when V8 collects, never what a result holds.
///
/// # Safety
/// `env` is a live env: the current one on its JS thread, or the one Node finalizes in.
unsafe fn report_external_bytes(env: sys::napi_env, change: i64) {
    let mut total = 0;
    // SAFETY: `env` is a live env (this function's contract); `total` is a local.
    unsafe { sys::napi_adjust_external_memory(env, change, &mut total) };
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The written text with each long string put back where its `null` is, and the paths.
    fn spliced(outcome: Outcome) -> (Value, Vec<Vec<PathKey>>) {
        let written = outcome.write();
        let mut tree: Value = serde_json::from_str(&written.text).expect("the text is JSON");
        let mut paths = Vec::new();
        for long in written.long {
            let mut at = &mut tree;
            for step in &long.path {
                at = match step {
                    PathKey::Key(key) => &mut at[key.as_str()],
                    PathKey::Index(index) => &mut at[*index as usize],
                };
            }
            assert_eq!(
                *at,
                Value::Null,
                "a null holds the place of {:?}",
                long.path
            );
            *at = Value::String(long.text);
            paths.push(long.path);
        }
        (tree, paths)
    }

    fn key(key: &str) -> PathKey {
        PathKey::Key(key.to_owned())
    }

    #[test]
    fn outcomes_are_the_objects_plugin_kit_reads() {
        assert_eq!(spliced(Outcome::nothing()).0, json!({}));
        let value = json!({"ok": true, "normalizedConfig": {"kubeconfig": "a: \"b\"\n"}});
        assert_eq!(
            spliced(Outcome::value(value.clone())).0,
            json!({ "value": value })
        );
        let mut failed = ProviderError::new("bad \"input\"\n");
        failed.code = Some(-32001);
        assert_eq!(
            spliced(Outcome::error(failed)).0,
            json!({"error": {"message": "bad \"input\"\n", "name": "Error", "code": -32001}})
        );
        assert_eq!(
            Outcome::error(ProviderError::new("plain")).write().text,
            r#"{"error":{"message":"plain","name":"Error"}}"#
        );
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
        let nested = json!({
            "ok": true, "none": null, "no": false,
            "n": [0, -1, 1.5, 1e300, -0.0, 9007199254740993u64, i64::MIN],
            "strings": strings, "": {}, "list": [[], {}, "a\"b"],
        });
        let written = Outcome::value(nested.clone()).write();
        assert!(written.long.is_empty());
        assert_eq!(
            written.text,
            format!(r#"{{"value":{}}}"#, serde_json::to_string(&nested).unwrap())
        );
    }

    /// A typed value as the providers write one: their own `Serialize`.
    struct Typed {
        kubeconfig: String,
        list: Vec<String>,
    }

    impl Serialize for Typed {
        fn serialize<S: ser::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            use ser::SerializeMap;
            let mut map = serializer.serialize_map(None)?;
            map.serialize_entry("ok", &true)?;
            map.serialize_entry("odd \"key\" é", "v")?;
            map.serialize_entry("normalizedConfig", &json!({"short": "s"}))?;
            map.serialize_entry("kubeconfig", &self.kubeconfig)?;
            map.serialize_entry("list", &self.list)?;
            map.serialize_entry("max", &u64::MAX)?;
            map.serialize_entry("half", &0.5)?;
            map.serialize_entry("none", &Option::<String>::None)?;
            map.end()
        }
    }

    #[test]
    fn long_strings_are_held_out_of_the_text_and_come_back_in_their_places() {
        let long = "apiVersion: v1\n\"quoted\" é ☃ 😀\t".repeat(40);
        let under = "x".repeat(LONG_STRING_BYTES - 1);
        let at = "y".repeat(LONG_STRING_BYTES);
        let tree = json!({
            "first": long, "normalizedConfig": {"short": "s", "kubeconfig": long, "deeper": {"at": at}},
            "under": under, "list": ["a", at, {"k": long}],
        });
        let (back, paths) = spliced(Outcome::value(tree.clone()));
        assert_eq!(back, json!({ "value": tree }));
        assert_eq!(
            paths,
            [
                vec![key("value"), key("first")],
                vec![key("value"), key("normalizedConfig"), key("kubeconfig")],
                vec![
                    key("value"),
                    key("normalizedConfig"),
                    key("deeper"),
                    key("at")
                ],
                vec![key("value"), key("list"), PathKey::Index(1)],
                vec![key("value"), key("list"), PathKey::Index(2), key("k")],
            ]
        );

        let typed = Typed {
            kubeconfig: long.clone(),
            list: vec!["a".into(), under.clone(), at.clone()],
        };
        let expected = serde_json::to_value(&typed).unwrap();
        let (back, paths) = spliced(Outcome::value(HookValue::typed(typed)));
        assert_eq!(back, json!({ "value": expected }));
        assert_eq!(
            paths,
            [
                vec![key("value"), key("kubeconfig")],
                vec![key("value"), key("list"), PathKey::Index(2)],
            ]
        );
    }

    #[test]
    fn a_typed_value_writes_what_serde_json_writes_for_it() {
        let typed = Typed {
            kubeconfig: "short".into(),
            list: vec![],
        };
        let expected = serde_json::to_string(&typed).unwrap();
        let written = Outcome::value(HookValue::typed(typed)).write();
        assert_eq!(written.text, format!(r#"{{"value":{expected}}}"#));
    }
}
