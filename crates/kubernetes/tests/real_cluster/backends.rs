//! The Job backend, resume after the pod was deleted, and a pod that never becomes ready, on the
//! real node; each checks by listing that nothing of its lease is left.

use std::time::Duration;

use sandbox_core::NullSink;
use sandbox_core::poll::poll;
use serde_json::{Value, json};

use crate::harness::RealLease;
use crate::support::{delete, get};

/// acquire (a Job the real job controller runs to completion on the node) → execute (waits for
/// the Job and answers with its pod's log as stdout) → release (deletes the Job; its pod,
/// Secret and policy go by cascade) → destroy → nothing left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_backend_runs_to_completion_with_its_log() {
    let lease = RealLease::acquire("job", "job", json!({})).await;
    assert_eq!(lease.lease["metadata"]["backend"], "job", "{}", lease.lease);
    assert_eq!(lease.lease["metadata"]["nativeFileSyncUnsupported"], true);
    let (status, job) = get(
        &lease.admin,
        &format!(
            "/apis/batch/v1/namespaces/{}/jobs/{}",
            lease.namespace, lease.name
        ),
    )
    .await;
    assert_eq!(status, 200, "{job}");

    let result = lease.execute(json!({}), &NullSink).await;
    assert_eq!(result["exitCode"], 0, "{result}");
    assert_eq!(result["timedOut"], false, "{result}");
    assert!(
        result["stdout"]
            .as_str()
            .unwrap()
            .starts_with("paperclip-agent-shim: job pod ran (run "),
        "{result}"
    );
    assert_eq!(result["metadata"]["phase"], "Succeeded", "{result}");

    assert_eq!(
        lease
            .provider
            .release_lease(&lease.lease_params(), &NullSink)
            .await
            .unwrap(),
        None
    );
    lease.check_gone().await;
    lease.destroy_and_check_gone().await;
    // Destroyed twice: the 404s are absorbed.
    lease.destroy_and_check_gone().await;
}

/// The pod of a Sandbox deleted behind the provider's back: the real controller makes a new
/// one, and resume (which waits for the Sandbox to be Ready again and the pod Running) answers
/// with the new pod; execute runs there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_after_the_pod_was_deleted() {
    let lease = RealLease::acquire("resume", "sandbox-cr", json!({})).await;
    let first = lease.execute(json!({"command": "true"}), &NullSink).await;
    assert_eq!(first["exitCode"], 0, "{first}");
    let pod = first["metadata"]["podName"].as_str().unwrap().to_string();
    let pod_path = format!("/api/v1/namespaces/{}/pods/{pod}", lease.namespace);
    let (_, before) = get(&lease.admin, &pod_path).await;
    let old_uid = before["metadata"]["uid"].as_str().unwrap().to_string();

    let (status, body) = delete(&lease.admin, &pod_path).await;
    assert_eq!(status, 200, "{body}");
    // Until the old pod is gone (not merely terminating).
    poll("the deleted pod to be gone", Duration::from_secs(120))
        .every(Duration::from_millis(200))
        .until_async(|| async {
            let (status, pod) = get(&lease.admin, &pod_path).await;
            status == 404 || pod["metadata"]["uid"] != old_uid.as_str()
        })
        .await;

    let resumed = lease
        .provider
        .resume_lease(&lease.lease_params(), &NullSink)
        .await
        .unwrap_or_else(|e| panic!("resume refused: {}", e.message));
    assert_eq!(resumed["providerLeaseId"], lease.name.as_str(), "{resumed}");
    assert_eq!(resumed["metadata"]["resumedLease"], true, "{resumed}");
    assert_eq!(resumed["metadata"]["phase"], "Running", "{resumed}");
    let new_pod = resumed["metadata"]["podName"].as_str().unwrap().to_string();
    let (status, now) = get(
        &lease.admin,
        &format!("/api/v1/namespaces/{}/pods/{new_pod}", lease.namespace),
    )
    .await;
    assert_eq!(status, 200, "{now}");
    assert_ne!(now["metadata"]["uid"], old_uid.as_str(), "{now}");
    assert_eq!(lease.sh("echo back").await, "back\n");

    lease.destroy_and_check_gone().await;
    // Resumed after destroy: not resumable, and nothing is made again.
    let gone = lease
        .provider
        .resume_lease(&lease.lease_params(), &NullSink)
        .await
        .unwrap();
    assert_eq!(
        gone,
        json!({"providerLeaseId": null, "metadata": {"expired": true, "reason": "Sandbox CR no longer exists"}})
    );
    lease.check_gone().await;
}

/// An adapter image the node does not have (and cannot pull: no registry is reachable): the
/// pod never becomes ready (ErrImagePull, then ImagePullBackOff about 15 s later). An execute
/// whose `timeoutMs` ends before the kubelet's second try answers with the readiness timeout;
/// resume, within its 20 s wait, sees the back-off and answers not resumable with the kubelet's
/// reason (issue #37: `tests/real_cluster_readiness.rs` has the named failures); destroy leaves
/// nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_that_never_becomes_ready() {
    let lease = RealLease::acquire(
        "noimage",
        "sandbox-cr",
        json!({"adapters": [{"adapterType": "claude_local",
            "runtimeImage": "localhost/paperclip-test/not-there:1"}]}),
    )
    .await;
    let result = lease
        .provider
        .execute(
            &lease.exec_params(json!({"command": "true", "timeoutMs": 8000})),
            &NullSink,
        )
        .await;
    let result: Value = result.unwrap_or_else(|e| panic!("execute refused: {}", e.message));
    assert_eq!(result["timedOut"], true, "{result}");
    assert_eq!(result["exitCode"], Value::Null, "{result}");
    assert_eq!(
        result["stderr"], "Sandbox pod did not become Ready within 8000ms",
        "{result}"
    );
    let resumed = lease
        .provider
        .resume_lease(&lease.lease_params(), &NullSink)
        .await;
    let resumed = resumed.unwrap_or_else(|e| panic!("resume refused: {}", e.message));
    assert_eq!(resumed["providerLeaseId"], Value::Null, "{resumed}");
    assert_eq!(resumed["metadata"]["expired"], true, "{resumed}");
    let reason = resumed["metadata"]["reason"].as_str().unwrap_or_default();
    let named = format!(
        "Sandbox {}/{} cannot start: the node cannot pull image localhost/paperclip-test/not-there:1 for container agent (",
        lease.namespace, lease.name
    );
    assert!(reason.starts_with(&named), "{resumed}");
    lease.destroy_and_check_gone().await;
}
