//! The request log tests read to assert the provider's exact call sequence and its pacing.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::{Instant, SystemTime};

use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::util::unix_ms;

/// Bodies up to this size that parse as JSON are kept verbatim so tests can assert them.
const KEEP_JSON_BODY_BYTES: usize = 64 * 1024;

/// One API request (control-API requests are not logged).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestRecord {
    /// 1-based, increasing over the emulator's life (not reset by `clear`).
    pub seq: u64,
    pub method: String,
    pub path: String,
    pub query: Option<String>,
    pub body_len: usize,
    /// SHA-256 hex of the body; `None` for an empty body.
    pub body_sha256: Option<String>,
    /// The body when it is JSON and at most 64 KiB.
    pub body_json: Option<Value>,
    /// Whether the request carried the right `X-Api-Key`.
    pub authorized: bool,
    /// Milliseconds since the emulator started (monotonic clock): use for pacing assertions.
    pub at_ms: f64,
    pub unix_ms: u64,
    /// Response status, once known (`None` for dropped connections).
    pub status: Option<u16>,
    /// Ids of the faults applied to this request.
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

    /// Records a request and returns its sequence number.
    pub fn push(
        &self,
        method: &str,
        path: &str,
        query: Option<&str>,
        body: &[u8],
        authorized: bool,
    ) -> u64 {
        let at_ms = self.started.elapsed().as_secs_f64() * 1000.0;
        let body_sha256 = (!body.is_empty()).then(|| {
            Sha256::digest(body)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        });
        let body_json = (!body.is_empty() && body.len() <= KEEP_JSON_BODY_BYTES)
            .then(|| serde_json::from_slice(body).ok())
            .flatten();
        let mut inner = self.inner.lock().unwrap();
        inner.0 += 1;
        let seq = inner.0;
        inner.1.push_back(RequestRecord {
            seq,
            method: method.to_string(),
            path: path.to_string(),
            query: query.map(str::to_string),
            body_len: body.len(),
            body_sha256,
            body_json,
            authorized,
            at_ms,
            unix_ms: unix_ms(SystemTime::now()),
            status: None,
            faults: Vec::new(),
        });
        while inner.1.len() > self.limit {
            inner.1.pop_front();
        }
        seq
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
