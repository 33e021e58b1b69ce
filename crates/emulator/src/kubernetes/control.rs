//! The control API under `/_emulator/…` (no auth, not logged, never faulted; served on both
//! listeners) so tests in any language can read the request log and live counts, program
//! faults and 403 rules, change delays, drive Sandboxes to Failed/Terminating, and reset:
//!
//! | route | what |
//! |---|---|
//! | `GET /_emulator/health` | `{"ok":true}` |
//! | `GET /_emulator/info` | URLs, token, kubeconfigs, CA PEM |
//! | `GET /_emulator/requests?since=N`, `DELETE` | request log (`{"requests":[…]}`), clear |
//! | `GET /_emulator/counts` | [`KubeCounts`] |
//! | `GET /_emulator/objects?group=&resource=&namespace=` | raw stored objects |
//! | `GET/POST/DELETE /_emulator/faults`, `DELETE /_emulator/faults/{id}` | fault rules |
//! | `GET/POST/DELETE /_emulator/deny` | 403 rules ([`DenyRule`]) |
//! | `GET/PATCH /_emulator/settings` | [`Settings`] (camelCase; PATCH takes any subset) |
//! | `POST /_emulator/sandboxes/{ns}/{name}/plan` | `{"state":"ready"\|"never"\|"terminating"}` or `{"state":"failed","reason","message"}` |
//! | `POST /_emulator/pods/{ns}/{name}/fail` | `{"reason"?,"message"?}`: pod Failed, processes killed |
//! | `POST /_emulator/reset` | delete everything, clear log/faults/rules/settings |

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::controllers::apply_sandbox_plan;
use super::faults::{FaultAction, Faults};
use super::kubelet;
use super::options::{SandboxPlan, Settings, SettingsPatch};
use super::request_log::{RequestLog, RequestRecord};
use super::state::{App, DenyRule};
use super::store::ObjKey;
use crate::common::control::{self, Control};

/// Live objects and processes, for "nothing leaked" assertions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KubeCounts {
    /// namespace → resource (plural) → objects; cluster-scoped objects under `""`.
    pub namespaces: BTreeMap<String, BTreeMap<String, usize>>,
    /// Pods with a live runtime (their bubblewrap root exists).
    pub pod_runtimes: usize,
    /// Process trees alive (pod containers and execs).
    pub live_processes: usize,
}

impl KubeCounts {
    /// Objects of `plural` in `namespace`.
    pub fn count(&self, namespace: &str, plural: &str) -> usize {
        self.namespaces
            .get(namespace)
            .and_then(|m| m.get(plural))
            .copied()
            .unwrap_or(0)
    }

    /// Objects of `plural` in every namespace.
    pub fn total(&self, plural: &str) -> usize {
        self.namespaces.values().filter_map(|m| m.get(plural)).sum()
    }
}

/// What the handle and `GET /_emulator/info` report about the instance.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Endpoints {
    pub url: String,
    pub http_url: String,
    pub https_url: Option<String>,
    pub token: String,
    pub kubeconfig: String,
    pub kubeconfig_http: String,
    pub ca_pem: Option<String>,
}

impl App {
    pub fn counts(&self) -> KubeCounts {
        let mut namespaces: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
        for ((ns, plural), n) in self.store.counts() {
            namespaces.entry(ns).or_default().insert(plural, n);
        }
        KubeCounts {
            namespaces,
            pod_runtimes: self.pods.lock().unwrap().len(),
            live_processes: self.live_trees.load(std::sync::atomic::Ordering::SeqCst),
        }
    }

    /// Deletes every object (the start-up namespaces are recreated), kills every process, and
    /// clears the log, faults, 403 rules, plans and settings.
    pub fn reset(self: &Arc<Self>) {
        for key in self.store.keys() {
            self.store.remove(&key);
        }
        let runtimes: Vec<_> = self.pods.lock().unwrap().drain().map(|(_, r)| r).collect();
        for r in runtimes {
            r.kill();
            r.remove_root();
        }
        self.log.clear();
        self.faults.clear();
        self.deny.lock().unwrap().clear();
        self.sandbox_plans.lock().unwrap().clear();
        *self.settings.lock().unwrap() = Settings::new(&self.opts);
        self.create_initial_namespaces();
    }

    pub fn create_initial_namespaces(self: &Arc<Self>) {
        for ns in &self.opts.namespaces {
            let _ = super::objects::create_internal(
                self,
                "",
                "namespaces",
                "",
                json!({ "metadata": { "name": ns } }),
            );
        }
    }
}

impl Control for App {
    type Record = RequestRecord;
    type Action = FaultAction;
    fn request_log(&self) -> &RequestLog {
        &self.log
    }
    fn fault_rules(&self) -> &Faults {
        &self.faults
    }
    fn reset_all(self: &Arc<Self>) {
        self.reset();
    }
}

pub fn router(app: Arc<App>, endpoints: Arc<std::sync::Mutex<Option<Endpoints>>>) -> Router {
    let info = move || {
        let e = endpoints.lock().unwrap().clone();
        async move { Json(json!(e)) }
    };
    let own = Router::new()
        .route("/_emulator/info", get(info))
        .route("/_emulator/counts", get(counts))
        .route("/_emulator/objects", get(objects))
        .route(
            "/_emulator/deny",
            get(list_deny).post(add_deny).delete(clear_deny),
        )
        .route("/_emulator/settings", get(settings).patch(update_settings))
        .route("/_emulator/sandboxes/{ns}/{name}/plan", post(sandbox_plan))
        .route("/_emulator/pods/{ns}/{name}/fail", post(fail_pod));
    control::router(app, own)
}

async fn counts(State(app): State<Arc<App>>) -> Json<KubeCounts> {
    Json(app.counts())
}

/// `?group=&resource=&namespace=`: raw stored objects.
async fn objects(
    State(app): State<Arc<App>>,
    Query(q): Query<HashMap<String, String>>,
) -> Json<Value> {
    let items: Vec<Value> = app
        .store
        .keys()
        .into_iter()
        .filter(|k| {
            q.get("group").is_none_or(|g| *g == k.group)
                && q.get("resource").is_none_or(|r| *r == k.plural)
                && q.get("namespace").is_none_or(|n| *n == k.namespace)
        })
        .filter_map(|k| app.store.get(&k))
        .collect();
    Json(json!({ "items": items }))
}

async fn list_deny(State(app): State<Arc<App>>) -> Json<Value> {
    Json(json!({ "rules": *app.deny.lock().unwrap() }))
}

async fn add_deny(State(app): State<Arc<App>>, Json(rule): Json<DenyRule>) -> Json<Value> {
    app.deny.lock().unwrap().push(rule);
    control::ok()
}

async fn clear_deny(State(app): State<Arc<App>>) -> Json<Value> {
    app.deny.lock().unwrap().clear();
    control::ok()
}

async fn settings(State(app): State<Arc<App>>) -> Json<Settings> {
    Json(app.settings())
}

async fn update_settings(
    State(app): State<Arc<App>>,
    Json(p): Json<SettingsPatch>,
) -> Json<Settings> {
    app.settings.lock().unwrap().apply(p);
    app.plans_changed.send_modify(|v| *v += 1);
    Json(app.settings())
}

async fn sandbox_plan(
    State(app): State<Arc<App>>,
    Path((ns, name)): Path<(String, String)>,
    Json(plan): Json<SandboxPlan>,
) -> Response {
    if apply_sandbox_plan(&app, &ns, &name, &plan) {
        control::ok().into_response()
    } else {
        control::not_found("no such sandbox")
    }
}

#[derive(Deserialize)]
struct FailPod {
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    message: Option<String>,
}

async fn fail_pod(
    State(app): State<Arc<App>>,
    Path((ns, name)): Path<(String, String)>,
    Json(body): Json<FailPod>,
) -> Response {
    let key = ObjKey::pod(&ns, &name);
    if app.store.get(&key).is_none() {
        return control::not_found("no such pod");
    }
    kubelet::fail_pod(
        &app,
        &key,
        body.reason.as_deref().unwrap_or("Evicted"),
        body.message.as_deref().unwrap_or("failed by the emulator"),
    );
    control::ok().into_response()
}
