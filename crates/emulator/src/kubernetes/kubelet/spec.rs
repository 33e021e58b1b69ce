//! Reading a pod's spec: its containers, the one a request names, and its owners.

use serde_json::Value;

use crate::kubernetes::status::{KubeError, KubeResult};

/// The container a `pods/exec` or `pods/log` request means: the one named `wanted`, or the
/// pod's only container; 400 (with the API server's message) otherwise.
pub fn container_named(pod: &Value, pod_name: &str, wanted: Option<&str>) -> KubeResult<String> {
    let names: Vec<String> = pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .map(|cs| {
            cs.iter()
                .filter_map(|c| c["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    match wanted {
        Some(c) if !names.iter().any(|n| n == c) => Err(KubeError::bad_request(format!(
            "container {c} is not valid for pod {pod_name}"
        ))),
        Some(c) => Ok(c.to_string()),
        None if names.len() == 1 => Ok(names[0].clone()),
        None => Err(KubeError::bad_request(format!(
            "a container name must be specified for pod {pod_name}, choose one of: [{}]",
            names.join(" ")
        ))),
    }
}

pub fn containers_of(pod: &Value) -> Vec<Value> {
    pod.pointer("/spec/containers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// The owner reference of `kind`, if any.
pub fn owner_of<'a>(obj: &'a Value, kind: &str) -> Option<&'a Value> {
    obj.pointer("/metadata/ownerReferences")?
        .as_array()?
        .iter()
        .find(|r| r["kind"] == kind)
}
