//! What one reading of the Sandbox says about the wait: Ready, failed, terminating, not yet,
//! or (an addition) never going to be reconciled.
//!
//! Ready, Failed and Terminating are the original's judgement, unchanged: a `Ready=True`
//! condition or `phase: Ready`; a `Failed=True` condition or `phase: Failed` (named by the
//! phase mapping's condition, else the failed condition's); `phase: Terminating`.

use serde_json::Value;

use crate::cluster::sandbox_backend::map_sandbox_phase;
use js_compat::value::{self, array_items, prop_nullish, prop_str};

/// What one reading of the Sandbox concluded.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Readiness {
    Ready,
    Failed { reason: String, message: String },
    Terminating,
    NotYet,
}

/// A status condition's `type`.
fn condition_type(condition: &Value) -> Option<&str> {
    prop_str(Some(condition), "type")
}

pub(super) fn readiness(cr: &Value) -> Readiness {
    let status = prop_nullish(Some(cr), "status");
    let conditions = array_items(prop_nullish(status, "conditions"));
    let ready_condition = conditions
        .iter()
        .find(|c| condition_type(c) == Some("Ready"));
    // A `Ready=False` whose reason says "failed" is picked as the failure condition, but it only
    // fails the wait if its status is "True", which it is not: kept as the original has it (its
    // reason still names the failure when the phase is Failed).
    let failed_condition = conditions.iter().find(|c| match condition_type(c) {
        Some("Failed") => true,
        Some("Ready") => {
            prop_str(Some(c), "status") == Some("False")
                && c.get("reason")
                    .and_then(Value::as_str)
                    // `/failed/i` without the `u` flag folds ASCII letters only.
                    .is_some_and(|r| r.to_ascii_lowercase().contains("failed"))
        }
        _ => false,
    });
    let phase = prop_nullish(status, "phase");
    let phase_is = |expected: &str| phase.and_then(Value::as_str) == Some(expected);
    let status_true = |c: Option<&Value>| prop_str(c, "status") == Some("True");

    if status_true(ready_condition) || phase_is("Ready") {
        return Readiness::Ready;
    }
    if status_true(failed_condition) || phase_is("Failed") {
        let mapped = map_sandbox_phase(cr);
        let reason = mapped
            .reason_value()
            .or_else(|| prop_nullish(failed_condition, "reason"))
            .map_or_else(|| "unknown reason".to_string(), value::to_string);
        let message = mapped
            .message_value()
            .or_else(|| prop_nullish(failed_condition, "message"))
            .map_or_else(String::new, value::to_string);
        return Readiness::Failed { reason, message };
    }
    if phase_is("Terminating") {
        return Readiness::Terminating;
    }
    Readiness::NotYet
}

/// Whether the Sandbox has no status at all (absent, `null` or `{}`): no controller has
/// reconciled it yet.
pub(super) fn has_no_status(cr: &Value) -> bool {
    match prop_nullish(Some(cr), "status") {
        None => true,
        Some(Value::Object(status)) => status.is_empty(),
        Some(_) => false,
    }
}

/// An RFC 3339 timestamp of the API server (`metadata.creationTimestamp`, a condition's
/// `lastTransitionTime`) in Unix milliseconds.
pub(super) fn timestamp_ms(value: Option<&Value>) -> Option<u64> {
    let ms = js_compat::date::parse(value?.as_str()?)?;
    (ms.is_finite() && ms >= 0.0).then_some(ms as u64)
}

/// The object's `metadata.creationTimestamp` in Unix milliseconds.
pub(super) fn created_ms(object: &Value) -> Option<u64> {
    timestamp_ms(prop_nullish(
        prop_nullish(Some(object), "metadata"),
        "creationTimestamp",
    ))
}

/// The object's `metadata.resourceVersion`.
pub(super) fn resource_version(object: &Value) -> Option<String> {
    prop_str(prop_nullish(Some(object), "metadata"), "resourceVersion").map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn no_status_is_absent_null_or_empty() {
        assert!(has_no_status(&json!({"metadata": {}})));
        assert!(has_no_status(&json!({"status": null})));
        assert!(has_no_status(&json!({"status": {}})));
        assert!(!has_no_status(&json!({"status": {"conditions": []}})));
    }

    #[test]
    fn timestamps_are_unix_milliseconds() {
        let cr = json!({"metadata": {"creationTimestamp": "2026-01-01T00:00:30Z",
            "resourceVersion": "42"}});
        assert_eq!(created_ms(&cr), Some(1_767_225_630_000));
        assert_eq!(resource_version(&cr).as_deref(), Some("42"));
        assert_eq!(created_ms(&json!({})), None);
        assert_eq!(timestamp_ms(Some(&json!("not a date"))), None);
    }
}
