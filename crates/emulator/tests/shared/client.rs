//! The raw HTTP client both emulators' tests use: one connection per request, so every
//! request reaches the emulator's own accept loop.

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::client::conn::http1;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::TcpStream;

/// Sends one request to `addr` over a fresh connection, with the `auth` header when given and
/// `content_type` when there is a body.
pub async fn send(
    addr: &str,
    method: &str,
    path: &str,
    body: Option<Vec<u8>>,
    content_type: &str,
    auth: Option<(&str, String)>,
) -> Result<Response<Incoming>, hyper::Error> {
    let stream = TcpStream::connect(addr).await.expect("connect");
    let (mut sender, conn) = http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(conn);
    let mut req = Request::builder()
        .method(method)
        .uri(path)
        .header("host", addr);
    if let Some((name, value)) = auth {
        req = req.header(name, value);
    }
    if body.is_some() {
        req = req.header("content-type", content_type);
    }
    let req = req
        .body(Full::new(Bytes::from(body.unwrap_or_default())))
        .unwrap();
    sender.send_request(req).await
}

/// A body as JSON; panics (showing the body) when it is not.
pub fn json(body: &[u8]) -> Value {
    serde_json::from_slice(body)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(body)))
}
