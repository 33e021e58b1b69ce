//! NDJSON streaming bodies: one frame per line, one line per body chunk, fed from a channel.
//!
//! Why a channel: the producing task learns that the client went away when the channel
//! closes (`Sender::closed`), and can then kill the process it was streaming — the service's
//! "cancellation = abort the HTTP stream" semantics.

use std::time::Duration;

use axum::body::Body;
use bytes::Bytes;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::time::{Instant, Interval, MissedTickBehavior, interval_at};

pub type ChunkSender = mpsc::Sender<Result<Bytes, std::io::Error>>;

/// Heartbeat line of the streaming exec protocol.
pub const EXEC_HEARTBEAT: &[u8] = b"{\"hb\":true}\n";
/// Heartbeat line of the managed-process connect protocol.
pub const PROCESS_HEARTBEAT: &[u8] = b"{\"type\":\"heartbeat\"}\n";

pub fn is_heartbeat(line: &[u8]) -> bool {
    line == EXEC_HEARTBEAT || line == PROCESS_HEARTBEAT
}

/// A response body that yields what is sent on the channel; an `Err` aborts the connection.
pub fn body_from_channel(rx: mpsc::Receiver<Result<Bytes, std::io::Error>>) -> Body {
    Body::from_stream(futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    }))
}

/// Serialises one frame as a line.
pub fn line(frame: &Value) -> Bytes {
    let mut text = frame.to_string();
    text.push('\n');
    Bytes::from(text)
}

/// A heartbeat ticker whose first tick is one interval from now.
pub fn heartbeat(every: Duration) -> Interval {
    let mut i = interval_at(Instant::now() + every, every);
    i.set_missed_tick_behavior(MissedTickBehavior::Delay);
    i
}

/// A streaming NDJSON response with the right content type.
pub fn response(rx: mpsc::Receiver<Result<Bytes, std::io::Error>>) -> axum::response::Response {
    axum::response::Response::builder()
        .status(200)
        .header("content-type", "application/x-ndjson")
        .header("cache-control", "no-store")
        .body(body_from_channel(rx))
        .expect("static response parts")
}
