//! The HTTP(S) front: our own accept loop (so a fault can drop a connection with no answer),
//! then for every API request: request log, faults, bearer-token auth, routing, and the
//! WebSocket upgrade of `pods/exec`.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, Method, Request, Response, header};
use hyper::body::Incoming;
use hyper::upgrade::OnUpgrade;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;
use tower::ServiceExt;

use super::exec;
use super::faults::FaultAction;
use super::request_log::RequestRecord;
use super::rest::{self, Call};
use super::route::{self, Query, ResourceRequest, Route};
use super::state::App;
use super::status::KubeError;
use crate::common::serve::{self, DropConnection, FaultDelay, Listen, Reply, infallible};

/// Accepts connections until `stop` flips, then aborts every open connection.
pub async fn serve(
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    app: Arc<App>,
    control: Router,
    stop: watch::Receiver<bool>,
) {
    let scheme: &'static str = if tls.is_some() { "https" } else { "http" };
    let listen = Listen {
        tls,
        upgrades: true,
    };
    let handle = move |req| handle(app.clone(), control.clone(), scheme, req);
    serve::accept_loop(listener, listen, handle, stop).await;
}

impl FaultDelay for FaultAction {
    fn delay_ms(&self) -> Option<u64> {
        if let FaultAction::Delay { ms } = self {
            Some(*ms)
        } else {
            None
        }
    }
}

enum Auth {
    Ok,
    Forbidden,
    Missing,
}

fn authenticate(app: &App, req: &Request<Incoming>) -> Auth {
    let token = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    match token {
        Some(t) if t == app.token => Auth::Ok,
        Some(t) if app.opts.forbidden_tokens.iter().any(|f| f == t) => Auth::Forbidden,
        _ => Auth::Missing,
    }
}

async fn handle(
    app: Arc<App>,
    control: Router,
    scheme: &'static str,
    mut req: Request<Incoming>,
) -> Reply {
    let path = req.uri().path().to_string();
    if path.starts_with("/_emulator") {
        return Ok(infallible(control.oneshot(req.map(Body::new)).await));
    }
    let method = req.method().clone();
    let raw_query = req.uri().query().map(str::to_string);
    let query = Query::parse(raw_query.as_deref());
    let route = route::parse(&path, &app.registry);
    let auth = authenticate(&app, &req);
    let mut record = RequestRecord::new(method.as_str(), &path, raw_query.as_deref(), scheme);
    record.authorized = !matches!(auth, Auth::Missing);
    record.content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    describe_route(&mut record, route.as_ref(), &method, &query);
    let upgrade_exec = matches!(&route, Some(Route::Resource(rr))
        if rr.subresource.as_deref() == Some("exec") && exec::is_upgrade(req.headers()));
    let on_upgrade = upgrade_exec.then(|| hyper::upgrade::on(&mut req));
    let headers = req.headers().clone();
    let Some(body) = serve::read_body(req.into_body(), app.opts.max_request_body_bytes).await?
    else {
        let seq = app.log.push(record, &[]);
        app.log.set_status(seq, 413);
        return Ok(KubeError::new(
            413,
            "RequestEntityTooLarge",
            "the request body is too large",
        )
        .into_response());
    };
    let seq = app.log.push(record, &body);
    let fault = serve::select_fault(
        &app.log,
        &app.faults,
        seq,
        method.as_str(),
        &path,
        raw_query.as_deref(),
    )
    .await;

    let reply: Reply = match &fault {
        Some(FaultAction::Drop { after: false }) => Err(DropConnection),
        Some(FaultAction::Status {
            code,
            reason,
            message,
            after: false,
        }) => Ok(
            FaultAction::status_error(*code, reason.as_deref(), message.as_deref()).into_response(),
        ),
        _ if matches!(auth, Auth::Missing) => Ok(KubeError::unauthorized().into_response()),
        _ => {
            let resp = match (route, on_upgrade) {
                (Some(Route::Resource(rr)), Some(on_upgrade)) => {
                    let forbidden = matches!(auth, Auth::Forbidden);
                    let exec = ExecUpgrade {
                        query: &query,
                        headers: &headers,
                        fault: fault.clone(),
                        forbidden,
                    };
                    exec_upgrade(&app, &rr, exec, on_upgrade)
                }
                (Some(route), _) => {
                    let call = Call {
                        app: &app,
                        method: &method,
                        query: &query,
                        headers: &headers,
                        body,
                        fault: fault.clone(),
                        forbidden: matches!(auth, Auth::Forbidden),
                    };
                    rest::dispatch(call, route).await
                }
                (None, _) => KubeError::no_route(&path).into_response(),
            };
            fault_after(fault.as_ref(), resp)
        }
    };
    if let Ok(resp) = &reply {
        app.log.set_status(seq, resp.status().as_u16());
    }
    reply
}

/// What the request log says of the route: verb (`exec` and `log` for those subresources,
/// `discovery` for the discovery documents), group, version, resource, namespace and name.
fn describe_route(
    record: &mut RequestRecord,
    route: Option<&Route>,
    method: &Method,
    query: &Query,
) {
    match route {
        Some(Route::Resource(rr)) => {
            let verb = match rr.subresource.as_deref() {
                Some("exec") => "exec",
                Some("log") => "log",
                _ => rr.verb(method.as_str(), query),
            };
            record.verb = Some(verb.to_string());
            record.group = Some(rr.group.clone());
            record.version = Some(rr.version.clone());
            record.resource = Some(rr.plural.clone());
            record.subresource = rr.subresource.clone();
            record.namespace = rr.namespace.clone();
            record.name = rr.name.clone();
        }
        Some(_) => record.verb = Some("discovery".into()),
        None => {}
    }
}

/// The parts of an exec request its upgrade needs.
struct ExecUpgrade<'a> {
    query: &'a Query,
    headers: &'a HeaderMap,
    fault: Option<FaultAction>,
    /// The caller's token is a forbidden one.
    forbidden: bool,
}

/// `pods/exec` with an upgrade: authorized as `create` (and `get`) on `pods/exec`, then the
/// WebSocket session, which carries a stream fault if one was chosen for the request.
fn exec_upgrade(
    app: &Arc<App>,
    rr: &ResourceRequest,
    exec: ExecUpgrade<'_>,
    on_upgrade: OnUpgrade,
) -> Response<Body> {
    let (ns, name) = (rr.namespace.as_deref(), rr.name.as_deref());
    let forbidden = exec.forbidden
        || app.denied("create", "", "pods/exec", ns, name)
        || app.denied("get", "", "pods/exec", ns, name);
    let result = if forbidden {
        Err(KubeError::forbidden(
            &app.opts.user,
            "create",
            app.rt("", "pods"),
            Some("exec"),
            ns,
            name,
        ))
    } else {
        exec::prepare(app, rr, exec.query, exec.headers).and_then(|plan| {
            let stream_fault = exec.fault.filter(FaultAction::is_stream_fault);
            exec::upgrade(app.clone(), plan, exec.headers, on_upgrade, stream_fault)
        })
    };
    result.unwrap_or_else(KubeError::into_response)
}

/// A fault chosen to act after the request was served: its status, or a dropped connection,
/// replaces the response.
fn fault_after(fault: Option<&FaultAction>, resp: Response<Body>) -> Reply {
    match fault {
        Some(FaultAction::Status {
            code,
            reason,
            message,
            after: true,
        }) => Ok(
            FaultAction::status_error(*code, reason.as_deref(), message.as_deref()).into_response(),
        ),
        Some(FaultAction::Drop { after: true }) => Err(DropConnection),
        _ => Ok(resp),
    }
}
