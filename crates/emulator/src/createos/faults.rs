//! Programmable faults: "the Nth request matching METHOD PATH fails like this".
//!
//! Rules are JSON-serialisable so the same shape works from Rust and from the control API:
//! `{"method":"POST","path":"/v1/sandboxes/*/exec","query":"stream=true","nth":1,"times":1,
//!   "action":{"kind":"cutStream","afterFrames":2}}`.

use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::Value;

fn one() -> u64 {
    1
}
fn redirect_status() -> u16 {
    302
}

/// Which requests a fault applies to, and when.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FaultRule {
    /// HTTP method; any when absent.
    #[serde(default)]
    pub method: Option<String>,
    /// Path pattern: `*` matches one segment, a final `**` any rest (`/v1/sandboxes/*/exec`).
    pub path: String,
    /// Substring the query string must contain (e.g. `stream=true`); any when absent.
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

/// What happens to a matched request. `after: true` lets the request take effect first and
/// then replaces its response (the "it happened but the client never heard" case).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum FaultAction {
    /// Respond with this status and a JSend failure (or `body`).
    Status {
        status: u16,
        #[serde(default)]
        after: bool,
        #[serde(default)]
        body: Option<Value>,
    },
    /// Wait before handling (combines with another fault on the same request).
    Delay { ms: u64 },
    /// Close the connection without any response.
    Drop {
        #[serde(default)]
        after: bool,
    },
    /// Redirect (the provider treats followed redirects as connection failures).
    Redirect {
        #[serde(default = "redirect_status")]
        status: u16,
        #[serde(default)]
        location: Option<String>,
    },
    /// 200 with a body that is not valid JSON.
    MalformedJson {
        #[serde(default)]
        after: bool,
    },
    /// 200 with `{"status":"fail",…}`.
    Unsuccessful {
        #[serde(default)]
        after: bool,
    },
    /// 200 with a success envelope whose `data` is not an object.
    InvalidData {
        #[serde(default)]
        after: bool,
    },
    /// End the response body after N bytes or N frames (heartbeats not counted); `abort`
    /// breaks the connection instead of ending the body cleanly.
    CutStream {
        #[serde(default)]
        after_bytes: Option<usize>,
        #[serde(default)]
        after_frames: Option<usize>,
        #[serde(default)]
        abort: bool,
    },
    /// Insert a frame of an unknown type after N frames.
    UnknownFrame {
        #[serde(default)]
        after_frames: usize,
    },
    /// Insert a frame longer than the provider's 1 MiB line limit after N frames.
    OversizedFrame {
        #[serde(default)]
        after_frames: usize,
        #[serde(default)]
        bytes: Option<usize>,
    },
    /// Drop the first `data` frame that comes after N frames (the client sees a seq gap).
    SequenceGap {
        #[serde(default)]
        after_frames: usize,
    },
    /// Output eviction: HTTP 410 on connect, or (`inStream`) an `output_offset_expired`
    /// error frame after N frames.
    Evicted {
        #[serde(default)]
        in_stream: bool,
        #[serde(default)]
        after_frames: usize,
    },
    /// An `{"type":"error","error":…}` frame after N frames, then the end of the stream.
    ErrorFrame {
        #[serde(default)]
        after_frames: usize,
        error: String,
    },
    /// Any raw line (e.g. malformed JSON) after N frames; `end` stops the stream after it.
    Frame {
        #[serde(default)]
        after_frames: usize,
        line: String,
        #[serde(default)]
        end: bool,
    },
}

impl FaultAction {
    /// Faults that only change the response body as it streams.
    pub fn is_stream_fault(&self) -> bool {
        matches!(
            self,
            FaultAction::CutStream { .. }
                | FaultAction::UnknownFrame { .. }
                | FaultAction::OversizedFrame { .. }
                | FaultAction::SequenceGap { .. }
                | FaultAction::Evicted {
                    in_stream: true,
                    ..
                }
                | FaultAction::ErrorFrame { .. }
                | FaultAction::Frame { .. }
        )
    }
}

/// A rule with its counters, as listed by the control API.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FaultEntry {
    pub id: u64,
    pub rule: FaultRule,
    /// Requests that matched the rule so far.
    pub matched: u64,
    /// Requests the fault was applied to.
    pub fired: u64,
}

#[derive(Default)]
pub struct Faults {
    inner: Mutex<(u64, Vec<FaultEntry>)>,
}

impl Faults {
    /// Adds a rule; returns its id.
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

    /// Counts the request against every rule and returns the faults that fire, in rule order.
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

    #[test]
    fn matches_paths_and_counts_nth() {
        assert!(path_matches(
            "/v1/sandboxes/*/exec",
            "/v1/sandboxes/sb_1/exec"
        ));
        assert!(!path_matches(
            "/v1/sandboxes/*/exec",
            "/v1/sandboxes/sb_1/exec/x"
        ));
        assert!(path_matches("/v1/sandboxes/**", "/v1/sandboxes/a/b/c"));
        assert!(!path_matches("/v1/sandboxes/*", "/v1/sandboxes"));
        let f = Faults::default();
        let rule: FaultRule = serde_json::from_value(serde_json::json!({
            "method": "GET", "path": "/v1/rootfs", "nth": 2,
            "action": {"kind": "status", "status": 503}
        }))
        .unwrap();
        f.add(rule);
        assert!(f.select("GET", "/v1/rootfs", None).is_empty());
        assert_eq!(f.select("GET", "/v1/rootfs", None).len(), 1);
        assert!(f.select("GET", "/v1/rootfs", None).is_empty());
        assert!(f.select("POST", "/v1/rootfs", None).is_empty());
        assert_eq!(f.list()[0].matched, 3);
    }
}
