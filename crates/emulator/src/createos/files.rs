//! `PUT|GET /sandboxes/{id}/files?path=…`: raw bytes in and out, no envelope on download.
//!
//! Both directions run `sh`/`cat` inside the sandbox rather than touching the root directory
//! from the host: a sandbox symlink such as `/paperclip-workspace/x -> /etc/passwd` must
//! resolve inside the sandbox, never on the host.

use std::collections::HashMap;
use std::sync::Arc;

use axum::Extension;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use bytes::Bytes;
use serde_json::json;
use tokio::sync::mpsc;

use super::envelope::{ApiError, ok};
use super::ndjson::body_from_channel;
use super::pump::{Event, OnClose, run_piped};
use super::state::App;
use super::users::User;
use crate::sandbox_runner::IoMode;

/// Transfers move in larger pieces than text frames.
const FILE_CHUNK: usize = 64 * 1024;
/// Writes stdin to "$1", creating missing parent directories like the service does.
const UPLOAD: &str = r#"mkdir -p -- "$(dirname -- "$1")" && cat > "$1""#;
/// Exit 44: not a regular file. The leading "x" tells the emulator the file opened fine
/// before any status is sent, so a missing file is a clean 404 rather than a broken body.
const DOWNLOAD: &str = r#"[ -f "$1" ] || exit 44; exec 3< "$1" || exit 45; printf x; exec cat <&3"#;

fn sandbox_path(query: &HashMap<String, String>) -> Result<String, ApiError> {
    match query.get("path") {
        Some(p) if p.starts_with('/') && !p.contains('\0') && !p.ends_with('/') => Ok(p.clone()),
        _ => Err(ApiError::bad_request(
            "path must be an absolute file path inside the sandbox",
        )),
    }
}

fn transfer_argv(script: &str, path: String) -> Vec<String> {
    vec![
        "/bin/sh".into(),
        "-c".into(),
        script.into(),
        "sh".into(),
        path,
    ]
}

pub async fn upload(
    State(app): State<Arc<App>>,
    Extension(user): Extension<User>,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let sb = app.running_sandbox(user, &id)?;
    let path = sandbox_path(&query)?;
    let size = body.len();
    let argv = transfer_argv(UPLOAD, path.clone());
    let (launched, guard) = app.launch(&sb, argv, Some("/"), &[], IoMode::Pipes { stdin: true })?;
    let mut events = run_piped(launched, guard, Some(body), FILE_CHUNK, OnClose::Kill);
    let mut stderr = Vec::new();
    while let Some(ev) = events.recv().await {
        match ev {
            Event::Stderr(b) => stderr.extend_from_slice(&b),
            Event::Stdout(_) => {}
            Event::Exit { info, .. } if info.code == Some(0) => {
                return Ok(ok(json!({ "path": path, "size": size })));
            }
            Event::Exit { .. } => break,
        }
    }
    Err(ApiError::bad_request(format!(
        "cannot write {path}: {}",
        String::from_utf8_lossy(&stderr).trim()
    )))
}

pub async fn download(
    State(app): State<Arc<App>>,
    Extension(user): Extension<User>,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Response, ApiError> {
    let sb = app.running_sandbox(user, &id)?;
    let path = sandbox_path(&query)?;
    let argv = transfer_argv(DOWNLOAD, path.clone());
    let (launched, guard) =
        app.launch(&sb, argv, Some("/"), &[], IoMode::Pipes { stdin: false })?;
    let mut events = run_piped(launched, guard, None, FILE_CHUNK, OnClose::Kill);
    // Wait for the marker byte (success) or an early exit (failure) before choosing a status.
    let first = loop {
        match events.recv().await {
            Some(Event::Stderr(_)) => continue,
            Some(Event::Stdout(b)) => break b,
            Some(Event::Exit { info, .. }) if info.code == Some(44) => {
                return Err(ApiError::not_found("file"));
            }
            _ => return Err(ApiError::bad_request(format!("cannot read {path}"))),
        }
    };
    let (tx, rx) = mpsc::channel(8);
    tokio::spawn(async move {
        if first.len() > 1 && tx.send(Ok(first.slice(1..))).await.is_err() {
            return;
        }
        while let Some(ev) = events.recv().await {
            let item = match ev {
                Event::Stdout(b) => Ok(b),
                Event::Stderr(_) => continue,
                Event::Exit { info, .. } if info.code == Some(0) => return,
                // A read error mid-file must not look like a complete file: abort the body.
                Event::Exit { .. } => Err(std::io::Error::other("file read failed")),
            };
            if tx.send(item).await.is_err() {
                return;
            }
        }
    });
    Ok(Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "application/octet-stream")
        .body(body_from_channel(rx))
        .expect("static response parts"))
}
