//! A recording fake of the Kubernetes API, scripted the way the golden vectors script the
//! original's fake client (`tests/data/golden/README.md`, "`cluster`: the scripted Kubernetes
//! client"), and a manual clock so readiness polls never sleep for real.
//!
//! Compiled for this crate's unit tests and, with the `testing` feature, for anyone else's.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use sandbox_core::BoxFuture;
use serde_json::{Map, Value, json};

use futures::StreamExt;

use super::api::{ApiMethod, ClusterApi, WATCH_NOT_SERVED, WatchEvent, WatchStream};
use crate::cluster::Clock;
use crate::error::{ApiResult, Error};

/// One scripted answer: resolve with a body, or reject with an API error.
#[derive(Debug, Clone, PartialEq)]
pub enum ScriptedReply {
    Returns(Value),
    Throws(Error),
    /// Never answers: an API server that accepted the request and hangs. Like a real request,
    /// it is cut at the hook's bound ([`super::api_bound`]) when it runs inside one.
    Hangs,
}

impl ScriptedReply {
    /// `{"returns": body}` or `{"throws": {"code", "message"}}`.
    pub fn from_json(reply: &Value) -> Result<Self, String> {
        if let Some(body) = reply.get("returns") {
            return Ok(ScriptedReply::Returns(body.clone()));
        }
        if let Some(thrown) = reply.get("throws") {
            let code = thrown.get("code").and_then(Value::as_u64).unwrap_or(0);
            let message = thrown.get("message").and_then(Value::as_str).unwrap_or("");
            let code = u16::try_from(code).map_err(|_| format!("bad HTTP code {code}"))?;
            return Ok(ScriptedReply::Throws(Error::new(code, message)));
        }
        Err(format!(
            "a scripted reply needs `returns` or `throws`: {reply}"
        ))
    }
}

/// One call the code under test made: `{api, method, args}`.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedCall {
    pub method: ApiMethod,
    /// The request object; `Value::Null` for calls that take none.
    pub args: Value,
}

impl RecordedCall {
    /// The recorded shape. A call without a request has no `args` key, as `JSON.stringify`
    /// drops an `undefined` argument.
    pub fn to_json(&self) -> Value {
        let mut call = Map::new();
        call.insert("api".into(), json!(self.method.group().as_str()));
        call.insert("method".into(), json!(self.method.name()));
        if !self.args.is_null() {
            call.insert("args".into(), self.args.clone());
        }
        Value::Object(call)
    }
}

/// One scripted answer to a watch request: refused, or a stream of these items that then
/// closes (the server ended it, or the connection dropped) or stays open.
#[derive(Debug, Clone, PartialEq)]
pub enum ScriptedWatch {
    Refused(Error),
    Streams {
        items: Vec<Result<WatchEvent, Error>>,
        stays_open: bool,
    },
}

impl ScriptedWatch {
    /// A watch that streams `events` and then stays open.
    pub fn open(events: Vec<WatchEvent>) -> Self {
        ScriptedWatch::Streams {
            items: events.into_iter().map(Ok).collect(),
            stays_open: true,
        }
    }

    /// A watch that streams `events` and then closes.
    pub fn closing(events: Vec<WatchEvent>) -> Self {
        ScriptedWatch::Streams {
            items: events.into_iter().map(Ok).collect(),
            stays_open: false,
        }
    }

    fn stream(&self) -> Result<WatchStream, Error> {
        match self {
            ScriptedWatch::Refused(err) => Err(err.clone()),
            ScriptedWatch::Streams { items, stays_open } => {
                let items = futures::stream::iter(items.clone());
                Ok(if *stays_open {
                    items.chain(futures::stream::pending()).boxed()
                } else {
                    items.boxed()
                })
            }
        }
    }
}

/// The scripted fake. A method that is not scripted resolves with `{}` (an access review: its
/// verdict, see [`ScriptedCluster::denying`]); a scripted list is used
/// one entry per call, its last entry repeating. Watches are scripted apart
/// ([`ScriptedCluster::script_watch`], the same way) and recorded apart
/// ([`ScriptedCluster::watch_calls`]), so [`ScriptedCluster::calls`] stays the original's
/// request/response calls; an unscripted watch is refused as [`ClusterApi::watch`] refuses.
#[derive(Debug, Default)]
pub struct ScriptedCluster {
    replies: HashMap<String, Vec<ScriptedReply>>,
    calls_made: Mutex<HashMap<String, usize>>,
    recorded: Mutex<Vec<RecordedCall>>,
    watches: HashMap<String, Vec<ScriptedWatch>>,
    watches_made: Mutex<HashMap<String, usize>>,
    watch_log: Mutex<Vec<RecordedCall>>,
    /// Accesses an unscripted access review denies (`"create pods/exec"`); it grants the rest.
    denied_accesses: Vec<String>,
}

impl ScriptedCluster {
    /// A cluster where every call resolves with `{}`.
    pub fn new() -> Self {
        Self::default()
    }

    /// A cluster scripted by a golden `input.cluster` object (`null` means nothing scripted).
    pub fn from_script(script: &Value) -> Result<Self, String> {
        let mut cluster = Self::new();
        let Some(entries) = script.as_object() else {
            return if script.is_null() {
                Ok(cluster)
            } else {
                Err(format!("a cluster script is an object: {script}"))
            };
        };
        for (key, entry) in entries {
            let replies = match entry {
                Value::Array(list) => list
                    .iter()
                    .map(ScriptedReply::from_json)
                    .collect::<Result<Vec<_>, _>>()?,
                single => vec![ScriptedReply::from_json(single)?],
            };
            cluster.replies.insert(key.clone(), replies);
        }
        Ok(cluster)
    }

    /// Scripts `method` (replacing an earlier script for it).
    pub fn script(mut self, method: ApiMethod, replies: Vec<ScriptedReply>) -> Self {
        self.replies.insert(method.key(), replies);
        self
    }

    /// Makes unscripted access reviews deny these accesses (`"<verb> <resource>"`, the resource
    /// with its group as kubectl names it: `"create pods/exec"`, `"get /apis"`,
    /// `"get jobs.batch/status"`); without it they grant everything.
    pub fn denying(mut self, accesses: &[&str]) -> Self {
        self.denied_accesses = accesses.iter().map(|a| a.to_string()).collect();
        self
    }

    /// An access review's answer under [`ScriptedCluster::denying`].
    fn review(&self, request: &Value) -> Value {
        let spec = &request["body"]["spec"];
        let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
        let asked = match spec.get("nonResourceAttributes") {
            Some(url) => format!("{} {}", text(&url["verb"]), text(&url["path"])),
            None => {
                let attributes = &spec["resourceAttributes"];
                let mut resource = text(&attributes["resource"]);
                let group = text(&attributes["group"]);
                if !group.is_empty() {
                    resource = format!("{resource}.{group}");
                }
                if let Some(sub) = attributes["subresource"].as_str() {
                    resource = format!("{resource}/{sub}");
                }
                format!("{} {resource}", text(&attributes["verb"]))
            }
        };
        json!({"status": {"allowed": !self.denied_accesses.contains(&asked)}})
    }

    /// Scripts the watches of `method` (replacing an earlier script for it).
    pub fn script_watch(mut self, method: ApiMethod, answers: Vec<ScriptedWatch>) -> Self {
        self.watches.insert(method.key(), answers);
        self
    }

    /// Every watch request so far, in order.
    pub fn watch_calls(&self) -> Vec<RecordedCall> {
        self.watch_log.lock().expect("watch log lock").clone()
    }

    /// Every call so far, in order.
    pub fn calls(&self) -> Vec<RecordedCall> {
        self.recorded.lock().expect("recorder lock").clone()
    }

    /// Every call so far as the golden `expected.calls` list.
    pub fn calls_json(&self) -> Value {
        Value::Array(self.calls().iter().map(RecordedCall::to_json).collect())
    }

    fn answer(&self, method: ApiMethod) -> ScriptedReply {
        let key = method.key();
        let Some(replies) = self.replies.get(&key).filter(|r| !r.is_empty()) else {
            return ScriptedReply::Returns(json!({}));
        };
        let mut made = self.calls_made.lock().expect("counter lock");
        let index = made.entry(key).or_insert(0);
        let reply = &replies[(*index).min(replies.len() - 1)];
        *index += 1;
        reply.clone()
    }
}

impl ClusterApi for ScriptedCluster {
    fn call(&self, method: ApiMethod, request: Value) -> BoxFuture<'_, ApiResult> {
        self.recorded
            .lock()
            .expect("recorder lock")
            .push(RecordedCall {
                method,
                args: request.clone(),
            });
        let reviewed = method == ApiMethod::CreateSelfSubjectAccessReview
            && !self.replies.contains_key(&method.key());
        if reviewed {
            let answer = self.review(&request);
            return Box::pin(async move { Ok(answer) });
        }
        match self.answer(method) {
            ScriptedReply::Returns(body) => Box::pin(async move { Ok(body) }),
            ScriptedReply::Throws(err) => Box::pin(async move { Err(err) }),
            ScriptedReply::Hangs => Box::pin(async {
                super::api_bound::bounded(std::future::pending::<ApiResult>())
                    .await
                    .map_err(Error::unanswered)?
            }),
        }
    }

    fn watch(
        &self,
        method: ApiMethod,
        request: Value,
    ) -> BoxFuture<'_, Result<WatchStream, Error>> {
        self.watch_log
            .lock()
            .expect("watch log lock")
            .push(RecordedCall {
                method,
                args: request,
            });
        let key = method.key();
        let answer = match self.watches.get(&key).filter(|w| !w.is_empty()) {
            None => Err(Error::new(405, WATCH_NOT_SERVED)),
            Some(answers) => {
                let mut made = self.watches_made.lock().expect("counter lock");
                let index = made.entry(key).or_insert(0);
                let answer = answers[(*index).min(answers.len() - 1)].stream();
                *index += 1;
                answer
            }
        };
        Box::pin(async move { answer })
    }
}

/// A clock that starts at 0 and moves only when slept on, by exactly the requested time. Its
/// wall clock ([`Clock::unix_ms`]) is the Unix time [`ManualClock::at_unix_ms`] set (0 unless
/// set) plus the time slept.
#[derive(Debug, Default)]
pub struct ManualClock {
    now_ms: AtomicU64,
    unix_origin_ms: AtomicU64,
    sleeps: Mutex<Vec<u64>>,
}

impl ManualClock {
    pub fn new() -> Self {
        Self::default()
    }

    /// A clock whose wall clock reads `unix_ms` now.
    pub fn at_unix_ms(unix_ms: u64) -> Self {
        let clock = Self::default();
        clock.unix_origin_ms.store(unix_ms, Ordering::SeqCst);
        clock
    }

    /// The sleeps requested so far, in order.
    pub fn sleeps(&self) -> Vec<u64> {
        self.sleeps.lock().expect("sleep log lock").clone()
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.now_ms.load(Ordering::SeqCst)
    }

    fn sleep(&self, ms: u64) -> BoxFuture<'_, ()> {
        self.sleeps.lock().expect("sleep log lock").push(ms);
        self.now_ms.fetch_add(ms, Ordering::SeqCst);
        Box::pin(async {})
    }

    fn unix_ms(&self) -> u64 {
        self.unix_origin_ms.load(Ordering::SeqCst) + self.now_ms()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block_on<T>(future: impl Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime")
            .block_on(future)
    }

    #[test]
    fn unscripted_calls_resolve_empty_objects_and_are_recorded() {
        let cluster = ScriptedCluster::new();
        let body = block_on(cluster.read_namespace(json!({"name": "ns"}))).unwrap();
        assert_eq!(body, json!({}));
        assert_eq!(
            cluster.calls_json(),
            json!([{"api": "core", "method": "readNamespace", "args": {"name": "ns"}}])
        );
    }

    #[test]
    fn lists_are_used_once_each_with_the_last_repeating() {
        let script = json!({"core.readNamespacedPod": [
            {"throws": {"code": 404, "message": "gone"}},
            {"returns": {"metadata": {"name": "p"}}}
        ]});
        let cluster = ScriptedCluster::from_script(&script).unwrap();
        let first = block_on(cluster.read_namespaced_pod(json!({})));
        assert_eq!(first, Err(Error::new(404, "gone")));
        for _ in 0..2 {
            let next = block_on(cluster.read_namespaced_pod(json!({}))).unwrap();
            assert_eq!(next, json!({"metadata": {"name": "p"}}));
        }
    }

    #[test]
    fn calls_without_a_request_record_no_args() {
        let cluster = ScriptedCluster::new();
        block_on(cluster.get_api_versions()).unwrap();
        assert_eq!(
            cluster.calls_json(),
            json!([{"api": "apis", "method": "getAPIVersions"}])
        );
    }

    #[tokio::test]
    async fn a_hanging_reply_is_cut_at_the_bound() {
        let cluster =
            ScriptedCluster::new().script(ApiMethod::ReadNamespace, vec![ScriptedReply::Hangs]);
        let cut = super::super::api_bound::with_api_bound(
            50,
            cluster.read_namespace(json!({"name": "ns"})),
        )
        .await;
        assert_eq!(
            cut.unwrap_err().to_string(),
            super::super::api_bound::api_timeout_message(50)
        );
    }

    #[test]
    fn manual_clock_advances_only_on_sleep() {
        let clock = ManualClock::new();
        assert_eq!(clock.now_ms(), 0);
        block_on(clock.sleep(250));
        assert_eq!(clock.now_ms(), 250);
        assert_eq!(clock.sleeps(), vec![250]);
    }
}
