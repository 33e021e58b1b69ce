//! The outcome's JSON text, written by a serde serializer from either form of a hook's value (a
//! `serde_json::Value` tree, or a typed value that serializes itself): what
//! `serde_json::to_writer` writes, byte for byte, except that strings are escaped by
//! `json-escape-simd` (napi-rs's crate of sonic-rs's SIMD kernels, picked at run time by CPU
//! feature), and that each string of [`LONG_STRING_BYTES`] or more is held out of the text
//! (`null` in its place) with its path, for napi to set in place ([`crate::bridge::outcome`]).
//!
//! Why not serde_json's own writer: its escaping loop looks at every byte on its own and cannot be
//! replaced through its `Formatter` (which never sees a whole string either), and an outcome is
//! mostly strings: the loop was the largest single cost of the text, ~9 instructions a byte
//! (counted with callgrind). The long strings of a tree are moved out of it, not copied
//! ([`take_long_strings`]).

use serde::ser::{self, Serialize};
use serde_json::Value;

use crate::bridge::outcome::{LongString, PathKey};

mod key;

use key::KeyWriter;

/// A string at least this long is held out of the text and set in its place by napi rather
/// than parsed by V8: below it, handing a string over costs more than parsing it.
pub const LONG_STRING_BYTES: usize = 512;

/// The first allocation for an outcome's JSON text: most outcomes fit.
const OUTCOME_TEXT_CAPACITY: usize = 2048;

/// Whether `tree` holds a string [`take_long_strings`] would move out (most outcomes hold none,
/// and are not walked twice).
pub(crate) fn holds_long_string(tree: &Value) -> bool {
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
pub(crate) fn take_long_strings(
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
pub(crate) enum Step {
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
pub(crate) fn write_str(out: &mut Vec<u8>, text: &str) {
    json_escape_simd::escape_into(text, out);
}

/// Writes one value's JSON text (see the module docs), holding long strings out of it.
pub(crate) struct OutcomeWriter {
    pub(crate) out: Vec<u8>,
    /// Where in the value the writer is: the path a long string is found at.
    pub(crate) path: Vec<Step>,
    pub(crate) long: Vec<LongString>,
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

pub(crate) type WriteResult = Result<(), serde_json::Error>;

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

/// The four array-like serde traits, all an element at a time ([`Compound::element`]).
macro_rules! array_like {
    ($($trait:ident :: $method:ident),*) => {$(
        impl ser::$trait for Compound<'_> {
            type Ok = ();
            type Error = serde_json::Error;
            fn $method<T: ?Sized + Serialize>(&mut self, value: &T) -> WriteResult {
                self.element(value)
            }
            fn end(self) -> WriteResult {
                self.end_compound()
            }
        }
    )*};
}

array_like!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

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

/// The two struct-like serde traits, all a key and a value at a time.
macro_rules! object_like {
    ($($trait:ident),*) => {$(
        impl ser::$trait for Compound<'_> {
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
    )*};
}

object_like!(SerializeStruct, SerializeStructVariant);
