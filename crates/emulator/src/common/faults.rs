//! Programmable faults: "the Nth request matching METHOD PATH fails like this". The rule
//! (method, path glob, query substring, nth, times) and its counting are the same for every
//! emulator; what a fault does (`A`, the action) is each emulator's own.

use std::sync::Mutex;

use serde::{Deserialize, Serialize};

fn one() -> u64 {
    1
}

/// Which requests a fault applies to, and when.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FaultRule<A> {
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
    pub action: A,
}

impl<A> FaultRule<A> {
    /// Whether a request is one the rule counts (method, query and path all match).
    pub fn matches(&self, method: &str, path: &str, query: Option<&str>) -> bool {
        let method_ok = self
            .method
            .as_deref()
            .is_none_or(|m| m.eq_ignore_ascii_case(method));
        let query_ok = self
            .query
            .as_deref()
            .is_none_or(|q| query.unwrap_or("").contains(q));
        method_ok && query_ok && path_matches(&self.path, path)
    }
}

/// A rule with its counters, as listed by the control API.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FaultEntry<A> {
    pub id: u64,
    pub rule: FaultRule<A>,
    /// Requests that matched the rule so far.
    pub matched: u64,
    /// Requests the fault was applied to.
    pub fired: u64,
}

/// The fault rules of one emulator, with their counters.
pub struct Faults<A> {
    inner: Mutex<(u64, Vec<FaultEntry<A>>)>,
}

impl<A> Default for Faults<A> {
    fn default() -> Self {
        Faults {
            inner: Mutex::new((0, Vec::new())),
        }
    }
}

impl<A: Clone> Faults<A> {
    /// Adds a rule; returns its id.
    pub fn add(&self, rule: FaultRule<A>) -> u64 {
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

    pub fn list(&self) -> Vec<FaultEntry<A>> {
        self.inner.lock().unwrap().1.clone()
    }

    /// Counts the request against every rule and returns the faults that fire, in rule order.
    pub fn select(&self, method: &str, path: &str, query: Option<&str>) -> Vec<(u64, A)> {
        let mut inner = self.inner.lock().unwrap();
        let mut fired = Vec::new();
        for entry in inner.1.iter_mut() {
            if !entry.rule.matches(method, path, query) {
                continue;
            }
            entry.matched += 1;
            let n = entry.matched;
            let rule = &entry.rule;
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
    fn globs_match_segments() {
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
        assert!(path_matches("/apis/**", "/apis/batch/v1/jobs"));
    }

    #[test]
    fn nth_and_times_count_matching_requests() {
        let f = Faults::<u8>::default();
        let rule: FaultRule<u8> = serde_json::from_value(json!({
            "method": "GET", "path": "/a/*", "nth": 2, "times": 2, "action": 7
        }))
        .unwrap();
        f.add(rule);
        let hit = |m: &str, p: &str| f.select(m, p, None).len();
        assert_eq!(hit("GET", "/a/x"), 0);
        assert_eq!(hit("GET", "/a"), 0);
        assert_eq!(hit("POST", "/a/x"), 0);
        assert_eq!(hit("get", "/a/y"), 1);
        assert_eq!(hit("GET", "/a/y"), 1);
        assert_eq!(hit("GET", "/a/y"), 0);
        assert_eq!(f.list()[0].matched, 4);
        assert_eq!(f.list()[0].fired, 2);
    }
}
