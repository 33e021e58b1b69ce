//! What the orchestrators read out of API responses in more than one place.

use serde_json::Value;

use js_compat::value;
use js_compat::value::{prop_nullish, prop_str};

/// `metadata.uid` of a create response, if it is a non-empty string.
pub fn created_uid(created: &Value) -> Option<String> {
    let uid = prop_nullish(prop_nullish(Some(created), "metadata"), "uid")?;
    value::truthy(Some(uid)).then(|| value::to_string(uid))
}

/// `(running ?? pods[0])?.metadata?.name ?? null`.
pub fn pick_pod_name(pods: &[&Value]) -> Option<String> {
    let running = pods
        .iter()
        .find(|pod| prop_str(prop_nullish(Some(pod), "status"), "phase") == Some("Running"));
    let chosen = running.or(pods.first())?;
    prop_nullish(prop_nullish(Some(chosen), "metadata"), "name").map(value::to_string)
}
