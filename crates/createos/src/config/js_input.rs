//! Reading the raw hook input the way the original's JS property accesses did.
//!
//! The input is untyped JSON. JS distinguishes `undefined` (key absent) from `null`, throws a
//! V8 `TypeError` when reading a property of either, and yields `undefined` for a property of any
//! other non-object. Modelling `undefined` as `None` keeps those outcomes exact.

use js_compat::{json, string, value};
use sandbox_core::ProviderError;
use serde_json::Value;

use super::messages;

/// `target[key]`. `target == None` is JS `undefined`.
///
/// Only fixed camelCase names are read here (`apiUrl`, `networkEgress`, ...). No array, string,
/// number or boolean has an own or inherited property of such a name, so a non-object target
/// yields `undefined` exactly as in JS.
pub(crate) fn read<'a>(
    target: Option<&'a Value>,
    key: &'static str,
) -> Result<Option<&'a Value>, ProviderError> {
    match target {
        None => Err(ProviderError::cannot_read_properties("undefined", key)),
        Some(Value::Null) => Err(ProviderError::cannot_read_properties("null", key)),
        Some(Value::Object(map)) => Ok(json::get(map, key)),
        Some(_) => Ok(None),
    }
}

/// The value unless it is JS-nullish (`null` or absent).
pub(crate) fn present(value: Option<&Value>) -> Option<&Value> {
    if value::is_nullish(value) {
        None
    } else {
        value
    }
}

/// NUL, CR or LF anywhere: such values could split headers or commands later, so lists and map
/// entries refuse them (checked on the untrimmed text unless stated otherwise).
pub(crate) fn has_nul_or_line_break(text: &str) -> bool {
    text.contains(['\0', '\r', '\n'])
}

/// A string that is non-empty after JS `trim()` and free of NUL/CR/LF, returned trimmed.
/// This is the entry rule shared by `egressAllowlist`, `rootfsByAdapter` values and the
/// `networkEgress` lists.
pub(crate) fn clean_entry(value: &Value) -> Option<&str> {
    match value {
        Value::String(s) if !string::trim(s).is_empty() && !has_nul_or_line_break(s) => {
            Some(string::trim(s))
        }
        _ => None,
    }
}

/// A text field: absent/null gives `None`; otherwise it must be a string that is non-empty after
/// `trim()` and has no NUL (CR/LF are allowed here). Returned trimmed.
pub(crate) fn text(
    raw: Option<&Value>,
    key: &'static str,
) -> Result<Option<String>, ProviderError> {
    let Some(value) = present(read(raw, key)?) else {
        return Ok(None);
    };
    match value {
        Value::String(s) if !string::trim(s).is_empty() && !s.contains('\0') => {
            Ok(Some(string::trim(s).to_owned()))
        }
        _ => Err(ProviderError::new(messages::not_a_non_empty_string(key))),
    }
}
