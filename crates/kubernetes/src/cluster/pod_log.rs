//! `streamLogs` of both backends: one log read, no container, no follow.

use serde_json::{Value, json};

use crate::cluster::ClusterApi;
use crate::error::Error;

/// Reads the pod's whole log at once. The original hands it to its callback as one `stdout`
/// chunk, and only when it is non-empty; this returns that chunk.
pub async fn read_whole_pod_log<C: ClusterApi + ?Sized>(
    cluster: &C,
    namespace: &str,
    pod_name: &str,
) -> Result<Option<String>, Error> {
    let log = cluster
        .read_namespaced_pod_log(json!({"namespace": namespace, "name": pod_name}))
        .await?;
    Ok(match log {
        Value::String(text) if !text.is_empty() => Some(text),
        _ => None,
    })
}
