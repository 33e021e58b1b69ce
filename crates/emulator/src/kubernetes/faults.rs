//! Programmable faults: "the Nth request matching METHOD PATH fails like this".
//!
//! The same JSON shape works from Rust and from the control API:
//! `{"method":"GET","path":"/api/v1/namespaces/*/pods/*","nth":2,"times":1,
//!   "action":{"kind":"status","code":503}}`. Watch and exec faults act on the stream once it
//! runs: `{"kind":"cutWatch","afterEvents":1}`, `{"kind":"cutExec","afterFrames":2}`.

use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::status::KubeError;

fn one() -> u64 {
    1
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FaultRule {
    /// HTTP method; any when absent.
    #[serde(default)]
    pub method: Option<String>,
    /// Path pattern: `*` matches one segment, a final `**` any rest.
    pub path: String,
    /// Substring the query string must contain (e.g. `watch=true`); any when absent.
    #[serde(default)]
    pub query: Option<String>,
    /// The first matching request (1-based) the fault fires on.
    #[serde(default = "one")]
    pub nth: u64,
    /// How many consecutive matching requests it fires on; 0 = every one from `nth` on.
    #[serde(default = "one")]
    pub times: u64,
    pub action: FaultAction,
}

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
    /// frame, just a dead TCP connection).
    CutExec {
        #[serde(default)]
        after_frames: usize,
        #[serde(default)]
        abort: bool,
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

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FaultEntry {
    pub id: u64,
    pub rule: FaultRule,
    pub matched: u64,
    pub fired: u64,
}

#[derive(Default)]
pub struct Faults {
    inner: Mutex<(u64, Vec<FaultEntry>)>,
}

impl Faults {
    pub fn add(&self, rule: FaultRule) -> u64 {
        let mut inner = self.inner.lock().unwrap();
        inner.0 += 1;
        let id = inner.0;
        inner.1.push(FaultEntry {
            id,
            rule,
            matched: 0,
            fired: 0,
        });
        id
    }

    pub fn remove(&self, id: u64) -> bool {
        let mut inner = self.inner.lock().unwrap();
        let before = inner.1.len();
        inner.1.retain(|e| e.id != id);
        inner.1.len() != before
    }

    pub fn clear(&self) {
        self.inner.lock().unwrap().1.clear();
    }

    pub fn list(&self) -> Vec<FaultEntry> {
        self.inner.lock().unwrap().1.clone()
    }

    /// Counts the request against every rule; returns the faults that fire, in rule order.
    pub fn select(&self, method: &str, path: &str, query: Option<&str>) -> Vec<(u64, FaultAction)> {
        let mut inner = self.inner.lock().unwrap();
        let mut fired = Vec::new();
        for entry in inner.1.iter_mut() {
            let rule = &entry.rule;
            let method_ok = rule
                .method
                .as_deref()
                .is_none_or(|m| m.eq_ignore_ascii_case(method));
            let query_ok = rule
                .query
                .as_deref()
                .is_none_or(|q| query.unwrap_or("").contains(q));
            if !(method_ok && query_ok && path_matches(&rule.path, path)) {
                continue;
            }
            entry.matched += 1;
            let n = entry.matched;
            if n >= rule.nth && (rule.times == 0 || n < rule.nth + rule.times) {
                entry.fired += 1;
                fired.push((entry.id, rule.action.clone()));
            }
        }
        fired
    }
}

/// Segment-wise glob: `*` is one segment, a trailing `**` is any remainder.
pub fn path_matches(pattern: &str, path: &str) -> bool {
    let pat: Vec<&str> = pattern.trim_end_matches('/').split('/').collect();
    let segs: Vec<&str> = path.trim_end_matches('/').split('/').collect();
    for (i, p) in pat.iter().enumerate() {
        if *p == "**" && i == pat.len() - 1 {
            return segs.len() >= i;
        }
        match segs.get(i) {
            Some(s) if *p == "*" || p == s => {}
            _ => return false,
        }
    }
    pat.len() == segs.len()
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
        assert!(path_matches("/apis/**", "/apis/batch/v1/jobs"));
        let cut: FaultAction =
            serde_json::from_value(json!({ "kind": "cutExec", "afterFrames": 2 })).unwrap();
        assert_eq!(
            cut,
            FaultAction::CutExec {
                after_frames: 2,
                abort: false
            }
        );
        assert!(cut.is_stream_fault());
    }
}
