//! The HTTP front: our own accept loop (so a fault can drop a connection with no response at
//! all), then for every API request: body cap, request log, faults, auth, routing. Auth finds
//! the caller's user from `X-Api-Key` and hands it to the handlers as a request extension; the
//! catalogue routes are served without a key, as the real server does.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderValue, Request, Response, StatusCode, header};
use axum::response::IntoResponse;
use hyper::body::Incoming;
use serde_json::json;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tower::ServiceExt;

use super::catalog;
use super::envelope::{ApiError, error_envelope};
use super::faults::{FaultAction, RunsOn};
use super::ndjson::body_from_channel;
use super::state::App;
use super::stream_faults;
use crate::common::serve::{self, DropConnection, FaultDelay, Listen, Reply, infallible};

/// Accepts connections until `stop` flips, then aborts every open connection.
pub async fn serve(
    listener: TcpListener,
    app: Arc<App>,
    api: Router,
    control: Router,
    stop: watch::Receiver<bool>,
) {
    let listen = Listen {
        tls: None,
        upgrades: false,
    };
    let handle = move |req| handle(app.clone(), api.clone(), control.clone(), req);
    serve::accept_loop(listener, listen, handle, stop).await;
}

async fn handle(app: Arc<App>, api: Router, control: Router, req: Request<Incoming>) -> Reply {
    let path = req.uri().path().to_string();
    if path.starts_with("/_emulator") {
        return Ok(infallible(control.oneshot(req.map(Body::new)).await));
    }
    let method = req.method().as_str().to_string();
    let query = req.uri().query().map(str::to_string);
    let user = req
        .headers()
        .get("x-api-key")
        .and_then(|k| app.users.find(k.as_bytes()));
    let authorized = user.is_some();
    let public = catalog::is_public(&method, &path);
    let (mut parts, body) = req.into_parts();
    if let Some(user) = user {
        parts.extensions.insert(user);
    }
    let Some(body) = serve::read_body(body, app.opts.max_request_body_bytes).await? else {
        let seq = app
            .log
            .push(&method, &path, query.as_deref(), &[], authorized);
        app.log.set_status(seq, 413);
        return Ok(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
            format!(
                "request bodies are limited to {} bytes",
                app.opts.max_request_body_bytes
            ),
        )
        .into_response());
    };
    let seq = app
        .log
        .push(&method, &path, query.as_deref(), &body, authorized);
    let fault =
        serve::select_fault(&app.log, &app.faults, seq, &method, &path, query.as_deref()).await;

    if let Some(FaultAction::KeepRunning) = &fault {
        parts.extensions.insert(RunsOn);
    }
    let reply = match &fault {
        Some(f) if !f.is_stream_fault() && !replaces_after(f) && !f.is_handler_fault() => {
            fault_reply(f)
        }
        _ if !authorized && !public => Ok(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "missing or invalid X-Api-Key",
        )
        .into_response()),
        _ => {
            let resp = infallible(
                api.oneshot(Request::from_parts(parts, Body::from(body)))
                    .await,
            );
            match &fault {
                // The request took effect; the client never hears how.
                Some(f) if replaces_after(f) => {
                    drop(resp);
                    fault_reply(f)
                }
                Some(f) if f.is_stream_fault() => Ok(resp.map(|b| stream_faults::apply(b, f))),
                _ => Ok(resp),
            }
        }
    };
    if let Ok(resp) = &reply {
        app.log.set_status(seq, resp.status().as_u16());
    }
    reply
}

impl FaultDelay for FaultAction {
    fn delay_ms(&self) -> Option<u64> {
        match self {
            FaultAction::Delay { ms } => Some(*ms),
            _ => None,
        }
    }
}

fn replaces_after(f: &FaultAction) -> bool {
    matches!(
        f,
        FaultAction::Status { after: true, .. }
            | FaultAction::Drop { after: true }
            | FaultAction::MalformedJson { after: true }
            | FaultAction::Unsuccessful { after: true }
            | FaultAction::InvalidData { after: true }
    )
}

fn json_reply(status: u16, body: String) -> Response<Body> {
    let mut resp = Response::new(Body::from(body));
    *resp.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

/// The response (or dropped connection) a non-stream fault produces.
fn fault_reply(f: &FaultAction) -> Reply {
    let injected = |status: u16| {
        let body = if status >= 500 {
            error_envelope(status, "emulator fault")
        } else {
            json!({ "status": "fail", "data": { "code": "emulator_fault", "message": "emulator fault" } })
        };
        json_reply(status, body.to_string())
    };
    Ok(match f {
        FaultAction::Status { status, body, .. } => match body {
            Some(b) => json_reply(*status, b.to_string()),
            None => injected(*status),
        },
        FaultAction::Drop { .. } => return Err(DropConnection),
        FaultAction::Redirect { status, location } => {
            let mut resp = json_reply(*status, String::new());
            let loc = location.as_deref().unwrap_or("/v1/emulator-redirect");
            if let Ok(v) = HeaderValue::from_str(loc) {
                resp.headers_mut().insert(header::LOCATION, v);
            }
            resp
        }
        FaultAction::MalformedJson { .. } => json_reply(200, r#"{"status":"success","data":{"#.into()),
        FaultAction::DeclareLength { bytes } => {
            let (tx, rx) = tokio::sync::mpsc::channel(1);
            tokio::spawn(async move { tx.closed().await });
            let mut resp = Response::new(body_from_channel(rx));
            resp.headers_mut()
                .insert(header::CONTENT_LENGTH, HeaderValue::from(*bytes));
            resp
        }
        FaultAction::Unsuccessful { .. } => json_reply(
            200,
            json!({ "status": "fail", "data": { "message": "emulator fault" } }).to_string(),
        ),
        FaultAction::InvalidData { .. } => json_reply(200, r#"{"status":"success","data":[]}"#.into()),
        FaultAction::Evicted { .. } => json_reply(
            410,
            json!({ "status": "fail", "data": { "code": "output_offset_expired", "message": "output evicted" } })
                .to_string(),
        ),
        // Delays and stream faults never get here.
        _ => injected(500),
    })
}
