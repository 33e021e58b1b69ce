//! The pod statuses the kubelet writes: waiting (creating, held, or missing config), running,
//! and terminated with the containers' exit codes or a reason; with the pod's conditions, IPs
//! and container ids as a real kubelet reports them.

use std::collections::HashMap;

use serde_json::{Value, json};

use super::spec::containers_of;
use crate::kubernetes::state::App;
use crate::kubernetes::store::ObjKey;
use crate::kubernetes::util::now;

fn condition(kind: &str, ok: bool, reason: Option<&str>, message: Option<&str>) -> Value {
    let mut c = json!({
        "type": kind,
        "status": if ok { "True" } else { "False" },
        "lastProbeTime": null,
        "lastTransitionTime": now(),
    });
    if let Some(r) = reason {
        c["reason"] = json!(r);
    }
    if let Some(m) = message {
        c["message"] = json!(m);
    }
    c
}

fn pod_conditions(ready: bool, why: Option<(&str, String)>) -> Value {
    let (reason, message) = match &why {
        Some((r, m)) => (Some(*r), Some(m.as_str())),
        None => (None, None),
    };
    json!([
        condition("PodReadyToStartContainers", true, None, None),
        condition("Initialized", true, None, None),
        condition("Ready", ready, reason, message),
        condition("ContainersReady", ready, reason, message),
        condition("PodScheduled", true, None, None),
    ])
}

fn container_id(uid: &str, name: &str) -> String {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    std::hash::Hash::hash(&(uid, name), &mut h);
    let v = std::hash::Hasher::finish(&h);
    format!("containerd://{v:016x}{v:016x}{v:016x}{v:016x}")
}

fn unready_names(pod: &Value) -> String {
    let names: Vec<String> = containers_of(pod)
        .iter()
        .filter_map(|c| c["name"].as_str().map(str::to_string))
        .collect();
    format!("containers with unready status: [{}]", names.join(" "))
}

/// Status while containers are being created (or held by a Sandbox plan, or waiting for a
/// Secret).
pub fn waiting_status(pod: &Value, reason: &str, message: Option<&str>) -> Value {
    let statuses: Vec<Value> = containers_of(pod)
        .iter()
        .map(|c| {
            let mut waiting = json!({ "reason": reason });
            if let Some(m) = message {
                waiting["message"] = json!(m);
            }
            json!({
                "name": c["name"], "image": c["image"], "imageID": "",
                "state": { "waiting": waiting }, "lastState": {},
                "ready": false, "restartCount": 0, "started": false,
            })
        })
        .collect();
    let mut conditions = pod_conditions(false, Some(("ContainersNotReady", unready_names(pod))));
    conditions[0]["status"] = json!("False");
    json!({
        "phase": "Pending",
        "conditions": conditions,
        "hostIP": "10.0.0.1",
        "hostIPs": [{ "ip": "10.0.0.1" }],
        "startTime": pod.pointer("/status/startTime").cloned().unwrap_or_else(|| json!(now())),
        "containerStatuses": statuses,
        "qosClass": pod.pointer("/status/qosClass").cloned().unwrap_or(json!("BestEffort")),
    })
}

fn pod_ip(uid: &str) -> String {
    let n = uid
        .bytes()
        .fold(0u32, |a, b| a.wrapping_mul(31).wrapping_add(b as u32));
    format!("10.244.{}.{}", (n >> 8) % 250 + 1, n % 250 + 2)
}

pub fn running_status(pod: &Value, uid: &str, started_at: &str) -> Value {
    let statuses: Vec<Value> = containers_of(pod)
        .iter()
        .map(|c| {
            let name = c["name"].as_str().unwrap_or_default();
            json!({
                "name": name, "image": c["image"],
                "imageID": format!("{}@sha256:{:064x}", c["image"].as_str().unwrap_or_default(), 0),
                "containerID": container_id(uid, name),
                "state": { "running": { "startedAt": started_at } }, "lastState": {},
                "ready": true, "restartCount": 0, "started": true,
            })
        })
        .collect();
    let mut s = waiting_status(pod, "", None);
    s["phase"] = json!("Running");
    s["conditions"] = pod_conditions(true, None);
    s["podIP"] = json!(pod_ip(uid));
    s["podIPs"] = json!([{ "ip": pod_ip(uid) }]);
    s["containerStatuses"] = json!(statuses);
    s
}

/// The pod after its containers ended (`phase` given), with their exit codes.
pub fn terminated_status(
    pod: &Value,
    uid: &str,
    phase: &str,
    exit_codes: &HashMap<String, i32>,
    reason: Option<(&str, &str)>,
) -> Value {
    let mut s = pod.get("status").cloned().unwrap_or_else(|| json!({}));
    let started = pod
        .pointer("/status/startTime")
        .cloned()
        .unwrap_or_else(|| json!(now()));
    let statuses: Vec<Value> = containers_of(pod)
        .iter()
        .map(|c| {
            let name = c["name"].as_str().unwrap_or_default();
            let code = exit_codes.get(name).copied().unwrap_or(137);
            json!({
                "name": name, "image": c["image"], "imageID": "",
                "containerID": container_id(uid, name),
                "state": { "terminated": {
                    "exitCode": code,
                    "reason": if code == 0 { "Completed" } else { "Error" },
                    "startedAt": started, "finishedAt": now(),
                    "containerID": container_id(uid, name),
                } },
                "lastState": {}, "ready": false, "restartCount": 0, "started": false,
            })
        })
        .collect();
    let restart_always =
        pod.pointer("/spec/restartPolicy").and_then(Value::as_str) == Some("Always");
    let phase = if restart_always && reason.is_none() {
        "Running"
    } else {
        phase
    };
    s["phase"] = json!(phase);
    let why = if phase == "Running" {
        "ContainersNotReady"
    } else {
        "PodCompleted"
    };
    s["conditions"] = pod_conditions(false, Some((why, unready_names(pod))));
    if let Some(c) = s["conditions"].as_array_mut() {
        c[0]["status"] = json!("False");
    }
    s["containerStatuses"] = json!(statuses);
    if let Some((r, m)) = reason {
        s["reason"] = json!(r);
        s["message"] = json!(m);
    }
    s
}

/// Writes the pod's status unless the pod is gone.
pub fn set_status(app: &App, key: &ObjKey, status: Value) {
    app.store.update::<()>(key, |o| {
        o["status"] = status;
        Ok(())
    });
}

/// Records the pod as Failed for `(reason, message)`, its containers with no exit codes.
pub fn set_failed(app: &App, key: &ObjKey, pod: &Value, uid: &str, why: (&str, &str)) {
    let status = terminated_status(pod, uid, "Failed", &HashMap::new(), Some(why));
    set_status(app, key, status);
}
