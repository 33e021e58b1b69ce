//! Sandbox lifecycle handlers: create, get, list, delete, patch, pause, resume, fork, egress,
//! and the rootfs catalog.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::SystemTime;

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use bytes::Bytes;
use serde_json::{Map, Value, json};

use super::command::opt_str;
use super::envelope::{ApiError, json_object, ok, success};
use super::lifecycle::{Lifecycle, Status};
use super::state::{App, Sandbox, SandboxInfo, WORKSPACE};
use super::util::new_id;
use crate::sandbox_runner::SandboxRoot;

/// Directories every new sandbox starts with (sandbox path, mode).
const ROOT_DIRS: &[(&str, u32)] = &[
    (WORKSPACE, 0o755),
    ("/tmp", 0o1777),
    ("/var/tmp", 0o1777),
    ("/root", 0o700),
    ("/home", 0o755),
];

fn egress_list(v: Option<&Value>) -> Result<Option<Vec<String>>, ApiError> {
    let bad = || ApiError::bad_request("egress must be an array of non-empty host or CIDR strings");
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| match i {
                Value::String(s) if !s.trim().is_empty() => Ok(s.clone()),
                _ => Err(bad()),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(bad()),
    }
}

/// `labels`: an object of non-empty keys (at most 63 characters of `[A-Za-z0-9._/-]`) to
/// string values of at most 256 characters.
fn labels(v: Option<&Value>) -> Result<BTreeMap<String, String>, ApiError> {
    let bad = || ApiError::bad_request("labels must be an object of label names to strings");
    match v {
        None | Some(Value::Null) => Ok(BTreeMap::new()),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| {
                let key_ok = !k.is_empty()
                    && k.len() <= 63
                    && k.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "._/-".contains(c));
                match v {
                    Value::String(s) if key_ok && s.len() <= 256 => Ok((k.clone(), s.clone())),
                    _ => Err(bad()),
                }
            })
            .collect(),
        Some(_) => Err(bad()),
    }
}

/// The `label=key=value` selectors of a list query (all must match).
fn label_selectors(query: Option<&str>) -> Result<Vec<(String, String)>, ApiError> {
    form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .filter(|(name, _)| name == "label")
        .map(|(_, selector)| {
            selector
                .split_once('=')
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .ok_or_else(|| ApiError::bad_request("label must be key=value"))
        })
        .collect()
}

fn auto_pause(v: Option<&Value>) -> Result<Option<u64>, ApiError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .filter(|n| (60..=86_400).contains(n))
            .map(Some)
            .ok_or_else(|| {
                ApiError::bad_request("auto_pause_after_seconds must be an integer 60..86400")
            }),
    }
}

fn opt_bool(req: &Map<String, Value>, key: &str) -> Result<Option<bool>, ApiError> {
    match req.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(ApiError::bad_request(format!("{key} must be a boolean"))),
    }
}

fn declared_env(v: Option<&Value>) -> Result<Vec<(String, String)>, ApiError> {
    let bad = || ApiError::bad_request("env must be an object of variable names to strings");
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| {
                let name_ok = !k.is_empty()
                    && !k.starts_with(|c: char| c.is_ascii_digit())
                    && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                match v {
                    Value::String(s) if name_ok && !s.contains('\0') => Ok((k.clone(), s.clone())),
                    _ => Err(bad()),
                }
            })
            .collect(),
        Some(_) => Err(bad()),
    }
}

fn not_shutting_down(app: &App) -> Result<(), ApiError> {
    if app.shutting_down.load(std::sync::atomic::Ordering::SeqCst) {
        return Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "shutting_down",
            "emulator is shutting down",
        ));
    }
    Ok(())
}

pub async fn rootfs(State(app): State<Arc<App>>) -> Response {
    let items: Vec<Value> = app
        .opts
        .rootfs_catalog
        .iter()
        .map(|name| json!({ "name": name }))
        .collect();
    ok(json!({ "default": app.opts.default_rootfs, "items": items }))
}

pub async fn create(State(app): State<Arc<App>>, body: Bytes) -> Result<Response, ApiError> {
    not_shutting_down(&app)?;
    let req = json_object(&body)?;
    let shape = match opt_str(&req, "shape")? {
        Some(s) if app.opts.shapes.iter().any(|k| k == s) => s.to_string(),
        Some(_) => return Err(ApiError::bad_request("unknown shape")),
        None => return Err(ApiError::bad_request("shape is required")),
    };
    let rootfs = match opt_str(&req, "rootfs")? {
        Some(r) if app.opts.rootfs_catalog.iter().any(|k| k == r) => r.to_string(),
        Some(_) => return Err(ApiError::bad_request("unknown rootfs")),
        None => app.opts.default_rootfs.clone(),
    };
    let region = opt_str(&req, "region")?.map(str::to_string);
    let egress = egress_list(req.get("egress"))?.unwrap_or_default();
    let auto_pause_after_seconds = auto_pause(req.get("auto_pause_after_seconds"))?;
    let ingress_enabled = opt_bool(&req, "ingress_enabled")?.unwrap_or(false);
    let env = declared_env(req.get("env"))?;
    let labels = labels(req.get("labels"))?;
    let id = new_id("sb");
    let root = SandboxRoot::create(&app.bwrap, app.work_dir.join(&id), ROOT_DIRS)?;
    let info = SandboxInfo {
        lifecycle: Lifecycle::starting(
            Status::Creating,
            Status::Running,
            app.settings.transition_delay(),
        ),
        shape,
        rootfs,
        region,
        egress,
        auto_pause_after_seconds,
        ingress_enabled,
        env,
        created_at: SystemTime::now(),
        forked_from: None,
        labels,
    };
    let sb = Arc::new(Sandbox::new(id.clone(), root, info));
    app.sandboxes.lock().unwrap().insert(id, sb.clone());
    Ok(success(StatusCode::CREATED, sb.view()))
}

/// `GET /sandboxes[?label=key=value…]`: every sandbox, or those carrying all the labels.
pub async fn list(
    State(app): State<Arc<App>>,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let selectors = label_selectors(query.as_deref())?;
    let all: Vec<Arc<Sandbox>> = app.sandboxes.lock().unwrap().values().cloned().collect();
    let views: Vec<Value> = all
        .iter()
        .filter(|s| {
            let info = s.info.lock().unwrap();
            selectors.iter().all(|(k, v)| info.labels.get(k) == Some(v))
        })
        .map(|s| s.view())
        .collect();
    Ok(ok(json!({ "sandboxes": views })))
}

pub async fn get(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    Ok(ok(app.sandbox(&id)?.view()))
}

/// Deletes at once (a later GET is 404), killing every process of the sandbox.
pub async fn delete(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let sb = app
        .sandboxes
        .lock()
        .unwrap()
        .remove(&id)
        .ok_or_else(|| ApiError::not_found("sandbox"))?;
    let app2 = app.clone();
    let sb2 = sb.clone();
    tokio::task::spawn_blocking(move || app2.destroy(&sb2))
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?;
    Ok(ok(json!({ "id": sb.id, "status": "destroyed" })))
}

pub async fn patch(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let sb = app.sandbox(&id)?;
    let req = json_object(&body)?;
    let disable = opt_bool(&req, "disable_auto_pause")?;
    let seconds = auto_pause(req.get("auto_pause_after_seconds"))?;
    match (disable, seconds) {
        (Some(true), None) => sb.info.lock().unwrap().auto_pause_after_seconds = None,
        (None | Some(false), Some(n)) => sb.info.lock().unwrap().auto_pause_after_seconds = Some(n),
        (None, None) if req.is_empty() => {}
        _ => {
            return Err(ApiError::bad_request(
                "send either disable_auto_pause:true or auto_pause_after_seconds",
            ));
        }
    }
    Ok(ok(sb.view()))
}

/// Starts `pausing` (processes freeze at once); 409 unless running. 202: poll for `paused`.
pub async fn pause(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let pausing = (Status::Pausing, Status::Paused);
    begin_transition(&app, &id, "pause", &[Status::Running], pausing, true)
}

/// Starts `resuming` from `paused` or `error`; 409 otherwise. 202: poll for `running`.
pub async fn resume(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let from = [Status::Paused, Status::Error];
    let resuming = (Status::Resuming, Status::Running);
    begin_transition(&app, &id, "resume", &from, resuming, false)
}

/// Starts the transition `(via, to)` of a sandbox whose status is one of `from` (409
/// otherwise, naming `verb`), then freezes or thaws its processes at once. 202 with the view.
fn begin_transition(
    app: &App,
    id: &str,
    verb: &str,
    from: &[Status],
    (via, to): (Status, Status),
    freeze: bool,
) -> Result<Response, ApiError> {
    let sb = app.sandbox(id)?;
    {
        let mut info = sb.info.lock().unwrap();
        require_status(verb, info.lifecycle.current(), from)?;
        info.lifecycle
            .begin(via, to, app.settings.transition_delay());
    }
    sb.freeze(freeze);
    Ok(success(StatusCode::ACCEPTED, sb.view()))
}

/// 409 `invalid_state` (naming `verb`) unless `status` is one of `allowed`.
fn require_status(verb: &str, status: Status, allowed: &[Status]) -> Result<(), ApiError> {
    if allowed.contains(&status) {
        Ok(())
    } else {
        Err(ApiError::conflict(
            "invalid_state",
            format!("cannot {verb} a sandbox that is {}", status.as_str()),
        ))
    }
}

/// Copies a paused (or running) sandbox's filesystem into a new sandbox; 409 while the
/// source is in transition, as the provider's retry loop expects.
pub async fn fork(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    not_shutting_down(&app)?;
    let src = app.sandbox(&id)?;
    let req = json_object(&body)?;
    let start_paused = opt_bool(&req, "start_paused")?.unwrap_or(false);
    let egress = egress_list(req.get("egress"))?;
    let ingress = opt_bool(&req, "ingress_enabled")?;
    let seconds = auto_pause(req.get("auto_pause_after_seconds"))?;
    let labels = labels(req.get("labels"))?;
    require_status("fork", src.status(), &[Status::Paused, Status::Running])?;
    let new_id = new_id("sb");
    let root = src.root.fork_to(app.work_dir.join(&new_id)).await?;
    let info = {
        let s = src.info.lock().unwrap();
        SandboxInfo {
            lifecycle: Lifecycle::starting(
                Status::Forking,
                if start_paused {
                    Status::Paused
                } else {
                    Status::Running
                },
                app.settings.transition_delay(),
            ),
            shape: s.shape.clone(),
            rootfs: s.rootfs.clone(),
            region: s.region.clone(),
            egress: egress.unwrap_or_else(|| s.egress.clone()),
            auto_pause_after_seconds: seconds.or(s.auto_pause_after_seconds),
            ingress_enabled: ingress.unwrap_or(s.ingress_enabled),
            env: s.env.clone(),
            created_at: SystemTime::now(),
            forked_from: Some(src.id.clone()),
            // Labels belong to the new sandbox's creator, not the template's.
            labels,
        }
    };
    let sb = Arc::new(Sandbox::new(new_id.clone(), root, info));
    app.sandboxes.lock().unwrap().insert(new_id, sb.clone());
    Ok(success(StatusCode::CREATED, sb.view()))
}

pub async fn set_egress(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let sb = app.sandbox(&id)?;
    let req = json_object(&body)?;
    let egress = egress_list(req.get("egress"))?
        .ok_or_else(|| ApiError::bad_request("egress is required"))?;
    sb.info.lock().unwrap().egress = egress;
    Ok(ok(sb.view()))
}
