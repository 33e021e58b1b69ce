//! The HTTP(S) front every emulator shares: our own accept loop (instead of `axum::serve`, so
//! a fault can drop a connection without any response), the request-body cap, and the
//! selection of the fault a request gets (delays summed and slept, then the first other one).

use std::convert::Infallible;
use std::future::Future;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, Response};
use bytes::Bytes;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;

use super::faults::Faults;
use super::request_log::{Record, RequestLog};

/// Returned by the service to make hyper close the connection without answering.
#[derive(Debug)]
pub struct DropConnection;
impl std::fmt::Display for DropConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("emulator fault: connection dropped")
    }
}
impl std::error::Error for DropConnection {}

pub type Reply = Result<Response<Body>, DropConnection>;

/// How a connection is served.
#[derive(Clone)]
pub struct Listen {
    /// TLS on top of TCP when set.
    pub tls: Option<TlsAcceptor>,
    /// Whether responses may upgrade the connection (WebSockets).
    pub upgrades: bool,
}

/// Accepts connections until `stop` flips, then aborts every open connection. Every request
/// goes to `handle`.
pub async fn accept_loop<H, F>(
    listener: TcpListener,
    listen: Listen,
    handle: H,
    mut stop: watch::Receiver<bool>,
) where
    H: Fn(Request<Incoming>) -> F + Clone + Send + 'static,
    F: Future<Output = Reply> + Send + 'static,
{
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let _ = stream.set_nodelay(true);
                let (handle, tls) = (handle.clone(), listen.tls.clone());
                let upgrades = listen.upgrades;
                conns.spawn(async move {
                    match tls {
                        Some(acceptor) => {
                            let Ok(stream) = acceptor.accept(stream).await else { return };
                            serve_connection(stream, handle, upgrades).await;
                        }
                        None => serve_connection(stream, handle, upgrades).await,
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

async fn serve_connection<I, H, F>(io: I, handle: H, upgrades: bool)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    H: Fn(Request<Incoming>) -> F + Send + 'static,
    F: Future<Output = Reply> + Send + 'static,
{
    let svc = service_fn(handle);
    let conn = http1::Builder::new().serve_connection(TokioIo::new(io), svc);
    if upgrades {
        let _ = conn.with_upgrades().await;
    } else {
        let _ = conn.await;
    }
}

pub fn infallible(r: Result<axum::response::Response, Infallible>) -> Response<Body> {
    match r {
        Ok(resp) => resp,
        Err(never) => match never {},
    }
}

/// Reads a request body of at most `limit` bytes: `Ok(None)` when it is larger, `Err` when
/// the connection broke.
pub async fn read_body(body: Incoming, limit: usize) -> Result<Option<Bytes>, DropConnection> {
    match Limited::new(body, limit).collect().await {
        Ok(collected) => Ok(Some(collected.to_bytes())),
        Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => Ok(None),
        Err(_) => Err(DropConnection),
    }
}

/// A fault action that may just delay the request.
pub trait FaultDelay {
    /// `Some(ms)` for a pure delay (which combines with another fault on the same request).
    fn delay_ms(&self) -> Option<u64>;
}

/// Counts the request (logged as `seq`) against every fault rule, notes the ids that fire in
/// the log, sleeps for the sum of the delays that fire, and returns the first other fault.
pub async fn select_fault<R: Record, A: Clone + FaultDelay>(
    log: &RequestLog<R>,
    faults: &Faults<A>,
    seq: u64,
    method: &str,
    path: &str,
    query: Option<&str>,
) -> Option<A> {
    let fired = faults.select(method, path, query);
    if !fired.is_empty() {
        log.set_faults(seq, fired.iter().map(|(id, _)| *id).collect());
    }
    let delay: u64 = fired.iter().filter_map(|(_, a)| a.delay_ms()).sum();
    if delay > 0 {
        tokio::time::sleep(Duration::from_millis(delay)).await;
    }
    fired
        .into_iter()
        .map(|(_, a)| a)
        .find(|a| a.delay_ms().is_none())
}
