//! The agent-sandbox controller: a Sandbox gets a pod from its `podTemplate` (replaced if it
//! vanishes) and a status that follows the pod (Pending, Ready, Failed), or the plan set for it
//! (held, Failed, Terminating on request); at its `spec.shutdownTime` it ends (`expiry`).

use std::sync::Arc;

use serde_json::{Value, json};

use super::events::{Heard, subscribe};
use super::expiry;
use super::fields::{condition, deleting, pod_phase, pod_ready, uid_of};
use super::template::pod_from_template;
use crate::kubernetes::kubelet;
use crate::kubernetes::objects;
use crate::kubernetes::options::SandboxPlan;
use crate::kubernetes::state::App;
use crate::kubernetes::store::{ObjKey, meta_str};
use crate::kubernetes::util::{name_suffix, now};

fn name_hash(name: &str) -> String {
    let mut h: u32 = 0x811c_9dc5;
    for b in name.bytes() {
        h ^= b as u32;
        h = h.wrapping_mul(0x0100_0193);
    }
    format!("{h:08x}")
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum SandboxState {
    Pending,
    Ready,
    Failed,
    Terminating,
}

/// Writes the Sandbox's status for `state` (phase only when the instance serves it).
fn set_sandbox_status(
    app: &App,
    key: &ObjKey,
    state: SandboxState,
    pod_name: Option<&str>,
    why: Option<(&str, &str)>,
) {
    let opts = &app.opts;
    app.store.update::<()>(key, |o| {
        let generation = o["metadata"]["generation"].clone();
        let name = key.name.as_str();
        let mut s = json!({
            "serviceFQDN": format!("{name}.{}.svc.cluster.local", key.namespace),
            "service": name,
            "replicas": 1,
            "selector": format!("agents.x-k8s.io/sandbox-name-hash={}", name_hash(name)),
        });
        let (phase, conditions) = match state {
            SandboxState::Pending => (
                "Pending",
                vec![condition(
                    "Ready",
                    false,
                    "DependenciesNotReady",
                    "Pod exists with phase: Pending; Service Exists",
                    &generation,
                )],
            ),
            SandboxState::Ready => (
                "Ready",
                vec![condition(
                    "Ready",
                    true,
                    "DependenciesReady",
                    "Pod is Ready; Service Exists",
                    &generation,
                )],
            ),
            SandboxState::Failed => {
                let (reason, message) = why.unwrap_or(("PodFailed", "Pod failed"));
                (
                    "Failed",
                    vec![
                        condition("Ready", false, reason, message, &generation),
                        condition("Failed", true, reason, message, &generation),
                    ],
                )
            }
            SandboxState::Terminating => {
                if o.pointer("/metadata/deletionTimestamp").is_none() {
                    o["metadata"]["deletionTimestamp"] = json!(now());
                    o["metadata"]["deletionGracePeriodSeconds"] = json!(0);
                }
                (
                    "Terminating",
                    vec![condition(
                        "Ready",
                        false,
                        "SandboxTerminating",
                        "Sandbox is terminating",
                        &generation,
                    )],
                )
            }
        };
        if opts.sandbox_phase {
            s["phase"] = json!(phase);
        }
        if opts.sandbox_pod_name
            && let Some(p) = pod_name
        {
            s["podName"] = json!(p);
        }
        s["conditions"] = json!(conditions);
        o["status"] = s;
        Ok(())
    });
}

/// Applies a plan to a live Sandbox at once (control API / handle).
pub fn apply_sandbox_plan(app: &App, namespace: &str, name: &str, plan: &SandboxPlan) -> bool {
    let key = ObjKey::new("agents.x-k8s.io", "sandboxes", namespace, name);
    let Some(sb) = app.store.get(&key) else {
        return false;
    };
    app.set_sandbox_plan(namespace, name, plan.clone());
    let pod = sandbox_pod(app, &sb);
    let pod_name = pod.as_ref().map(|(k, _)| k.name.clone());
    match plan {
        SandboxPlan::Failed { reason, message } => {
            if let Some((pk, _)) = &pod {
                kubelet::fail_pod(app, pk, reason, message);
            }
            set_sandbox_status(
                app,
                &key,
                SandboxState::Failed,
                pod_name.as_deref(),
                Some((reason, message)),
            );
        }
        SandboxPlan::Terminating => {
            set_sandbox_status(
                app,
                &key,
                SandboxState::Terminating,
                pod_name.as_deref(),
                None,
            );
        }
        SandboxPlan::Never | SandboxPlan::Ready => {}
    }
    true
}

/// The pod a Sandbox owns, if any.
fn sandbox_pod(app: &App, sb: &Value) -> Option<(ObjKey, Value)> {
    let ns = meta_str(sb, "namespace").unwrap_or_default();
    let uid = uid_of(sb);
    app.store
        .dependents(ns, &uid)
        .into_iter()
        .find(|(k, _)| k.plural == "pods")
}

fn sandbox_pod_manifest(app: &App, sb: &Value, key: &ObjKey) -> Value {
    let template = sb
        .pointer("/spec/podTemplate")
        .cloned()
        .unwrap_or(json!({}));
    let mut labels = template
        .pointer("/metadata/labels")
        .cloned()
        .unwrap_or(json!({}));
    labels["agents.x-k8s.io/sandbox-name-hash"] = json!(name_hash(&key.name));
    labels["agents.x-k8s.io/sandbox-name"] = json!(key.name);
    let name = if app.opts.sandbox_pod_suffix {
        format!("{}-{}", key.name, name_suffix(5))
    } else {
        key.name.clone()
    };
    let metadata = json!({
        "name": name,
        "namespace": key.namespace,
        "labels": labels,
        "ownerReferences": [{
            "apiVersion": sb["apiVersion"].as_str().unwrap_or("agents.x-k8s.io/v1alpha1"),
            "kind": "Sandbox",
            "name": key.name,
            "uid": uid_of(sb),
            "controller": true,
            "blockOwnerDeletion": true,
        }],
    });
    pod_from_template(&template, metadata)
}

pub async fn run_sandbox(app: Arc<App>, key: ObjKey, uid: String) {
    let current = |app: &App| {
        app.store
            .get(&key)
            .filter(|o| meta_str(o, "uid") == Some(uid.as_str()))
    };
    // The plan in force when the Sandbox was created sticks to it.
    let plan = app.sandbox_plan(&key.namespace, &key.name);
    app.set_sandbox_plan(&key.namespace, &key.name, plan.clone());
    let mut rx = subscribe(&app);
    let Some(sb) = current(&app) else { return };
    if expiry::expired(&sb) {
        // Created past its end: it never gets a pod.
        expiry::expire(&app, &key, None);
        return;
    }
    set_sandbox_status(&app, &key, SandboxState::Pending, None, None);
    if matches!(plan, SandboxPlan::Failed { .. } | SandboxPlan::Terminating) {
        let (app2, key2, plan2) = (app.clone(), key.clone(), plan.clone());
        tokio::spawn(async move {
            if app2.sleep(app2.settings().pod_ready_delay()).await {
                apply_sandbox_plan(&app2, &key2.namespace, &key2.name, &plan2);
            }
        });
    }
    let mut pod_key = match sandbox_pod(&app, &sb) {
        Some((k, _)) => k,
        None => match objects::create_internal(
            &app,
            "",
            "pods",
            &key.namespace,
            sandbox_pod_manifest(&app, &sb, &key),
        ) {
            Ok(p) => ObjKey::pod(&key.namespace, meta_str(&p, "name").unwrap_or_default()),
            Err(_) => return,
        },
    };
    let mut last = SandboxState::Pending;
    let mut latest = sb;
    loop {
        let heard = expiry::next_or_expiry(&mut rx, &app, &latest).await;
        if let Heard::Event(ev) = &heard
            && ev.key != pod_key
            && ev.key != key
        {
            continue;
        }
        if matches!(heard, Heard::Stop) {
            return;
        }
        let Some(sb) = current(&app) else { return };
        if deleting(&sb) {
            continue;
        }
        if expiry::expired(&sb) {
            let pod = app.store.get(&pod_key).map(|_| pod_key.clone());
            expiry::expire(&app, &key, pod.as_ref());
            return;
        }
        latest = sb.clone();
        let plan = app.sandbox_plan(&key.namespace, &key.name);
        if matches!(plan, SandboxPlan::Failed { .. } | SandboxPlan::Terminating) {
            continue;
        }
        match app.store.get(&pod_key) {
            None => {
                // The controller replaces a pod that vanished under a live Sandbox.
                match objects::create_internal(
                    &app,
                    "",
                    "pods",
                    &key.namespace,
                    sandbox_pod_manifest(&app, &sb, &key),
                ) {
                    Ok(p) => {
                        pod_key =
                            ObjKey::pod(&key.namespace, meta_str(&p, "name").unwrap_or_default())
                    }
                    Err(_) => return,
                }
                set_sandbox_status(&app, &key, SandboxState::Pending, None, None);
                last = SandboxState::Pending;
            }
            Some(pod) => {
                let state = if pod_phase(&pod) == "Failed" || pod_phase(&pod) == "Succeeded" {
                    SandboxState::Failed
                } else if pod_ready(&pod) {
                    SandboxState::Ready
                } else {
                    SandboxState::Pending
                };
                if state != last {
                    let reason = pod
                        .pointer("/status/reason")
                        .and_then(Value::as_str)
                        .unwrap_or("PodFailed");
                    let message = pod
                        .pointer("/status/message")
                        .and_then(Value::as_str)
                        .unwrap_or("Pod failed")
                        .to_string();
                    set_sandbox_status(
                        &app,
                        &key,
                        state,
                        Some(&pod_key.name),
                        Some((reason, &message)),
                    );
                    last = state;
                }
            }
        }
    }
}
