//! The Sandbox CR backend (agent-sandbox `agents.x-k8s.io`, plural `sandboxes`): claim,
//! status, pod lookup, logs and release; the wait for a Ready pod is [`super::readiness`].
//!
//! Behaviour of the target's `sandbox-cr-orchestrator.ts`: the status uses the *phase* mapping.
//! Every call is bound to one [`SandboxApiVersion`].

use serde_json::{Value, json};

use super::response::{created_uid, pick_pod_name};
use super::sandbox_api_version::{SANDBOX_GROUP, SANDBOX_PLURAL, SandboxApiVersion};
use super::status::{SandboxStatus, WorkloadPhase};
use crate::cluster::ClusterApi;
use crate::error::{Error, SANDBOX_CREATED_WITHOUT_UID};
use js_compat::value::{array_items, prop_nullish, prop_str};
use js_compat::{string, value};

/// The pod label the agent-sandbox controller puts the Sandbox name in.
pub const SANDBOX_NAME_LABEL: &str = "agents.x-k8s.io/sandbox-name";

/// `{group, version, namespace, plural}` of every Sandbox call.
fn sandbox_request(version: SandboxApiVersion, namespace: &str) -> serde_json::Map<String, Value> {
    let mut request = serde_json::Map::new();
    request.insert("group".into(), json!(SANDBOX_GROUP));
    request.insert("version".into(), json!(version.version()));
    request.insert("namespace".into(), json!(namespace));
    request.insert("plural".into(), json!(SANDBOX_PLURAL));
    request
}

/// The request naming one Sandbox: `{group, version, namespace, plural, name}`.
fn named_sandbox_request(version: SandboxApiVersion, namespace: &str, name: &str) -> Value {
    let mut request = sandbox_request(version, namespace);
    request.insert("name".into(), json!(name));
    Value::Object(request)
}

/// One GET of the Sandbox (`getNamespacedCustomObject`).
pub(super) async fn get_sandbox<C: ClusterApi + ?Sized>(
    cluster: &C,
    version: SandboxApiVersion,
    namespace: &str,
    name: &str,
) -> Result<Value, Error> {
    let request = named_sandbox_request(version, namespace, name);
    cluster.get_namespaced_custom_object(request).await
}

/// `createSandboxCr`: creates the CR and returns its UID.
pub async fn create_sandbox_cr<C: ClusterApi + ?Sized>(
    cluster: &C,
    version: SandboxApiVersion,
    namespace: &str,
    manifest: Value,
) -> Result<String, Error> {
    let mut request = sandbox_request(version, namespace);
    request.insert("body".into(), manifest);
    let created = cluster
        .create_namespaced_custom_object(Value::Object(request))
        .await?;
    created_uid(&created).ok_or_else(|| Error::Failed(SANDBOX_CREATED_WITHOUT_UID.into()))
}

/// `mapSandboxPhase`: a Sandbox CR's `status.phase` in Job terms.
pub fn map_sandbox_phase(cr: &Value) -> SandboxStatus {
    let status = prop_nullish(Some(cr), "status");
    match prop_nullish(status, "phase")
        .and_then(Value::as_str)
        .unwrap_or("Pending")
    {
        "Ready" => SandboxStatus::counted(WorkloadPhase::Running, 1, 0, 0),
        "Terminating" => SandboxStatus {
            reason: Some(json!("Terminating")),
            ..SandboxStatus::counted(WorkloadPhase::Running, 0, 0, 0)
        },
        "Failed" => {
            let failed = array_items(prop_nullish(status, "conditions"))
                .iter()
                .find(|c| prop_str(Some(c), "type") == Some("Failed"));
            SandboxStatus {
                reason: failed.and_then(|c| c.get("reason")).cloned(),
                message: failed.and_then(|c| c.get("message")).cloned(),
                ..SandboxStatus::counted(WorkloadPhase::Failed, 0, 0, 1)
            }
        }
        _ => SandboxStatus::counted(WorkloadPhase::Pending, 0, 0, 0),
    }
}

/// `getSandboxCrStatus`.
pub async fn get_sandbox_cr_status<C: ClusterApi + ?Sized>(
    cluster: &C,
    version: SandboxApiVersion,
    namespace: &str,
    name: &str,
) -> Result<SandboxStatus, Error> {
    let cr = get_sandbox(cluster, version, namespace, name).await?;
    Ok(map_sandbox_phase(&cr))
}

/// `findPodForSandbox`: the pod backing the Sandbox, or `None` when there is none yet.
///
/// 1. `status.podName` of the CR, when it is non-blank (a failed CR read propagates, 404 too);
/// 2. the pod named exactly like the Sandbox (agent-sandbox v0.4.x names it so and labels it
///    only with a hash); a 404 moves on, any other error propagates;
/// 3. the pods labelled `agents.x-k8s.io/sandbox-name=<name>`, re-checked on the label value
///    and never matched by name prefix (that could pick another lease's pod); the first
///    `Running` one, else the first.
pub async fn find_pod_for_sandbox<C: ClusterApi + ?Sized>(
    cluster: &C,
    version: SandboxApiVersion,
    namespace: &str,
    name: &str,
) -> Result<Option<String>, Error> {
    let cr = get_sandbox(cluster, version, namespace, name).await?;
    if let Some(pod_name) = prop_str(prop_nullish(Some(&cr), "status"), "podName")
        && !string::trim(pod_name).is_empty()
    {
        return Ok(Some(pod_name.to_string()));
    }

    match cluster
        .read_namespaced_pod(json!({"namespace": namespace, "name": name}))
        .await
    {
        Ok(pod) => {
            if let Some(pod_name) = prop_nullish(prop_nullish(Some(&pod), "metadata"), "name")
                && value::truthy(Some(pod_name))
            {
                return Ok(Some(value::to_string(pod_name)));
            }
        }
        Err(err) if err.is_not_found() => {}
        Err(err) => return Err(err),
    }

    let selector = format!("{SANDBOX_NAME_LABEL}={name}");
    let list = cluster
        .list_namespaced_pod(json!({"namespace": namespace, "labelSelector": selector}))
        .await?;
    let matching: Vec<&Value> = array_items(prop_nullish(Some(&list), "items"))
        .iter()
        .filter(|pod| {
            let labels = prop_nullish(prop_nullish(Some(pod), "metadata"), "labels");
            prop_nullish(labels, SANDBOX_NAME_LABEL).and_then(Value::as_str) == Some(name)
        })
        .collect();
    Ok(pick_pod_name(&matching))
}

/// `deleteSandboxCr`: deletes the CR with Foreground propagation (the controller removes the
/// pod; the Secret and scoped policies go through their ownerReferences).
pub async fn delete_sandbox_cr<C: ClusterApi + ?Sized>(
    cluster: &C,
    version: SandboxApiVersion,
    namespace: &str,
    name: &str,
) -> Result<(), Error> {
    let mut request = sandbox_request(version, namespace);
    request.insert("name".into(), json!(name));
    request.insert("propagationPolicy".into(), json!("Foreground"));
    cluster
        .delete_namespaced_custom_object(Value::Object(request))
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::ApiMethod;
    use crate::cluster::testing::{ScriptedCluster, ScriptedReply};
    use crate::error::Error;

    const NS: &str = "paperclip-acme";
    const NAME: &str = "pc-01";

    #[tokio::test]
    async fn claim_requires_a_uid() {
        let cluster = ScriptedCluster::new();
        let err = create_sandbox_cr(&cluster, SandboxApiVersion::V1alpha1, NS, json!({}))
            .await
            .unwrap_err();
        assert_eq!(err.to_string(), "Sandbox CR created without a UID");

        let created = vec![ScriptedReply::Returns(json!({"metadata": {"uid": "u-1"}}))];
        let cluster =
            ScriptedCluster::new().script(ApiMethod::CreateNamespacedCustomObject, created);
        let uid = create_sandbox_cr(
            &cluster,
            SandboxApiVersion::V1beta1,
            NS,
            json!({"kind": "Sandbox"}),
        )
        .await;
        assert_eq!(uid.unwrap(), "u-1");
        assert_eq!(
            cluster.calls_json(),
            json!([{"api": "custom", "method": "createNamespacedCustomObject", "args": {
                "group": "agents.x-k8s.io", "version": "v1beta1", "namespace": NS,
                "plural": "sandboxes", "body": {"kind": "Sandbox"}}}])
        );
    }

    #[tokio::test]
    async fn exact_name_lookup_errors_other_than_404_propagate() {
        let cluster = ScriptedCluster::new().script(
            ApiMethod::ReadNamespacedPod,
            vec![ScriptedReply::Throws(Error::new(403, "forbidden"))],
        );
        let err = find_pod_for_sandbox(&cluster, SandboxApiVersion::V1alpha1, NS, NAME)
            .await
            .unwrap_err();
        assert_eq!(err.to_string(), "forbidden");
        assert_eq!(cluster.calls().len(), 2, "no label listing after a 403");
    }

    #[tokio::test]
    async fn release_deletes_in_the_foreground() {
        let cluster = ScriptedCluster::new();
        delete_sandbox_cr(&cluster, SandboxApiVersion::V1beta1, NS, NAME)
            .await
            .unwrap();
        assert_eq!(
            cluster.calls_json(),
            json!([{"api": "custom", "method": "deleteNamespacedCustomObject", "args": {
                "group": "agents.x-k8s.io", "version": "v1beta1", "namespace": NS,
                "plural": "sandboxes", "name": NAME, "propagationPolicy": "Foreground"}}])
        );
    }
}
