//! Test helpers: a minimal real HTTP client (one connection per request), a line reader for
//! watch streams, a raw exec WebSocket client, and polling with a deadline.

use std::future::Future;
use std::time::{Duration, Instant};

use bytes::Bytes;
use emulator::kubernetes::{KubeEmulatorOptions, KubernetesEmulator};
use futures_util::{SinkExt, StreamExt};
use http_body_util::BodyExt;
use hyper::Response;
use hyper::body::Incoming;
use serde_json::Value;
use tokio::net::TcpStream;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use super::client;

pub async fn start(configure: impl FnOnce(&mut KubeEmulatorOptions)) -> (KubernetesEmulator, Http) {
    let mut opts = KubeEmulatorOptions::for_tests();
    opts.tls = false;
    opts.token = Some("test-token".into());
    opts.forbidden_tokens = vec!["nobody".into()];
    configure(&mut opts);
    let emu = KubernetesEmulator::start(opts)
        .await
        .expect("emulator starts");
    let http = Http {
        addr: emu.http_url().trim_start_matches("http://").to_string(),
        token: emu.token().to_string(),
    };
    (emu, http)
}

pub struct Http {
    pub addr: String,
    pub token: String,
}

pub struct Resp {
    pub status: u16,
    pub body: Bytes,
}

impl Resp {
    pub fn json(&self) -> Value {
        client::json(&self.body)
    }
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

impl Http {
    /// Sends a request; `token: None` uses the right token, `Some("")` sends none.
    pub async fn send(
        &self,
        method: &str,
        path: &str,
        body: Option<Vec<u8>>,
        content_type: &str,
        token: Option<&str>,
    ) -> Result<Response<Incoming>, hyper::Error> {
        let token = token.unwrap_or(&self.token);
        let auth = (!token.is_empty()).then(|| ("authorization", format!("Bearer {token}")));
        client::send(&self.addr, method, path, body, content_type, auth).await
    }

    pub async fn call(&self, method: &str, path: &str, body: Option<Value>) -> Resp {
        self.call_as(method, path, body, "application/json", None)
            .await
    }

    pub async fn call_as(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
        ct: &str,
        token: Option<&str>,
    ) -> Resp {
        let resp = self
            .send(
                method,
                path,
                body.map(|b| b.to_string().into_bytes()),
                ct,
                token,
            )
            .await
            .expect("request");
        let status = resp.status().as_u16();
        let body = resp.into_body().collect().await.expect("body").to_bytes();
        Resp { status, body }
    }

    pub async fn get(&self, path: &str) -> Resp {
        self.call("GET", path, None).await
    }

    pub async fn post(&self, path: &str, body: Value) -> Resp {
        self.call("POST", path, Some(body)).await
    }

    /// A JSON merge patch of `path`.
    pub async fn merge_patch(&self, path: &str, patch: Value) -> Resp {
        let ct = "application/merge-patch+json";
        self.call_as("PATCH", path, Some(patch), ct, None).await
    }

    /// Opens a watch and returns its event reader.
    pub async fn watch(&self, path: &str) -> Lines {
        let resp = self
            .send("GET", path, None, "", None)
            .await
            .expect("watch request");
        assert_eq!(resp.status().as_u16(), 200);
        Lines {
            body: resp.into_body(),
            buf: Vec::new(),
        }
    }

    /// Opens an exec WebSocket offering `protocols`.
    pub async fn exec(
        &self,
        path: &str,
        protocols: &str,
    ) -> Result<Exec, tokio_tungstenite::tungstenite::Error> {
        let url = format!("ws://{}{path}", self.addr);
        let mut req = url.into_client_request().unwrap();
        req.headers_mut().insert(
            "authorization",
            format!("Bearer {}", self.token).parse().unwrap(),
        );
        if !protocols.is_empty() {
            req.headers_mut()
                .insert("sec-websocket-protocol", protocols.parse().unwrap());
        }
        let stream = TcpStream::connect(&self.addr).await.expect("connect");
        let (ws, resp) = tokio_tungstenite::client_async(req, stream).await?;
        let protocol = resp
            .headers()
            .get("sec-websocket-protocol")
            .map(|v| v.to_str().unwrap().to_string());
        Ok(Exec { ws, protocol })
    }

    /// Pod `manifest` created in `ns`; panics unless 201.
    pub async fn create(&self, path: &str, manifest: Value) -> Value {
        let r = self.post(path, manifest).await;
        assert_eq!(r.status, 201, "create {path}: {}", r.text());
        r.json()
    }
}

/// Newline-delimited JSON events of a watch.
pub struct Lines {
    body: Incoming,
    buf: Vec<u8>,
}

impl Lines {
    /// The next event, or `None` when the stream ended (cleanly or not).
    pub async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(i) = self.buf.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=i).collect();
                return Some(serde_json::from_slice(&line).expect("event JSON"));
            }
            let frame = tokio::time::timeout(Duration::from_secs(20), self.body.frame())
                .await
                .expect("watch event in time")?;
            match frame {
                Ok(f) => {
                    if let Ok(data) = f.into_data() {
                        self.buf.extend_from_slice(&data);
                    }
                }
                Err(_) => return None,
            }
        }
    }

    /// The next event that is not a BOOKMARK.
    pub async fn next_change(&mut self) -> Option<Value> {
        loop {
            let ev = self.next().await?;
            if ev["type"] != "BOOKMARK" {
                return Some(ev);
            }
        }
    }
}

#[derive(Debug)]
pub struct Exec {
    pub ws: WebSocketStream<TcpStream>,
    pub protocol: Option<String>,
}

/// What an exec session produced.
#[derive(Debug, Default)]
pub struct Outcome {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub status: Option<Value>,
    /// The server closed with a close frame (as opposed to a dropped connection).
    pub closed_cleanly: bool,
}

impl Exec {
    pub async fn send(&mut self, channel: u8, data: &[u8]) {
        let mut v = vec![channel];
        v.extend_from_slice(data);
        self.ws
            .send(Message::Binary(v.into()))
            .await
            .expect("send frame");
    }

    /// Reads frames until the server closes.
    pub async fn collect(&mut self) -> Outcome {
        let mut out = Outcome::default();
        loop {
            let msg = tokio::time::timeout(Duration::from_secs(20), self.ws.next())
                .await
                .expect("exec frame in time");
            match msg {
                Some(Ok(Message::Binary(b))) if !b.is_empty() => match b[0] {
                    1 => out.stdout.extend_from_slice(&b[1..]),
                    2 => out.stderr.extend_from_slice(&b[1..]),
                    3 => out.status = Some(serde_json::from_slice(&b[1..]).expect("status JSON")),
                    other => panic!("unexpected channel {other}"),
                },
                Some(Ok(Message::Close(_))) => {
                    out.closed_cleanly = true;
                    return out;
                }
                Some(Ok(_)) => {}
                None | Some(Err(_)) => return out,
            }
        }
    }
}

/// Polls `f` until it returns `Some`, failing after `secs` seconds.
pub async fn eventually<T, F, Fut>(secs: u64, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "condition not met within {secs}s"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

pub fn pod(name: &str, command: &[&str]) -> Value {
    serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": { "name": name, "labels": { "app": "t", "name": name } },
        "spec": { "containers": [{ "name": "agent", "image": "busybox:1", "command": command }] },
    })
}

pub const PODS: &str = "/api/v1/namespaces/default/pods";

/// Creates a pod and waits (through a watch) until it runs.
pub async fn running_pod(http: &Http, name: &str, command: &[&str]) -> Value {
    let created = http.create(PODS, pod(name, command)).await;
    let rv = created["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    let mut w = http
        .watch(&format!(
            "{PODS}?watch=true&fieldSelector=metadata.name%3D{name}&resourceVersion={rv}"
        ))
        .await;
    loop {
        let ev = w.next_change().await.expect("pod events");
        if ev["object"]["status"]["phase"] == "Running" {
            return ev["object"].clone();
        }
    }
}

/// Watches `collection` for the object `name` (current state first) until `pred` accepts an
/// event (`{"type","object"}`); returns that event.
pub async fn wait_event(
    http: &Http,
    collection: &str,
    name: &str,
    pred: impl Fn(&Value) -> bool,
) -> Value {
    let mut w = http
        .watch(&format!(
            "{collection}?watch=true&fieldSelector=metadata.name%3D{name}"
        ))
        .await;
    loop {
        let ev = w.next_change().await.expect("watch still open");
        if pred(&ev) {
            return ev;
        }
    }
}

/// Waits until the object is gone (404).
pub async fn wait_gone(http: &Http, collection: &str, name: &str) {
    let mut w = http
        .watch(&format!(
            "{collection}?watch=true&fieldSelector=metadata.name%3D{name}"
        ))
        .await;
    if http.get(&format!("{collection}/{name}")).await.status == 404 {
        return;
    }
    loop {
        let ev = w.next_change().await.expect("watch still open");
        if ev["type"] == "DELETED" {
            return;
        }
    }
}
