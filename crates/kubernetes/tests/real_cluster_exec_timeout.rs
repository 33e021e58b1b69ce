//! A timed-out execute does not outlive its call, on the real node (`tests/real_cluster`'s
//! harness: containerd, runc, a real kubelet and the agent-sandbox controller; the agent image's
//! `/bin/sh` is dash, its tools busybox's, `setsid` among them). Kubernetes exec has no kill and
//! a closed exec stream ends nothing there: without the provider's kill exec, the commands
//! below would still be running in the pod after their call answered.
//!
//! Its own test target, beside `real_cluster`, so that it adds nothing to that target's files;
//! it uses the same harness (one node per test process, started under the script's host lock,
//! so it waits for a node another test process holds).

#[allow(dead_code)]
#[path = "real_cluster/node.rs"]
mod node;
#[allow(dead_code)]
#[path = "real_apiserver/support.rs"]
mod support;
#[path = "support/timed_out.rs"]
mod timed_out;

use std::time::{Duration, Instant};

use kubernetes::KubernetesProvider;
use kubernetes::exec::group::KILL_EXEC_TIMEOUT_MS;
use sandbox_core::NullSink;
use serde_json::{Value, json};

use node::node;
use support::{client, unique, until_gone};
use timed_out::assert_timed_out;

const COMPANY: &str = "company-real-node";
/// The exec floor: a `timeoutMs` below it still gets 5 s.
const FLOOR: Duration = Duration::from_millis(5_000);
/// The grace period between `TERM` and `KILL`.
const GRACE: Duration = Duration::from_millis(2_000);
/// Slack for a loaded machine.
const SLACK: Duration = Duration::from_secs(10);

async fn execute(
    provider: &KubernetesProvider,
    config: &Value,
    lease: &Value,
    extra: Value,
) -> Value {
    let mut params = json!({"config": config, "companyId": COMPANY,
        "lease": {"providerLeaseId": lease["providerLeaseId"], "metadata": lease["metadata"]}});
    for (k, v) in extra.as_object().unwrap() {
        params[k] = v.clone();
    }
    provider
        .execute(&params, &NullSink)
        .await
        .unwrap_or_else(|e| panic!("execute refused: {}", e.message))
}

/// Every process in the agent container, one command line a line, and the pid files in its
/// `/tmp` but the listing's own (which names the listing's group, `-$$`).
async fn left_in_pod(
    provider: &KubernetesProvider,
    config: &Value,
    lease: &Value,
) -> (String, String) {
    let script = "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done; \
        echo ===; for f in /tmp/paperclip-exec-*; do [ -e \"$f\" ] && [ \"$(cat \"$f\")\" != \"-$$\" ] && echo \"$f\"; done; true";
    let listed = execute(
        provider,
        config,
        lease,
        json!({"command": "sh", "args": ["-c", script], "timeoutMs": 60_000}),
    )
    .await;
    assert_eq!(listed["exitCode"], 0, "{listed}");
    let (processes, files) = listed["stdout"]
        .as_str()
        .unwrap()
        .split_once("===\n")
        .unwrap();
    (processes.to_string(), files.to_string())
}

fn timed_out(result: &Value, cmd0: &str, took: Duration, at_least: Duration) {
    assert_timed_out(result, cmd0);
    assert!(
        took >= at_least,
        "answered after {took:?}, before {at_least:?}"
    );
    assert!(
        took < FLOOR + Duration::from_millis(KILL_EXEC_TIMEOUT_MS) + SLACK,
        "answered after {took:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_command_is_ended_in_the_pod_term_then_kill() {
    let node = node().await;
    let admin = client(&node.kubeconfig).await;
    let config = node.provider_config(&unique("kill"), "sandbox-cr", json!({}));
    let provider = KubernetesProvider::new();
    let lease = provider
        .acquire_lease(
            &json!({"config": config, "companyId": COMPANY, "runId": "real-node-kill"}),
            &NullSink,
        )
        .await
        .unwrap_or_else(|e| panic!("acquire refused: {}", e.message));
    let ready = execute(
        &provider,
        &config,
        &lease,
        json!({"command": "true", "timeoutMs": 120_000}),
    )
    .await;
    assert_eq!(ready["exitCode"], 0, "{ready}");
    let pod = ready["metadata"]["podName"].as_str().unwrap().to_string();

    // `sleep 300` with a child in the background: both end on TERM.
    let started = Instant::now();
    let result = execute(
        &provider,
        &config,
        &lease,
        json!({"command": "sh", "args": ["-c", "sleep 301 & sleep 300"], "timeoutMs": 2000}),
    )
    .await;
    timed_out(&result, "sh", started.elapsed(), FLOOR);
    let (processes, files) = left_in_pod(&provider, &config, &lease).await;
    assert!(!processes.contains("sleep 30"), "{processes}");
    assert_eq!(files, "");

    // A loop that ignores TERM (its `sleep` inherits that), with stdin and env: KILL after
    // the grace period.
    let started = Instant::now();
    let result = execute(
        &provider,
        &config,
        &lease,
        json!({"command": "sh", "args": ["-c", "trap '' TERM; while :; do sleep 1; done"],
            "env": {"MARKER": "deaf-to-term"}, "stdin": "unread", "timeoutMs": 1000}),
    )
    .await;
    timed_out(&result, "/bin/sh", started.elapsed(), FLOOR + GRACE);
    let (processes, files) = left_in_pod(&provider, &config, &lease).await;
    assert!(!processes.contains("trap"), "{processes}");
    assert!(!processes.contains("head -c"), "{processes}");
    assert_eq!(files, "");

    // A command that ends still runs as before and leaves no file.
    let result = execute(
        &provider,
        &config,
        &lease,
        json!({"command": "sh", "args": ["-c", "pwd; echo \"$FOO\"; cat; kill -TERM $$"],
            "env": {"FOO": "b a'r"}, "cwd": "/tmp", "stdin": "in\n", "timeoutMs": 60_000}),
    )
    .await;
    assert_eq!(result["exitCode"], 143, "{result}");
    assert!(
        result["stdout"]
            .as_str()
            .unwrap()
            .starts_with("/tmp\nb a'r\nin\n"),
        "{result}"
    );
    assert_eq!(left_in_pod(&provider, &config, &lease).await.1, "");

    let params = json!({"config": config, "companyId": COMPANY,
        "providerLeaseId": lease["providerLeaseId"], "leaseMetadata": lease["metadata"]});
    assert_eq!(
        provider.destroy_lease(&params, &NullSink).await.unwrap(),
        None
    );
    let ns = lease["metadata"]["namespace"].as_str().unwrap();
    let name = lease["providerLeaseId"].as_str().unwrap();
    let version = lease["metadata"]["sandboxApiVersion"]
        .as_str()
        .unwrap_or("v1beta1");
    until_gone(
        &admin,
        &format!("/apis/agents.x-k8s.io/{version}/namespaces/{ns}/sandboxes/{name}"),
    )
    .await;
    until_gone(&admin, &format!("/api/v1/namespaces/{ns}/pods/{pod}")).await;
}
