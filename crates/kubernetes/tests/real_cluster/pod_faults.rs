//! Issue #38 item 6, on the real node: what a pod deleted under an execute and a worker killed
//! during one leave, and what the next call on the lease sees.
//!
//! - The lease's pod deleted while a command runs (an eviction): the result names the deletion
//!   (not the out-of-memory note of 137), and the next execute, sent at once, waits for the
//!   controller's new pod and runs there (it used to be refused with `container not found`
//!   and reported as timed out).
//! - An exec the API server refuses while the pod runs (credentials without `create pods/exec`):
//!   said at once, with the API server's words, and not as a timeout.
//! - A worker SIGKILLed while its command runs (a second process, this test binary run again as
//!   the child, with a provider of its own): the command runs on in the pod until a new worker
//!   resumes the lease, which ends it.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use kubernetes::KubernetesProvider;
use kubernetes::exec::exit_hints::{EXIT_137_HINT, pod_deleted_note};
use kubernetes::lease::left_commands::left_commands_ended_message;
use sandbox_core::poll::poll;
use sandbox_core::{LogLevel, NullSink};
use serde_json::{Value, json};

use crate::harness::{RealLease, RecordingSink};
use crate::node::node;
use crate::rbac_apply::{apply, bound_service_account, remove};
use crate::rbac_support::role_without;
use crate::support::{client, delete, get, post, unique, until};

/// A bound for one call on a loaded machine: a deletion's grace, the new pod, the answer.
const BOUND: Duration = Duration::from_secs(90);

/// The pod's `uid`, as the API server has it now (`None` when it is gone).
async fn uid_of(lease: &RealLease, pod: &str) -> Option<String> {
    let path = format!("/api/v1/namespaces/{}/pods/{pod}", lease.namespace);
    let (status, body) = get(&lease.admin, &path).await;
    (status == 200).then(|| body["metadata"]["uid"].as_str().unwrap().to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_deleted_under_a_command_is_named_and_the_next_execute_waits_for_the_new_pod() {
    let lease = RealLease::acquire("evicted", "sandbox-cr", json!({})).await;
    let ready = lease.execute(json!({"command": "true"}), &NullSink).await;
    assert_eq!(ready["exitCode"], 0, "{ready}");
    let pod = ready["metadata"]["podName"].as_str().unwrap().to_string();
    let old_uid = uid_of(&lease, &pod).await.expect("the pod exists");

    let started = Instant::now();
    let running = lease.execute(
        json!({"command": "sh", "args": ["-c", "touch /tmp/started; sleep 120"],
            "timeoutMs": 120_000}),
        &NullSink,
    );
    let evict = async {
        poll("the command to start", BOUND)
            .every(Duration::from_millis(200))
            .until_async(|| async {
                lease.sh("test -e /tmp/started && echo y || echo n").await == "y\n"
            })
            .await;
        let path = format!("/api/v1/namespaces/{}/pods/{pod}", lease.namespace);
        let (status, body) = delete(&lease.admin, &path).await;
        assert_eq!(status, 200, "{body}");
    };
    let (result, ()) = tokio::join!(running, evict);
    assert!(
        started.elapsed() < BOUND,
        "answered after {:?}",
        started.elapsed()
    );
    println!("the deleted pod's command: {result}");
    assert_eq!(result["timedOut"], false, "{result}");
    assert_eq!(result["signal"], Value::Null, "{result}");
    let note = pod_deleted_note(&lease.namespace, &pod);
    let stderr = result["stderr"].as_str().unwrap();
    assert!(!stderr.contains(EXIT_137_HINT), "{result}");
    match result["exitCode"].as_i64() {
        Some(code) => {
            assert!(matches!(code, 137 | 143), "{result}");
            assert!(stderr.ends_with(&format!("{note}\n")), "{result}");
        }
        None => assert_eq!(stderr, note, "{result}"),
    }

    // At once, while the controller is still bringing the new pod up.
    let next_started = Instant::now();
    let next = lease
        .execute(json!({"command": "echo next"}), &NullSink)
        .await;
    let took = next_started.elapsed();
    println!("the next execute answered after {took:?}: {next}");
    assert!(took < BOUND, "answered after {took:?}");
    assert_eq!(next["exitCode"], 0, "{next}");
    assert_eq!(next["timedOut"], false, "{next}");
    assert_eq!(next["stdout"], "next\n", "{next}");
    let new_pod = next["metadata"]["podName"].as_str().unwrap();
    let new_uid = uid_of(&lease, new_pod).await.expect("the new pod exists");
    assert_ne!(new_uid, old_uid, "ran on the new pod");

    lease.destroy_and_check_gone().await;
}

/// Set in the child process: the execute params it runs (and is killed in).
const CHILD_PARAMS: &str = "PAPERCLIP_REAL_NODE_CHILD_EXECUTE";
/// This test's name, as the child process is asked to run it.
const THIS_TEST: &str =
    "pod_faults::a_command_left_by_a_killed_worker_is_ended_when_a_new_worker_resumes";

/// The child's half: a worker of its own that starts the command and is killed in the middle.
async fn run_as_child(params: &str) {
    let params: Value = serde_json::from_str(params).unwrap();
    let provider = KubernetesProvider::new();
    let result = provider.execute(&params, &NullSink).await;
    // Only if the parent did not kill it first.
    panic!("the child's execute answered: {result:?}");
}

/// Every process command line in the agent container, one a line.
async fn processes(lease: &RealLease) -> String {
    lease
        .sh("for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done")
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_left_by_a_killed_worker_is_ended_when_a_new_worker_resumes() {
    if let Ok(params) = std::env::var(CHILD_PARAMS) {
        return run_as_child(&params).await;
    }
    let lease = RealLease::acquire("leftover", "sandbox-cr", json!({})).await;
    assert_eq!(lease.sh("echo ready").await, "ready\n");
    // A streaming execute whose output keeps coming, from a worker of its own.
    let params = lease.exec_params(json!({"command": "sh", "args": ["-c",
        "touch /tmp/child-started; while :; do echo tick; sleep 0.2; done & sleep 313"],
        "timeoutMs": 600_000}));
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([THIS_TEST, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_PARAMS, params.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    poll("the child's command to start", BOUND)
        .every(Duration::from_millis(200))
        .until_async(|| async {
            lease
                .sh("test -e /tmp/child-started && echo y || echo n")
                .await
                == "y\n"
        })
        .await;
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    // The dead worker's command runs on: nothing ended it.
    assert!(processes(&lease).await.contains("sleep 313"));

    // A new worker resumes the lease: it ends what other workers left.
    let worker = KubernetesProvider::new();
    let sink = RecordingSink::default();
    let started = Instant::now();
    let resumed = worker
        .resume_lease(&lease.lease_params(), &sink)
        .await
        .unwrap_or_else(|e| panic!("resume refused: {}", e.message));
    assert!(
        started.elapsed() < Duration::from_secs(25),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(resumed["providerLeaseId"], lease.name.as_str(), "{resumed}");
    let pod = resumed["metadata"]["podName"].as_str().unwrap();
    let logs = sink.logs.lock().unwrap().clone();
    assert!(
        logs.contains(&(
            LogLevel::Info,
            left_commands_ended_message(1, &lease.namespace, pod)
        )),
        "{logs:?}"
    );
    let left = processes(&lease).await;
    assert!(
        !left.contains("sleep 313") && !left.contains("tick"),
        "{left}"
    );
    let files = lease
        .sh("ls /tmp/paperclip-exec-*.pid 2>/dev/null | grep -c . || true")
        .await;
    // The listing's own pid file only.
    assert_eq!(files, "1\n", "pid files left");

    lease.destroy_and_check_gone().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exec_refused_while_the_pod_runs_is_said_at_once_and_is_no_timeout() {
    let node = node().await;
    let admin = client(&node.kubeconfig).await;
    let lease = RealLease::acquire("refused", "sandbox-cr", json!({})).await;
    assert_eq!(lease.sh("echo ready").await, "ready\n");
    let role = unique("paperclip-sandbox-provider-without-exec");
    apply(&admin, &[role_without(&role, "create", "pods/exec")]).await;
    let accounts = unique("refused-accounts");
    let (kubeconfig, objects) = bound_service_account(
        &admin,
        &node.kubeconfig,
        &accounts,
        "paperclip-server",
        &role,
    )
    .await;
    let as_account = client(&kubeconfig).await;
    until("the binding to take effect", || {
        let as_account = as_account.clone();
        async move {
            let review = json!({"apiVersion": "authorization.k8s.io/v1",
                "kind": "SelfSubjectAccessReview",
                "spec": {"resourceAttributes": {"verb": "get", "resource": "namespaces"}}});
            let path = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
            let (status, answer) = post(&as_account, path, &review).await;
            (status == 201 && answer["status"]["allowed"] == true).then_some(())
        }
    })
    .await;
    // The lease's own config, with the account's credentials; a fresh worker.
    let mut params = lease.exec_params(json!({"command": "echo never", "timeoutMs": 60_000}));
    params["config"]["kubeconfig"] = json!(kubeconfig);
    let worker = KubernetesProvider::new();
    let started = Instant::now();
    let result = worker
        .execute(&params, &NullSink)
        .await
        .unwrap_or_else(|e| panic!("execute refused: {}", e.message));
    let took = started.elapsed();
    println!("the refused exec answered after {took:?}: {result}");
    // Well before its 60 s watchdog.
    assert!(took < Duration::from_secs(30), "answered after {took:?}");
    assert_eq!(result["timedOut"], false, "{result}");
    assert_eq!(result["exitCode"], Value::Null, "{result}");
    let pod = result["metadata"]["podName"].as_str().unwrap();
    let stderr = result["stderr"].as_str().unwrap();
    assert!(
        stderr.starts_with(&format!(
            "execInPod was refused by the API server with HTTP 403 (pod={pod}, container=agent); the command did not start: "
        )),
        "{result}"
    );
    // The API server's own words (for a refused exec upgrade it names the pod only).
    assert!(
        stderr.ends_with(&format!("pods \"{pod}\" is forbidden: ")) || stderr.contains("pods/exec"),
        "{result}"
    );

    remove(&admin, &objects).await;
    let path = format!("/apis/rbac.authorization.k8s.io/v1/clusterroles/{role}");
    let (status, body) = delete(&admin, &path).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = delete(&admin, &format!("/api/v1/namespaces/{accounts}")).await;
    assert!(status == 200 || status == 404, "{body}");
    lease.destroy_and_check_gone().await;
}
