//! Moving a Sandbox's end (issue #38): one JSON merge patch of its `spec.shutdownTime` and
//! `spec.shutdownPolicy: Delete`, after which the agent-sandbox controller deletes the Sandbox
//! at that time, and the garbage collector what it owns (its pod, the per-run Secret, the
//! scoped egress policies). When to move it is decided in [`crate::lease::lease_end`].

use serde_json::json;

use crate::builders::sandbox_cr::{SANDBOX_GROUP, SANDBOX_PLURAL, sandbox_end_patch};
use crate::cluster::{ClusterApi, SandboxApiVersion};
use crate::error::Error;

/// Patches the Sandbox `namespace/name` (addressed with `version`) to end at `shutdown_time`
/// (RFC 3339). A Sandbox that is gone fails with the API's 404.
pub async fn patch_sandbox_end<C: ClusterApi + ?Sized>(
    cluster: &C,
    version: SandboxApiVersion,
    namespace: &str,
    name: &str,
    shutdown_time: &str,
) -> Result<(), Error> {
    cluster
        .patch_namespaced_custom_object(json!({
            "group": SANDBOX_GROUP,
            "version": version.version(),
            "namespace": namespace,
            "plural": SANDBOX_PLURAL,
            "name": name,
            "body": sandbox_end_patch(shutdown_time),
        }))
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::testing::ScriptedCluster;

    #[tokio::test]
    async fn the_patch_names_the_lease_version_and_both_fields() {
        let cluster = ScriptedCluster::new();
        patch_sandbox_end(
            &cluster,
            SandboxApiVersion::V1alpha1,
            "paperclip-acme",
            "pc-1",
            "2026-01-02T03:04:05Z",
        )
        .await
        .unwrap();
        assert_eq!(
            cluster.calls_json(),
            json!([{"api": "custom", "method": "patchNamespacedCustomObject", "args": {
                "group": "agents.x-k8s.io", "version": "v1alpha1", "namespace": "paperclip-acme",
                "plural": "sandboxes", "name": "pc-1",
                "body": {"spec": {"shutdownTime": "2026-01-02T03:04:05Z",
                    "shutdownPolicy": "Delete"}}}}])
        );
    }
}
