//! The control API under `/_emulator/…` (no auth, not logged, never faulted) so tests in any
//! language can read the request log and counts, program faults and force sandbox states.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::faults::{FaultAction, Faults};
use super::lifecycle::Status;
use super::request_log::{RequestLog, RequestRecord};
use super::state::App;
use crate::common::control::{self, Control};

/// Live resources, for "nothing leaked" assertions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EmulatorCounts {
    /// Live sandboxes: destroyed ones (tombstones) are not counted.
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
            live_processes: self.live_trees.alive(),
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

    /// Deletes every sandbox (tombstones included) and clears the log and the faults.
    pub fn reset(&self) {
        let all: Vec<_> = std::mem::take(&mut *self.sandboxes.lock().unwrap())
            .into_values()
            .collect();
        for sb in &all {
            self.destroy(sb);
        }
        self.tombstones.clear();
        self.log.clear();
        self.faults.clear();
    }
}

impl Control for App {
    type Record = RequestRecord;
    type Action = FaultAction;
    fn request_log(&self) -> &RequestLog {
        &self.log
    }
    fn fault_rules(&self) -> &Faults {
        &self.faults
    }
    fn reset_all(self: &Arc<Self>) {
        self.reset();
    }
}

pub fn router(app: Arc<App>) -> Router {
    let own = Router::new()
        .route("/_emulator/counts", get(counts))
        .route("/_emulator/sandboxes", get(sandboxes))
        .route("/_emulator/sandboxes/{id}/status", post(force_status))
        .route("/_emulator/settings", get(settings).patch(update_settings))
        .route("/_emulator/request-types", get(request_types));
    control::router(app, own)
}

async fn counts(State(app): State<Arc<App>>) -> Json<EmulatorCounts> {
    Json(app.counts())
}

/// The field list of every request body type the API checks (see `request_types`).
async fn request_types() -> Json<Value> {
    Json(super::request_types::catalog())
}

/// Live sandboxes of every user (not the tombstones), with white-box details.
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
        control::not_found("no such sandbox")
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
