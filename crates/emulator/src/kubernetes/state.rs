//! Shared emulator state, [`App`], and the reads every path (REST handlers, controllers,
//! control API) shares: rendering, namespace and deny checks, Sandbox plans, pod runtimes.
//! It imports only the layers below it (store, settings, faults, request log, pod runtimes);
//! deletion, object creation, the kubelet and the controllers sit above it and take an `App`.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::watch;

use super::faults::Faults;
use super::options::{KubeEmulatorOptions, SandboxPlan, Settings};
use super::pod_runtime::PodRuntime;
use super::request_log::RequestLog;
use super::resources::{Registry, ResourceType};
use super::status::{KubeError, KubeResult};
use super::store::{ObjKey, Store};
use super::util::raised;
use crate::sandbox_runner::Bwrap;

/// A 403 rule (control API): requests matching every given field are forbidden.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DenyRule {
    #[serde(default)]
    pub verb: Option<String>,
    #[serde(default)]
    pub group: Option<String>,
    /// `pods`, `pods/exec`, `sandboxes`, …
    pub resource: String,
    #[serde(default)]
    pub namespace: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
}

pub struct App {
    pub opts: KubeEmulatorOptions,
    pub settings: Mutex<Settings>,
    pub registry: Registry,
    pub store: Store,
    pub bwrap: Bwrap,
    pub token: String,
    /// Private directory: pod roots and kubeconfigs; removed on shutdown.
    pub work_dir: PathBuf,
    pub log: RequestLog,
    pub faults: Faults,
    pub deny: Mutex<Vec<DenyRule>>,
    /// Live pod runtimes by pod uid.
    pub pods: Mutex<HashMap<String, Arc<PodRuntime>>>,
    /// Sandboxed process trees alive (pod main containers and execs).
    pub live_trees: Arc<AtomicUsize>,
    /// Per-Sandbox plans by `(namespace, name)`.
    pub sandbox_plans: Mutex<HashMap<(String, String), SandboxPlan>>,
    /// Bumped when a plan changes; pods held by a plan wait on it.
    pub plans_changed: watch::Sender<u64>,
    /// Bumped when a Secret or ConfigMap changes; pods waiting for their env wait on it.
    pub config_changed: watch::Sender<u64>,
    pub shutting_down: AtomicBool,
    /// Flipped on shutdown; every background task watches it.
    pub stop: watch::Sender<bool>,
    /// `host:port` of the primary listener (for `/api`'s serverAddressByClientCIDRs).
    pub server_address: Mutex<String>,
}

impl App {
    pub fn settings(&self) -> Settings {
        self.settings.lock().unwrap().clone()
    }

    pub fn rt(&self, group: &str, plural: &str) -> &ResourceType {
        self.registry
            .by_plural(group, plural)
            .expect("a registered resource type")
    }

    /// The object as served at `version`: `apiVersion` and `kind` filled in.
    pub fn render(&self, obj: &Value, rt: &ResourceType, version: &str) -> Value {
        let mut out = serde_json::Map::new();
        out.insert("kind".into(), json!(rt.kind));
        out.insert("apiVersion".into(), json!(rt.api_version(version)));
        if let Value::Object(m) = obj {
            for (k, v) in m {
                if k != "kind" && k != "apiVersion" {
                    out.insert(k.clone(), v.clone());
                }
            }
        }
        Value::Object(out)
    }

    /// The namespace, which must exist and not be terminating for a create.
    pub fn check_namespace_for_create(&self, ns: &str) -> KubeResult<()> {
        let rt = self.rt("", "namespaces");
        let Some(obj) = self.store.get(&ObjKey::new("", "namespaces", "", ns)) else {
            return Err(KubeError::not_found(rt, ns));
        };
        if obj.pointer("/metadata/deletionTimestamp").is_some() {
            let mut e = KubeError::new(
                403,
                "Forbidden",
                format!(
                    "unable to create new content in namespace {ns} because it is being terminated"
                ),
            );
            e.details = Some(Box::new(
                json!({ "name": ns, "kind": "namespaces", "causes": [{
                "reason": "NamespaceTerminating",
                "message": format!("namespace {ns} is being terminated"),
                "field": "metadata.namespace" }] }),
            ));
            return Err(e);
        }
        Ok(())
    }

    /// Whether a deny rule forbids the request.
    pub fn denied(
        &self,
        verb: &str,
        group: &str,
        resource: &str,
        namespace: Option<&str>,
        name: Option<&str>,
    ) -> bool {
        self.deny.lock().unwrap().iter().any(|r| {
            r.verb.as_deref().is_none_or(|v| v == verb)
                && r.group.as_deref().is_none_or(|g| g == group)
                && r.resource == resource
                && r.namespace.as_deref().is_none_or(|n| Some(n) == namespace)
                && r.name.as_deref().is_none_or(|n| Some(n) == name)
        })
    }

    /// The runtime of a pod, by uid.
    pub fn pod_runtime(&self, uid: &str) -> Option<Arc<PodRuntime>> {
        self.pods.lock().unwrap().get(uid).cloned()
    }

    /// The plan of a Sandbox (its own, else the default at the time of the call).
    pub fn sandbox_plan(&self, namespace: &str, name: &str) -> SandboxPlan {
        self.sandbox_plans
            .lock()
            .unwrap()
            .get(&(namespace.to_string(), name.to_string()))
            .cloned()
            .unwrap_or_else(|| self.settings().sandbox_plan)
    }

    pub fn set_sandbox_plan(&self, namespace: &str, name: &str, plan: SandboxPlan) {
        self.sandbox_plans
            .lock()
            .unwrap()
            .insert((namespace.to_string(), name.to_string()), plan);
        self.plans_changed.send_modify(|v| *v += 1);
    }

    /// Sleeps unless the emulator shuts down first; `false` if it did.
    pub async fn sleep(&self, d: Duration) -> bool {
        let mut stop = self.stop.subscribe();
        tokio::select! {
            _ = tokio::time::sleep(d) => true,
            _ = raised(&mut stop) => false,
        }
    }

    /// Kills every process and removes every directory (shutdown and `Drop`).
    pub fn teardown(&self) {
        self.shutting_down.store(true, Ordering::SeqCst);
        let _ = self.stop.send(true);
        let runtimes: Vec<Arc<PodRuntime>> =
            self.pods.lock().unwrap().drain().map(|(_, r)| r).collect();
        for r in &runtimes {
            r.kill();
            r.remove_root();
        }
        let _ = std::fs::remove_dir_all(&self.work_dir);
    }
}
