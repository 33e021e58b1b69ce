//! The probe's cluster checks against the scripted cluster: each passing, and each failing
//! alone.

use super::*;
use crate::cluster::ApiMethod;
use crate::cluster::permissions::needed;
use crate::cluster::sandbox_api_version::{SANDBOX_GROUP, no_known_version_message};
use crate::cluster::testing::{ScriptedCluster, ScriptedReply};
use crate::config::{Backend, EgressMode};
use crate::error::Error;
use serde_json::{Value, json};

const NS: &str = "paperclip-acme";

fn groups(versions: &[&str]) -> Value {
    let versions: Vec<Value> = versions.iter().map(|v| json!({"version": v})).collect();
    json!({"groups": [{"name": "apps"}, {"name": SANDBOX_GROUP, "versions": versions}]})
}

/// A cluster where every check passes: the Sandbox API served, every review granted, the
/// tenant namespace present.
fn healthy() -> ScriptedCluster {
    ScriptedCluster::new()
        .script(
            ApiMethod::GetApiVersions,
            vec![ScriptedReply::Returns(groups(&["v1beta1", "v1alpha1"]))],
        )
        .script(
            ApiMethod::ReadNamespace,
            vec![ScriptedReply::Returns(
                json!({"metadata": {"name": NS}, "status": {"phase": "Active"}}),
            )],
        )
}

fn throws(code: u16, message: &str) -> Vec<ScriptedReply> {
    vec![ScriptedReply::Throws(Error::new(code, message))]
}

async fn run(cluster: &ScriptedCluster, backend: Backend, egress: EgressMode) -> Report {
    cluster_checks(cluster, backend, egress, NS).await
}

fn asked(cluster: &ScriptedCluster) -> Vec<String> {
    cluster
        .calls()
        .iter()
        .filter(|c| c.method == ApiMethod::CreateSelfSubjectAccessReview)
        .map(|c| {
            let a = &c.args["body"]["spec"]["resourceAttributes"];
            format!(
                "{} {}",
                a["verb"].as_str().unwrap_or("url"),
                a["resource"].as_str().unwrap_or("")
            )
        })
        .collect()
}

#[tokio::test]
async fn a_healthy_cluster_passes_every_check_on_its_own_line() {
    let cluster = healthy();
    let report = run(&cluster, Backend::SandboxCr, EgressMode::Standard).await;
    let count = needed(Backend::SandboxCr, EgressMode::Standard).len();
    assert_eq!(
        report.lines,
        [
            "Sandbox API agents.x-k8s.io: served in v1beta1, v1alpha1; leases use v1beta1."
                .to_string(),
            format!("Permissions: all {count} the config needs are granted."),
            "Tenant namespace paperclip-acme: exists.".to_string(),
        ]
    );
    assert_eq!(report.failed(), 0);
    assert_eq!(report.checks.len(), count + 2);
    assert_eq!(
        report.checks[0].to_json(),
        json!({"check": "sandboxApi", "ok": true, "message": report.lines[0],
            "version": "v1beta1", "group": SANDBOX_GROUP, "served": ["v1beta1", "v1alpha1"]})
    );
    let exec = report
        .checks
        .iter()
        .find(|c| c.details.get("subresource") == Some(&json!("exec")))
        .unwrap();
    assert_eq!(
        exec.to_json(),
        json!({"check": "permission", "ok": true,
            "message": "create pods/exec in namespace paperclip-acme", "verb": "create",
            "group": "", "resource": "pods", "allowed": true, "subresource": "exec",
            "namespace": NS})
    );
    assert!(asked(&cluster).contains(&"watch sandboxes".to_string()));
}

#[tokio::test]
async fn the_job_backend_needs_no_sandbox_api_and_no_exec() {
    let cluster = healthy();
    let report = run(&cluster, Backend::Job, EgressMode::Cilium).await;
    assert_eq!(report.lines[0], SANDBOX_API_NOT_USED_BY_JOBS);
    assert_eq!(report.failed(), 0);
    assert!(
        !cluster
            .calls()
            .iter()
            .any(|c| c.method == ApiMethod::GetApiVersions)
    );
    let asked = asked(&cluster);
    assert!(asked.contains(&"create jobs".to_string()));
    assert!(asked.contains(&"create ciliumnetworkpolicies".to_string()));
    assert!(
        !asked
            .iter()
            .any(|a| a.contains("sandboxes") || a.contains("exec"))
    );
}

#[tokio::test]
async fn a_cluster_without_the_crds_is_named() {
    let cluster = healthy().script(
        ApiMethod::GetApiVersions,
        vec![ScriptedReply::Returns(
            json!({"groups": [{"name": "apps"}]}),
        )],
    );
    let report = run(&cluster, Backend::SandboxCr, EgressMode::Standard).await;
    assert_eq!(
        report.lines[0],
        "Sandbox API agents.x-k8s.io: not served, so the agent-sandbox CRDs are not installed on this cluster. Install kubernetes-sigs/agent-sandbox (v1.0.x), or set backend: \"job\"."
    );
    assert_eq!(report.failed(), 1);

    let cluster = healthy().script(
        ApiMethod::GetApiVersions,
        vec![ScriptedReply::Returns(groups(&["v2"]))],
    );
    let report = run(&cluster, Backend::SandboxCr, EgressMode::Standard).await;
    assert_eq!(report.lines[0], no_known_version_message(&["v2".into()]));
    assert_eq!(report.failed(), 1);

    let cluster = healthy().script(
        ApiMethod::GetApiVersions,
        throws(403, "HTTP-Code: 403\nMessage: forbidden"),
    );
    let report = run(&cluster, Backend::SandboxCr, EgressMode::Standard).await;
    assert_eq!(
        report.lines[0],
        "Sandbox API agents.x-k8s.io: could not be discovered: HTTP-Code: 403 Message: forbidden"
    );
    assert_eq!(
        report.checks[0].details["error"],
        "HTTP-Code: 403\nMessage: forbidden"
    );
    assert_eq!(report.failed(), 1);
}

#[tokio::test]
async fn each_missing_permission_is_named() {
    let cluster = healthy().denying(&["create pods/exec", "get /apis"]);
    let report = run(&cluster, Backend::SandboxCr, EgressMode::Standard).await;
    let count = needed(Backend::SandboxCr, EgressMode::Standard).len();
    assert_eq!(report.failed(), 2);
    assert_eq!(
        report.lines[1..4],
        [
            format!("Permissions: {} of {count} the config needs are granted; each one missing follows.", count - 2),
            "Permission missing: create pods/exec in namespace paperclip-acme, to execute, file sync and the login terminal (a websocket: API servers from 1.30 authorize it as create, older ones as get).".to_string(),
            "Permission missing: get /apis cluster-wide, to discover which Sandbox API version the cluster serves (every user has it by default).".to_string(),
        ]
    );
    let denied: Vec<&Check> = report.checks.iter().filter(|c| !c.ok).collect();
    assert_eq!(denied[0].details["allowed"], false);
    assert_eq!(denied[0].message, report.lines[2]);
}

#[tokio::test]
async fn reviews_the_server_refuses_are_reported_once() {
    let cluster = healthy().script(
        ApiMethod::CreateSelfSubjectAccessReview,
        throws(403, "HTTP-Code: 403\nMessage: no reviews"),
    );
    let report = run(&cluster, Backend::SandboxCr, EgressMode::Standard).await;
    let count = needed(Backend::SandboxCr, EgressMode::Standard).len();
    assert_eq!(
        report.lines[1..3],
        [
            format!(
                "Permissions: 0 of {count} the config needs are granted; each one missing follows."
            ),
            format!(
                "Permissions: {count} could not be checked: HTTP-Code: 403 Message: no reviews"
            ),
        ]
    );
    assert_eq!(report.failed(), count);
    // The tenant namespace exists, so the unknown create verdict does not matter.
    assert_eq!(report.lines[3], "Tenant namespace paperclip-acme: exists.");
}

#[tokio::test]
async fn the_tenant_namespace_present_creatable_or_not() {
    let missing = || healthy().script(ApiMethod::ReadNamespace, throws(404, "nf"));
    let report = run(&missing(), Backend::SandboxCr, EgressMode::Standard).await;
    assert_eq!(
        report.lines.last().unwrap(),
        "Tenant namespace paperclip-acme: does not exist yet; the first lease creates it."
    );
    assert_eq!(report.failed(), 0);
    assert_eq!(report.checks.last().unwrap().details["exists"], false);

    let cluster = missing().denying(&["create namespaces"]);
    let report = run(&cluster, Backend::SandboxCr, EgressMode::Standard).await;
    assert_eq!(
        report.lines.last().unwrap(),
        "Tenant namespace paperclip-acme: does not exist, and these credentials may not create it; create it, or grant create on namespaces."
    );
    assert_eq!(report.failed(), 2, "the namespace and the permission");

    let cluster = healthy().script(
        ApiMethod::ReadNamespace,
        vec![ScriptedReply::Returns(
            json!({"status": {"phase": "Terminating"}}),
        )],
    );
    let report = run(&cluster, Backend::SandboxCr, EgressMode::Standard).await;
    assert_eq!(
        report.lines.last().unwrap(),
        "Tenant namespace paperclip-acme: is being deleted; leases fail until it is gone, then the next lease creates it again."
    );
    assert_eq!(report.failed(), 1);

    let cluster = healthy().script(ApiMethod::ReadNamespace, throws(500, "etcd down"));
    let report = run(&cluster, Backend::SandboxCr, EgressMode::Standard).await;
    assert_eq!(
        report.lines.last().unwrap(),
        "Tenant namespace paperclip-acme: could not be read: etcd down"
    );
    assert_eq!(report.failed(), 1);
}
