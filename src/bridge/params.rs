//! How a hook's params get into Rust: the one string the JS half of the hook caller
//! (`caller.js`) makes of them, parsed here into the `serde_json::Value` the provider takes.
//!
//! The provider gets exactly the tree serde_json would parse from `JSON.stringify(params)`; how
//! it gets there is decided here and in `caller.js` alone. Params are mostly a handful of keys
//! holding strings, one of which can be kilobytes (a Kubernetes config's kubeconfig). As JSON
//! text such a string is walked four times per call: `JSON.stringify` escapes it (~9
//! instructions a byte), napi copies the text out, serde_json scans and unescapes it. Read
//! property by property through napi it is copied once, but each value costs ~4,000
//! instructions of napi's generic paths. So `caller.js` reads the params in JS, where V8
//! compiles the property reads, and writes small plain params that hold a string of
//! [`LONG_STRING_UNITS`] or more as one string of tagged tokens,
//! each string unescaped and prefixed by its length, which one napi call copies out and
//! [`Form`] parses (a Kubernetes validate call ~24,000 instructions cheaper than the text,
//! counted with callgrind).
//!
//! Params without such a string, wide or deep params (past [`MAX_VALUES`] values or
//! [`MAX_DEPTH`] levels), and anything
//! `JSON.stringify` treats specially (an object with a `toJSON`, a prototype other than
//! `Object.prototype` or `null`, a `BigInt`), are handed over as `JSON.stringify`'s text,
//! parsed here by serde_json (`JSON.stringify` throws what it throws, a `BigInt`'s `TypeError`,
//! in JS). Params nested too deeply for `JSON.stringify` (its stack runs out: a `RangeError`,
//! handed over as the number 0) or for serde_json (128 levels) fail with the catalogued
//! [`PARAMS_TOO_DEEP`]. A lone surrogate, which `JSON.stringify` writes as an escape
//! serde_json refuses, becomes U+FFFD, as Node writes it wherever a string becomes UTF-8; the
//! form does the same.
//!
//! The form keeps what `JSON.stringify` keeps: own enumerable string-keyed properties in the
//! engine's key order; `undefined`, functions and symbols left out of objects and `null` in
//! arrays (holes too); numbers as the text JSON writes for them, parsed by serde_json. A getter
//! runs again on the text route if the reader gave up after it ran; params parsed from a
//! JSON-RPC line have none.

use napi::{Env, sys};
use sandbox_core::ProviderError;
use sandbox_core::hook::PARAMS_TOO_DEEP;
use serde_json::{Map, Value};

use crate::bridge::strings::read_utf8;
use crate::napi_status::check;

/// More values than this (objects, arrays, their members) go down the text route, whose cost
/// per value is lower once the params are wide enough.
pub const MAX_VALUES: u32 = 128;

/// Params nested deeper than this go down the text route (which has the depth limits).
pub const MAX_DEPTH: u32 = 16;

/// Params are read in the form only when they hold a string at least this long (in UTF-16
/// units): below it, escaping and unescaping the string costs less than the form's walk.
pub const LONG_STRING_UNITS: u32 = 512;

/// serde_json refuses params nested deeper than this (its recursion limit).
const TEXT_MAX_DEPTH: usize = 127;

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

/// The params from what `caller.js` handed over (`read`'s answer, or `null` for params that
/// were `undefined` or `null`): `Err` only for a bridge failure.
pub fn from_js(env: &Env, handed: sys::napi_value) -> napi::Result<Result<Params, ProviderError>> {
    let mut kind = 0;
    check(
        // SAFETY: `handed` is a live handle of this env in the hook call's scope, on its JS
        // thread; `kind` is a local.
        unsafe { sys::napi_typeof(env.raw(), handed, &mut kind) },
        "a hook's params (their type)",
    )?;
    Ok(Ok(match kind {
        sys::ValueType::napi_string => {
            // SAFETY: `handed` is a live string handle of this env.
            let text = unsafe { read_utf8(env.raw(), handed) }?;
            match text.strip_prefix(FORM_MARK) {
                Some(form) => match Form::parse(form) {
                    Some(params) => Params::Read(params),
                    None => {
                        return Ok(Err(internal(
                            "the params reader wrote what it never writes",
                        )));
                    }
                },
                None => Params::Text(text),
            }
        }
        // Its one number: params too deep for `JSON.stringify`.
        sys::ValueType::napi_number => return Ok(Err(ProviderError::new(PARAMS_TOO_DEEP))),
        sys::ValueType::napi_null | sys::ValueType::napi_undefined => Params::Read(Value::Null),
        // Never handed over by `caller.js`.
        _ => return Ok(Err(internal("hook params came in an unknown shape"))),
    }))
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

/// The reader's string, parsed (its form is described in `caller.js`). Any surprise gives
/// `None`, which [`from_js`] reports as a failure of the bridge.
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
