//! How a hook's outcome gets out to JavaScript: as one object, `{value}`, `{error}` or `{}`
//! (resolved with `undefined`), which plugin-kit's `settle` unwraps.
//!
//! The object is made by V8's `JSON.parse` from the outcome's JSON text ([`crate::bridge::json_text`]):
//! V8 builds objects from JSON several times faster than napi can property by property. For a
//! synchronous hook the caller's JS half parses the text ([`Written::into_text_or_js`]); a
//! promise settles with the object made here ([`Outcome::into_js`]). Long strings are the
//! exception: each string of [`LONG_STRING_BYTES`] or more is left out of the text (`null` in
//! its place) and set in its place by napi after the parse, because V8 makes a string from
//! escaped JSON at ~10 instructions a byte (a kubeconfig's newlines are escapes) while napi
//! copies one in at ~1, for ~2,500 instructions a string. An ASCII string of
//! [`EXTERNAL_STRING_BYTES`] or more (an execute result's output tail: CreateOS keeps up to 4 Mi
//! characters, Kubernetes the last 8 MiB of each stream) is not copied at all but handed to V8
//! as an external string ([`external_latin1`]).

use napi::bindgen_prelude::FunctionRef;
use napi::{Env, sys};
use sandbox_core::{HookValue, ProviderError, ProviderResult};
use serde::Serialize;

use crate::bridge::external::external_latin1;
#[cfg(doc)]
use crate::bridge::json_text::LONG_STRING_BYTES;
use crate::bridge::json_text::{
    OutcomeWriter, Step, holds_long_string, take_long_strings, write_str,
};
use crate::bridge::strings::{RawValue, create_string};
use crate::napi_status::check;

/// An ASCII string at least this long goes to V8 without a copy ([`external_latin1`]).
pub const EXTERNAL_STRING_BYTES: usize = 256 * 1024;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bridge::json_text::LONG_STRING_BYTES;
    use serde::ser;
    use serde_json::{Value, json};

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
