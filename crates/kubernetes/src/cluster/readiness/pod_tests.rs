//! The ready-wait reading the pod: each container state that fails it at once (with its
//! message, verbatim), the image pull counted twice, the lease's own Secret forgiven in the
//! startup window, and the unschedulable grace.

use serde_json::json;

use super::tests::{NS, T0, iso, pending_cr, ready_cr, wait_within_ms, watches, watching};
use super::*;
use crate::cluster::WatchEvent;
use crate::cluster::testing::{ManualClock, ScriptedWatch};

const IMAGE: &str = "ghcr.io/acme/agent-runtime-claude:v2";

/// The Sandbox's pod (created at [`T0`]) with its `agent` container in `state`.
fn pod_in(state: Value) -> Value {
    pod_with(
        state,
        json!({}),
        json!([{"type": "PodScheduled", "status": "True"}]),
    )
}

fn pod_with(state: Value, last_state: Value, conditions: Value) -> Value {
    json!({"metadata": {"name": "pc-01", "namespace": NS, "resourceVersion": "30",
            "creationTimestamp": iso(T0), "labels": {"paperclip.io/run-id": "pc-01"}},
        "spec": {"containers": [{"name": "agent", "image": IMAGE}]},
        "status": {"phase": "Pending", "conditions": conditions,
            "containerStatuses": [{"name": "agent", "image": IMAGE, "ready": false,
                "restartCount": 0, "state": state, "lastState": last_state}]}})
}

fn waiting(reason: &str, message: &str) -> Value {
    json!({"waiting": {"reason": reason, "message": message}})
}

/// The wait over a Sandbox that stays Pending while its pod goes through `pods`.
async fn wait_over(pods: Vec<Value>, clock: &ManualClock, limits: ReadinessLimits) -> Error {
    let events = pods.into_iter().map(WatchEvent::Modified).collect();
    let cluster = watching(
        vec![pending_cr("1")],
        vec![ScriptedWatch::open(vec![])],
        vec![ScriptedWatch::open(events)],
    );
    let err = wait_within_ms(&cluster, clock, 300_000, limits)
        .await
        .unwrap_err();
    let pod_watch = json!({"namespace": NS, "fieldSelector": "metadata.name=pc-01",
        "timeoutSeconds": 290});
    assert!(
        watches(&cluster).contains(&(ApiMethod::WatchNamespacedPod, pod_watch)),
        "{:?}",
        watches(&cluster)
    );
    err
}

#[tokio::test]
async fn each_container_failure_fails_the_wait_at_once_with_its_message() {
    let image = |reason: &str, message: &str| {
        format!(
            "Sandbox paperclip-acme/pc-01 cannot start: the node cannot pull image {IMAGE} for container agent ({reason}: {message}); check the image reference, that the node can reach its registry, and imagePullSecrets."
        )
    };
    let create = |reason: &str, message: &str| {
        format!(
            "Sandbox paperclip-acme/pc-01 cannot start: the kubelet cannot create container agent from image {IMAGE} ({reason}: {message})."
        )
    };
    let crash = |reason: &str, message: &str| {
        format!(
            "Sandbox paperclip-acme/pc-01 cannot start: container agent of image {IMAGE} does not stay up ({reason}: {message}); the image must provide /usr/bin/tini and /bin/sh."
        )
    };
    let pull =
        "Back-off pulling image \"ghcr.io/acme/agent-runtime-claude:v2\": ErrImagePull: not found";
    let cases = [
        ("ImagePullBackOff", pull, image("ImagePullBackOff", pull)),
        (
            "InvalidImageName",
            "Failed to apply default image tag \"Ghcr.io/x\"",
            image(
                "InvalidImageName",
                "Failed to apply default image tag \"Ghcr.io/x\"",
            ),
        ),
        (
            "CreateContainerConfigError",
            "configmap \"extra\" not found",
            create(
                "CreateContainerConfigError",
                "configmap \"extra\" not found",
            ),
        ),
        (
            "CreateContainerError",
            "failed to generate container spec",
            create("CreateContainerError", "failed to generate container spec"),
        ),
        (
            "RunContainerError",
            "failed to start containerd task",
            crash("RunContainerError", "failed to start containerd task"),
        ),
        (
            "CrashLoopBackOff",
            "back-off 10s restarting failed container=agent",
            crash(
                "CrashLoopBackOff",
                "back-off 10s restarting failed container=agent",
            ),
        ),
    ];
    for (reason, message, expected) in cases {
        let clock = ManualClock::at_unix_ms(T0 + 2_000);
        let err = wait_over(
            vec![pod_in(waiting(reason, message))],
            &clock,
            Default::default(),
        )
        .await;
        assert_eq!(err.to_string(), expected, "{reason}");
        assert_eq!(clock.now_ms(), 0, "{reason} fails at once");
    }
}

#[tokio::test]
async fn a_crash_loop_names_how_the_container_last_ended() {
    let last = json!({"terminated": {"reason": "StartError", "exitCode": 128,
        "message": "exec: \"/usr/bin/tini\": stat /usr/bin/tini: no such file or directory"}});
    let pod = pod_with(
        waiting(
            "CrashLoopBackOff",
            "back-off 10s restarting failed container=agent",
        ),
        last,
        json!([]),
    );
    let err = wait_over(vec![pod], &ManualClock::new(), Default::default()).await;
    assert_eq!(
        err.to_string(),
        format!(
            "Sandbox paperclip-acme/pc-01 cannot start: container agent of image {IMAGE} does not stay up (CrashLoopBackOff: last exit StartError (exit code 128): exec: \"/usr/bin/tini\": stat /usr/bin/tini: no such file or directory; back-off 10s restarting failed container=agent); the image must provide /usr/bin/tini and /bin/sh."
        )
    );
}

#[tokio::test]
async fn a_pull_fails_the_wait_the_second_time_it_fails() {
    let failed = || {
        pod_in(waiting(
            "ErrImagePull",
            "dial tcp 127.0.0.1:443: connect: connection refused",
        ))
    };
    let creating = pod_in(waiting("ContainerCreating", ""));
    // One failed pull, rewritten with the same reason: not yet.
    let clock = ManualClock::new();
    let err = wait_over(vec![failed(), failed()], &clock, Default::default()).await;
    assert!(matches!(err, Error::SandboxReadyTimeout { .. }), "{err}");
    // Failed, tried again, failed again.
    let clock = ManualClock::new();
    let err = wait_over(
        vec![failed(), creating, failed()],
        &clock,
        Default::default(),
    )
    .await;
    assert_eq!(
        err.to_string(),
        format!(
            "Sandbox paperclip-acme/pc-01 cannot start: the node cannot pull image {IMAGE} for container agent (ErrImagePull: dial tcp 127.0.0.1:443: connect: connection refused); check the image reference, that the node can reach its registry, and imagePullSecrets."
        )
    );
    assert_eq!(clock.now_ms(), 0);
}

#[tokio::test]
async fn the_leases_own_secret_is_forgiven_in_the_startup_window() {
    let message = "secret \"pc-01-env\" not found";
    let pod = pod_in(waiting("CreateContainerConfigError", message));
    let clock = ManualClock::at_unix_ms(T0 + 1_000);
    let err = wait_over(vec![pod.clone()], &clock, Default::default()).await;
    assert_eq!(
        err.to_string(),
        format!(
            "Sandbox paperclip-acme/pc-01 cannot start: the kubelet cannot create container agent from image {IMAGE} (CreateContainerConfigError: {message})."
        )
    );
    assert_eq!(clock.now_ms(), 29_000, "30 s after the pod's creation");
    // Once the kubelet tries again and the Secret is there, nothing fails.
    let running = pod_in(json!({"running": {"startedAt": iso(T0 + 12_000)}}));
    let clock = ManualClock::at_unix_ms(T0 + 1_000);
    let err = wait_over(vec![pod, running], &clock, Default::default()).await;
    assert!(matches!(err, Error::SandboxReadyTimeout { .. }), "{err}");
}

fn unschedulable_pod(since: u64) -> Value {
    let message = "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.";
    pod_with(
        json!({}),
        json!({}),
        json!([{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
            "message": message, "lastTransitionTime": iso(since)}]),
    )
}

#[tokio::test]
async fn an_unschedulable_pod_fails_after_the_grace_counted_from_its_transition() {
    let expected = |grace: u64| {
        format!(
            "Sandbox paperclip-acme/pc-01 cannot start: its pod has been unschedulable for more than {grace}s (0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.); free or add node capacity, lower defaultResources, or raise unschedulableGraceSec."
        )
    };
    // Unschedulable since T0, the wait from T0 + 10 s: 50 s more with the default 60 s grace.
    let clock = ManualClock::at_unix_ms(T0 + 10_000);
    let err = wait_over(vec![unschedulable_pod(T0)], &clock, Default::default()).await;
    assert_eq!(err.to_string(), expected(60));
    assert_eq!(clock.now_ms(), 50_000);
    // A grace already over when the wait sees it: at once.
    let clock = ManualClock::at_unix_ms(T0 + 10_000);
    let short = ReadinessLimits {
        unschedulable_grace_ms: 5_000,
    };
    let err = wait_over(vec![unschedulable_pod(T0)], &clock, short).await;
    assert_eq!(err.to_string(), expected(5));
    assert_eq!(clock.now_ms(), 0);
}

#[tokio::test]
async fn a_pod_scheduled_in_the_grace_keeps_the_wait_going() {
    let scheduled = pod_in(waiting("ContainerCreating", ""));
    let clock = ManualClock::at_unix_ms(T0);
    let err = wait_over(
        vec![unschedulable_pod(T0), scheduled],
        &clock,
        Default::default(),
    )
    .await;
    assert!(matches!(err, Error::SandboxReadyTimeout { .. }), "{err}");
    assert_eq!(clock.now_ms(), 300_000);
}

#[tokio::test]
async fn a_terminating_or_deleted_pod_is_not_judged() {
    let mut old = pod_in(waiting("CrashLoopBackOff", "back-off"));
    old["metadata"]["deletionTimestamp"] = json!(iso(T0));
    let clock = ManualClock::new();
    let err = wait_over(vec![old], &clock, Default::default()).await;
    assert!(matches!(err, Error::SandboxReadyTimeout { .. }), "{err}");

    let unschedulable = unschedulable_pod(T0);
    let cluster = watching(
        vec![pending_cr("1")],
        vec![ScriptedWatch::open(vec![])],
        vec![ScriptedWatch::open(vec![
            WatchEvent::Added(unschedulable.clone()),
            WatchEvent::Deleted(unschedulable),
        ])],
    );
    let clock = ManualClock::at_unix_ms(T0);
    let err = wait_within_ms(&cluster, &clock, 100_000, Default::default())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::SandboxReadyTimeout { .. }), "{err}");
}

#[tokio::test]
async fn ready_wins_over_a_pod_event_and_a_refused_pod_watch_changes_nothing() {
    let cluster = watching(
        vec![pending_cr("1")],
        vec![ScriptedWatch::open(vec![WatchEvent::Modified(ready_cr(
            "2",
        ))])],
        vec![ScriptedWatch::Refused(Error::new(403, "pods is forbidden"))],
    );
    wait_within_ms(&cluster, &ManualClock::new(), 60_000, Default::default())
        .await
        .unwrap();
    let cluster = watching(
        vec![pending_cr("1")],
        vec![ScriptedWatch::open(vec![])],
        vec![ScriptedWatch::Refused(Error::new(403, "pods is forbidden"))],
    );
    let err = wait_within_ms(&cluster, &ManualClock::new(), 9_000, Default::default())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::SandboxReadyTimeout { .. }), "{err}");
}

#[tokio::test]
async fn a_long_kubelet_message_is_bounded() {
    let long = "x".repeat(5_000);
    let err = wait_over(
        vec![pod_in(waiting("InvalidImageName", &long))],
        &ManualClock::new(),
        Default::default(),
    )
    .await;
    let text = err.to_string();
    assert!(text.contains(&format!("{}\u{2026})", "x".repeat(KUBELET_TEXT_MAX_CHARS))));
    assert!(text.len() < 1_000, "{}", text.len());
}
