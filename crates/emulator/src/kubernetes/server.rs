//! The HTTP(S) front: our own accept loop (so a fault can drop a connection with no answer),
//! then for every API request: request log, faults, bearer-token auth, routing, and the
//! WebSocket upgrade of `pods/exec`.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, Response, header};
use http_body_util::{BodyExt, LengthLimitError, Limited};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;
use tower::ServiceExt;

use super::exec;
use super::faults::FaultAction;
use super::request_log::RequestRecord;
use super::rest::{self, Call};
use super::route::{self, Query, Route};
use super::state::App;
use super::status::KubeError;

/// Makes hyper close the connection without answering.
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
    tls: Option<TlsAcceptor>,
    app: Arc<App>,
    control: Router,
    mut stop: watch::Receiver<bool>,
) {
    let scheme: &'static str = if tls.is_some() { "https" } else { "http" };
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let _ = stream.set_nodelay(true);
                let (app, control, tls) = (app.clone(), control.clone(), tls.clone());
                conns.spawn(async move {
                    let svc = service_fn(move |req| handle(app.clone(), control.clone(), scheme, req));
                    match tls {
                        Some(acceptor) => {
                            let Ok(stream) = acceptor.accept(stream).await else { return };
                            let _ = http1::Builder::new()
                                .serve_connection(TokioIo::new(stream), svc)
                                .with_upgrades()
                                .await;
                        }
                        None => {
                            let _ = http1::Builder::new()
                                .serve_connection(TokioIo::new(stream), svc)
                                .with_upgrades()
                                .await;
                        }
                    }
                });
            }
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
            _ = stop.changed() => break,
        }
    }
    conns.abort_all();
    while conns.join_next().await.is_some() {}
}

fn infallible(r: Result<axum::response::Response, Infallible>) -> Response<Body> {
    match r {
        Ok(resp) => resp,
        Err(never) => match never {},
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
    let mut upgrade_exec = false;
    match &route {
        Some(Route::Resource(rr)) => {
            let verb = rr.verb(method.as_str(), &query);
            upgrade_exec =
                rr.subresource.as_deref() == Some("exec") && exec::is_upgrade(req.headers());
            record.verb = Some(
                if rr.subresource.as_deref() == Some("exec") {
                    "exec"
                } else if rr.subresource.as_deref() == Some("log") {
                    "log"
                } else {
                    verb
                }
                .to_string(),
            );
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
    let on_upgrade = upgrade_exec.then(|| hyper::upgrade::on(&mut req));
    let headers = req.headers().clone();
    let body = match Limited::new(req.into_body(), app.opts.max_request_body_bytes)
        .collect()
        .await
    {
        Ok(c) => c.to_bytes(),
        Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => {
            let seq = app.log.push(record, &[]);
            app.log.set_status(seq, 413);
            return Ok(KubeError::new(
                413,
                "RequestEntityTooLarge",
                "the request body is too large",
            )
            .into_response());
        }
        Err(_) => return Err(DropConnection),
    };
    let seq = app.log.push(record, &body);

    let fired = app
        .faults
        .select(method.as_str(), &path, raw_query.as_deref());
    if !fired.is_empty() {
        app.log
            .set_faults(seq, fired.iter().map(|(id, _)| *id).collect());
    }
    let delay: u64 = fired
        .iter()
        .map(|(_, a)| {
            if let FaultAction::Delay { ms } = a {
                *ms
            } else {
                0
            }
        })
        .sum();
    if delay > 0 {
        tokio::time::sleep(Duration::from_millis(delay)).await;
    }
    let fault = fired
        .into_iter()
        .map(|(_, a)| a)
        .find(|a| !matches!(a, FaultAction::Delay { .. }));

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
                    let forbidden = matches!(auth, Auth::Forbidden)
                        || app.denied(
                            "create",
                            "",
                            "pods/exec",
                            rr.namespace.as_deref(),
                            rr.name.as_deref(),
                        )
                        || app.denied(
                            "get",
                            "",
                            "pods/exec",
                            rr.namespace.as_deref(),
                            rr.name.as_deref(),
                        );
                    let result = if forbidden {
                        Err(KubeError::forbidden(
                            &app.opts.user,
                            "create",
                            app.rt("", "pods"),
                            Some("exec"),
                            rr.namespace.as_deref(),
                            rr.name.as_deref(),
                        ))
                    } else {
                        exec::prepare(&app, &rr, &query, &headers).and_then(|plan| {
                            let stream_fault = fault.clone().filter(FaultAction::is_stream_fault);
                            exec::upgrade(app.clone(), plan, &headers, on_upgrade, stream_fault)
                        })
                    };
                    result.unwrap_or_else(KubeError::into_response)
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
            match &fault {
                Some(FaultAction::Status {
                    code,
                    reason,
                    message,
                    after: true,
                }) => {
                    drop(resp);
                    Ok(
                        FaultAction::status_error(*code, reason.as_deref(), message.as_deref())
                            .into_response(),
                    )
                }
                Some(FaultAction::Drop { after: true }) => {
                    drop(resp);
                    Err(DropConnection)
                }
                _ => Ok(resp),
            }
        }
    };
    if let Ok(resp) = &reply {
        app.log.set_status(seq, resp.status().as_u16());
    }
    reply
}
