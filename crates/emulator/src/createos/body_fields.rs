//! Typed reads of request-body fields, each answering the 400 the API gives for a bad value.
//! Which fields a body may carry at all is `request_types`' job.

use serde_json::{Map, Value};

use super::envelope::ApiError;

/// `egress`: an array of non-empty rule strings; `null` or absent is `None`.
pub fn egress_list(v: Option<&Value>) -> Result<Option<Vec<String>>, ApiError> {
    string_list(
        v,
        "egress must be an array of non-empty host or CIDR strings",
    )
}

/// An optional array of non-empty strings (`bad` is the 400 message).
pub fn string_list(v: Option<&Value>, bad: &str) -> Result<Option<Vec<String>>, ApiError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| match i {
                Value::String(s) if !s.trim().is_empty() => Ok(s.clone()),
                _ => Err(ApiError::bad_request(bad)),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(ApiError::bad_request(bad)),
    }
}

/// `auto_pause_after_seconds`: an integer in 60..=86400 (the vendor's documented range).
pub fn auto_pause(v: Option<&Value>) -> Result<Option<u64>, ApiError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .filter(|n| (60..=86_400).contains(n))
            .map(Some)
            .ok_or_else(|| {
                ApiError::bad_request("auto_pause_after_seconds must be an integer 60..86400")
            }),
    }
}

pub fn opt_bool(req: &Map<String, Value>, key: &str) -> Result<Option<bool>, ApiError> {
    match req.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(ApiError::bad_request(format!("{key} must be a boolean"))),
    }
}

/// An optional integer field (`min` at least).
pub fn opt_int(req: &Map<String, Value>, key: &str, min: i64) -> Result<Option<i64>, ApiError> {
    match req.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_i64()
            .filter(|n| *n >= min)
            .map(Some)
            .ok_or_else(|| ApiError::bad_request(format!("{key} must be an integer >= {min}"))),
    }
}

/// `envs`: an object of variable names (`[A-Za-z_][A-Za-z0-9_]*`) to strings without NUL.
pub fn envs(v: Option<&Value>) -> Result<Option<Vec<(String, String)>>, ApiError> {
    let bad = || ApiError::bad_request("envs must be an object of variable names to strings");
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| {
                let name_ok = !k.is_empty()
                    && !k.starts_with(|c: char| c.is_ascii_digit())
                    && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                match v {
                    Value::String(s) if name_ok && !s.contains('\0') => Ok((k.clone(), s.clone())),
                    _ => Err(bad()),
                }
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(bad()),
    }
}

/// An optional object of strings (e.g. `node_selector`), accepted and not used.
pub fn string_map(req: &Map<String, Value>, key: &str) -> Result<(), ApiError> {
    match req.get(key) {
        None | Some(Value::Null) => Ok(()),
        Some(Value::Object(map)) if map.values().all(Value::is_string) => Ok(()),
        Some(_) => Err(ApiError::bad_request(format!(
            "{key} must be an object of strings"
        ))),
    }
}

/// `name`: the real server's rule is undocumented; the emulator takes the vendor's rule for
/// user-scoped disk names, `^[a-z0-9][a-z0-9-]{0,62}$`. Empty or absent = auto-generated.
pub fn sandbox_name(v: Option<&Value>) -> Result<Option<String>, ApiError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(Value::String(s))
            if s.len() <= 63
                && s.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
                && s.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-') =>
        {
            Ok(Some(s.clone()))
        }
        Some(_) => Err(ApiError::bad_request(
            "name must be 1-63 lowercase letters, digits and '-', starting with a letter or digit",
        )),
    }
}

/// `networks` / `disks` / `host_id`: the emulator has no overlay networks, registered disks or
/// hosts to place on, so only an empty value can be honoured.
pub fn unmodelled(req: &Map<String, Value>, key: &str) -> Result<(), ApiError> {
    match req.get(key) {
        None | Some(Value::Null) => Ok(()),
        Some(Value::Array(a)) if a.is_empty() => Ok(()),
        Some(Value::String(s)) if s.is_empty() => Ok(()),
        Some(Value::Array(_) | Value::String(_)) => Err(ApiError::bad_request(format!(
            "{key}: the emulator has nothing to attach or place on"
        ))),
        Some(_) => Err(ApiError::bad_request(format!("{key} has the wrong type"))),
    }
}
