//! The object fields the controllers read and write alike: uid, deletion and finalizers, a
//! pod's phase and readiness, and the condition entries of the statuses they write.

use serde_json::{Value, json};

use crate::kubernetes::store::meta_str;
use crate::kubernetes::util::now;

pub fn uid_of(v: &Value) -> String {
    meta_str(v, "uid").unwrap_or_default().to_string()
}

pub fn deleting(v: &Value) -> bool {
    v.pointer("/metadata/deletionTimestamp").is_some()
}

pub fn has_finalizer(v: &Value, f: &str) -> bool {
    v.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|a| a.iter().any(|x| x == f))
}

pub fn pod_ready(pod: &Value) -> bool {
    pod.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
}

pub fn pod_phase(pod: &Value) -> &str {
    pod.pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("Pending")
}

pub fn condition(kind: &str, ok: bool, reason: &str, message: &str, generation: &Value) -> Value {
    let mut c = json!({
        "type": kind,
        "status": if ok { "True" } else { "False" },
        "reason": reason,
        "message": message,
        "lastTransitionTime": now(),
    });
    if !generation.is_null() {
        c["observedGeneration"] = generation.clone();
    }
    c
}
