//! The control routes every emulator serves under `/_emulator/…` (no auth, not logged, never
//! faulted): health, the request log, fault rules and reset, plus the JSON 404 for unknown
//! control routes. Each emulator adds its own routes (counts, settings, …) to these.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::faults::{FaultRule, Faults};
use super::request_log::{Record, RequestLog};

/// What the shared control routes need of an emulator's state.
pub trait Control: Send + Sync + 'static {
    type Record: Record + Serialize + Send;
    type Action: Clone + Serialize + DeserializeOwned + Send + 'static;
    fn request_log(&self) -> &RequestLog<Self::Record>;
    fn fault_rules(&self) -> &Faults<Self::Action>;
    /// The emulator's own reset (run on a blocking thread).
    fn reset_all(self: &Arc<Self>);
}

/// The shared routes merged with the emulator's `own` ones, on `app`.
pub fn router<S: Control>(app: Arc<S>, own: Router<Arc<S>>) -> Router {
    Router::new()
        .route(
            "/_emulator/health",
            get(|| async { Json(json!({ "ok": true })) }),
        )
        .route(
            "/_emulator/requests",
            get(requests::<S>).delete(clear_requests::<S>),
        )
        .route(
            "/_emulator/faults",
            get(list_faults::<S>)
                .post(add_fault::<S>)
                .delete(clear_faults::<S>),
        )
        .route("/_emulator/faults/{id}", delete(remove_fault::<S>))
        .route("/_emulator/reset", post(reset::<S>))
        .merge(own)
        .fallback(|| async { not_found("no such control route") })
        .with_state(app)
}

/// `404 {"error": message}`.
pub fn not_found(message: &str) -> Response {
    (StatusCode::NOT_FOUND, Json(json!({ "error": message }))).into_response()
}

/// `{"ok": true}`.
pub fn ok() -> Json<Value> {
    Json(json!({ "ok": true }))
}

/// `?since=N`: records with a larger `seq`.
async fn requests<S: Control>(
    State(app): State<Arc<S>>,
    Query(q): Query<HashMap<String, String>>,
) -> Json<Value> {
    let since = q.get("since").and_then(|s| s.parse().ok()).unwrap_or(0);
    Json(json!({ "requests": app.request_log().snapshot(since) }))
}

async fn clear_requests<S: Control>(State(app): State<Arc<S>>) -> Json<Value> {
    app.request_log().clear();
    ok()
}

async fn list_faults<S: Control>(State(app): State<Arc<S>>) -> Json<Value> {
    Json(json!({ "faults": app.fault_rules().list() }))
}

async fn add_fault<S: Control>(
    State(app): State<Arc<S>>,
    Json(rule): Json<FaultRule<S::Action>>,
) -> Json<Value> {
    Json(json!({ "id": app.fault_rules().add(rule) }))
}

async fn clear_faults<S: Control>(State(app): State<Arc<S>>) -> Json<Value> {
    app.fault_rules().clear();
    ok()
}

async fn remove_fault<S: Control>(State(app): State<Arc<S>>, Path(id): Path<u64>) -> Response {
    if app.fault_rules().remove(id) {
        ok().into_response()
    } else {
        not_found("no such fault")
    }
}

async fn reset<S: Control>(State(app): State<Arc<S>>) -> Json<Value> {
    let _ = tokio::task::spawn_blocking(move || app.reset_all()).await;
    ok()
}
