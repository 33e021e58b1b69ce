//! A hook's params read from the JS value in one string, when they are small plain data; the
//! JSON text path ([`crate::outcome::parse_params`]) for everything else.
//!
//! Why: params are mostly a handful of keys holding strings, one of which can be kilobytes (a
//! validate call's kubeconfig). As JSON text that string is walked four times per call:
//! `JSON.stringify` escapes it (~9 instructions a byte), napi copies the text out, serde_json
//! scans and unescapes it into a tree. Reading the value property by property through napi
//! copies it once, but costs ~4,000 instructions a value (a property-name list, a lookup, a
//! type check and a string read, each a napi call through V8's generic paths; counted with
//! callgrind, ~28,000 instructions for a Kubernetes validate's six values). So a small function
//! compiled once per provider, by its first
//! hook call with params (`js_params_reader.js`, run as a script), reads the params in JS,
//! where V8 compiles the property reads, and writes them as one string of tagged tokens with
//! each string unescaped and prefixed by its length; here that string is copied out by one napi
//! call and parsed.
//! Wide or deep params are left to the text: the reader gives up past [`MAX_VALUES`] values
//! or [`MAX_DEPTH`] levels.
//!
//! The tree is exactly the one serde_json would parse from `JSON.stringify(params)`: own
//! enumerable string-keyed properties in the engine's key order (`Object.keys`, read in the
//! order `JSON.stringify` reads them); `undefined`, functions and symbols left out of objects
//! and `null` in arrays (holes too); numbers as the text JSON writes for them, parsed by
//! serde_json; lone surrogates as U+FFFD, as the text path repairs them. Anything
//! `JSON.stringify` treats specially is not read here but sent down the text path, which then
//! behaves as it always has (its errors included): an object with a `toJSON` (a `Date`, a
//! `Buffer`), an object whose prototype is neither `Object.prototype` nor `null` (boxed
//! primitives, class instances, typed arrays), a `BigInt`, a top-level function or symbol. A
//! getter runs again on the text path if the reader gave up after it ran; params parsed from
//! a JSON-RPC line have none.

use std::ptr;

use napi::bindgen_prelude::{FnArgs, Function, FunctionRef, JsValue};
use napi::{Env, sys};
use serde_json::{Map, Value};

use crate::js_text::read_utf8;

/// More values than this (objects, arrays, their members) go down the text path, whose cost per
/// value is lower once the params are wide enough.
const MAX_VALUES: u32 = 128;

/// Params nested deeper than this go down the text path (which has the depth limits).
const MAX_DEPTH: u32 = 16;

/// The reader's source: a script whose value is `(maxValues, maxDepth) => reader`.
const READER_SOURCE: &str = include_str!("js_params_reader.js");

/// Reads small plain params (see the module docs). Holds the reader function, compiled once.
pub struct PlainParams {
    reader: FunctionRef<sys::napi_value, sys::napi_value>,
}

impl PlainParams {
    pub fn new(env: &Env) -> napi::Result<Self> {
        let factory: Function<
            '_,
            FnArgs<(u32, u32)>,
            Function<'_, sys::napi_value, sys::napi_value>,
        > = env.run_script(READER_SOURCE)?;
        // Two arguments (a bare tuple would be passed as one array).
        let reader = factory.call(FnArgs::from((MAX_VALUES, MAX_DEPTH)))?;
        Ok(Self {
            reader: reader.create_ref()?,
        })
    }

    /// The params as a tree, or `None` when they go down the text path. Never leaves a JS
    /// exception pending: the reader catches what a getter or a proxy trap throws, and the
    /// text path meets it again.
    pub fn read(&self, env: &Env, params: sys::napi_value) -> Option<Value> {
        let reader = self.reader.borrow_back(env).ok()?.raw();
        let mut written = ptr::null_mut();
        // SAFETY: handles of this env in the hook call's scope; the out-pointer is a local. The
        // reader is an arrow function, so the receiver passed (itself) is not read.
        let status =
            unsafe { sys::napi_call_function(env.raw(), reader, reader, 1, &params, &mut written) };
        let mut kind = 0;
        if status != sys::Status::napi_ok
            // SAFETY: reached only when the call succeeded, so `written` is the live handle it
            // returned in this scope; `kind` is a local.
            || unsafe { sys::napi_typeof(env.raw(), written, &mut kind) } != sys::Status::napi_ok
            || kind != sys::ValueType::napi_string
        {
            clear_exception(env);
            return None;
        }
        // SAFETY: `written` is a live string handle of this env.
        let text = unsafe { read_utf8(env.raw(), written) }.ok()?;
        Form::parse(&text)
    }
}

/// Clears an exception left pending by the call into the reader, if any (it catches its own,
/// so only a failure of the call itself, such as a stack overflow on entry, leaves one).
fn clear_exception(env: &Env) {
    let mut pending = false;
    // SAFETY: `env` is the hook call's env, on its JS thread; both calls only query or clear
    // its exception state, writing to locals (the exception's handle is dropped unread).
    unsafe {
        if sys::napi_is_exception_pending(env.raw(), &mut pending) == sys::Status::napi_ok
            && pending
        {
            let mut exception = ptr::null_mut();
            sys::napi_get_and_clear_last_exception(env.raw(), &mut exception);
        }
    }
}

/// The reader's string, parsed (its form is described in `js_params_reader.js`). Any
/// surprise gives `None`, and the params go down the text path.
struct Form<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Form<'a> {
    fn parse(text: &'a str) -> Option<Value> {
        let mut form = Form { text, at: 0 };
        let value = form.value(0)?;
        (form.at == text.len()).then_some(value)
    }

    fn next_byte(&mut self) -> Option<u8> {
        let byte = *self.text.as_bytes().get(self.at)?;
        self.at += 1;
        Some(byte)
    }

    fn peek_byte(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    /// The text up to (not including) `end`, which is consumed too.
    fn until(&mut self, end: u8) -> Option<&'a str> {
        let rest = &self.text[self.at..];
        let length = rest.bytes().position(|byte| byte == end)?;
        self.at += length + 1;
        Some(&rest[..length])
    }

    fn value(&mut self, depth: u32) -> Option<Value> {
        if depth > MAX_DEPTH {
            return None;
        }
        Some(match self.next_byte()? {
            b'n' => Value::Null,
            b't' => Value::Bool(true),
            b'f' => Value::Bool(false),
            // JSON's own text for the number, so serde_json makes of it what the text path does.
            b'd' => match serde_json::from_str(self.until(b';')?).ok()? {
                number @ Value::Number(_) => number,
                _ => return None,
            },
            b's' => Value::String(self.string()?.to_owned()),
            b'[' => {
                let mut items = Vec::new();
                while self.peek_byte()? != b']' {
                    items.push(self.value(depth + 1)?);
                }
                self.at += 1;
                Value::Array(items)
            }
            b'{' => {
                let mut fields = Map::new();
                while self.peek_byte()? != b'}' {
                    if self.next_byte()? != b's' {
                        return None;
                    }
                    let key = self.string()?.to_owned();
                    fields.insert(key, self.value(depth + 1)?);
                }
                self.at += 1;
                Value::Object(fields)
            }
            _ => return None,
        })
    }

    /// A string's `<length>:<characters>` after its tag: `length` UTF-16 units, which V8
    /// wrote as UTF-8 (a lone surrogate as U+FFFD, one unit for one).
    fn string(&mut self) -> Option<&'a str> {
        let units: usize = self.until(b':')?.parse().ok()?;
        let rest = &self.text[self.at..];
        // ASCII is one byte a unit, and the byte after an ASCII run is a character boundary.
        let length = match rest.as_bytes().get(..units) {
            Some(prefix) if prefix.is_ascii() => units,
            _ => utf8_length_of_units(rest, units)?,
        };
        self.at += length;
        Some(&rest[..length])
    }
}

/// How many bytes of `text` hold its first `units` UTF-16 units, if they end on a character.
fn utf8_length_of_units(text: &str, units: usize) -> Option<usize> {
    let mut left = units;
    for (offset, character) in text.char_indices() {
        if left == 0 {
            return Some(offset);
        }
        left = left.checked_sub(character.len_utf16())?;
    }
    (left == 0).then_some(text.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_every_token() {
        let text = "{s1:ans1:b[tfd-1.5e-7;d1e+21;s0:]s4:é☃😀{s1:xs2:y:}}";
        let expected =
            json!({"a": null, "b": [true, false, -1.5e-7, 1e21, ""], "é☃😀": {"x": "y:"}});
        assert_eq!(Form::parse(text), Some(expected));
    }

    #[test]
    fn counts_string_lengths_in_utf16_units() {
        // "😀" is two units, "é" and "☃" one each.
        assert_eq!(Form::parse("s4:é😀☃"), Some(json!("é😀☃")));
        assert_eq!(
            Form::parse("s2:é😀☃"),
            None,
            "a length that ends inside a pair"
        );
        assert_eq!(Form::parse("s3:é😀"), Some(json!("é😀")));
        assert_eq!(Form::parse("s3:ab"), None, "a length past the end");
    }

    #[test]
    fn refuses_what_the_reader_never_writes() {
        for text in [
            "", "x", "{s1:a", "[t", "{t}", "d;", "dtrue;", "s:", "tt", "d1", "{s1:a}}",
        ] {
            assert_eq!(Form::parse(text), None, "{text:?}");
        }
        let too_deep = "[".repeat(MAX_DEPTH as usize + 2) + &"]".repeat(MAX_DEPTH as usize + 2);
        assert_eq!(Form::parse(&too_deep), None);
        let deepest = "[".repeat(MAX_DEPTH as usize + 1) + &"]".repeat(MAX_DEPTH as usize + 1);
        assert!(Form::parse(&deepest).is_some());
    }
}
