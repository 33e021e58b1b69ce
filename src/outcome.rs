//! How a hook's params and its result or failure cross between JS and Rust: as JSON text.
//!
//! Hook params and results are plain JSON (the host sends and receives them over JSON-RPC), and
//! V8's `JSON.stringify` / `JSON.parse` build and read them several times faster than napi can
//! walk or create an object property by property. So each hook's params cross as one JSON
//! string (`JSON.stringify`, called from [`crate::provider`]) and the facade parses one JSON
//! string back; nothing else crosses per property. A value a provider wrote as JSON text itself
//! ([`sandbox_core::HookValue::Text`], a validate result) goes into that string as it is.
//!
//! A value written with long strings held beside its text ([`sandbox_core::json_text::Beside`]:
//! a Kubernetes validate result's kubeconfig) by a hook that ran on the JS thread is handed over
//! as an object instead: its text parsed by `JSON.parse`, each long string set in its place by
//! napi, so V8 never parses them ([`Outcome::into_js`]); on the runtime path they are spliced
//! back into the text.
//!
//! The other exception is an execute result carrying a large output string (CreateOS keeps up to
//! 4 Mi characters of tail, Kubernetes the last 8 MiB of each stream): as JSON text it would exist once more in Rust
//! and once more in V8 before `JSON.parse` made the string the host gets, so such a result is
//! built as an object instead, a large ASCII string handed to V8 without a copy
//! ([`ExecuteOutcome`]).

use napi::bindgen_prelude::{Either, FunctionRef, ToNapiValue};
use napi::{Env, sys};
use sandbox_core::{HookValue, ProviderError, ProviderResult, json_text};
use serde_json::Value;

use crate::js_text::{JsText, RawValue, create_string};
use crate::napi_status::check;

/// The first allocation for an outcome's JSON text.
const OUTCOME_TEXT_CAPACITY: usize = 2048;

/// What `{"value":…}` adds around a value's text.
const OUTCOME_WRAPPER_BYTES: usize = r#"{"value":}"#.len();

/// An execute result holding a string at least this long crosses as an object.
const LARGE_STRING_BYTES: usize = 256 * 1024;

/// A failure as data: the facade turns it into `Error` with exactly this `message`, `name`,
/// and a numeric `code` when present (the SDK forwards numeric codes to the host).
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

/// A hook's params from their JSON text, or the failure to return. The text
/// is always `JSON.stringify(params ?? null)` ([`crate::provider`]), so a failure here is a bug
/// in the bridge, reported as one. A lone UTF-16 surrogate, which a JS string may hold and
/// `JSON.stringify` writes as an escape serde_json refuses, becomes U+FFFD, as Node writes it
/// wherever a string becomes UTF-8 ([`js_compat::json::lone_surrogates_replaced`]); that
/// second pass runs only when the first parse failed. Params nested deeper than the parser's
/// limit fail with the catalogued [`sandbox_core::hook::PARAMS_TOO_DEEP`].
pub fn parse_params(text: &str) -> Result<Value, ProviderError> {
    let parsed =
        serde_json::from_str(text).or_else(
            |error| match js_compat::json::lone_surrogates_replaced(text) {
                Some(repaired) => serde_json::from_str(&repaired),
                None => Err(error),
            },
        );
    parsed.map_err(|error| {
        // serde_json refuses a 128th level of nesting: params V8 could still stringify.
        if error.to_string().starts_with("recursion limit exceeded") {
            ProviderError::new(sandbox_core::hook::PARAMS_TOO_DEEP)
        } else {
            ProviderError::new(format!(
                "paperclip-sandbox-native internal error: hook params are not JSON ({error})"
            ))
        }
    })
}

impl Outcome {
    /// The JSON text the facade parses: `{"value": …}`, `{"error": {message, name, code?}}` or
    /// `{}` (resolved with `undefined`).
    pub fn into_json(self) -> String {
        // One buffer that most outcomes fit: serde_json::to_string started at 128 bytes and
        // doubled, four regrowths (each a copy) for a kilobyte-sized validate result. Text a
        // provider wrote is measured, so its buffer is exact.
        let capacity = match &self.value {
            Some(HookValue::Text(value)) => value.written_room() + OUTCOME_WRAPPER_BYTES,
            _ => OUTCOME_TEXT_CAPACITY,
        };
        let mut text = Vec::with_capacity(capacity);
        text.push(b'{');
        if let Some(value) = &self.value {
            text.extend_from_slice(br#""value":"#);
            match value {
                HookValue::Tree(value) => json_text::write_value(&mut text, value),
                // Written by the provider from typed data: one well-formed value, as it is.
                HookValue::Text(value) => value.write_to(&mut text),
            }
        }
        if let Some(error) = &self.error {
            if self.value.is_some() {
                text.push(b',');
            }
            text.extend_from_slice(br#""error":{"message":"#);
            json_text::write_str(&mut text, &error.message);
            text.extend_from_slice(br#","name":"#);
            json_text::write_str(&mut text, &error.name);
            if let Some(code) = error.code {
                text.extend_from_slice(br#","code":"#);
                text.extend_from_slice(code.to_string().as_bytes());
            }
            text.push(b'}');
        }
        text.push(b'}');
        // Only whole strings and ASCII punctuation were written: always UTF-8.
        String::from_utf8(text).unwrap_or_default()
    }

    /// The outcome of a hook that ran on the JS thread, as the facade takes it: its JSON text,
    /// or, for a value written with strings beside its text ([`sandbox_core::json_text::Beside`]),
    /// the object itself: the text (a `null` in each such place) parsed by this env's
    /// `JSON.parse`, then each string set in its place by napi, so V8 never parses them.
    pub fn into_js(
        self,
        env: &Env,
        parse: &FunctionRef<JsText, RawValue>,
    ) -> napi::Result<Either<JsText, RawValue>> {
        let text = match self {
            Outcome {
                value: Some(HookValue::Text(text)),
                error: None,
            } if !text.beside().is_empty() => text,
            outcome => return Ok(Either::A(JsText(outcome.into_json()))),
        };
        let mut wrapped = String::with_capacity(text.text().len() + OUTCOME_WRAPPER_BYTES);
        wrapped.push_str(r#"{"value":"#);
        wrapped.push_str(text.text());
        wrapped.push('}');
        let outcome = parse.borrow_back(env)?.call(JsText(wrapped))?.0;
        let env = env.raw();
        // Every napi call below is given handles of this env made in the current scope (the
        // hook call's, still open), on its JS thread, and out-pointers that are locals.
        let mut value = std::ptr::null_mut();
        check(
            // SAFETY: `outcome` is the live object `JSON.parse` just returned; the name is a
            // static NUL-terminated string; `value` is a local.
            unsafe { sys::napi_get_named_property(env, outcome, c"value".as_ptr(), &mut value) },
            "a hook's outcome (its value)",
        )?;
        for beside in text.beside() {
            let Some((last, parents)) = beside.path.split_last() else {
                continue;
            };
            let mut object = value;
            for key in parents {
                // SAFETY: `env` is the current env, on its JS thread (`create_string`'s need).
                let key = unsafe { create_string(env, key)? };
                let mut inner = std::ptr::null_mut();
                check(
                    // SAFETY: `object` and `key` are live handles of this scope; `inner` a local.
                    unsafe { sys::napi_get_property(env, object, key, &mut inner) },
                    "a hook's outcome (an object on a string's path)",
                )?;
                object = inner;
            }
            // SAFETY: `env` is the current env, on its JS thread (`create_string`'s need).
            let key = unsafe { create_string(env, last)? };
            // SAFETY: as above.
            let string = unsafe { create_string(env, &beside.text)? };
            check(
                // SAFETY: `object`, `key` and `string` are live handles of this scope.
                unsafe { sys::napi_set_property(env, object, key, string) },
                "a hook's outcome (a string set in its place)",
            )?;
        }
        Ok(Either::B(RawValue(outcome)))
    }

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
}

impl From<ProviderResult<Value>> for Outcome {
    fn from(result: ProviderResult<Value>) -> Self {
        match result {
            Ok(value) => Outcome::value(value),
            Err(err) => Outcome::error(err),
        }
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

/// An execute hook's outcome on its way to JS: JSON text like every other hook's, except a
/// successful result holding a large string, which becomes `{value}` built by napi (see the
/// module docs). plugin-kit's `settle` takes either.
pub struct ExecuteOutcome(pub Outcome);

impl ToNapiValue for ExecuteOutcome {
    unsafe fn to_napi_value(env: sys::napi_env, outcome: Self) -> napi::Result<sys::napi_value> {
        let text = match outcome.0 {
            Outcome {
                value: Some(HookValue::Tree(value)),
                error: None,
            } if holds_large_string(&value) => {
                let mut wrapper = serde_json::Map::new();
                wrapper.insert("value".to_owned(), value);
                // SAFETY: `to_napi_value`'s contract: `env` is the current env, on its JS
                // thread, inside a handle scope (`value_to_napi`'s need).
                return unsafe { value_to_napi(env, Value::Object(wrapper)) };
            }
            outcome => outcome.into_json(),
        };
        // SAFETY: as above.
        unsafe { String::to_napi_value(env, text) }
    }
}

fn holds_large_string(value: &Value) -> bool {
    match value {
        Value::String(text) => text.len() >= LARGE_STRING_BYTES,
        Value::Array(items) => items.iter().any(holds_large_string),
        Value::Object(fields) => fields.values().any(holds_large_string),
        _ => false,
    }
}

/// `value` as a JS value, as napi-rs's serde-json conversion builds it, except that a large
/// ASCII string is handed to V8 as an external string ([`external_latin1`]). Only the objects
/// and arrays on the way to a large string are walked here; the rest is napi-rs's.
///
/// # Safety
/// `env` is the current env, on its JS thread, inside a handle scope.
unsafe fn value_to_napi(env: sys::napi_env, value: Value) -> napi::Result<sys::napi_value> {
    match value {
        Value::String(text) if text.len() >= LARGE_STRING_BYTES && text.is_ascii() => {
            // SAFETY: `env` as this function's contract gives it; `text` is ASCII, as
            // `external_latin1` requires.
            unsafe { external_latin1(env, text) }
        }
        Value::Object(fields) if fields.values().any(holds_large_string) => {
            let mut object = std::ptr::null_mut();
            check(
                // SAFETY: `env` is the current env (this function's contract); `object` a local.
                unsafe { sys::napi_create_object(env, &mut object) },
                "the execute result (object)",
            )?;
            for (key, field) in fields {
                // SAFETY: `env` is the current env, on its JS thread.
                let key = unsafe { <&str>::to_napi_value(env, &key)? };
                // SAFETY: as above (the recursion keeps the same env and scope).
                let field = unsafe { value_to_napi(env, field)? };
                check(
                    // SAFETY: `object`, `key` and `field` are handles made above in this scope.
                    unsafe { sys::napi_set_property(env, object, key, field) },
                    "the execute result (property)",
                )?;
            }
            Ok(object)
        }
        Value::Array(items) if items.iter().any(holds_large_string) => {
            let mut array = std::ptr::null_mut();
            check(
                // SAFETY: `env` is the current env (this function's contract); `array` a local.
                unsafe { sys::napi_create_array_with_length(env, items.len(), &mut array) },
                "the execute result (array)",
            )?;
            for (index, item) in items.into_iter().enumerate() {
                // SAFETY: the same env and scope, as this function's contract gives them.
                let item = unsafe { value_to_napi(env, item)? };
                check(
                    // SAFETY: `array` and `item` are handles made above in this scope; `index`
                    // is within the length the array was made with.
                    unsafe { sys::napi_set_element(env, array, index as u32, item) },
                    "the execute result (element)",
                )?;
            }
            Ok(array)
        }
        // SAFETY: `env` is the current env, on its JS thread (this function's contract).
        other => unsafe { Value::to_napi_value(env, other) },
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
    check(status, "the execute result (string)")?;
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

    fn parsed(outcome: Outcome) -> Value {
        serde_json::from_str(&outcome.into_json()).expect("the outcome is JSON")
    }

    #[test]
    fn outcomes_are_the_objects_the_facade_reads() {
        assert_eq!(parsed(Outcome::nothing()), json!({}));
        let value = json!({"ok": true, "normalizedConfig": {"kubeconfig": "a: \"b\"\n"}});
        assert_eq!(
            parsed(Outcome::value(value.clone())),
            json!({ "value": value })
        );
        let mut failed = ProviderError::new("bad \"input\"\n");
        failed.code = Some(-32001);
        assert_eq!(
            parsed(Outcome::error(failed)),
            json!({"error": {"message": "bad \"input\"\n", "name": "Error", "code": -32001}})
        );
        assert_eq!(
            parsed(Outcome::error(ProviderError::new("plain"))),
            json!({"error": {"message": "plain", "name": "Error"}})
        );
    }
}
