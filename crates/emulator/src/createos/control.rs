//! The control API under `/_emulator/…` (no auth, not logged, never faulted) so tests in any
//! language can read the request log and counts, program faults and force sandbox states.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::faults::FaultRule;
use super::lifecycle::Status;
use super::state::App;

/// Live resources, for "nothing leaked" assertions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EmulatorCounts {
    /// Sandboxes not deleted.
    pub sandboxes: usize,
    /// Sandboxed process trees still alive (managed processes, execs, file transfers).
    pub live_processes: usize,
    /// Managed-process records not deleted (exited ones included).
    pub managed_processes: usize,
}

impl App {
    pub fn counts(&self) -> EmulatorCounts {
        let sandboxes: Vec<_> = self.sandboxes.lock().unwrap().values().cloned().collect();
        EmulatorCounts {
            sandboxes: sandboxes.len(),
            live_processes: self.live_trees.load(std::sync::atomic::Ordering::SeqCst),
            managed_processes: sandboxes
                .iter()
                .map(|s| s.processes.lock().unwrap().len())
                .sum(),
        }
    }

    /// Puts a sandbox into `status` at once, with the side effects the service would have:
    /// paused freezes its processes, running thaws them, destroyed/failed kills them.
    pub fn force_status(&self, id: &str, status: Status) -> bool {
        let Ok(sb) = self.sandbox(id) else {
            return false;
        };
        sb.info.lock().unwrap().lifecycle.force(status);
        match status {
            Status::Destroyed | Status::Failed => sb.trees().iter().for_each(|t| t.kill()),
            s => sb.freeze(s.frozen()),
        }
        true
    }

    /// Deletes every sandbox and clears the log and the faults.
    pub fn reset(&self) {
        let all: Vec<_> = std::mem::take(&mut *self.sandboxes.lock().unwrap())
            .into_values()
            .collect();
        for sb in &all {
            self.destroy(sb);
        }
        self.log.clear();
        self.faults.clear();
    }
}

pub fn router(app: Arc<App>) -> Router {
    Router::new()
        .route(
            "/_emulator/health",
            get(|| async { Json(json!({ "ok": true })) }),
        )
        .route("/_emulator/requests", get(requests).delete(clear_requests))
        .route("/_emulator/counts", get(counts))
        .route("/_emulator/sandboxes", get(sandboxes))
        .route("/_emulator/sandboxes/{id}/status", post(force_status))
        .route(
            "/_emulator/faults",
            get(list_faults).post(add_fault).delete(clear_faults),
        )
        .route("/_emulator/faults/{id}", delete(remove_fault))
        .route("/_emulator/settings", get(settings).patch(update_settings))
        .route("/_emulator/reset", post(reset))
        .fallback(|| async {
            (
                StatusCode::NOT_FOUND,
                Json(json!({ "error": "no such control route" })),
            )
        })
        .with_state(app)
}

async fn requests(
    State(app): State<Arc<App>>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let since = q.get("since").and_then(|s| s.parse().ok()).unwrap_or(0);
    Json(json!({ "requests": app.log.snapshot(since) })).into_response()
}

async fn clear_requests(State(app): State<Arc<App>>) -> Json<Value> {
    app.log.clear();
    Json(json!({ "ok": true }))
}

async fn counts(State(app): State<Arc<App>>) -> Json<EmulatorCounts> {
    Json(app.counts())
}

async fn sandboxes(State(app): State<Arc<App>>) -> Json<Value> {
    let all: Vec<_> = app.sandboxes.lock().unwrap().values().cloned().collect();
    let views: Vec<Value> = all
        .iter()
        .map(|sb| {
            let mut v = sb.view();
            v["root_dir"] = json!(sb.root.path());
            v["processes"] = json!(sb.processes.lock().unwrap().len());
            v["live_processes"] = json!(sb.trees.lock().unwrap().len());
            v
        })
        .collect();
    Json(json!({ "sandboxes": views }))
}

#[derive(Deserialize)]
struct ForceStatus {
    status: String,
}

async fn force_status(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Json(body): Json<ForceStatus>,
) -> Response {
    let Some(status) = Status::parse(&body.status) else {
        return (
            StatusCode::BAD_REQUEST,
            Json(json!({ "error": "unknown status" })),
        )
            .into_response();
    };
    if app.force_status(&id, status) {
        Json(json!({ "id": id, "status": status.as_str() })).into_response()
    } else {
        (
            StatusCode::NOT_FOUND,
            Json(json!({ "error": "no such sandbox" })),
        )
            .into_response()
    }
}

async fn list_faults(State(app): State<Arc<App>>) -> Json<Value> {
    Json(json!({ "faults": app.faults.list() }))
}

async fn add_fault(State(app): State<Arc<App>>, Json(rule): Json<FaultRule>) -> Json<Value> {
    Json(json!({ "id": app.faults.add(rule) }))
}

async fn clear_faults(State(app): State<Arc<App>>) -> Json<Value> {
    app.faults.clear();
    Json(json!({ "ok": true }))
}

async fn remove_fault(State(app): State<Arc<App>>, Path(id): Path<u64>) -> Response {
    if app.faults.remove(id) {
        Json(json!({ "ok": true })).into_response()
    } else {
        (
            StatusCode::NOT_FOUND,
            Json(json!({ "error": "no such fault" })),
        )
            .into_response()
    }
}

fn settings_view(app: &App) -> Value {
    json!({
        "transitionDelayMs": app.settings.transition_delay().as_millis() as u64,
        "heartbeatMs": app.settings.heartbeat_interval().as_millis() as u64,
    })
}

async fn settings(State(app): State<Arc<App>>) -> Json<Value> {
    Json(settings_view(&app))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SettingsPatch {
    transition_delay_ms: Option<u64>,
    heartbeat_ms: Option<u64>,
}

async fn update_settings(State(app): State<Arc<App>>, Json(p): Json<SettingsPatch>) -> Json<Value> {
    if let Some(ms) = p.transition_delay_ms {
        app.settings.set_transition_delay(Duration::from_millis(ms));
    }
    if let Some(ms) = p.heartbeat_ms {
        app.settings
            .set_heartbeat_interval(Duration::from_millis(ms));
    }
    Json(settings_view(&app))
}

async fn reset(State(app): State<Arc<App>>) -> Json<Value> {
    let app2 = app.clone();
    let _ = tokio::task::spawn_blocking(move || app2.reset()).await;
    Json(json!({ "ok": true }))
}
