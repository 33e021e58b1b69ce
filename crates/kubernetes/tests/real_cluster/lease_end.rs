//! Issue #38 on the real node: a lease's Sandbox carries its own end (`spec.shutdownTime`,
//! `shutdownPolicy: Delete`), which the real agent-sandbox controller (v1.0.1) honours. An
//! abandoned lease is deleted by the controller, its pod with it and its Secret and egress
//! policies by kube-controller-manager's garbage collector; a lease in use has its end moved
//! forward by its hooks and outlives the end it was created with; a lease made before the end
//! existed keeps working and gets one. Every wait is a listing, bounded (`until`).

use std::time::{SystemTime, UNIX_EPOCH};

use kubernetes::KubernetesProvider;
use sandbox_core::NullSink;
use serde_json::{Value, json};

use crate::harness::RealLease;
use crate::support::{get, items, merge_patch, owned_by, until};

/// A short `podActivityDeadlineSec` (the config's minimum is 1 s; 20 s keeps the test short
/// and the controller's reaction well inside it), with a 10 s acquire bound.
fn short_idle() -> Value {
    json!({"podActivityDeadlineSec": 20, "timeoutMs": 10_000})
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

fn sandbox_path(lease: &RealLease) -> String {
    let version = lease.lease["metadata"]["sandboxApiVersion"]
        .as_str()
        .unwrap_or("v1beta1");
    format!(
        "/apis/agents.x-k8s.io/{version}/namespaces/{}/sandboxes/{}",
        lease.namespace, lease.name
    )
}

async fn sandbox(lease: &RealLease) -> Value {
    let (status, sandbox) = get(&lease.admin, &sandbox_path(lease)).await;
    assert_eq!(status, 200, "{sandbox}");
    sandbox
}

fn shutdown_ms(sandbox: &Value) -> u64 {
    let text = sandbox["spec"]["shutdownTime"]
        .as_str()
        .unwrap_or_else(|| panic!("no shutdownTime: {sandbox}"));
    js_compat::date::parse(text).unwrap() as u64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abandoned_lease_is_deleted_by_the_controller_with_everything_it_made() {
    let lease = RealLease::acquire("lease-end-abandoned", "sandbox-cr", short_idle()).await;
    let sandbox = sandbox(&lease).await;
    assert_eq!(sandbox["spec"]["shutdownPolicy"], "Delete", "{sandbox}");
    // The acquire's 10 s bound and 1.5 × 20 s after it began (rounded up to the second).
    let end = shutdown_ms(&sandbox);
    assert!(end <= now_ms() + 41_000, "{sandbox}");
    let uid = sandbox["metadata"]["uid"].as_str().unwrap().to_string();
    let ns = &lease.namespace;
    // What the lease made is there and owned by the Sandbox: its pod, its Secret, its policies.
    let (_, secrets) = get(&lease.admin, &format!("/api/v1/namespaces/{ns}/secrets")).await;
    assert_eq!(owned_by(&secrets, &uid), [format!("{}-env", lease.name)]);
    let policies = format!("/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies");
    let (_, policies) = get(&lease.admin, &policies).await;
    assert!(!owned_by(&policies, &uid).is_empty(), "{policies}");
    until("the Sandbox's pod to run", || async {
        let (_, pods) = get(&lease.admin, &format!("/api/v1/namespaces/{ns}/pods")).await;
        (!owned_by(&pods, &uid).is_empty()).then_some(())
    })
    .await;
    // Nobody releases it (its worker is gone). The controller deletes it at its end, then the
    // garbage collector what it owned: nothing of it is left, by listing.
    lease.check_gone().await;
    assert!(now_ms() + 1_000 >= end, "gone before its end");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_in_use_outlives_the_end_it_was_made_with() {
    let lease = RealLease::acquire("lease-end-used", "sandbox-cr", short_idle()).await;
    let first_end = shutdown_ms(&sandbox(&lease).await);
    // Executes of 3 s each, back to back, until well past that end (and past a whole idle
    // deadline more): each one must run.
    let mut executes = 0;
    while now_ms() < first_end + 25_000 {
        let result = lease
            .execute(
                json!({"command": "sh", "args": ["-c", "sleep 3; echo ok"], "timeoutMs": 10_000}),
                &NullSink,
            )
            .await;
        assert_eq!(result["exitCode"], 0, "execute {executes}: {result}");
        assert_eq!(result["stdout"], "ok\n", "execute {executes}: {result}");
        executes += 1;
    }
    let sandbox = sandbox(&lease).await;
    assert!(shutdown_ms(&sandbox) > now_ms() + 20_000, "{sandbox}");
    // Released, it goes at once with everything it made.
    assert_eq!(
        lease
            .provider
            .release_lease(&lease.lease_params(), &NullSink)
            .await
            .unwrap(),
        None
    );
    lease.check_gone().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_made_without_an_end_keeps_working_and_gets_one() {
    let lease = RealLease::acquire("lease-end-old", "sandbox-cr", json!({})).await;
    // What a lease acquired before issue #38 looks like: no lifecycle fields (the CRD then reads
    // `shutdownPolicy` back as its default, `Retain`).
    let strip = json!({"spec": {"shutdownTime": null, "shutdownPolicy": null}});
    let (status, stripped) = merge_patch(&lease.admin, &sandbox_path(&lease), &strip).await;
    assert_eq!(status, 200, "{stripped}");
    assert!(stripped["spec"].get("shutdownTime").is_none(), "{stripped}");
    // A new worker (the host restarted it) executes in it as before, and gives it an end.
    let worker = KubernetesProvider::new();
    let result = worker
        .execute(
            &lease.exec_params(json!({"command": "sh", "args": ["-c", "echo still"]})),
            &NullSink,
        )
        .await
        .unwrap_or_else(|e| panic!("execute refused: {}", e.message));
    assert_eq!(result["stdout"], "still\n", "{result}");
    let sandbox = sandbox(&lease).await;
    assert_eq!(sandbox["spec"]["shutdownPolicy"], "Delete", "{sandbox}");
    assert!(shutdown_ms(&sandbox) > now_ms() + 3_600_000, "{sandbox}");
    let pods = items(
        &get(
            &lease.admin,
            &format!("/api/v1/namespaces/{}/pods", lease.namespace),
        )
        .await
        .1,
    );
    assert_eq!(pods.len(), 1, "the same pod, not a new one");
    lease.destroy_and_check_gone().await;
}
