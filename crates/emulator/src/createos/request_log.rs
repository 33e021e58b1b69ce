//! The request log tests read to assert the provider's exact call sequence and its pacing.

use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::common::request_log::{self, body_json};

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

request_log::impl_record!(RequestRecord);

pub type RequestLog = request_log::RequestLog<RequestRecord>;

impl RequestLog {
    /// Records a request and returns its sequence number.
    pub fn push(
        &self,
        method: &str,
        path: &str,
        query: Option<&str>,
        body: &[u8],
        authorized: bool,
    ) -> u64 {
        let arrival = self.arrival();
        let body_sha256 = (!body.is_empty()).then(|| {
            Sha256::digest(body)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        });
        let body_json = body_json(body);
        self.append(|seq| RequestRecord {
            seq,
            method: method.to_string(),
            path: path.to_string(),
            query: query.map(str::to_string),
            body_len: body.len(),
            body_sha256,
            body_json,
            authorized,
            at_ms: arrival.at_ms,
            unix_ms: arrival.unix_ms,
            status: None,
            faults: Vec::new(),
        })
    }
}
