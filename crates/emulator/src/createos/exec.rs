//! `POST /sandboxes/{id}/exec`: one-shot (envelope with the collected result) or, with
//! `?stream=true`, NDJSON frames `{"stdout":…}` / `{"stderr":…}` / `{"hb":true}` ending in
//! `{"exit_code":N}`. stdin arrives whole in the body; closing the stream kills the command.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::command::{Command, opt_str, opt_u64};
use super::envelope::{ApiError, json_object, ok};
use super::ndjson::{self, ChunkSender, EXEC_HEARTBEAT, heartbeat, line};
use super::pump::{Event, run_piped};
use super::state::App;
use crate::sandbox_runner::{ExitInfo, IoMode};
use js_compat::utf8::Utf8Decoder;

pub async fn exec(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let sb = app.running_sandbox(&id)?;
    let req = json_object(&body)?;
    let Command { argv, cwd, env } = Command::parse(&sb, &req)?;
    let stdin = opt_str(&req, "stdin")?.map(|s| Bytes::copy_from_slice(s.as_bytes()));
    let timeout = opt_u64(&req, "timeout_ms")?.map(Duration::from_millis);
    let stream = query.get("stream").map(String::as_str) == Some("true")
        || req.get("stream") == Some(&Value::Bool(true));
    let io = IoMode::Pipes {
        stdin: stdin.is_some(),
    };
    let (launched, guard) = app.launch(&sb, argv, cwd, &env, io)?;
    let events = run_piped(launched, guard, stdin, app.opts.frame_bytes, timeout);
    if stream {
        let (tx, rx) = mpsc::channel(16);
        tokio::spawn(stream_frames(events, tx, app.settings.heartbeat_interval()));
        Ok(ndjson::response(rx))
    } else {
        Ok(collect(events, app.opts.one_shot_output_limit).await)
    }
}

/// Exit frame fields: shell-style code, plus the signal name when one ended the command.
fn exit_fields(info: &ExitInfo) -> Value {
    let mut frame = json!({ "exit_code": info.shell_code() });
    if let Some(sig) = &info.signal {
        frame["signal"] = json!(sig);
    }
    frame
}

async fn stream_frames(mut events: mpsc::Receiver<Event>, tx: ChunkSender, hb_every: Duration) {
    let mut hb = heartbeat(hb_every);
    let (mut out, mut err) = (Utf8Decoder::keeping_bom(), Utf8Decoder::keeping_bom());
    loop {
        let frame = tokio::select! {
            ev = events.recv() => match ev {
                Some(Event::Stdout(b)) => text_frame("stdout", out.decode(&b)),
                Some(Event::Stderr(b)) => text_frame("stderr", err.decode(&b)),
                Some(Event::Exit { info, timed_out }) => {
                    for (key, tail) in [("stdout", out.finish()), ("stderr", err.finish())] {
                        if let Some(f) = text_frame(key, tail)
                            && tx.send(Ok(f)).await.is_err() { return; }
                    }
                    let last = if timed_out {
                        json!({ "error": "command timed out" })
                    } else {
                        exit_fields(&info)
                    };
                    let _ = tx.send(Ok(line(&last))).await;
                    return;
                }
                None => return,
            },
            _ = hb.tick() => Some(Bytes::from_static(EXEC_HEARTBEAT)),
            // Client gone: returning drops `events`, and the pump kills the command.
            _ = tx.closed() => return,
        };
        if let Some(frame) = frame
            && tx.send(Ok(frame)).await.is_err()
        {
            return;
        }
    }
}

fn text_frame(key: &str, text: String) -> Option<Bytes> {
    (!text.is_empty()).then(|| line(&json!({ key: text })))
}

async fn collect(mut events: mpsc::Receiver<Event>, limit: usize) -> Response {
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    let mut truncated = false;
    while let Some(ev) = events.recv().await {
        let (buf, bytes) = match ev {
            Event::Stdout(b) => (&mut stdout, b),
            Event::Stderr(b) => (&mut stderr, b),
            Event::Exit { info, timed_out } => {
                let mut result = json!({
                    "exit_code": info.code,
                    "signal": info.signal,
                    "stdout": String::from_utf8_lossy(&stdout),
                    "stderr": String::from_utf8_lossy(&stderr),
                    "timed_out": timed_out,
                    "truncated": truncated,
                });
                if timed_out {
                    result["exit_code"] = Value::Null;
                }
                return ok(json!({ "result": result }));
            }
        };
        let room = limit.saturating_sub(buf.len());
        truncated |= bytes.len() > room;
        buf.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }
    ApiError::internal("command ended without an exit status").into_response()
}
