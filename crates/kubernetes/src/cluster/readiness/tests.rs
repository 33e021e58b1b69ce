//! The ready-wait's unit tests on the scripted cluster and the manual clock: the original's
//! judgement (Ready, Failed, Terminating, API errors, the timeout) over a Sandbox that cannot
//! be watched (its poll, unchanged), then the watches, the pod's failures and the timers.

use serde_json::{Value, json};

use super::*;
use crate::cluster::ApiMethod;
use crate::cluster::WorkloadPhase;
use crate::cluster::testing::{ManualClock, ScriptedCluster, ScriptedReply, ScriptedWatch};
use crate::error::Error;

pub(super) const NS: &str = "paperclip-acme";
pub(super) const NAME: &str = "pc-01";

pub(super) fn sandbox_returning(bodies: Vec<Value>) -> ScriptedCluster {
    let replies = bodies.into_iter().map(ScriptedReply::Returns).collect();
    ScriptedCluster::new().script(ApiMethod::GetNamespacedCustomObject, replies)
}

async fn wait(
    cluster: &ScriptedCluster,
    clock: &ManualClock,
    options: PollOptions,
) -> Result<SandboxStatus, Error> {
    let version = SandboxApiVersion::V1alpha1;
    wait_for_sandbox_ready(cluster, clock, version, NS, NAME, options).await
}

#[tokio::test]
async fn failed_phase_names_the_failed_condition() {
    let cluster = sandbox_returning(vec![json!({"status": {"phase": "Failed",
        "conditions": [{"type": "Failed", "reason": "OOMKilled", "message": "out of memory"}]}})]);
    let err = wait(&cluster, &ManualClock::new(), PollOptions::default())
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Sandbox paperclip-acme/pc-01 failed: OOMKilled \u{2014} out of memory"
    );
    assert_eq!(err.js_name(), "Error");
}

#[tokio::test]
async fn failure_without_details_says_unknown_reason() {
    let cluster = sandbox_returning(vec![json!({"status": {"phase": "Failed"}})]);
    let err = wait(&cluster, &ManualClock::new(), PollOptions::default())
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Sandbox paperclip-acme/pc-01 failed: unknown reason \u{2014} "
    );
}

#[tokio::test]
async fn failed_phase_falls_back_to_a_failed_ready_condition() {
    let cluster = sandbox_returning(vec![json!({"status": {"phase": "Failed",
        "conditions": [{"type": "Ready", "status": "False", "reason": "PodFailed", "message": "exit 1"}]}})]);
    let err = wait(&cluster, &ManualClock::new(), PollOptions::default())
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Sandbox paperclip-acme/pc-01 failed: PodFailed \u{2014} exit 1"
    );
}

#[tokio::test]
async fn a_failed_ready_condition_alone_keeps_waiting() {
    // Its status is "False", so it never meets the `status === "True"` failure test.
    let cluster = sandbox_returning(vec![json!({"status": {
        "conditions": [{"type": "Ready", "status": "False", "reason": "PodFailed"}]}})]);
    let options = PollOptions {
        timeout_ms: 3000,
        poll_ms: 1000,
    };
    let err = wait(&cluster, &ManualClock::new(), options)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::SandboxReadyTimeout { .. }));
}

#[tokio::test]
async fn terminating_fails_fast() {
    let cluster = sandbox_returning(vec![json!({"status": {"phase": "Terminating"}})]);
    let err = wait(&cluster, &ManualClock::new(), PollOptions::default())
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Sandbox paperclip-acme/pc-01 is Terminating \u{2014} cannot wait for Ready"
    );
    assert_eq!(cluster.calls().len(), 1);
}

#[tokio::test]
async fn times_out_after_polling_on_the_clock() {
    let cluster = sandbox_returning(vec![json!({"status": {"phase": "Pending"}})]);
    let clock = ManualClock::new();
    let options = PollOptions {
        timeout_ms: 5000,
        poll_ms: 2000,
    };
    let err = wait(&cluster, &clock, options).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "Sandbox paperclip-acme/pc-01 did not reach Ready phase within 5000ms"
    );
    assert_eq!(err.js_name(), "SandboxCrTimeoutError");
    assert_eq!(cluster.calls().len(), 3, "polls at 0, 2000 and 4000 ms");
    assert_eq!(clock.sleeps(), vec![2000, 2000, 2000]);
}

#[tokio::test]
async fn polls_until_ready() {
    let cluster = sandbox_returning(vec![
        json!({"status": {"phase": "Pending"}}),
        json!({"status": {"phase": "Ready"}}),
    ]);
    let status = wait(&cluster, &ManualClock::new(), PollOptions::default())
        .await
        .unwrap();
    assert_eq!(status.phase, WorkloadPhase::Running);
    assert_eq!(cluster.calls().len(), 2);
}

#[tokio::test]
async fn api_errors_propagate_without_retry() {
    let cluster = ScriptedCluster::new().script(
        ApiMethod::GetNamespacedCustomObject,
        vec![ScriptedReply::Throws(Error::new(404, "not found"))],
    );
    let err = wait(&cluster, &ManualClock::new(), PollOptions::default())
        .await
        .unwrap_err();
    assert!(err.is_not_found());
    assert_eq!(cluster.calls().len(), 1);
}

#[tokio::test]
async fn an_api_server_out_of_reach_is_waited_out_within_the_wait() {
    // A restart: refused, then reset, then the Sandbox Ready (issue #38).
    let cluster = ScriptedCluster::new().script(
        ApiMethod::GetNamespacedCustomObject,
        vec![
            ScriptedReply::Throws(Error::unanswered("connect: connection refused")),
            ScriptedReply::Throws(Error::unanswered("connection reset by peer")),
            ScriptedReply::Returns(ready_cr("7")),
        ],
    );
    let status = wait(&cluster, &ManualClock::new(), PollOptions::default())
        .await
        .unwrap();
    assert_eq!(status.phase, WorkloadPhase::Pending);
    assert_eq!(cluster.calls().len(), 3);
}

#[tokio::test]
async fn an_api_server_out_of_reach_until_the_deadline_is_named_by_its_error() {
    let cluster = ScriptedCluster::new().script(
        ApiMethod::GetNamespacedCustomObject,
        (0..1000)
            .map(|_| ScriptedReply::Throws(Error::unanswered("connect: connection refused")))
            .collect(),
    );
    let err = wait(&cluster, &ManualClock::new(), PollOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.http_status(), None);
    assert!(err.to_string().contains("connection refused"), "{err}");
}

// ---- helpers of the watch and pod tests ------------------------------------------------------

/// 2026-01-01T00:00:00Z: when the scripted Sandboxes and pods are created.
pub(super) const T0: u64 = 1_767_225_600_000;

pub(super) fn iso(unix_ms: u64) -> String {
    js_compat::date::to_iso_string(unix_ms as f64).expect("a valid time")
}

/// A Sandbox the controller has seen, not Ready yet.
pub(super) fn pending_cr(resource_version: &str) -> Value {
    json!({"metadata": {"name": NAME, "namespace": NS, "resourceVersion": resource_version,
        "creationTimestamp": iso(T0)},
        "status": {"conditions": [{"type": "Ready", "status": "False",
            "reason": "DependenciesNotReady", "message": "Pod exists with phase: Pending"}]}})
}

/// The same Sandbox, Ready (conditions only, as agent-sandbox v1beta1 reports it).
pub(super) fn ready_cr(resource_version: &str) -> Value {
    json!({"metadata": {"name": NAME, "namespace": NS, "resourceVersion": resource_version,
        "creationTimestamp": iso(T0)},
        "status": {"conditions": [{"type": "Ready", "status": "True",
            "reason": "DependenciesReady"}]}})
}

/// A cluster whose Sandbox GETs answer `gets` in turn, and whose watches are scripted.
pub(super) fn watching(
    gets: Vec<Value>,
    sandboxes: Vec<ScriptedWatch>,
    pods: Vec<ScriptedWatch>,
) -> ScriptedCluster {
    sandbox_returning(gets)
        .script_watch(ApiMethod::WatchNamespacedCustomObject, sandboxes)
        .script_watch(ApiMethod::WatchNamespacedPod, pods)
}

/// The wait on `cluster` with `timeout_ms` and `limits`.
pub(super) async fn wait_within_ms(
    cluster: &ScriptedCluster,
    clock: &ManualClock,
    timeout_ms: u64,
    limits: ReadinessLimits,
) -> Result<SandboxStatus, Error> {
    let options = PollOptions::with_timeout(timeout_ms);
    let version = SandboxApiVersion::V1beta1;
    wait_for_sandbox_ready_with(cluster, clock, version, NS, NAME, options, limits).await
}

/// The watch requests made, as `(method, args)`.
pub(super) fn watches(cluster: &ScriptedCluster) -> Vec<(ApiMethod, Value)> {
    cluster
        .watch_calls()
        .into_iter()
        .map(|call| (call.method, call.args))
        .collect()
}

#[test]
fn the_grace_comes_from_unschedulable_grace_sec_60_s_without_it() {
    use crate::config::{KubernetesConfig, Normalized};
    let parse = |extra: Value| {
        let mut raw = json!({"inCluster": true});
        raw.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        KubernetesConfig::parse(&raw)
    };
    let plain = parse(json!({})).unwrap();
    assert_eq!(ReadinessLimits::of(&plain).unschedulable_grace_ms, 60_000);
    let normalized = serde_json::to_value(Normalized(&plain)).unwrap();
    assert!(
        normalized.get("unschedulableGraceSec").is_none(),
        "{normalized}"
    );
    let set = parse(json!({"unschedulableGraceSec": 5})).unwrap();
    assert_eq!(ReadinessLimits::of(&set).unschedulable_grace_ms, 5_000);
    let normalized = serde_json::to_value(Normalized(&set)).unwrap();
    assert_eq!(normalized["unschedulableGraceSec"], 5);
    for (value, message) in [
        (json!(0), "Number must be greater than or equal to 1"),
        (json!(1.5), "Expected integer, received float"),
        (json!("60"), "Expected number, received string"),
    ] {
        let issues = parse(json!({"unschedulableGraceSec": value}))
            .unwrap_err()
            .messages();
        assert_eq!(issues, vec![message.to_string()]);
    }
}
