//! A requested lease deadline, bounded by the provider (`lease-expiry.ts` @ a8f79c9).
//!
//! A caller such as the setup-token login asks for a lease that ends by `requestedExpiresAt`.
//! The provider attests an `expiresAt` no later than that, stops the pod there, and fails closed
//! (throws) rather than grant a lease the caller did not ask for: an unparseable deadline, or one
//! less than 30 seconds away, is an error.

use serde_json::{Value, json};

use js_compat::{date, json, number, value};
use sandbox_core::{ProviderError, ProviderResult};

/// Below this many seconds a lease cannot do useful work before it expires.
pub const MIN_ACTIVE_DEADLINE_SEC: f64 = 30.0;
/// No lease is granted for longer than 24 hours.
pub const MAX_ACTIVE_DEADLINE_SEC: f64 = 86_400.0;

/// The bound granted for a requested deadline. Numbers are JS numbers.
#[derive(Debug, Clone, PartialEq)]
pub struct BoundedLeaseDeadline {
    /// The Sandbox pod's `activeDeadlineSeconds`: a backstop only, as Kubernetes counts it from
    /// pod start, which comes later than acquisition.
    pub active_deadline_sec: f64,
    /// Unix seconds at which the sandbox entrypoint exits: the real bound.
    pub hard_stop_at_epoch_sec: f64,
    /// `hard_stop_at_epoch_sec` as an ISO string (`…T…:…:….000Z`), returned as the lease's
    /// `expiresAt`.
    pub expires_at: String,
}

impl BoundedLeaseDeadline {
    pub fn to_json(&self) -> Value {
        json!({
            "activeDeadlineSec": number::json_value(self.active_deadline_sec),
            "hardStopAtEpochSec": number::json_value(self.hard_stop_at_epoch_sec),
            "expiresAt": self.expires_at,
        })
    }
}

/// `computeBoundedLeaseDeadline(requestedExpiresAt, nowMs)`. `None`/`null` means no deadline
/// was requested: the lease keeps a long-lived pod and gets no `expiresAt`.
///
/// The value is read as `Date.parse` reads it (a non-string is first converted to a string, as
/// JS does). Whole seconds are floored, so the hard stop never lands after what the caller
/// asked for, and `expiresAt` is derived from the floored clock, not from the requested text.
pub fn compute_bounded_lease_deadline(
    requested_expires_at: Option<&Value>,
    now_ms: f64,
) -> ProviderResult<Option<BoundedLeaseDeadline>> {
    let requested = match requested_expires_at {
        None | Some(Value::Null) => return Ok(None),
        Some(value) => value,
    };
    let text = value::to_string(requested);
    let Some(requested_ms) = date::parse(&text) else {
        return Err(ProviderError::new(format!(
            "Requested lease deadline ({}) is not a valid ISO 8601 timestamp. Failing closed instead of silently substituting a default deadline the caller did not ask for.",
            json::stringify(requested)
        )));
    };
    let requested_sec = ((requested_ms - now_ms) / 1000.0).floor();
    if requested_sec < MIN_ACTIVE_DEADLINE_SEC {
        return Err(ProviderError::new(format!(
            "Requested lease deadline ({text}) is already past or too close (< {}s) to acquire a bounded lease. Failing closed instead of granting a near-expired lease.",
            number::to_string(MIN_ACTIVE_DEADLINE_SEC)
        )));
    }
    let active_deadline_sec = requested_sec.min(MAX_ACTIVE_DEADLINE_SEC);
    let hard_stop_at_epoch_sec = (now_ms / 1000.0).floor() + active_deadline_sec;
    // Only a clock beyond the year 275760 could make this fail, where JS throws a RangeError.
    let expires_at = date::to_iso_string(hard_stop_at_epoch_sec * 1000.0)
        .ok_or_else(|| ProviderError::new("Invalid time value"))?;
    Ok(Some(BoundedLeaseDeadline {
        active_deadline_sec,
        hard_stop_at_epoch_sec,
        expires_at,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: f64 = 1_767_225_600_000.0;

    fn bound(requested: &str, now_ms: f64) -> ProviderResult<Option<BoundedLeaseDeadline>> {
        compute_bounded_lease_deadline(Some(&json!(requested)), now_ms)
    }

    #[test]
    fn no_deadline_requested() {
        assert_eq!(compute_bounded_lease_deadline(None, NOW), Ok(None));
        assert_eq!(
            compute_bounded_lease_deadline(Some(&Value::Null), NOW),
            Ok(None)
        );
    }

    #[test]
    fn bounds_and_caps() {
        let hour = bound("2026-01-01T01:00:00.000Z", NOW).unwrap().unwrap();
        assert_eq!(
            hour.to_json().to_string(),
            r#"{"activeDeadlineSec":3600,"hardStopAtEpochSec":1767229200,"expiresAt":"2026-01-01T01:00:00.000Z"}"#
        );
        let capped = bound("2026-01-03T00:00:00Z", NOW).unwrap().unwrap();
        assert_eq!(capped.active_deadline_sec, 86_400.0);
        assert_eq!(capped.expires_at, "2026-01-02T00:00:00.000Z");
        let floored = bound("2026-01-01T00:10:00.000Z", NOW + 999.0)
            .unwrap()
            .unwrap();
        assert_eq!(
            (floored.active_deadline_sec, floored.expires_at.as_str()),
            (599.0, "2026-01-01T00:09:59.000Z")
        );
    }

    #[test]
    fn too_close_or_past_fails_closed() {
        assert_eq!(
            bound("2026-01-01T00:00:30.000Z", NOW)
                .unwrap()
                .unwrap()
                .active_deadline_sec,
            30.0
        );
        let err = bound("2026-01-01T00:00:29.999Z", NOW).unwrap_err();
        assert_eq!(
            err.message,
            "Requested lease deadline (2026-01-01T00:00:29.999Z) is already past or too close (< 30s) to acquire a bounded lease. Failing closed instead of granting a near-expired lease."
        );
    }

    #[test]
    fn unparseable_fails_closed_with_the_value_json_quoted() {
        let err = bound("soon \"ish\"", NOW).unwrap_err();
        assert_eq!(
            err.message,
            "Requested lease deadline (\"soon \\\"ish\\\"\") is not a valid ISO 8601 timestamp. Failing closed instead of silently substituting a default deadline the caller did not ask for."
        );
        let err = compute_bounded_lease_deadline(Some(&json!({"a": 1.5})), NOW).unwrap_err();
        assert!(
            err.message
                .starts_with("Requested lease deadline ({\"a\":1.5}) is not a valid")
        );
    }

    #[test]
    fn non_strings_are_read_as_js_strings() {
        assert_eq!(value::to_string(&json!([null, 1, "a"])), ",1,a");
        assert_eq!(value::to_string(&json!(1.0)), "1");
        let one_entry = compute_bounded_lease_deadline(Some(&json!(["2026-01-02"])), NOW)
            .unwrap()
            .unwrap();
        assert_eq!(one_entry.expires_at, "2026-01-02T00:00:00.000Z");
    }
}
