//! Programmable faults: "the Nth request matching METHOD PATH fails like this".
//!
//! Rules are JSON-serialisable so the same shape works from Rust and from the control API:
//! `{"method":"POST","path":"/v1/sandboxes/*/exec","query":"stream=true","nth":1,"times":1,
//!   "action":{"kind":"cutStream","afterFrames":2}}`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::common::faults;

fn redirect_status() -> u16 {
    302
}

/// Which requests a fault applies to, and when (see [`crate::common::faults::FaultRule`]).
pub type FaultRule = faults::FaultRule<FaultAction>;
/// A rule with its counters, as listed by the control API.
pub type FaultEntry = faults::FaultEntry<FaultAction>;
pub type Faults = faults::Faults<FaultAction>;

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
    /// 200 whose `Content-Length` declares `bytes` and whose body never comes (held open until
    /// the client goes away): what a client learns from the headers alone.
    DeclareLength { bytes: u64 },
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
    /// breaks the connection instead of ending the body cleanly, `hold` keeps it open with
    /// nothing more sent until the client goes away (a reply stuck half-way).
    CutStream {
        #[serde(default)]
        after_bytes: Option<usize>,
        #[serde(default)]
        after_frames: Option<usize>,
        #[serde(default)]
        abort: bool,
        #[serde(default)]
        hold: bool,
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
    /// The request is served as usual, but a client that goes away ends nothing: the exec's
    /// command runs on until it exits, its output read and dropped. Without it the emulator
    /// kills the command's tree when its reader goes away; what the real service does is not
    /// documented, so this is the other case a client has to survive.
    KeepRunning,
}

/// The mark [`FaultAction::KeepRunning`] leaves on the request it fired on, for the handler.
#[derive(Debug, Clone, Copy)]
pub struct RunsOn;

impl FaultAction {
    /// Faults that leave the request and its reply alone and change what the handler does
    /// (it reads them from the request's extensions).
    pub fn is_handler_fault(&self) -> bool {
        matches!(self, FaultAction::KeepRunning)
    }

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_paths_and_counts_nth() {
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
