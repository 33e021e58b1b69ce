//! HTTP handlers for `/sandboxes/{id}/processes…`, the managed-process API. The vendor's
//! 0.7.1 client does not model it: this follows our spec of the original plugin, with the
//! bodies checked against the later SDK revision's types (see `request_types`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::Extension;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::command::{Command, opt_str};
use super::envelope::{ApiError, ok, success};
use super::ndjson::{self, ChunkSender, PROCESS_HEARTBEAT, heartbeat, line};
use super::process::ManagedProcess;
use super::request_types::{
    self, MANAGED_PROCESS_CREATE_REQUEST, MANAGED_PROCESS_INPUT_REQUEST,
    MANAGED_PROCESS_SIGNAL_REQUEST, PTY_SIZE,
};
use super::state::{App, Sandbox};
use super::users::User;
use crate::sandbox_runner::signal_from_name;

type Q = Query<HashMap<String, String>>;
type Caller = Extension<User>;

const MAX_WAIT_MS: u64 = 300_000;
const MAX_GRACE_MS: u64 = 60_000;

fn find(
    app: &App,
    user: User,
    id: &str,
    pid: &str,
) -> Result<(Arc<Sandbox>, Arc<ManagedProcess>), ApiError> {
    let sb = app.owned(user, id)?;
    let p = sb
        .processes
        .lock()
        .unwrap()
        .get(pid)
        .cloned()
        .ok_or_else(|| ApiError::not_found("process"))?;
    Ok((sb, p))
}

fn query_u64(q: &HashMap<String, String>, key: &str, default: u64) -> Result<u64, ApiError> {
    match q.get(key) {
        None => Ok(default),
        Some(v) => v
            .parse()
            .map_err(|_| ApiError::bad_request(format!("{key} must be a non-negative integer"))),
    }
}

fn pty_size(v: Option<&Value>) -> Result<Option<(u16, u16)>, ApiError> {
    let dim = |o: &Value, k: &str, d: u16| match o.get(k) {
        None => Ok(d),
        Some(v) => v
            .as_u64()
            .filter(|n| (1..=1000).contains(n))
            .map(|n| n as u16)
            .ok_or_else(|| ApiError::bad_request("pty cols/rows must be integers 1..1000")),
    };
    match v {
        None | Some(Value::Null) | Some(Value::Bool(false)) => Ok(None),
        Some(Value::Bool(true)) => Ok(Some((80, 24))),
        Some(o @ Value::Object(map)) => {
            request_types::check_fields(map, &PTY_SIZE)?;
            Ok(Some((dim(o, "cols", 80)?, dim(o, "rows", 24)?)))
        }
        Some(_) => Err(ApiError::bad_request("pty must be an object")),
    }
}

pub async fn create(
    State(app): State<Arc<App>>,
    Extension(user): Caller,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let sb = app.running_sandbox(user, &id)?;
    let req = request_types::parse(&body, &MANAGED_PROCESS_CREATE_REQUEST)?;
    let Command { argv, cwd, env } = Command::parse(&sb, &req)?;
    let pty = pty_size(req.get("pty"))?;
    let running = sb
        .processes
        .lock()
        .unwrap()
        .values()
        .filter(|p| p.exit_info().is_none())
        .count();
    if running >= app.opts.max_processes_per_sandbox {
        return Err(ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "too_many_processes",
            "too many running processes in this sandbox",
        ));
    }
    let io = ManagedProcess::io_mode(pty);
    let (launched, guard) = app.launch(&sb, argv.clone(), cwd, &env, io)?;
    let (journal_limit, chunk) = (app.opts.journal_limit_bytes, app.opts.frame_bytes);
    let p = ManagedProcess::adopt(launched, guard, argv, pty.is_some(), journal_limit, chunk);
    sb.processes.lock().unwrap().insert(p.id.clone(), p.clone());
    Ok(success(StatusCode::CREATED, p.view()))
}

pub async fn list(
    State(app): State<Arc<App>>,
    Extension(user): Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let sb = app.owned(user, &id)?;
    let views: Vec<Value> = sb
        .processes
        .lock()
        .unwrap()
        .values()
        .map(|p| p.view())
        .collect();
    Ok(ok(json!({ "processes": views })))
}

pub async fn get(
    State(app): State<Arc<App>>,
    Extension(user): Caller,
    Path((id, pid)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let (_, p) = find(&app, user, &id, &pid)?;
    Ok(ok(p.view()))
}

/// Streams journaled output after `after`, then live output, ending with an `exit` frame.
pub async fn connect(
    State(app): State<Arc<App>>,
    Extension(user): Caller,
    Path((id, pid)): Path<(String, String)>,
    Query(q): Q,
) -> Result<Response, ApiError> {
    let (_, p) = find(&app, user, &id, &pid)?;
    let after = query_u64(&q, "after", 0)?;
    if p.output_after(after).is_err() {
        return Err(ApiError::new(
            StatusCode::GONE,
            "output_offset_expired",
            "output after this offset was evicted",
        ));
    }
    let (tx, rx) = mpsc::channel(16);
    tokio::spawn(follow(p, after, tx, app.settings.heartbeat_interval()));
    Ok(ndjson::response(rx))
}

async fn follow(p: Arc<ManagedProcess>, mut cursor: u64, tx: ChunkSender, hb_every: Duration) {
    let mut changes = p.subscribe();
    let mut hb = heartbeat(hb_every);
    loop {
        changes.borrow_and_update();
        // Read the exit before the journal: output journaled after exit is impossible, so
        // "exited and nothing newer" really means the replay is complete.
        let exit = p.exit_info();
        let chunks = match p.output_after(cursor) {
            Ok(chunks) => chunks,
            Err(_) => {
                let frame = json!({ "type": "error", "error": "output_offset_expired" });
                let _ = tx.send(Ok(line(&frame))).await;
                return;
            }
        };
        for c in chunks {
            let frame = json!({
                "type": "data",
                "seq": c.seq,
                "stream": c.stream,
                "data_base64": BASE64.encode(&c.data),
            });
            if tx.send(Ok(line(&frame))).await.is_err() {
                return;
            }
            cursor = c.seq;
        }
        if let Some(exit) = exit {
            if p.output_after(cursor)
                .map(|c| c.is_empty())
                .unwrap_or(false)
            {
                let frame =
                    json!({ "type": "exit", "exit_code": exit.code, "signal": exit.signal });
                let _ = tx.send(Ok(line(&frame))).await;
                return;
            }
            continue;
        }
        tokio::select! {
            r = changes.changed() => if r.is_err() { return; },
            _ = hb.tick() => {
                if tx.send(Ok(Bytes::from_static(PROCESS_HEARTBEAT))).await.is_err() { return; }
            }
            _ = tx.closed() => return,
        }
    }
}

pub async fn input(
    State(app): State<Arc<App>>,
    Extension(user): Caller,
    Path((id, pid)): Path<(String, String)>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let (_, p) = find(&app, user, &id, &pid)?;
    let req = request_types::parse(&body, &MANAGED_PROCESS_INPUT_REQUEST)?;
    let data = match req.get("data_base64") {
        Some(Value::String(s)) => BASE64
            .decode(s)
            .map_err(|_| ApiError::bad_request("data_base64 must be canonical base64"))?,
        _ => return Err(ApiError::bad_request("data_base64 is required")),
    };
    if data.len() > app.opts.max_input_bytes {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "input_too_large",
            format!("at most {} bytes per input call", app.opts.max_input_bytes),
        ));
    }
    if !data.is_empty() {
        p.write_input(&data).await?;
    }
    Ok(ok(json!({ "process_id": p.id, "bytes": data.len() })))
}

pub async fn close_stdin(
    State(app): State<Arc<App>>,
    Extension(user): Caller,
    Path((id, pid)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let (_, p) = find(&app, user, &id, &pid)?;
    p.close_stdin().await?;
    Ok(ok(json!({ "process_id": p.id, "stdin": "closed" })))
}

pub async fn signal(
    State(app): State<Arc<App>>,
    Extension(user): Caller,
    Path((id, pid)): Path<(String, String)>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let (_, p) = find(&app, user, &id, &pid)?;
    let req = request_types::parse(&body, &MANAGED_PROCESS_SIGNAL_REQUEST)?;
    let sig = opt_str(&req, "signal")?
        .and_then(signal_from_name)
        .ok_or_else(|| ApiError::bad_request("signal must be a signal name such as SIGTERM"))?;
    if p.exit_info().is_some() {
        return Err(ApiError::conflict("process_exited", "process has exited"));
    }
    // Right after creation bwrap may still be setting up: retry until the command exists.
    let mut delivered = p.tree.signal(sig);
    for _ in 0..1000 {
        if delivered || p.tree.is_reaped() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
        delivered = p.tree.signal(sig);
    }
    Ok(ok(
        json!({ "process_id": p.id, "signal": sig.as_str(), "delivered": delivered }),
    ))
}

pub async fn resize(
    State(app): State<Arc<App>>,
    Extension(user): Caller,
    Path((id, pid)): Path<(String, String)>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let (_, p) = find(&app, user, &id, &pid)?;
    let req = Value::Object(request_types::parse(&body, &PTY_SIZE)?);
    let Some((cols, rows)) = pty_size(Some(&req))? else {
        return Err(ApiError::bad_request("cols and rows are required"));
    };
    p.resize(cols, rows).await?;
    Ok(ok(
        json!({ "process_id": p.id, "cols": cols, "rows": rows }),
    ))
}

/// Waits for the exit (`scope=tree` and `scope=process` are the same here: the pid namespace
/// dies with the command). 408 when `timeout_ms` passes first.
pub async fn wait(
    State(app): State<Arc<App>>,
    Extension(user): Caller,
    Path((id, pid)): Path<(String, String)>,
    Query(q): Q,
) -> Result<Response, ApiError> {
    let (_, p) = find(&app, user, &id, &pid)?;
    let limit = query_u64(&q, "timeout_ms", 30_000)?.min(MAX_WAIT_MS);
    match p.wait_exit(Duration::from_millis(limit)).await {
        Some(_) => Ok(ok(p.view())),
        None => Err(ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            "wait_timeout",
            "process is still running",
        )),
    }
}

/// Terminates the tree (SIGTERM, `grace_ms`, SIGKILL) and forgets the process.
pub async fn delete(
    State(app): State<Arc<App>>,
    Extension(user): Caller,
    Path((id, pid)): Path<(String, String)>,
    Query(q): Q,
) -> Result<Response, ApiError> {
    let (sb, p) = find(&app, user, &id, &pid)?;
    let grace = query_u64(&q, "grace_ms", 1_000)?.min(MAX_GRACE_MS);
    let exited = p.terminate(Duration::from_millis(grace)).await;
    if exited {
        sb.processes.lock().unwrap().remove(&p.id);
    }
    let exit = p.exit_info();
    Ok(ok(json!({
        "process_id": p.id,
        "tree_exited": exited,
        "exit_code": exit.as_ref().and_then(|e| e.code),
        "signal": exit.as_ref().and_then(|e| e.signal.clone()),
    })))
}
