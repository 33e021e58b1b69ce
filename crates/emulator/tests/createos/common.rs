//! Test helpers: a minimal real HTTP client (one connection per request) and polling.

use std::future::Future;
use std::time::{Duration, Instant};

use bytes::Bytes;
use emulator::{CreateOsEmulator, EmulatorOptions};
use http_body_util::BodyExt;
use hyper::Response;
use hyper::body::Incoming;
use serde_json::Value;

use super::client;

pub async fn start(configure: impl FnOnce(&mut EmulatorOptions)) -> (CreateOsEmulator, Http) {
    let mut opts = EmulatorOptions::for_tests();
    opts.api_key = Some("test-secret".into());
    opts.transition_delay = Duration::ZERO;
    configure(&mut opts);
    let emu = CreateOsEmulator::start(opts)
        .await
        .expect("emulator starts");
    let http = Http {
        addr: emu.addr().to_string(),
        key: emu.api_key().to_string(),
    };
    (emu, http)
}

pub struct Http {
    pub addr: String,
    pub key: String,
}

pub struct Resp {
    pub status: u16,
    pub headers: hyper::HeaderMap,
    pub body: Bytes,
}

impl Resp {
    pub fn json(&self) -> Value {
        client::json(&self.body)
    }
    /// `data` of a success envelope.
    pub fn data(&self) -> Value {
        let v = self.json();
        assert_eq!(v["status"], "success", "envelope: {v}");
        v["data"].clone()
    }
}

impl Http {
    /// Sends a request; `key: None` uses the right API key, `Some("")` sends none.
    pub async fn send(
        &self,
        method: &str,
        path: &str,
        body: Option<Vec<u8>>,
        key: Option<&str>,
    ) -> Result<Response<Incoming>, hyper::Error> {
        let key = key.unwrap_or(&self.key);
        let auth = (!key.is_empty()).then(|| ("x-api-key", key.to_string()));
        client::send(&self.addr, method, path, body, "application/json", auth).await
    }

    pub async fn raw(&self, method: &str, path: &str, body: Option<Vec<u8>>) -> Resp {
        let resp = self.send(method, path, body, None).await.expect("response");
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let body = resp.into_body().collect().await.expect("body").to_bytes();
        Resp {
            status,
            headers,
            body,
        }
    }

    pub async fn call(&self, method: &str, path: &str, body: Option<Value>) -> Resp {
        self.raw(method, path, body.map(|b| b.to_string().into_bytes()))
            .await
    }

    /// Opens a streaming request and returns its status and a frame reader.
    pub async fn stream(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Frames) {
        let resp = self
            .send(method, path, body.map(|b| b.to_string().into_bytes()), None)
            .await
            .expect("response");
        (
            resp.status().as_u16(),
            Frames {
                body: resp.into_body(),
                buf: Vec::new(),
                done: false,
            },
        )
    }

    /// The status code of [`Http::call`].
    pub async fn code(&self, method: &str, path: &str, body: Option<Value>) -> u16 {
        self.call(method, path, body).await.status
    }

    /// `POST /v1/sandboxes/{id}/{action}` (`pause`, `resume`, `fork`).
    pub async fn sandbox_action(&self, id: &str, action: &str, body: Option<Value>) -> Resp {
        let path = format!("/v1/sandboxes/{id}/{action}");
        self.call("POST", &path, body).await
    }

    /// A one-shot exec of `body` in sandbox `id`.
    pub async fn exec(&self, id: &str, body: Value) -> Resp {
        self.call("POST", &format!("/v1/sandboxes/{id}/exec"), Some(body))
            .await
    }

    /// A streaming exec (`?stream=true`) of `body` in sandbox `id`.
    pub async fn exec_stream(&self, id: &str, body: Value) -> (u16, Frames) {
        let path = format!("/v1/sandboxes/{id}/exec?stream=true");
        self.stream("POST", &path, Some(body)).await
    }

    /// Creates a sandbox (the create answers once it is running); returns its id.
    pub async fn sandbox(&self) -> String {
        let r = self
            .call(
                "POST",
                "/v1/sandboxes",
                Some(serde_json::json!({ "shape": "s-1vcpu-1gb" })),
            )
            .await;
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        let id = r.data()["id"].as_str().unwrap().to_string();
        self.wait_status(&id, "running").await;
        id
    }

    pub async fn status(&self, id: &str) -> String {
        let r = self.call("GET", &format!("/v1/sandboxes/{id}"), None).await;
        r.data()["status"].as_str().unwrap().to_string()
    }

    /// Polls like the provider does until the sandbox reaches `want`.
    pub async fn wait_status(&self, id: &str, want: &str) {
        let start = Instant::now();
        loop {
            let last = self.status(id).await;
            if last == want {
                return;
            }
            assert!(
                start.elapsed() < Duration::from_secs(5),
                "sandbox {id} never reached {want} (last {last})"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// One-shot exec of `bash -lc script`; returns the `result` object.
    pub async fn bash(&self, id: &str, script: &str) -> Value {
        let r = self
            .exec(
                id,
                serde_json::json!({ "cmd": "/bin/bash", "args": ["-lc", script] }),
            )
            .await;
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        r.data()["result"].clone()
    }
}

/// Incremental NDJSON reader over a response body.
pub struct Frames {
    body: Incoming,
    buf: Vec<u8>,
    done: bool,
}

pub enum Line {
    Frame(Value),
    /// The body ended cleanly.
    End,
    /// The body broke (connection aborted mid-stream).
    Broken,
}

impl Frames {
    /// Next raw line (without the newline); `Err(true)` on clean end, `Err(false)` on abort.
    pub async fn next_raw(&mut self) -> Result<Vec<u8>, bool> {
        loop {
            if let Some(i) = self.buf.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=i).collect();
                return Ok(line[..line.len() - 1].to_vec());
            }
            if self.done {
                if self.buf.is_empty() {
                    return Err(true);
                }
                return Ok(std::mem::take(&mut self.buf));
            }
            match self.body.frame().await {
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        self.buf.extend_from_slice(&data);
                    }
                }
                Some(Err(_)) => return Err(false),
                None => self.done = true,
            }
        }
    }

    pub async fn next(&mut self) -> Line {
        match self.next_raw().await {
            Ok(raw) => {
                Line::Frame(serde_json::from_slice(&raw).unwrap_or_else(|e| {
                    panic!("bad frame ({e}): {}", String::from_utf8_lossy(&raw))
                }))
            }
            Err(true) => Line::End,
            Err(false) => Line::Broken,
        }
    }

    /// All frames until the end, skipping heartbeats; panics if the stream breaks.
    pub async fn collect(&mut self) -> Vec<Value> {
        let mut out = Vec::new();
        loop {
            match self.next().await {
                Line::Frame(f) if is_heartbeat(&f) => {}
                Line::Frame(f) => out.push(f),
                Line::End => return out,
                Line::Broken => panic!("stream broke after {out:?}"),
            }
        }
    }
}

pub fn is_heartbeat(f: &Value) -> bool {
    f["hb"] == true || f["type"] == "heartbeat"
}

/// Polls `check` (every 5 ms) until it returns true or `limit` passes. Used only to observe
/// asynchronous state the way a client would (statuses, live counts), never to order events.
pub async fn eventually<F, Fut>(limit: Duration, mut check: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let start = Instant::now();
    loop {
        if check().await {
            return true;
        }
        if start.elapsed() > limit {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Decodes the `data_base64` of process data frames into one string per stream.
pub fn decode_output(frames: &[Value], stream: &str) -> String {
    use base64::Engine;
    let mut out = Vec::new();
    for f in frames {
        if f["type"] == "data" && f["stream"] == stream {
            out.extend(
                base64::engine::general_purpose::STANDARD
                    .decode(f["data_base64"].as_str().unwrap())
                    .unwrap(),
            );
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Waits until no sandboxed process is alive.
pub async fn no_live_processes(emu: &CreateOsEmulator) {
    let ok = eventually(Duration::from_secs(5), || async {
        emu.counts().live_processes == 0
    })
    .await;
    assert!(ok, "processes leaked: {:?}", emu.counts());
}
