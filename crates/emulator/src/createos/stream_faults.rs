//! Rewriting a streaming (NDJSON) response body to inject a stream fault.
//!
//! Runs as a task between the real body and the client: when the client goes away the task
//! drops the real body, so the producer notices and kills its process exactly as it would
//! without the fault.

use axum::body::Body;
use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;
use tokio::sync::mpsc;

use super::faults::FaultAction;
use super::ndjson::{body_from_channel, is_heartbeat};

/// Default oversized frame: just over the provider's 1 MiB line limit.
const OVERSIZED_DEFAULT: usize = 1_048_576 + 64;

/// How a cut stream ends.
#[derive(Clone, Copy)]
enum CutEnd {
    /// The body ends cleanly (short of what the headers promised, if they did).
    Close,
    /// The connection breaks.
    Abort,
    /// Nothing more is sent and the body stays open until the client goes away.
    Hold,
}

impl CutEnd {
    fn of(abort: bool, hold: bool) -> Self {
        match (hold, abort) {
            (true, _) => CutEnd::Hold,
            (false, true) => CutEnd::Abort,
            (false, false) => CutEnd::Close,
        }
    }
}

enum Plan {
    CutBytes {
        limit: usize,
        end: CutEnd,
    },
    CutFrames {
        limit: usize,
        end: CutEnd,
    },
    Inject {
        after: usize,
        line: String,
        end: bool,
    },
    DropData {
        after: usize,
    },
}

fn plan(action: &FaultAction) -> Option<Plan> {
    Some(match action {
        FaultAction::CutStream {
            after_bytes: Some(limit),
            abort,
            hold,
            ..
        } => Plan::CutBytes {
            limit: *limit,
            end: CutEnd::of(*abort, *hold),
        },
        FaultAction::CutStream {
            after_frames,
            abort,
            hold,
            ..
        } => Plan::CutFrames {
            limit: after_frames.unwrap_or(0),
            end: CutEnd::of(*abort, *hold),
        },
        FaultAction::UnknownFrame { after_frames } => Plan::Inject {
            after: *after_frames,
            line: r#"{"type":"emulator_unknown_event","emulator_unknown_event":true}"#.into(),
            end: false,
        },
        FaultAction::OversizedFrame {
            after_frames,
            bytes,
        } => {
            let size = bytes.unwrap_or(OVERSIZED_DEFAULT);
            let pad = "x".repeat(size.saturating_sub(32));
            Plan::Inject {
                after: *after_frames,
                line: format!(r#"{{"type":"data","padding":"{pad}"}}"#),
                end: true,
            }
        }
        FaultAction::SequenceGap { after_frames } => Plan::DropData {
            after: *after_frames,
        },
        FaultAction::Evicted { after_frames, .. } => Plan::Inject {
            after: *after_frames,
            line: r#"{"type":"error","error":"output_offset_expired"}"#.into(),
            end: true,
        },
        FaultAction::ErrorFrame {
            after_frames,
            error,
        } => Plan::Inject {
            after: *after_frames,
            line: serde_json::json!({ "type": "error", "error": error }).to_string(),
            end: true,
        },
        FaultAction::Frame {
            after_frames,
            line,
            end,
        } => Plan::Inject {
            after: *after_frames,
            line: line.clone(),
            end: *end,
        },
        _ => return None,
    })
}

/// Wraps `body` so that `action` is applied while it streams.
pub fn apply(body: Body, action: &FaultAction) -> Body {
    let Some(plan) = plan(action) else {
        return body;
    };
    let (tx, rx) = mpsc::channel::<Result<Bytes, std::io::Error>>(16);
    tokio::spawn(rewrite(body, plan, tx));
    body_from_channel(rx)
}

async fn rewrite(body: Body, plan: Plan, tx: mpsc::Sender<Result<Bytes, std::io::Error>>) {
    let mut src = body.into_data_stream();
    let mut pending = BytesMut::new();
    let mut frames = 0usize; // non-heartbeat frames passed through
    let mut bytes = 0usize; // non-heartbeat bytes passed through
    let mut injected = false;
    let cut = |end: CutEnd| {
        let tx = tx.clone();
        async move {
            match end {
                CutEnd::Close => {}
                CutEnd::Abort => {
                    // Give hyper a moment to flush what was already sent: an error from the
                    // body closes the connection at once, discarding buffered bytes.
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    let _ = tx
                        .send(Err(std::io::Error::other("emulator fault: stream aborted")))
                        .await;
                }
                CutEnd::Hold => tx.closed().await,
            }
        }
    };
    loop {
        let chunk = match src.next().await {
            Some(Ok(c)) => c,
            Some(Err(e)) => {
                let _ = tx.send(Err(std::io::Error::other(e))).await;
                return;
            }
            None => break,
        };
        pending.extend_from_slice(&chunk);
        // Whole lines only; file downloads have no newlines, so byte cuts act on raw chunks.
        while let Some(line) = take_line(&mut pending, matches!(plan, Plan::CutBytes { .. })) {
            let heartbeat = is_heartbeat(&line);
            let out: Option<Bytes> = match &plan {
                Plan::CutBytes { limit, end } if !heartbeat => {
                    if bytes + line.len() >= *limit {
                        let keep = limit - bytes;
                        if keep > 0 {
                            let _ = tx.send(Ok(line.slice(..keep))).await;
                        }
                        cut(*end).await;
                        return;
                    }
                    bytes += line.len();
                    Some(line)
                }
                Plan::CutFrames { limit, end } if !heartbeat => {
                    if frames >= *limit {
                        cut(*end).await;
                        return;
                    }
                    Some(line)
                }
                Plan::Inject {
                    after,
                    line: extra,
                    end,
                } if !heartbeat && !injected && frames >= *after => {
                    injected = true;
                    if tx
                        .send(Ok(Bytes::from(format!("{extra}\n"))))
                        .await
                        .is_err()
                        || *end
                    {
                        return;
                    }
                    Some(line)
                }
                Plan::DropData { after }
                    if !heartbeat && !injected && frames >= *after && is_data_frame(&line) =>
                {
                    injected = true;
                    None
                }
                _ => Some(line),
            };
            if !heartbeat {
                frames += 1;
            }
            if let Some(out) = out
                && tx.send(Ok(out)).await.is_err()
            {
                return;
            }
        }
    }
    // The stream ended before the injection point: inject at the end.
    if let Plan::Inject { line, .. } = &plan
        && !injected
    {
        let _ = tx.send(Ok(Bytes::from(format!("{line}\n")))).await;
    }
    if !pending.is_empty() {
        let _ = tx.send(Ok(pending.freeze())).await;
    }
}

/// Takes one `\n`-terminated line (or, in raw mode, everything pending).
fn take_line(pending: &mut BytesMut, raw: bool) -> Option<Bytes> {
    if pending.is_empty() {
        return None;
    }
    match pending.iter().position(|b| *b == b'\n') {
        Some(i) => Some(pending.split_to(i + 1).freeze()),
        None if raw => Some(pending.split().freeze()),
        None => None,
    }
}

fn is_data_frame(line: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(line).is_ok_and(|v| v["type"] == "data")
}
