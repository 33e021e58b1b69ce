//! `?watch=true`: newline-delimited `{"type","object"}` events (ADDED, MODIFIED, DELETED,
//! BOOKMARK, ERROR), resuming from a resourceVersion out of the store's history (or a 410
//! Expired ERROR event when it is too old), with synthetic ADDED events for a fresh watch,
//! `sendInitialEvents` streaming lists, periodic bookmarks and `timeoutSeconds`.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderValue, Response, header};
use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc;

use super::faults::FaultAction;
use super::resources::ResourceType;
use super::route::Query;
use super::selectors::{FieldSelector, LabelSelector};
use super::state::App;
use super::status::{KubeError, KubeResult};
use super::store::{Event, EventType};

pub struct WatchParams {
    /// `resourceVersion` of the request (`None`, `""` and `"0"` start from the current state).
    pub resource_version: Option<String>,
    pub labels: LabelSelector,
    pub fields: FieldSelector,
    pub bookmarks: bool,
    pub send_initial_events: Option<bool>,
    pub timeout: Option<Duration>,
    pub fault: Option<FaultAction>,
}

type Chunk = Result<Bytes, std::io::Error>;

fn line(v: &Value) -> Bytes {
    let mut s = v.to_string();
    s.push('\n');
    Bytes::from(s)
}

struct Stream {
    app: Arc<App>,
    rt: ResourceType,
    version: String,
    namespace: Option<String>,
    p: WatchParams,
    tx: mpsc::Sender<Chunk>,
    sent: usize,
}

enum Flow {
    Continue,
    End,
}

impl Stream {
    fn matches(&self, obj: &Value) -> bool {
        self.p.labels.matches(obj) && self.p.fields.matches(obj)
    }

    async fn send_event(&mut self, kind: &str, obj: &Value) -> Flow {
        let rendered = self.app.render(obj, &self.rt, &self.version);
        if self
            .tx
            .send(Ok(line(&json!({ "type": kind, "object": rendered }))))
            .await
            .is_err()
        {
            return Flow::End;
        }
        self.sent += 1;
        match &self.p.fault {
            Some(FaultAction::CutWatch {
                after_events,
                abort,
            }) if self.sent >= *after_events => {
                if *abort {
                    let _ = self
                        .tx
                        .send(Err(std::io::Error::other("emulator fault: watch aborted")))
                        .await;
                }
                Flow::End
            }
            Some(FaultAction::ExpireWatch { after_events }) if self.sent >= *after_events => {
                self.send_expired("emulator fault: watch expired").await;
                Flow::End
            }
            _ => Flow::Continue,
        }
    }

    async fn send_expired(&self, message: &str) {
        let status = KubeError::expired(message.to_string()).to_json();
        let _ = self
            .tx
            .send(Ok(line(&json!({ "type": "ERROR", "object": status }))))
            .await;
    }

    async fn bookmark(&self, rv: u64, initial_end: bool) -> Flow {
        let mut meta = json!({ "resourceVersion": rv.to_string() });
        if initial_end {
            meta["annotations"] = json!({ "k8s.io/initial-events-end": "true" });
        }
        let obj = json!({ "kind": self.rt.kind, "apiVersion": self.rt.api_version(&self.version), "metadata": meta });
        match self
            .tx
            .send(Ok(line(&json!({ "type": "BOOKMARK", "object": obj }))))
            .await
        {
            Ok(()) => Flow::Continue,
            Err(_) => Flow::End,
        }
    }

    /// One store event, translated for this watch's type, namespace and selectors.
    async fn relay(&mut self, ev: &Event) -> Flow {
        if !ev.key.same_type(self.rt.group, self.rt.plural)
            || self
                .namespace
                .as_ref()
                .is_some_and(|ns| *ns != ev.key.namespace)
        {
            return Flow::Continue;
        }
        let now = self.matches(&ev.object);
        let before = ev.old.as_ref().is_some_and(|o| self.matches(o));
        let kind = match ev.kind {
            EventType::Added if now => "ADDED",
            EventType::Modified if now && before => "MODIFIED",
            EventType::Modified if now => "ADDED",
            EventType::Modified if before => "DELETED",
            EventType::Deleted if now => "DELETED",
            _ => return Flow::Continue,
        };
        self.send_event(kind, &ev.object.clone()).await
    }

    async fn run(mut self) {
        let app = self.app.clone();
        let rv = self
            .p
            .resource_version
            .clone()
            .filter(|v| !v.is_empty() && v != "0");
        let initial = self.p.send_initial_events.unwrap_or(rv.is_none());
        let (backlog, mut rx, mut last_rv) = match &rv {
            Some(v) if !initial => {
                let Ok(since) = v.parse::<u64>() else {
                    self.send_expired(&format!("invalid resource version: {v}"))
                        .await;
                    return;
                };
                match app.store.watch_from(since) {
                    Ok((backlog, rx)) => (backlog, rx, since),
                    Err(oldest) => {
                        self.send_expired(&format!("too old resource version: {since} ({oldest})"))
                            .await;
                        return;
                    }
                }
            }
            _ => {
                let (items, rv, rx) =
                    app.store
                        .watch_now(self.rt.group, self.rt.plural, self.namespace.as_deref());
                let items: Vec<Value> = if initial {
                    items.into_iter().filter(|o| self.matches(o)).collect()
                } else {
                    Vec::new()
                };
                for obj in &items {
                    if let Flow::End = self.send_event("ADDED", obj).await {
                        return;
                    }
                }
                if self.p.send_initial_events == Some(true)
                    && let Flow::End = self.bookmark(rv, true).await
                {
                    return;
                }
                (Vec::new(), rx, rv)
            }
        };
        for ev in backlog {
            last_rv = ev.rv;
            if let Flow::End = self.relay(&ev).await {
                return;
            }
        }
        let mut ticker = tokio::time::interval(app.settings().bookmark_interval());
        ticker.tick().await;
        let timeout = self.p.timeout;
        let deadline = async move {
            match timeout {
                Some(t) => tokio::time::sleep(t).await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(deadline);
        let mut stop = app.stop.subscribe();
        loop {
            let flow = tokio::select! {
                r = rx.recv() => match r {
                    Ok(ev) => {
                        if ev.rv <= last_rv { continue; }
                        last_rv = ev.rv;
                        self.relay(&ev).await
                    }
                    Err(RecvError::Lagged(_)) => {
                        self.send_expired("the watch fell behind; too old resource version").await;
                        Flow::End
                    }
                    Err(RecvError::Closed) => Flow::End,
                },
                _ = ticker.tick(), if self.p.bookmarks => self.bookmark(last_rv, false).await,
                _ = &mut deadline => Flow::End,
                _ = self.tx.closed() => Flow::End,
                _ = super::util::raised(&mut stop) => Flow::End,
            };
            if let Flow::End = flow {
                return;
            }
        }
    }
}

/// A list request with `watch=true` for `rt` at `(version, namespace)`: the stream, with the
/// query's selectors and options, carrying `fault` if it is a stream fault.
pub fn serve_query(
    app: Arc<App>,
    rt: ResourceType,
    (version, namespace): (String, Option<String>),
    q: &Query,
    fault: Option<FaultAction>,
) -> KubeResult<Response<Body>> {
    let timeout = q
        .get("timeoutSeconds")
        .and_then(|s| s.parse::<u64>().ok())
        .map(Duration::from_secs);
    let p = WatchParams {
        resource_version: q.get("resourceVersion").map(str::to_string),
        labels: LabelSelector::parse(q.get("labelSelector").unwrap_or(""))?,
        fields: FieldSelector::parse(q.get("fieldSelector").unwrap_or(""))?,
        bookmarks: q.flag("allowWatchBookmarks"),
        send_initial_events: q.get("sendInitialEvents").map(|v| v == "true"),
        timeout,
        fault: fault.filter(FaultAction::is_stream_fault),
    };
    Ok(serve(app, rt, version, namespace, p))
}

/// Starts a watch; the response streams until the watch ends.
pub fn serve(
    app: Arc<App>,
    rt: ResourceType,
    version: String,
    namespace: Option<String>,
    p: WatchParams,
) -> Response<Body> {
    let (tx, rx) = mpsc::channel::<Chunk>(64);
    let stream = Stream {
        app,
        rt,
        version,
        namespace,
        p,
        tx,
        sent: 0,
    };
    tokio::spawn(stream.run());
    let body = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|chunk| (chunk, rx))
    });
    let mut resp = Response::new(Body::from_stream(body));
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache, private"),
    );
    resp
}
