//! A hook's params read from the JS value itself, property by property, when they are small
//! plain data; the JSON text path ([`crate::outcome::parse_params`]) for everything else.
//!
//! Why: params are mostly a handful of keys holding strings, one of which can be kilobytes (a
//! validate call's kubeconfig). As JSON text that string is walked four times per call:
//! `JSON.stringify` escapes it (~9 instructions a byte), napi copies the text out, serde_json
//! scans and unescapes it into a tree. Read here it is one copy (`napi_get_value_string_utf8`)
//! into the tree's `String` (bench/profile/README.md §2, round 6). Per key, though, napi costs
//! more than the text does (a property-name list, a lookup and a type check per key), so wide
//! or deep params are left to the text: the walk gives up past [`MAX_VALUES`] values or
//! [`MAX_DEPTH`] levels.
//!
//! The tree is exactly the one serde_json would parse from `JSON.stringify(params)`: own
//! enumerable string-keyed properties in the engine's key order; `undefined`, functions and
//! symbols left out of objects and `null` in arrays (holes too); numbers as their JSON text
//! parses ([`js_compat::number::parsed_json_value`]); lone surrogates as U+FFFD, as the text
//! path repairs them. Anything `JSON.stringify` treats specially is not read here but sent down
//! the text path, which then behaves as it always has (its errors included): an object with a
//! `toJSON` (a `Date`, a `Buffer`), an object whose prototype is neither `Object.prototype`
//! nor `null` (boxed primitives, class instances, typed arrays), a `BigInt`, a top-level
//! function or symbol. A getter runs again on the text path if the walk gave up after it ran;
//! params parsed from a JSON-RPC line have none.

use std::ffi::CStr;
use std::ptr;

use napi::bindgen_prelude::{JsObjectValue, Object, ObjectRef, ToNapiValue};
use napi::{Env, sys};
use serde_json::{Map, Value};

use crate::js_text::read_utf8_short_first;

/// More values than this (objects, arrays, their members) go down the text path: beyond a
/// few dozen keys, napi's per-property calls cost more than `JSON.stringify` and serde_json.
const MAX_VALUES: usize = 128;

/// Params nested deeper than this go down the text path (which has the depth limits).
const MAX_DEPTH: usize = 16;

const TO_JSON: &CStr = c"toJSON";

// Node-API 6 (Node >= 10.20), declared here rather than through napi-sys's `napi6` feature,
// which would raise the version the whole addon declares. The keys `JSON.stringify` reads:
// own, enumerable, no symbols, index keys as strings.
unsafe extern "C" {
    fn napi_get_all_property_names(
        env: sys::napi_env,
        object: sys::napi_value,
        key_mode: i32,
        key_filter: i32,
        key_conversion: i32,
        result: *mut sys::napi_value,
    ) -> sys::napi_status;
}
const KEY_OWN_ONLY: i32 = 1;
const KEY_ENUMERABLE: i32 = 1 << 1;
const KEY_SKIP_SYMBOLS: i32 = 1 << 4;
const KEY_NUMBERS_TO_STRINGS: i32 = 1;

/// Reads small plain params (see the module docs). Holds `Object.prototype`, taken once.
pub struct PlainParams {
    object_prototype: ObjectRef<false>,
}

// SAFETY: the reference is only ever read on the JS thread of the env that made it, through a
// `&Env` (a hook call); the provider object holding it is shared with the runtime, never used
// there.
unsafe impl Sync for PlainParams {}

/// The walk gave up: the params go down the text path.
struct NotPlain;

type Walk<T> = Result<T, NotPlain>;

impl PlainParams {
    pub fn new(env: &Env) -> napi::Result<Self> {
        let object: Object<'_> = env.get_global()?.get_named_property_unchecked("Object")?;
        let prototype: Object<'_> = object.get_named_property_unchecked("prototype")?;
        Ok(Self {
            object_prototype: prototype.create_ref()?,
        })
    }

    /// The params as a tree, or `None` when they go down the text path. Never leaves a JS
    /// exception pending: one thrown by a getter or a proxy trap is cleared, and the text path
    /// meets it again.
    pub fn read(&self, env: &Env, params: sys::napi_value) -> Option<Value> {
        // SAFETY: a reference this env made; napi checks its arguments.
        let prototype =
            unsafe { <&ObjectRef<false>>::to_napi_value(env.raw(), &self.object_prototype) }
                .ok()?;
        let mut walk = Walker {
            env: env.raw(),
            object_prototype: prototype,
            budget: MAX_VALUES,
        };
        match walk.value(params, 0) {
            Ok(Some(value)) => Some(value),
            Ok(None) | Err(NotPlain) => {
                walk.clear_exception();
                None
            }
        }
    }
}

struct Walker {
    env: sys::napi_env,
    object_prototype: sys::napi_value,
    budget: usize,
}

/// `Ok` for `napi_ok`; any other status ends the walk.
fn ok(status: sys::napi_status) -> Walk<()> {
    if status == sys::Status::napi_ok {
        Ok(())
    } else {
        Err(NotPlain)
    }
}

impl Walker {
    /// `value` as JSON would carry it; `None` where JSON leaves it out (`undefined`, a
    /// function, a symbol).
    fn value(&mut self, value: sys::napi_value, depth: usize) -> Walk<Option<Value>> {
        self.budget = self.budget.checked_sub(1).ok_or(NotPlain)?;
        let mut kind = 0;
        // SAFETY (every napi call below): `value` and the handles made from it belong to this
        // env and the current handle scope (the hook call's); out-pointers are locals.
        ok(unsafe { sys::napi_typeof(self.env, value, &mut kind) })?;
        Ok(Some(match kind {
            sys::ValueType::napi_undefined
            | sys::ValueType::napi_function
            | sys::ValueType::napi_symbol => return Ok(None),
            sys::ValueType::napi_null => Value::Null,
            sys::ValueType::napi_boolean => {
                let mut flag = false;
                ok(unsafe { sys::napi_get_value_bool(self.env, value, &mut flag) })?;
                Value::Bool(flag)
            }
            sys::ValueType::napi_number => {
                let mut number = 0.0;
                ok(unsafe { sys::napi_get_value_double(self.env, value, &mut number) })?;
                js_compat::number::parsed_json_value(number)
            }
            sys::ValueType::napi_string => Value::String(
                unsafe { read_utf8_short_first(self.env, value) }.map_err(|_| NotPlain)?,
            ),
            sys::ValueType::napi_object if depth < MAX_DEPTH => self.container(value, depth)?,
            // A BigInt, an external, or too deep.
            _ => return Err(NotPlain),
        }))
    }

    fn container(&mut self, value: sys::napi_value, depth: usize) -> Walk<Value> {
        let mut has_to_json = false;
        ok(unsafe {
            sys::napi_has_named_property(self.env, value, TO_JSON.as_ptr(), &mut has_to_json)
        })?;
        if has_to_json {
            return Err(NotPlain);
        }
        let mut is_array = false;
        ok(unsafe { sys::napi_is_array(self.env, value, &mut is_array) })?;
        if is_array {
            return self.array(value, depth);
        }
        let mut prototype = ptr::null_mut();
        ok(unsafe { sys::napi_get_prototype(self.env, value, &mut prototype) })?;
        let mut plain = false;
        ok(unsafe {
            sys::napi_strict_equals(self.env, prototype, self.object_prototype, &mut plain)
        })?;
        if !plain {
            let mut kind = 0;
            ok(unsafe { sys::napi_typeof(self.env, prototype, &mut kind) })?;
            if kind != sys::ValueType::napi_null {
                return Err(NotPlain);
            }
        }
        self.object(value, depth)
    }

    /// An array's length, when its members fit in what is left of the budget.
    fn length_within_budget(&self, array: sys::napi_value) -> Walk<u32> {
        let mut length = 0;
        ok(unsafe { sys::napi_get_array_length(self.env, array, &mut length) })?;
        if length as usize > self.budget {
            return Err(NotPlain);
        }
        Ok(length)
    }

    fn element(&self, array: sys::napi_value, index: u32) -> Walk<sys::napi_value> {
        let mut element = ptr::null_mut();
        ok(unsafe { sys::napi_get_element(self.env, array, index, &mut element) })?;
        Ok(element)
    }

    fn array(&mut self, array: sys::napi_value, depth: usize) -> Walk<Value> {
        let length = self.length_within_budget(array)?;
        let mut items = Vec::with_capacity(length as usize);
        for index in 0..length {
            let item = self.element(array, index)?;
            items.push(self.value(item, depth + 1)?.unwrap_or(Value::Null));
        }
        Ok(Value::Array(items))
    }

    fn object(&mut self, object: sys::napi_value, depth: usize) -> Walk<Value> {
        let mut keys = ptr::null_mut();
        ok(unsafe {
            napi_get_all_property_names(
                self.env,
                object,
                KEY_OWN_ONLY,
                KEY_ENUMERABLE | KEY_SKIP_SYMBOLS,
                KEY_NUMBERS_TO_STRINGS,
                &mut keys,
            )
        })?;
        let count = self.length_within_budget(keys)?;
        let mut fields = Map::with_capacity(count as usize);
        for index in 0..count {
            let key = self.element(keys, index)?;
            let mut field = ptr::null_mut();
            ok(unsafe { sys::napi_get_property(self.env, object, key, &mut field) })?;
            if let Some(field) = self.value(field, depth + 1)? {
                let key = unsafe { read_utf8_short_first(self.env, key) }.map_err(|_| NotPlain)?;
                fields.insert(key, field);
            }
        }
        Ok(Value::Object(fields))
    }

    /// Clears an exception a getter or a proxy trap threw during the walk, if any.
    fn clear_exception(&self) {
        let mut pending = false;
        // SAFETY: plain status queries on this env.
        unsafe {
            if sys::napi_is_exception_pending(self.env, &mut pending) == sys::Status::napi_ok
                && pending
            {
                let mut exception = ptr::null_mut();
                sys::napi_get_and_clear_last_exception(self.env, &mut exception);
            }
        }
    }
}
