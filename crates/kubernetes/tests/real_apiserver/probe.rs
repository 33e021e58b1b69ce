//! The probe against the real API server, which authorizes by RBAC: on a cluster without
//! agent-sandbox it says the CRDs are missing; with the credentials of a ServiceAccount bound to
//! exactly the operator's RBAC (`docs/rbac/*.yaml`, only the subject changed) every permission
//! line passes; with one permission taken off the role it names that one and says `ok: false`.
//! Each answers well before the host's 30 s.

use std::time::{Duration, Instant};

use kube::Client;
use kubernetes::KubernetesProvider;
use kubernetes::cluster::permissions::needed;
use kubernetes::cluster::rbac_yaml::CLUSTER_ROLE;
use kubernetes::config::{Backend, EgressMode};
use sandbox_core::NullSink;
use serde_json::{Value, json};

use crate::control_plane::{Shape, control_plane};
use crate::rbac_apply::{apply, bound_service_account, remove};
use crate::rbac_support::{cluster_role, role_without};
use crate::support::{client, delete, post, unique, until};

/// The host calls the probe with its default RPC timeout.
const HOST_BOUND: Duration = Duration::from_secs(30);

fn config(kubeconfig: &str, slug: &str, backend: &str, egress: &str) -> Value {
    json!({"kubeconfig": kubeconfig, "companySlug": slug, "backend": backend, "egressMode": egress})
}

/// The probe's result, asserted to have come before the host's bound; and its summary lines.
async fn probe(config: &Value) -> (Value, Vec<String>) {
    let started = Instant::now();
    let result = KubernetesProvider::new()
        .probe(&json!({"config": config, "companyId": "c"}), &NullSink)
        .await
        .expect("the probe never throws for cluster errors");
    assert!(
        started.elapsed() < HOST_BOUND,
        "answered after the host's bound: {:?}",
        started.elapsed()
    );
    let lines = result["summary"]
        .as_str()
        .unwrap()
        .split('\n')
        .map(str::to_string)
        .collect();
    (result, lines)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_probe_says_when_agent_sandbox_is_not_installed() {
    let plane = control_plane(Shape::WithoutAgentSandbox).await;
    let slug = unique("nosandbox");
    let (result, lines) = probe(&config(&plane.kubeconfig, &slug, "sandbox-cr", "standard")).await;
    assert_eq!(result["ok"], false, "{result}");
    let total = result["metadata"]["checks"].as_array().unwrap().len();
    assert_eq!(
        lines[0],
        format!(
            "Kubernetes cluster reachable, but 1 of {total} checks failed. Tenant namespace: paperclip-{slug}."
        )
    );
    assert_eq!(
        lines[1],
        "Sandbox API agents.x-k8s.io: not served, so the agent-sandbox CRDs are not installed on this cluster. Install kubernetes-sigs/agent-sandbox (v1.0.x), or set backend: \"job\"."
    );
    // The job backend does not need it.
    let (result, lines) = probe(&config(&plane.kubeconfig, &slug, "job", "standard")).await;
    assert_eq!(result["ok"], true, "{result}");
    assert_eq!(
        lines[1],
        "Sandbox API: not used by backend \"job\" (each run is a batch/v1 Job, run by the cluster's own Job controller; no agent-sandbox install is needed)."
    );
}

/// Waits until the API server's authorizer grants `kubeconfig`'s user `get namespaces` (a new
/// binding reaches the RBAC authorizer's cache within moments, not at once).
async fn until_bound(kubeconfig: &str) {
    let as_account = client(kubeconfig).await;
    until("the ClusterRoleBinding to take effect", || {
        let as_account = as_account.clone();
        async move {
            let review = json!({"apiVersion": "authorization.k8s.io/v1",
                "kind": "SelfSubjectAccessReview",
                "spec": {"resourceAttributes": {"verb": "get", "resource": "namespaces"}}});
            let (status, answer) = post(
                &as_account,
                "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                &review,
            )
            .await;
            (status == 201 && answer["status"]["allowed"] == true).then_some(())
        }
    })
    .await;
}

async fn delete_role(admin: &Client, name: &str) {
    let path = format!("/apis/rbac.authorization.k8s.io/v1/clusterroles/{name}");
    let (status, body) = delete(admin, &path).await;
    assert!(status == 200 || status == 404, "DELETE {path}: {body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_generated_rbac_passes_and_a_removed_permission_is_named() {
    let plane = control_plane(Shape::V05).await;
    let admin = client(&plane.kubeconfig).await;
    apply(&admin, &[cluster_role()]).await;
    let account_ns = unique("rbac-accounts");
    let (kubeconfig, bound) = bound_service_account(
        &admin,
        &plane.kubeconfig,
        &account_ns,
        "paperclip-server",
        CLUSTER_ROLE,
    )
    .await;
    until_bound(&kubeconfig).await;
    let slug = unique("rbac");
    for (backend, egress) in [
        (Backend::SandboxCr, EgressMode::Standard),
        (Backend::SandboxCr, EgressMode::Cilium),
        (Backend::Job, EgressMode::Standard),
    ] {
        let config = config(&kubeconfig, &slug, backend.as_str(), egress.as_str());
        let (result, lines) = probe(&config).await;
        assert_eq!(result["ok"], true, "{backend:?} {egress:?}: {lines:#?}");
        let count = needed(backend, egress).len();
        assert_eq!(
            lines[2],
            format!("Permissions: all {count} the config needs are granted.")
        );
        assert_eq!(
            lines[3],
            format!(
                "Tenant namespace paperclip-{slug}: does not exist yet; the first lease creates it."
            )
        );
    }

    // The same role without `create pods/exec`, bound to another ServiceAccount.
    let reduced = unique("paperclip-sandbox-provider-without-exec");
    apply(&admin, &[role_without(&reduced, "create", "pods/exec")]).await;
    let (reduced_kubeconfig, reduced_bound) = bound_service_account(
        &admin,
        &plane.kubeconfig,
        &account_ns,
        "paperclip-server-reduced",
        &reduced,
    )
    .await;
    until_bound(&reduced_kubeconfig).await;
    let config = config(&reduced_kubeconfig, &slug, "sandbox-cr", "standard");
    let (result, lines) = probe(&config).await;
    assert_eq!(result["ok"], false, "{lines:#?}");
    let count = needed(Backend::SandboxCr, EgressMode::Standard).len();
    let total = result["metadata"]["checks"].as_array().unwrap().len();
    assert!(
        lines[1].starts_with("Sandbox API agents.x-k8s.io: served in ")
            && lines[1].ends_with("; leases use v1beta1."),
        "{}",
        lines[1]
    );
    assert_eq!(
        [&lines[0], &lines[2], &lines[3]],
        [
            &format!(
                "Kubernetes cluster reachable, but 1 of {total} checks failed. Tenant namespace: paperclip-{slug}."
            ),
            &format!(
                "Permissions: {} of {count} the config needs are granted; each one missing follows.",
                count - 1
            ),
            &format!(
                "Permission missing: create pods/exec in namespace paperclip-{slug}, to execute, file sync and the login terminal (a websocket: API servers from 1.30 authorize it as create, older ones as get)."
            ),
        ]
    );
    // The job backend does not exec: the same credentials pass there.
    let config = json!({"kubeconfig": reduced_kubeconfig, "companySlug": slug, "backend": "job"});
    assert_eq!(probe(&config).await.0["ok"], true);

    remove(&admin, &bound).await;
    remove(&admin, &reduced_bound).await;
    delete_role(&admin, &reduced).await;
    let (status, body) = delete(&admin, &format!("/api/v1/namespaces/{account_ns}")).await;
    assert_eq!(status, 200, "{body}");
}
