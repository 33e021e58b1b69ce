//! How a hook's params get into Rust: one call into a small JS reader, whose answer is parsed
//! here into the `serde_json::Value` the provider takes.
//!
//! The provider gets exactly the tree serde_json would parse from `JSON.stringify(params)`; how
//! it gets there is decided here alone. Params are mostly a handful of keys holding strings, one
//! of which can be kilobytes (a Kubernetes config's kubeconfig). As JSON text such a string is
//! walked four times per call: `JSON.stringify` escapes it (~9 instructions a byte), napi copies
//! the text out, serde_json scans and unescapes it. Read property by property through napi it
//! is copied once, but each value costs ~4,000 instructions of napi's generic paths. So the
//! reader (`params_reader.js`, compiled once per provider by its first hook call with params)
//! reads the params in JS, where V8 compiles the property reads, and writes small plain params
//! as one string of tagged tokens, each string unescaped and prefixed by its length, which one
//! napi call copies out and [`Form`] parses (measured with callgrind: a Kubernetes validate
//! call ~24,000 instructions cheaper than the text; for params of short strings only, such as
//! CreateOS's, the two cost the same, so every provider takes the one route).
//!
//! Wide or deep params (past [`MAX_VALUES`] values or [`MAX_DEPTH`] levels), and anything
//! `JSON.stringify` treats specially (an object with a `toJSON`, a prototype other than
//! `Object.prototype` or `null`, a `BigInt`), are handed over by the same reader as
//! `JSON.stringify`'s text, parsed here by serde_json: the reader then behaves as
//! `JSON.stringify` does, its throws included (a `BigInt` throws its `TypeError`). Params
//! nested too deeply for `JSON.stringify` (its stack runs out: a `RangeError`) or for
//! serde_json (128 levels) fail with the catalogued [`PARAMS_TOO_DEEP`]. A lone surrogate,
//! which `JSON.stringify` writes as an escape serde_json refuses, becomes U+FFFD, as Node
//! writes it wherever a string becomes UTF-8; the reader's form does the same.
//!
//! The form keeps what `JSON.stringify` keeps: own enumerable string-keyed properties in the
//! engine's key order; `undefined`, functions and symbols left out of objects and `null` in
//! arrays (holes too); numbers as the text JSON writes for them, parsed by serde_json. A getter
//! runs again on the text route if the reader gave up after it ran; params parsed from a
//! JSON-RPC line have none.

use std::ptr;

use napi::bindgen_prelude::{FnArgs, Function, FunctionRef, JsValue};
use napi::{Env, sys};
use sandbox_core::ProviderError;
use sandbox_core::hook::PARAMS_TOO_DEEP;
use serde_json::{Map, Value};

use crate::bridge::strings::read_utf8;
use crate::napi_status::check;

/// More values than this (objects, arrays, their members) go down the text route, whose cost
/// per value is lower once the params are wide enough.
const MAX_VALUES: u32 = 128;

/// Params nested deeper than this go down the text route (which has the depth limits).
const MAX_DEPTH: u32 = 16;

/// serde_json refuses params nested deeper than this (its recursion limit).
const TEXT_MAX_DEPTH: usize = 127;

/// The reader's source: a script whose value is `(maxValues, maxDepth) => reader`.
const READER_SOURCE: &str = include_str!("params_reader.js");

/// The JS function that reads params (see the module docs), compiled once.
pub struct ParamsReader {
    reader: FunctionRef<sys::napi_value, sys::napi_value>,
}

/// A hook's params on their way to the provider: read already, or JSON text still to be parsed
/// (off the JS thread, for a hook that runs on the runtime).
pub enum Params {
    Read(Value),
    Text(String),
}

impl Params {
    /// The params as the provider takes them.
    pub fn into_value(self) -> Result<Value, ProviderError> {
        match self {
            Params::Read(params) => Ok(params),
            Params::Text(text) => parse_text(&text),
        }
    }
}

/// Reads a hook's `params`: `Ok(Err(_))` for params too deep to read; `Err` when reading them
/// threw (as `JSON.stringify` throws for a `BigInt`), the exception left pending for the
/// caller's throw. `undefined` and `null` need no reader; `reader` gives it for anything else.
pub fn read<'a>(
    env: &Env,
    params: sys::napi_value,
    reader: impl FnOnce() -> napi::Result<&'a ParamsReader>,
) -> napi::Result<Result<Params, ProviderError>> {
    let mut kind = 0;
    check(
        // SAFETY: `params` is a live handle of this env in the hook call's scope, on its JS
        // thread; `kind` is a local.
        unsafe { sys::napi_typeof(env.raw(), params, &mut kind) },
        "a hook's params (their type)",
    )?;
    if kind == sys::ValueType::napi_undefined || kind == sys::ValueType::napi_null {
        return Ok(Ok(Params::Read(Value::Null)));
    }
    reader()?.read(env, params)
}

impl ParamsReader {
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

    /// Reads `params` (see [`read`]).
    fn read(
        &self,
        env: &Env,
        params: sys::napi_value,
    ) -> napi::Result<Result<Params, ProviderError>> {
        let mut kind = 0;
        let reader = self.reader.borrow_back(env)?.raw();
        let mut written = ptr::null_mut();
        // SAFETY: handles of this env in the hook call's scope; the out-pointer is a local. The
        // reader is an arrow function, so the receiver passed (itself) is not read.
        let status =
            unsafe { sys::napi_call_function(env.raw(), reader, reader, 1, &params, &mut written) };
        if status == sys::Status::napi_pending_exception {
            // What `JSON.stringify` threw; the caller returns, and JS sees it thrown.
            return Err(napi::Error::new(
                napi::Status::PendingException,
                "reading a hook's params threw",
            ));
        }
        check(status, "a hook's params (the reader's call)")?;
        check(
            // SAFETY: `written` is the live handle the call returned in this scope.
            unsafe { sys::napi_typeof(env.raw(), written, &mut kind) },
            "a hook's params (the reader's answer)",
        )?;
        match kind {
            sys::ValueType::napi_string => {}
            // Its one number: params too deep for `JSON.stringify`.
            sys::ValueType::napi_number => return Ok(Err(ProviderError::new(PARAMS_TOO_DEEP))),
            // `JSON.stringify`'s `undefined`, for a top-level function or symbol: no value.
            _ => return Ok(Ok(Params::Text("null".to_owned()))),
        }
        // SAFETY: `written` is a live string handle of this env.
        let text = unsafe { read_utf8(env.raw(), written) }?;
        Ok(Ok(match text.strip_prefix(FORM_MARK) {
            Some(form) => match Form::parse(form) {
                Some(params) => Params::Read(params),
                None => {
                    return Ok(Err(internal(
                        "the params reader wrote what it never writes",
                    )));
                }
            },
            None => Params::Text(text),
        }))
    }
}

/// How the reader's form starts: never the first character of JSON text.
const FORM_MARK: &str = "~";

/// `JSON.stringify`'s text parsed as the provider takes it (see the module docs).
fn parse_text(text: &str) -> Result<Value, ProviderError> {
    serde_json::from_str(text)
        .or_else(
            |error| match js_compat::json::lone_surrogates_replaced(text) {
                Some(repaired) => serde_json::from_str(&repaired),
                None => Err(error),
            },
        )
        .map_err(|error| {
            if nesting_depth(text) > TEXT_MAX_DEPTH {
                ProviderError::new(PARAMS_TOO_DEEP)
            } else {
                internal(&format!("hook params are not JSON ({error})"))
            }
        })
}

/// How deeply `text`'s arrays and objects nest (brackets inside strings not counted): asked
/// only of text serde_json refused, to tell params too deep for it from a bug here.
fn nesting_depth(text: &str) -> usize {
    let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0, false, false);
    for byte in text.bytes() {
        match (in_string, escaped, byte) {
            (true, true, _) => escaped = false,
            (true, false, b'\\') => escaped = true,
            (true, false, b'"') => in_string = false,
            (true, false, _) => {}
            (false, _, b'"') => in_string = true,
            (false, _, b'[' | b'{') => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            (false, _, b']' | b'}') => depth = depth.saturating_sub(1),
            (false, _, _) => {}
        }
    }
    deepest
}

/// A failure of the bridge itself, reported as one.
fn internal(what: &str) -> ProviderError {
    ProviderError::new(format!("paperclip-sandbox-native internal error: {what}"))
}

/// The reader's string, parsed (its form is described in `params_reader.js`). Any
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
    fn tells_params_too_deep_for_serde_json_from_other_failures() {
        let deep = "[".repeat(TEXT_MAX_DEPTH + 1) + &"]".repeat(TEXT_MAX_DEPTH + 1);
        assert_eq!(
            parse_text(&deep).map_err(|e| e.message),
            Err(PARAMS_TOO_DEEP.to_owned())
        );
        let fits = "[".repeat(TEXT_MAX_DEPTH) + &"]".repeat(TEXT_MAX_DEPTH);
        assert!(parse_text(&fits).is_ok());
        let quoted = format!("[\"{}\\\"\"]", "[".repeat(200));
        assert_eq!(
            parse_text(&quoted).ok(),
            Some(serde_json::json!([format!("{}\"", "[".repeat(200))]))
        );
        let broken = parse_text("{").map_err(|e| e.message);
        assert!(broken.is_err_and(|m| m.starts_with("paperclip-sandbox-native internal error")));
        assert_eq!(
            parse_text("\"\\ud800\"").ok(),
            Some(serde_json::json!("\u{fffd}"))
        );
    }

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
