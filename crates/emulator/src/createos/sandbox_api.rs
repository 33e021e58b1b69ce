//! Sandbox handlers: create, get, list, delete, patch, pause, resume, fork and egress. Every
//! body is checked against its vendor request type first (`request_types`); every handler
//! acts for the caller (`User`) and sees only that user's sandboxes.

use std::sync::Arc;
use std::time::SystemTime;

use axum::Extension;
use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use bytes::Bytes;
use serde_json::{Value, json};

use super::body_fields::{
    auto_pause, egress_list, envs, opt_bool, opt_int, sandbox_name, string_list, string_map,
    unmodelled,
};
use super::catalog::DEFAULT_DISK_MIB;
use super::command::opt_str;
use super::envelope::{ApiError, ok, success};
use super::lifecycle::{Lifecycle, Status};
use super::page::{PAGE_PARAMS, Page, query_pairs};
use super::request_types::{
    self, CREATE_SANDBOX_REQUEST, FORK_SANDBOX_REQUEST, PATCH_SANDBOX_REQUEST, SET_EGRESS_REQUEST,
};
use super::state::{App, Sandbox, SandboxInfo, WORKSPACE};
use super::users::User;
use super::util::new_id;
use crate::sandbox_runner::SandboxRoot;

type Caller = Extension<User>;

/// Directories every new sandbox starts with (sandbox path, mode).
const ROOT_DIRS: &[(&str, u32)] = &[
    (WORKSPACE, 0o755),
    ("/tmp", 0o1777),
    ("/var/tmp", 0o1777),
    ("/root", 0o700),
    ("/home", 0o755),
];

const SSH_KEYS_BAD: &str = "ssh_pubkeys must be an array of OpenSSH public keys";

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

/// Registers a new sandbox (see [`App::register`]); a refused name removes the new root.
fn register(
    app: &App,
    user: User,
    id: String,
    root: SandboxRoot,
    info: SandboxInfo,
    name: Option<String>,
) -> Result<Arc<Sandbox>, ApiError> {
    app.register(user, id, root, info, name)
        .map_err(|(root, err)| {
            let _ = root.remove();
            err
        })
}

/// `POST /v1/sandboxes`: synchronous, like the real server, which holds the request open until
/// the sandbox is `running` and then answers a `CreateSandboxResponse`. The row exists (status
/// `creating`) while the request is open, so a client that loses the reply can still find it.
pub async fn create(
    State(app): State<Arc<App>>,
    Extension(user): Caller,
    body: Bytes,
) -> Result<Response, ApiError> {
    not_shutting_down(&app)?;
    let req = request_types::parse(&body, &CREATE_SANDBOX_REQUEST)?;
    let shape = match opt_str(&req, "shape")? {
        Some(s) if app.opts.shapes.iter().any(|k| k == s) => s.to_string(),
        Some(_) => return Err(ApiError::bad_request("unknown shape")),
        None => return Err(ApiError::bad_request("shape is required")),
    };
    let rootfs = match opt_str(&req, "rootfs")? {
        Some(r) if app.opts.rootfs_catalog.iter().any(|k| k == r) => r.to_string(),
        Some("") | None => app.opts.default_rootfs.clone(),
        Some(_) => return Err(ApiError::bad_request("unknown rootfs")),
    };
    let name = sandbox_name(req.get("name"))?;
    let region = opt_str(&req, "region")?
        .filter(|r| !r.is_empty())
        .map(str::to_string);
    let disk_mib = match opt_int(&req, "disk_mib", 0)? {
        None | Some(0) => DEFAULT_DISK_MIB,
        Some(n) => n as u64,
    };
    let egress = egress_list(req.get("egress"))?.unwrap_or_default();
    let auto_pause_after_seconds = auto_pause(req.get("auto_pause_after_seconds"))?;
    let ingress_enabled = opt_bool(&req, "ingress_enabled")?.unwrap_or(false);
    let envs = envs(req.get("envs"))?.unwrap_or_default();
    let ssh_pubkeys = string_list(req.get("ssh_pubkeys"), SSH_KEYS_BAD)?.unwrap_or_default();
    string_map(&req, "node_selector")?;
    for key in ["networks", "disks", "host_id"] {
        unmodelled(&req, key)?;
    }
    let delay = app.settings.transition_delay();
    let id = new_id("sb");
    let root = SandboxRoot::create(&app.bwrap, app.work_dir.join(&id), ROOT_DIRS)?;
    let info = SandboxInfo {
        lifecycle: Lifecycle::starting(Status::Creating, Status::Running, delay),
        name: String::new(),
        shape,
        rootfs,
        region,
        disk_mib,
        egress,
        auto_pause_after_seconds,
        ingress_enabled,
        envs,
        ssh_pubkeys,
        bandwidth_quota_bytes: -1,
        spawn_ms: delay.as_millis() as u64,
        created_at: SystemTime::now(),
        forked_from: None,
    };
    let sb = register(&app, user, id, root, info, name)?;
    tokio::time::sleep(delay).await;
    Ok(ok(sb.create_response()))
}

/// `GET /v1/sandboxes[?limit&offset&status]`: the caller's sandboxes, destroyed ones included,
/// oldest first, paginated.
pub async fn list(
    State(app): State<Arc<App>>,
    Extension(user): Caller,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let pairs = query_pairs(query.as_deref(), &[PAGE_PARAMS, &["status"]].concat())?;
    let page = Page::from_pairs(&pairs, app.settings.max_page_size())?;
    let status = match pairs.iter().rev().find(|(k, _)| k == "status") {
        None => None,
        Some((_, s)) if s.is_empty() => None,
        Some((_, s)) => Some(
            Status::parse(s)
                .ok_or_else(|| ApiError::bad_request(format!("unknown status {s:?}")))?,
        ),
    };
    let live: Vec<Arc<Sandbox>> = app
        .sandboxes
        .lock()
        .unwrap()
        .values()
        .filter(|sb| sb.owner == user)
        .cloned()
        .collect();
    let mut rows: Vec<(u64, Value)> = live.iter().map(|sb| (sb.seq, sb.view())).collect();
    rows.extend(app.tombstones.of(user));
    rows.sort_by_key(|(seq, _)| *seq);
    let views = rows
        .into_iter()
        .map(|(_, view)| view)
        .filter(|view| status.is_none_or(|s| view["status"] == s.as_str()))
        .collect();
    Ok(ok(page.of(views)))
}

/// `GET /v1/sandboxes/{id}`: a live sandbox's view, or a destroyed one's tombstone.
pub async fn get(
    State(app): State<Arc<App>>,
    Extension(user): Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    match app.owned(user, &id) {
        Ok(sb) => Ok(ok(sb.view())),
        Err(missing) => app.tombstones.find(user, &id).map(ok).ok_or(missing),
    }
}

/// `DELETE /v1/sandboxes/{id}`: kills every process and removes the files at once, so the
/// answer is `DestroyedResponse {status: "destroyed"}` (the vendor's "reclaimed inline"); a
/// second delete of the same sandbox is the documented no-op answering `destroyed` too.
pub async fn delete(
    State(app): State<Arc<App>>,
    Extension(user): Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let destroyed = || ok(json!({ "id": id, "status": "destroyed" }));
    let app2 = app.clone();
    let id2 = id.clone();
    let buried = tokio::task::spawn_blocking(move || app2.bury(user, &id2))
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?;
    if buried || app.tombstones.find(user, &id).is_some() {
        Ok(destroyed())
    } else {
        Err(ApiError::not_found("sandbox"))
    }
}

/// `PATCH /v1/sandboxes/{id}`: ingress and the idle auto-pause timeout.
pub async fn patch(
    State(app): State<Arc<App>>,
    Extension(user): Caller,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let sb = app.owned(user, &id)?;
    let req = request_types::parse(&body, &PATCH_SANDBOX_REQUEST)?;
    let ingress = opt_bool(&req, "ingress_enabled")?;
    let disable = opt_bool(&req, "disable_auto_pause")?;
    let seconds = auto_pause(req.get("auto_pause_after_seconds"))?;
    if disable == Some(true) && seconds.is_some() {
        return Err(ApiError::bad_request(
            "send either disable_auto_pause:true or auto_pause_after_seconds",
        ));
    }
    {
        let mut info = sb.info.lock().unwrap();
        if disable == Some(true) {
            info.auto_pause_after_seconds = None;
        }
        if seconds.is_some() {
            info.auto_pause_after_seconds = seconds;
        }
        if let Some(enabled) = ingress {
            info.ingress_enabled = enabled;
        }
    }
    Ok(ok(sb.view()))
}

/// Starts `pausing` (processes freeze at once); 409 unless running. 202: poll for `paused`.
pub async fn pause(
    State(app): State<Arc<App>>,
    Extension(user): Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let sb = app.owned(user, &id)?;
    let pausing = (Status::Pausing, Status::Paused);
    begin_transition(&app, &sb, "pause", &[Status::Running], pausing, true)
}

/// Starts `resuming` from `paused` or `error`; 409 otherwise. 202: poll for `running`.
pub async fn resume(
    State(app): State<Arc<App>>,
    Extension(user): Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let sb = app.owned(user, &id)?;
    let from = [Status::Paused, Status::Error];
    let resuming = (Status::Resuming, Status::Running);
    begin_transition(&app, &sb, "resume", &from, resuming, false)
}

/// Starts the transition `(via, to)` of a sandbox whose status is one of `from` (409
/// otherwise, naming `verb`), then freezes or thaws its processes at once. 202 with the view.
fn begin_transition(
    app: &App,
    sb: &Sandbox,
    verb: &str,
    from: &[Status],
    (via, to): (Status, Status),
    freeze: bool,
) -> Result<Response, ApiError> {
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

/// Copies a paused (or running) sandbox's filesystem into a new sandbox of the caller; 409
/// while the source is in transition, as the provider's retry loop expects. Omitted fields
/// inherit from the source; the fork gets a generated name (a fork request has no `name`).
pub async fn fork(
    State(app): State<Arc<App>>,
    Extension(user): Caller,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    not_shutting_down(&app)?;
    let src = app.owned(user, &id)?;
    let req = request_types::parse(&body, &FORK_SANDBOX_REQUEST)?;
    let start_paused = opt_bool(&req, "start_paused")?.unwrap_or(false);
    let egress = egress_list(req.get("egress"))?;
    let ingress = opt_bool(&req, "ingress_enabled")?;
    let envs = envs(req.get("envs"))?;
    let ssh_pubkeys = string_list(req.get("ssh_pubkeys"), SSH_KEYS_BAD)?;
    let quota = opt_int(&req, "bandwidth_quota_bytes", -1)?;
    require_status("fork", src.status(), &[Status::Paused, Status::Running])?;
    let new_id = new_id("sb");
    let root = src.root.fork_to(app.work_dir.join(&new_id)).await?;
    let info = {
        let s = src.info.lock().unwrap();
        let target = if start_paused {
            Status::Paused
        } else {
            Status::Running
        };
        let delay = app.settings.transition_delay();
        SandboxInfo {
            lifecycle: Lifecycle::starting(Status::Forking, target, delay),
            name: String::new(),
            shape: s.shape.clone(),
            rootfs: s.rootfs.clone(),
            region: s.region.clone(),
            disk_mib: s.disk_mib,
            egress: egress.unwrap_or_else(|| s.egress.clone()),
            auto_pause_after_seconds: s.auto_pause_after_seconds,
            ingress_enabled: ingress.unwrap_or(s.ingress_enabled),
            envs: envs.unwrap_or_else(|| s.envs.clone()),
            ssh_pubkeys: ssh_pubkeys.unwrap_or_else(|| s.ssh_pubkeys.clone()),
            bandwidth_quota_bytes: quota.unwrap_or(s.bandwidth_quota_bytes),
            spawn_ms: delay.as_millis() as u64,
            created_at: SystemTime::now(),
            forked_from: Some(src.id.clone()),
        }
    };
    let sb = register(&app, user, new_id, root, info, None)?;
    Ok(success(StatusCode::CREATED, sb.view()))
}

fn egress_view(sb: &Sandbox) -> Response {
    ok(json!({ "id": sb.id, "egress": sb.info.lock().unwrap().egress }))
}

/// `GET /v1/sandboxes/{id}/egress` → `EgressView`.
pub async fn get_egress(
    State(app): State<Arc<App>>,
    Extension(user): Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    Ok(egress_view(&*app.owned(user, &id)?))
}

/// `PUT /v1/sandboxes/{id}/egress`: replaces the allowlist (`null`, omitted or `[]` = allow
/// all, stored as `[]`) → `EgressView`.
pub async fn set_egress(
    State(app): State<Arc<App>>,
    Extension(user): Caller,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let sb = app.owned(user, &id)?;
    let req = request_types::parse(&body, &SET_EGRESS_REQUEST)?;
    let egress = egress_list(req.get("egress"))?.unwrap_or_default();
    sb.info.lock().unwrap().egress = egress;
    Ok(egress_view(&sb))
}
