//! Programmable faults: "the Nth request matching METHOD PATH fails like this".
//!
//! The same JSON shape works from Rust and from the control API:
//! `{"method":"GET","path":"/api/v1/namespaces/*/pods/*","nth":2,"times":1,
//!   "action":{"kind":"status","code":503}}`. Watch and exec faults act on the stream once it
//! runs: `{"kind":"cutWatch","afterEvents":1}`, `{"kind":"cutExec","afterFrames":2}`.

use serde::{Deserialize, Serialize};

use super::status::KubeError;
use crate::common::faults;

/// Which requests a fault applies to, and when (see [`crate::common::faults::FaultRule`]).
pub type FaultRule = faults::FaultRule<FaultAction>;
/// A rule with its counters, as listed by the control API.
pub type FaultEntry = faults::FaultEntry<FaultAction>;
pub type Faults = faults::Faults<FaultAction>;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum FaultAction {
    /// Answer with a `Status` of this code (reason and message defaulted from the code).
    /// `after: true` lets the request take effect first.
    Status {
        code: u16,
        #[serde(default)]
        reason: Option<String>,
        #[serde(default)]
        message: Option<String>,
        #[serde(default)]
        after: bool,
    },
    /// Wait before handling (combines with another fault on the same request).
    Delay { ms: u64 },
    /// Close the connection without any response.
    Drop {
        #[serde(default)]
        after: bool,
    },
    /// End a watch stream after N events (`abort`: break the connection instead of ending
    /// the body cleanly).
    CutWatch {
        #[serde(default)]
        after_events: usize,
        #[serde(default)]
        abort: bool,
    },
    /// Send a 410 Expired ERROR event after N events, then end the watch.
    ExpireWatch {
        #[serde(default)]
        after_events: usize,
    },
    /// Drop an exec websocket after N output frames, before any status (`abort`: no close
    /// frame, just a dead TCP connection). With `after_stdin_bytes`, the cut comes instead once
    /// the client has sent that many stdin bytes (an upload cut in the middle).
    CutExec {
        #[serde(default)]
        after_frames: usize,
        #[serde(default)]
        abort: bool,
        #[serde(default)]
        after_stdin_bytes: Option<u64>,
    },
}

impl FaultAction {
    /// Faults that act on a watch or exec stream rather than on the response.
    pub fn is_stream_fault(&self) -> bool {
        matches!(
            self,
            FaultAction::CutWatch { .. }
                | FaultAction::ExpireWatch { .. }
                | FaultAction::CutExec { .. }
        )
    }

    pub fn status_error(code: u16, reason: Option<&str>, message: Option<&str>) -> KubeError {
        let default_reason = match code {
            400 => "BadRequest",
            401 => "Unauthorized",
            403 => "Forbidden",
            404 => "NotFound",
            405 => "MethodNotAllowed",
            409 => "Conflict",
            410 => "Expired",
            422 => "Invalid",
            429 => "TooManyRequests",
            503 => "ServiceUnavailable",
            504 => "Timeout",
            _ => "InternalError",
        };
        KubeError::new(
            code,
            reason.unwrap_or(default_reason),
            message.unwrap_or("emulator fault").to_string(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nth_and_times_count_matching_requests() {
        let f = Faults::default();
        let rule: FaultRule = serde_json::from_value(json!({
            "method": "GET", "path": "/api/v1/namespaces/*/pods/*", "nth": 2, "times": 2,
            "action": { "kind": "status", "code": 503 }
        }))
        .unwrap();
        f.add(rule);
        let hit = |p: &str| f.select("GET", p, None).len();
        assert_eq!(hit("/api/v1/namespaces/a/pods/x"), 0);
        assert_eq!(hit("/api/v1/namespaces/a/pods"), 0);
        assert_eq!(hit("/api/v1/namespaces/a/pods/y"), 1);
        assert_eq!(hit("/api/v1/namespaces/a/pods/y"), 1);
        assert_eq!(hit("/api/v1/namespaces/a/pods/y"), 0);
        let cut: FaultAction =
            serde_json::from_value(json!({ "kind": "cutExec", "afterFrames": 2 })).unwrap();
        assert_eq!(
            cut,
            FaultAction::CutExec {
                after_frames: 2,
                abort: false,
                after_stdin_bytes: None,
            }
        );
        assert!(cut.is_stream_fault());
    }
}
