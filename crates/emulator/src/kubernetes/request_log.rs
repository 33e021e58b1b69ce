//! The request log: every API request (control-API requests excluded) with its Kubernetes
//! attributes (verb, resource, namespace, name), so tests can assert a client's exact calls.

use serde::Serialize;
use serde_json::Value;

use crate::common::request_log::{self, body_json};

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

request_log::impl_record!(RequestRecord);

pub type RequestLog = request_log::RequestLog<RequestRecord>;

impl RequestLog {
    /// Records a request (its `seq` is assigned here) and returns the sequence number.
    pub fn push(&self, mut record: RequestRecord, body: &[u8]) -> u64 {
        let arrival = self.arrival();
        record.at_ms = arrival.at_ms;
        record.unix_ms = arrival.unix_ms;
        record.body_len = body.len();
        record.body_json = body_json(body);
        self.append(|seq| RequestRecord { seq, ..record })
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
