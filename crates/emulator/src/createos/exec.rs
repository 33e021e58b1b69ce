//! `POST /sandboxes/{id}/exec` with an `ExecRequest {cmd, args?, stream?}`: one-shot
//! (`ExecResponse {result: {stdout, stderr, exit_code}, exec_ms}`) or, with `?stream=true` or
//! `stream: true`, NDJSON frames `{"stdout":…}` / `{"stderr":…}` / `{"hb":true}` ending in
//! `{"exit_code":N}`. The API has no stdin, env, cwd or timeout for it (the vendor's SDK notes
//! the control plane drops stdin and env): commands run in the workspace with the sandbox's
//! `envs`, stdin empty. Closing the stream kills the command, unless the request carries a
//! `keepRunning` fault: then it runs on (what the real service does is not documented).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Extension;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::command::argv;
use super::envelope::{ApiError, ok};
use super::faults::RunsOn;
use super::ndjson::{self, ChunkSender, EXEC_HEARTBEAT, heartbeat, line};
use super::pump::{Event, OnClose, run_piped};
use super::request_types::{self, EXEC_REQUEST};
use super::state::App;
use super::users::User;
use crate::sandbox_runner::{ExitInfo, IoMode};
use js_compat::utf8::Utf8Decoder;

pub async fn exec(
    State(app): State<Arc<App>>,
    Extension(user): Extension<User>,
    runs_on: Option<Extension<RunsOn>>,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let sb = app.running_sandbox(user, &id)?;
    let req = request_types::parse(&body, &EXEC_REQUEST)?;
    let argv = argv(&req)?;
    let stream = match req.get("stream") {
        None | Some(Value::Null) => query.get("stream").map(String::as_str) == Some("true"),
        Some(Value::Bool(b)) => *b || query.get("stream").map(String::as_str) == Some("true"),
        Some(_) => return Err(ApiError::bad_request("stream must be a boolean")),
    };
    let io = IoMode::Pipes { stdin: false };
    let (launched, guard) = app.launch(&sb, argv, None, &[], io)?;
    let on_close = match runs_on {
        Some(_) => OnClose::RunOn,
        None => OnClose::Kill,
    };
    let events = run_piped(launched, guard, None, app.opts.frame_bytes, on_close);
    if stream {
        let (tx, rx) = mpsc::channel(16);
        tokio::spawn(stream_frames(events, tx, app.settings.heartbeat_interval()));
        Ok(ndjson::response(rx))
    } else {
        Ok(collect(events, app.opts.one_shot_output_limit).await)
    }
}

/// The exit frame: the shell-style code (128 + n for a signal), as `ExecStreamFrame` has no
/// signal field.
fn exit_fields(info: &ExitInfo) -> Value {
    json!({ "exit_code": info.shell_code() })
}

async fn stream_frames(mut events: mpsc::Receiver<Event>, tx: ChunkSender, hb_every: Duration) {
    let mut hb = heartbeat(hb_every);
    let (mut out, mut err) = (Utf8Decoder::keeping_bom(), Utf8Decoder::keeping_bom());
    loop {
        let frame = tokio::select! {
            ev = events.recv() => match ev {
                Some(Event::Stdout(b)) => text_frame("stdout", out.decode(&b)),
                Some(Event::Stderr(b)) => text_frame("stderr", err.decode(&b)),
                Some(Event::Exit { info, .. }) => {
                    for (key, tail) in [("stdout", out.finish()), ("stderr", err.finish())] {
                        if let Some(f) = text_frame(key, tail)
                            && tx.send(Ok(f)).await.is_err() { return; }
                    }
                    let _ = tx.send(Ok(line(&exit_fields(&info)))).await;
                    return;
                }
                None => return,
            },
            _ = hb.tick() => Some(Bytes::from_static(EXEC_HEARTBEAT)),
            // Client gone: returning drops `events`, and the pump kills the command (unless
            // a `keepRunning` fault said to let it run on).
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

/// The one-shot `ExecResponse`. Each stream is capped at `limit` bytes (the rest is dropped:
/// `ExecResult` has no field to say so).
async fn collect(mut events: mpsc::Receiver<Event>, limit: usize) -> Response {
    let started = Instant::now();
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    while let Some(ev) = events.recv().await {
        let (buf, bytes) = match ev {
            Event::Stdout(b) => (&mut stdout, b),
            Event::Stderr(b) => (&mut stderr, b),
            Event::Exit { info, .. } => {
                let result = json!({
                    "stdout": String::from_utf8_lossy(&stdout),
                    "stderr": String::from_utf8_lossy(&stderr),
                    "exit_code": info.shell_code(),
                });
                let exec_ms = started.elapsed().as_millis() as u64;
                return ok(json!({ "result": result, "exec_ms": exec_ms }));
            }
        };
        let room = limit.saturating_sub(buf.len());
        buf.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }
    ApiError::internal("command ended without an exit status").into_response()
}
