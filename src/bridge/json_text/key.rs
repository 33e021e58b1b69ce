//! Object keys as serde_json writes them: a string, or a character or an integer quoted;
//! anything else fails, as serde_json's does.

use serde::Serialize;
use serde::ser;

use super::{WriteResult, write_str};

/// An object key: a string (or a character or an integer, quoted, as serde_json writes them);
/// anything else fails, as serde_json's does.
pub(super) struct KeyWriter<'a>(pub(super) &'a mut Vec<u8>);

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
