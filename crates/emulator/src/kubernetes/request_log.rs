//! The request log: every API request (control-API requests excluded) with its Kubernetes
//! attributes (verb, resource, namespace, name), so tests can assert a client's exact calls.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::{Instant, SystemTime};

use serde::Serialize;
use serde_json::Value;

use super::util::unix_ms;

const KEEP_JSON_BODY_BYTES: usize = 64 * 1024;

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestRecord {
    /// 1-based, increasing over the emulator's life (not reset by `clear`).
    pub seq: u64,
    pub method: String,
    pub path: String,
    pub query: Option<String>,
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`,
    /// `exec`, `log`, `discovery`; `None` for unroutable paths.
    pub verb: Option<String>,
    pub group: Option<String>,
    pub version: Option<String>,
    pub resource: Option<String>,
    pub subresource: Option<String>,
    pub namespace: Option<String>,
    pub name: Option<String>,
    /// `http` or `https`.
    pub scheme: String,
    pub content_type: Option<String>,
    pub body_len: usize,
    /// The body when it is JSON and at most 64 KiB.
    pub body_json: Option<Value>,
    /// Whether the bearer token was accepted.
    pub authorized: bool,
    /// Milliseconds since the emulator started (monotonic).
    pub at_ms: f64,
    pub unix_ms: u64,
    /// Response status once known (`None` for dropped connections); 101 for exec upgrades.
    pub status: Option<u16>,
    /// Ids of the faults applied.
    pub faults: Vec<u64>,
}

pub struct RequestLog {
    started: Instant,
    limit: usize,
    inner: Mutex<(u64, VecDeque<RequestRecord>)>,
}

impl RequestLog {
    pub fn new(started: Instant, limit: usize) -> Self {
        RequestLog {
            started,
            limit: limit.max(1),
            inner: Mutex::new((0, VecDeque::new())),
        }
    }

    /// Records a request (its `seq` is assigned here) and returns the sequence number.
    pub fn push(&self, mut record: RequestRecord, body: &[u8]) -> u64 {
        record.at_ms = self.started.elapsed().as_secs_f64() * 1000.0;
        record.unix_ms = unix_ms(SystemTime::now());
        record.body_len = body.len();
        record.body_json = (!body.is_empty() && body.len() <= KEEP_JSON_BODY_BYTES)
            .then(|| serde_json::from_slice(body).ok())
            .flatten();
        let mut inner = self.inner.lock().unwrap();
        inner.0 += 1;
        record.seq = inner.0;
        inner.1.push_back(record);
        while inner.1.len() > self.limit {
            inner.1.pop_front();
        }
        inner.0
    }

    fn update(&self, seq: u64, f: impl FnOnce(&mut RequestRecord)) {
        let mut inner = self.inner.lock().unwrap();
        if let Some(r) = inner.1.iter_mut().rev().find(|r| r.seq == seq) {
            f(r);
        }
    }

    pub fn set_status(&self, seq: u64, status: u16) {
        self.update(seq, |r| r.status = Some(status));
    }

    pub fn set_faults(&self, seq: u64, faults: Vec<u64>) {
        self.update(seq, |r| r.faults = faults);
    }

    /// Records with `seq > since`.
    pub fn snapshot(&self, since: u64) -> Vec<RequestRecord> {
        let inner = self.inner.lock().unwrap();
        inner.1.iter().filter(|r| r.seq > since).cloned().collect()
    }

    pub fn clear(&self) {
        self.inner.lock().unwrap().1.clear();
    }
}

impl RequestRecord {
    pub fn new(method: &str, path: &str, query: Option<&str>, scheme: &str) -> Self {
        RequestRecord {
            seq: 0,
            method: method.to_string(),
            path: path.to_string(),
            query: query.map(str::to_string),
            verb: None,
            group: None,
            version: None,
            resource: None,
            subresource: None,
            namespace: None,
            name: None,
            scheme: scheme.to_string(),
            content_type: None,
            body_len: 0,
            body_json: None,
            authorized: false,
            at_ms: 0.0,
            unix_ms: 0,
            status: None,
            faults: Vec::new(),
        }
    }
}
