//! Creating a run's scoped egress policies: the per-lease adapter policy and the
//! task grant policy. The objects come from [`build_scoped_network_egress_policy`].

use std::future::Future;

use serde_json::json;

use crate::builders::cilium::{CILIUM_GROUP, CILIUM_PLURAL, CILIUM_VERSION};
use crate::builders::scoped_egress::{
    ScopedEgressPolicy, ScopedEgressPolicyInput, ScopedPolicyKind,
    build_scoped_network_egress_policy,
};
use crate::cluster::ClusterApi;
use crate::error::{Error, SCOPED_POLICY_AND_RELEASE_FAILED};

/// `createScopedNetworkEgressPolicy`: creates the policy and returns its name, or returns
/// `None` without any API call when there is nothing to allow (no base rules, empty grant).
///
/// A plain create: there is no read first, and an existing policy (409) is an error.
pub async fn create_scoped_network_egress_policy<C: ClusterApi + ?Sized>(
    cluster: &C,
    input: &ScopedEgressPolicyInput,
) -> Result<Option<String>, Error> {
    let Some(ScopedEgressPolicy {
        name,
        kind,
        manifest,
    }) = build_scoped_network_egress_policy(input)
    else {
        return Ok(None);
    };
    let namespace = input.namespace.as_str();
    match kind {
        ScopedPolicyKind::CiliumNetworkPolicy => {
            cluster
                .create_namespaced_custom_object(json!({
                    "group": CILIUM_GROUP,
                    "version": CILIUM_VERSION,
                    "namespace": namespace,
                    "plural": CILIUM_PLURAL,
                    "body": manifest,
                }))
                .await?
        }
        ScopedPolicyKind::NetworkPolicy => {
            cluster
                .create_namespaced_network_policy(json!({"namespace": namespace, "body": manifest}))
                .await?
        }
    };
    Ok(Some(name))
}

/// `createScopedNetworkEgressPolicyOrReleaseWorkload`: as
/// [`create_scoped_network_egress_policy`], but a workload whose policy could not be created is
/// released (`release_workload`, the orchestrator's Foreground delete) rather than left running
/// with the wrong egress. The policy error is returned; if the release fails too, both are
/// returned as an `AggregateError` (A21), policy error first.
pub async fn create_scoped_network_egress_policy_or_release_workload<C, Release, Released>(
    cluster: &C,
    input: &ScopedEgressPolicyInput,
    release_workload: Release,
) -> Result<Option<String>, Error>
where
    C: ClusterApi + ?Sized,
    Release: FnOnce() -> Released,
    Released: Future<Output = Result<(), Error>>,
{
    let policy_error = match create_scoped_network_egress_policy(cluster, input).await {
        Ok(name) => return Ok(name),
        Err(err) => err,
    };
    match release_workload().await {
        Ok(()) => Err(policy_error),
        Err(release_error) => Err(Error::Aggregate {
            message: SCOPED_POLICY_AND_RELEASE_FAILED,
            errors: vec![policy_error, release_error],
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builders::scoped_egress::ScopedNetworkEgressGrant;
    use crate::cluster::ApiMethod;
    use crate::cluster::testing::{ScriptedCluster, ScriptedReply};
    use crate::config::EgressMode;
    use crate::error::Error;
    use std::cell::Cell;

    fn task_policy(allow_fqdns: &[&str]) -> ScopedEgressPolicyInput {
        ScopedEgressPolicyInput {
            namespace: "paperclip-acme".into(),
            mode: EgressMode::Standard,
            run_id: "run-1".into(),
            workload_name: "pc-01".into(),
            owner_reference: json!({"kind": "Sandbox"}),
            grant: ScopedNetworkEgressGrant {
                allow_fqdns: allow_fqdns.iter().map(|f| f.to_string()).collect(),
                allow_cidrs: vec![],
            },
            suffix: None,
            base_rules: None,
        }
    }

    fn failing_create(code: u16) -> ScriptedCluster {
        let reply = ScriptedReply::Throws(Error::new(code, "policy failed"));
        ScriptedCluster::new().script(ApiMethod::CreateNamespacedNetworkPolicy, vec![reply])
    }

    #[tokio::test]
    async fn an_existing_policy_is_an_error() {
        let cluster = failing_create(409);
        let err = create_scoped_network_egress_policy(&cluster, &task_policy(&["github.com"]))
            .await
            .unwrap_err();
        assert_eq!(err.http_status(), Some(409));
    }

    #[tokio::test]
    async fn an_empty_grant_neither_creates_nor_releases() {
        let cluster = ScriptedCluster::new();
        let released = Cell::new(false);
        let name = create_scoped_network_egress_policy_or_release_workload(
            &cluster,
            &task_policy(&[]),
            || async {
                released.set(true);
                Ok(())
            },
        )
        .await;
        assert_eq!(name, Ok(None));
        assert!(cluster.calls().is_empty());
        assert!(!released.get());
    }

    #[tokio::test]
    async fn a_released_workload_returns_the_policy_error() {
        let released = Cell::new(false);
        let err = create_scoped_network_egress_policy_or_release_workload(
            &failing_create(500),
            &task_policy(&["github.com"]),
            || async {
                released.set(true);
                Ok(())
            },
        )
        .await
        .unwrap_err();
        assert!(released.get());
        assert_eq!(err.to_string(), "policy failed");
        assert_eq!(err.http_status(), Some(500));
    }

    #[tokio::test]
    async fn a_failed_release_aggregates_both_errors() {
        let err = create_scoped_network_egress_policy_or_release_workload(
            &failing_create(500),
            &task_policy(&["github.com"]),
            || async { Err(Error::Failed("release failed".into())) },
        )
        .await
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "Failed to create scoped network egress policy and release its workload"
        );
        assert_eq!(err.js_name(), "AggregateError");
        let Error::Aggregate { errors, .. } = err else {
            panic!("not an aggregate");
        };
        let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(messages, ["policy failed", "release failed"]);
    }
}
