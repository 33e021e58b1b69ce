//! Shared emulator state and the object operations every path (REST handlers, controllers,
//! control API) goes through: rendering, deletion with propagation and finalizers.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::watch;

use super::faults::Faults;
use super::options::{KubeEmulatorOptions, SandboxPlan, Settings};
use super::pods::PodRuntime;
use super::request_log::RequestLog;
use super::resources::{Registry, ResourceType};
use super::status::{KubeError, KubeResult};
use super::store::{ObjKey, Store, meta_str};
use super::util::now;
use crate::sandbox_runner::Bwrap;

/// `propagationPolicy` of a delete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Propagation {
    Orphan,
    Background,
    Foreground,
}

impl Propagation {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "Orphan" => Some(Propagation::Orphan),
            "Background" => Some(Propagation::Background),
            "Foreground" => Some(Propagation::Foreground),
            _ => None,
        }
    }
}

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

    /// Deletes an object the way the API server would: preconditions, finalizers, graceful
    /// pod termination, and ownerReference propagation. Returns the object and whether it is
    /// gone already (`false`: it now carries a `deletionTimestamp`).
    pub fn delete_object(
        self: &Arc<Self>,
        key: &ObjKey,
        propagation: Option<Propagation>,
        grace_seconds: Option<i64>,
        preconditions: Option<&Value>,
    ) -> KubeResult<(Value, bool)> {
        let rt = self.rt(&key.group, &key.plural).clone();
        let obj = self
            .store
            .get(key)
            .ok_or_else(|| KubeError::not_found(&rt, &key.name))?;
        if let Some(pre) = preconditions {
            for (field, label) in [("uid", "UID"), ("resourceVersion", "ResourceVersion")] {
                if let Some(want) = pre.get(field).and_then(Value::as_str) {
                    let have = meta_str(&obj, field).unwrap_or_default();
                    if want != have {
                        return Err(KubeError::conflict(
                            &rt,
                            &key.name,
                            &format!(
                                "Precondition failed: {label} in precondition: {want}, {label} in object meta: {have}"
                            ),
                        ));
                    }
                }
            }
        }
        let uid = meta_str(&obj, "uid").unwrap_or_default().to_string();
        let finalizers = |o: &Value| -> Vec<String> {
            o.pointer("/metadata/finalizers")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default()
        };
        if obj.pointer("/metadata/deletionTimestamp").is_some() {
            if finalizers(&obj).is_empty() && key.plural != "namespaces" && key.plural != "pods" {
                let gone = self.store.remove(key).unwrap_or(obj);
                return Ok((gone, true));
            }
            if key.plural == "pods" && grace_seconds == Some(0) {
                let gone = self.store.remove(key).unwrap_or(obj);
                return Ok((gone, true));
            }
            return Ok((obj, false));
        }
        // batch/v1 Jobs orphan their pods unless told otherwise (kept for compatibility by
        // the real API server; kubectl sends Background explicitly).
        let propagation = propagation.unwrap_or(if key.plural == "jobs" {
            Propagation::Orphan
        } else {
            Propagation::Background
        });
        if propagation == Propagation::Orphan {
            for (dep, _) in self.store.dependents(&key.namespace, &uid) {
                self.store.update::<()>(&dep, |o| {
                    if let Some(Value::Array(refs)) = o.pointer_mut("/metadata/ownerReferences") {
                        refs.retain(|r| r["uid"] != uid.as_str());
                    }
                    Ok(())
                });
            }
        }
        let stamp = |o: &mut Value, extra_finalizer: Option<&str>, grace: i64| {
            o["metadata"]["deletionTimestamp"] = json!(now());
            o["metadata"]["deletionGracePeriodSeconds"] = json!(grace);
            if let Some(f) = extra_finalizer {
                let list = o["metadata"]
                    .as_object_mut()
                    .expect("metadata")
                    .entry("finalizers")
                    .or_insert(json!([]));
                if let Value::Array(a) = list
                    && !a.iter().any(|v| v == f)
                {
                    a.push(json!(f));
                }
            }
        };
        let deferred = |f: &dyn Fn(&mut Value)| -> KubeResult<(Value, bool)> {
            let updated = self
                .store
                .update::<()>(key, |o| {
                    f(o);
                    Ok(())
                })
                .and_then(Result::ok)
                .ok_or_else(|| KubeError::not_found(&rt, &key.name))?;
            Ok((updated, false))
        };
        if key.plural == "namespaces" {
            let out = deferred(&|o| {
                stamp(o, None, 0);
                o["status"]["phase"] = json!("Terminating");
            })?;
            tokio::spawn(super::controllers::clean_namespace(
                self.clone(),
                key.name.clone(),
            ));
            return Ok(out);
        }
        if propagation == Propagation::Foreground {
            return deferred(&|o| stamp(o, Some("foregroundDeletion"), 0));
        }
        if !finalizers(&obj).is_empty() {
            return deferred(&|o| stamp(o, None, 0));
        }
        if key.plural == "pods" {
            let delay = self.settings().pod_termination_delay();
            let grace = grace_seconds
                .or_else(|| {
                    obj.pointer("/spec/terminationGracePeriodSeconds")
                        .and_then(Value::as_i64)
                })
                .unwrap_or(30);
            if !delay.is_zero() && grace != 0 {
                let out = deferred(&|o| stamp(o, None, grace))?;
                let (app, key) = (self.clone(), key.clone());
                tokio::spawn(async move {
                    let mut stop = app.stop.subscribe();
                    tokio::select! {
                        _ = tokio::time::sleep(delay) => {}
                        _ = super::util::raised(&mut stop) => return,
                    }
                    app.store.remove(&key);
                });
                return Ok(out);
            }
        }
        let gone = self
            .store
            .remove(key)
            .ok_or_else(|| KubeError::not_found(&rt, &key.name))?;
        Ok((gone, true))
    }

    /// Removes an object whose deletion was deferred once nothing holds it any more.
    pub fn finalize_if_done(&self, key: &ObjKey) {
        let Some(obj) = self.store.get(key) else {
            return;
        };
        let done = obj.pointer("/metadata/deletionTimestamp").is_some()
            && obj
                .pointer("/metadata/finalizers")
                .and_then(Value::as_array)
                .is_none_or(|a| a.is_empty())
            && key.plural != "pods"
            && key.plural != "namespaces";
        if done {
            self.store.remove(key);
        }
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
            _ = super::util::raised(&mut stop) => false,
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
