//! The service's JSend-style envelope and the response validators.

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::messages;
use js_compat::json;

/// The `data` of a success envelope. The body must be a JSON object (anything else, including a
/// body that could not be read, is invalid JSON), `status` must be exactly `"success"`, and
/// `data` must be an object: also for calls whose data nobody reads (DELETE, pause, ...).
pub(crate) fn envelope_data(body: Option<&[u8]>) -> Result<Map<String, Value>> {
    let envelope = body
        .and_then(parse_body)
        .and_then(|value| match value {
            Value::Object(map) => Some(map),
            _ => None,
        })
        .ok_or_else(|| Error::msg(messages::INVALID_JSON))?;
    if envelope.get("status").and_then(Value::as_str) != Some("success") {
        return Err(Error::msg(messages::UNSUCCESSFUL_RESPONSE));
    }
    object(envelope.get("data")).cloned()
}

/// `Response.json()`: UTF-8 with a leading BOM dropped and malformed bytes replaced, then
/// `JSON.parse`.
fn parse_body(bytes: &[u8]) -> Option<Value> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    json::parse(&String::from_utf8_lossy(bytes))
}

/// The original's `object(value)`: a non-null, non-array object.
pub(crate) fn object(value: Option<&Value>) -> Result<&Map<String, Value>> {
    value
        .and_then(Value::as_object)
        .ok_or_else(|| Error::msg(messages::INVALID_RESPONSE))
}

/// The original's `identifier(value)`: `^[A-Za-z0-9_-]{1,200}$`. Used on provider IDs and on
/// caller-supplied ones alike, so a bad lease ID reports the same text.
pub(crate) fn identifier(value: Option<&Value>) -> Result<String> {
    match value {
        Some(Value::String(id)) if is_identifier(id) => Ok(id.clone()),
        _ => Err(Error::msg(messages::INVALID_RESOURCE_ID)),
    }
}

pub(crate) fn identifier_str(id: &str) -> Result<&str> {
    if is_identifier(id) {
        Ok(id)
    } else {
        Err(Error::msg(messages::INVALID_RESOURCE_ID))
    }
}

fn is_identifier(id: &str) -> bool {
    (1..=200).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn message(result: Result<Map<String, Value>>) -> String {
        sandbox_core::ProviderError::from(result.unwrap_err()).message
    }

    #[test]
    fn envelope_rules() {
        assert_eq!(
            envelope_data(Some(br#"{"status":"success","data":{"id":"x"}}"#)).unwrap()["id"],
            json!("x")
        );
        assert_eq!(
            envelope_data(Some(b"\xEF\xBB\xBF{\"status\":\"success\",\"data\":{}}")).unwrap(),
            Map::new()
        );
        assert_eq!(message(envelope_data(None)), messages::INVALID_JSON);
        assert_eq!(message(envelope_data(Some(b"[]"))), messages::INVALID_JSON);
        assert_eq!(
            message(envelope_data(Some(b"nope"))),
            messages::INVALID_JSON
        );
        assert_eq!(
            message(envelope_data(Some(br#"{"status":"fail","data":{}}"#))),
            messages::UNSUCCESSFUL_RESPONSE
        );
        assert_eq!(
            message(envelope_data(Some(br#"{"status":"success","data":[]}"#))),
            messages::INVALID_RESPONSE
        );
        assert_eq!(
            message(envelope_data(Some(br#"{"status":"success"}"#))),
            messages::INVALID_RESPONSE
        );
    }

    #[test]
    fn identifiers() {
        assert!(identifier(Some(&json!("sb_1-A"))).is_ok());
        assert!(identifier(Some(&json!("a".repeat(200)))).is_ok());
        assert!(identifier(Some(&json!("a".repeat(201)))).is_err());
        assert!(identifier(Some(&json!(""))).is_err());
        assert!(identifier(Some(&json!("a/b"))).is_err());
        assert!(identifier(Some(&json!(5))).is_err());
        assert!(identifier(None).is_err());
    }
}
