//! The HTTP front: our own accept loop (so a fault can drop a connection with no response at
//! all), then for every API request: body cap, request log, faults, auth, routing.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderValue, Request, Response, StatusCode, header};
use axum::response::IntoResponse;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::json;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tower::ServiceExt;

use super::envelope::ApiError;
use super::faults::FaultAction;
use super::state::App;
use super::stream_faults;

/// Returned by the service to make hyper close the connection without answering.
#[derive(Debug)]
pub struct DropConnection;
impl std::fmt::Display for DropConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("emulator fault: connection dropped")
    }
}
impl std::error::Error for DropConnection {}

type Reply = Result<Response<Body>, DropConnection>;

/// Accepts connections until `stop` flips, then aborts every open connection.
pub async fn serve(
    listener: TcpListener,
    app: Arc<App>,
    api: Router,
    control: Router,
    mut stop: watch::Receiver<bool>,
) {
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let _ = stream.set_nodelay(true);
                let (app, api, control) = (app.clone(), api.clone(), control.clone());
                conns.spawn(async move {
                    let svc = service_fn(move |req| handle(app.clone(), api.clone(), control.clone(), req));
                    let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), svc).await;
                });
            }
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
            _ = stop.changed() => break,
        }
    }
    conns.abort_all();
    while conns.join_next().await.is_some() {}
}

async fn handle(app: Arc<App>, api: Router, control: Router, req: Request<Incoming>) -> Reply {
    let path = req.uri().path().to_string();
    if path.starts_with("/_emulator") {
        return Ok(infallible(control.oneshot(req.map(Body::new)).await));
    }
    let method = req.method().as_str().to_string();
    let query = req.uri().query().map(str::to_string);
    let authorized = req
        .headers()
        .get("x-api-key")
        .is_some_and(|k| k.as_bytes() == app.api_key.as_bytes());
    let (parts, body) = req.into_parts();
    let body = match Limited::new(body, app.opts.max_request_body_bytes)
        .collect()
        .await
    {
        Ok(collected) => collected.to_bytes(),
        Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => {
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
        }
        Err(_) => return Err(DropConnection),
    };
    let seq = app
        .log
        .push(&method, &path, query.as_deref(), &body, authorized);

    let fired = app.faults.select(&method, &path, query.as_deref());
    if !fired.is_empty() {
        app.log
            .set_faults(seq, fired.iter().map(|(id, _)| *id).collect());
    }
    let delay: u64 = fired
        .iter()
        .map(|(_, a)| match a {
            FaultAction::Delay { ms } => *ms,
            _ => 0,
        })
        .sum();
    if delay > 0 {
        tokio::time::sleep(Duration::from_millis(delay)).await;
    }
    let fault = fired
        .into_iter()
        .map(|(_, a)| a)
        .find(|a| !matches!(a, FaultAction::Delay { .. }));

    let reply = match &fault {
        Some(f) if !f.is_stream_fault() && !replaces_after(f) => fault_reply(f),
        _ if !authorized => Ok(ApiError::new(
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

fn infallible(r: Result<axum::response::Response, Infallible>) -> Response<Body> {
    match r {
        Ok(resp) => resp,
        Err(never) => match never {},
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
            json!({ "status": "error", "message": "emulator fault", "code": "emulator_fault" })
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
