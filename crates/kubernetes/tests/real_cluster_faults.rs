//! Issue #38 item 2: faults injected on the real node (`tests/real_cluster`'s harness) while a
//! hook is in flight. Each test asserts the hook's answer within its bound (its result after
//! recovery, or the catalogued message that says what happened) and, after release or destroy,
//! that nothing of the lease is left, by listing.
//!
//! - a worker SIGKILLed in the middle of an acquire (once the Sandbox exists): a new worker
//!   acquires, executes and releases; the dead worker's Sandbox ends by its own `shutdownTime`
//!   (a short `podActivityDeadlineSec`) with its pod, Secret and policies;
//! - kube-apiserver frozen (SIGSTOP, a hung API server) for 10 s under a streaming execute,
//!   then continued: the execute answers with its whole output;
//! - the API server unreachable for 20 s (this host's loopback packets to and from its port
//!   dropped by iptables rules on local addresses only, deleted by a guard) under a streaming
//!   execute (which answers with its whole output once the rules are gone) and from the start
//!   of an acquire (`K8S_API_TIMEOUT` at its bound, nothing made);
//! - the kubelet stopped for 30 s (`node.sh restart kubelet DIR --down 30`) under a streaming
//!   execute: `K8S_EXEC_CONNECTION_CLOSED` at once, and the next execute runs once the kubelet
//!   answers again;
//! - etcd frozen (SIGSTOP) during an acquire: `K8S_API_TIMEOUT` at the acquire's bound,
//!   nothing made.
//!
//! Every freeze and rule is undone by a guard (SIGCONT, the rules deleted) whatever the test
//! does; node.sh's teardown restores iptables as a last resort. A restart goes through the
//! running node (`node.sh restart NAME DIR`, scripts/lib/restart.sh), which expects that exit
//! instead of ending the node. After a fault that cut the kubelet from the API server, a test
//! waits for the kubelet to renew its node Lease, so that the next test's pod does not meet a
//! kubelet still in TCP back-off. The pod deleted under an execute and a worker killed during
//! an execute (resumed by a new worker) are `real_cluster`'s `pod_faults`. Not here (see
//! docs/limits.md): kube-apiserver restarted (the real kube-scheduler exited after two
//! restarts, ending the node) and containerd restarted (the execute answered exit 0 with part
//! of its output).
//!
//! Its own test target (its own node, under node.sh's host lock), so that the faults touch no
//! other suite's leases; inside it the tests run one at a time (a lock each takes).

#[allow(dead_code, unused_imports)]
#[path = "real_cluster/harness.rs"]
mod harness;
#[path = "real_cluster_faults/inject.rs"]
mod inject;
#[allow(dead_code)]
#[path = "real_cluster/node.rs"]
mod node;
#[allow(dead_code)]
#[path = "real_apiserver/support.rs"]
mod support;

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use kubernetes::KubernetesProvider;
use kubernetes::cluster::api_bound::api_timeout_message;
use sandbox_core::poll::poll;
use sandbox_core::{NullSink, OutputStream};
use serde_json::{Value, json};
use tokio::sync::Mutex;

use harness::{COMPANY, RealLease, RecordingSink};
use inject::{Stopped, Unreachable, api_port, apiserver_pid, etcd_pid, restart, slow_proxy};
use node::node;
use support::{client, get, items, unique, until};

/// One fault at a time: each stops part of the node.
static FAULT: Mutex<()> = Mutex::const_new(());

/// The lines a streaming execute prints, one every half second (about 25 s in all).
const LINES: usize = 50;
/// Its `timeoutMs`: every fault here ends well before it.
const EXECUTE_MS: u64 = 180_000;

// --- leases -----------------------------------------------------------------------------------

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// A lease of its own company slug; the pod is up (one execute ran).
async fn running_lease(prefix: &str) -> RealLease {
    let lease = RealLease::acquire(prefix, "sandbox-cr", json!({})).await;
    assert_eq!(lease.sh("echo ready").await, "ready\n");
    lease
}

fn streaming_params(lease: &RealLease) -> Value {
    lease.exec_params(json!({"command": "sh", "args": ["-c",
        format!("i=0; while [ $i -lt {LINES} ]; do echo line-$i; i=$((i+1)); sleep 0.5; done")],
        "timeoutMs": EXECUTE_MS}))
}

fn all_lines() -> String {
    (0..LINES).map(|i| format!("line-{i}\n")).collect()
}

/// A streaming execute on `lease` with `fault` injected once its output has begun (the fault
/// returns when it is over): the execute answers with its whole output, in order, before its
/// bound.
// (how long the answer took goes to the run's log)
#[allow(clippy::print_stderr)]
async fn streaming_execute_survives<F, Fut>(lease: &RealLease, fault: F)
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let sink = RecordingSink::default();
    let params = streaming_params(lease);
    let started = Instant::now();
    let running = lease.provider.execute(&params, &sink);
    let inject = async {
        poll("the command's output to begin", Duration::from_secs(60))
            .every(Duration::from_millis(50))
            .until(|| sink.streamed(OutputStream::Stdout).contains("line-2\n"))
            .await;
        fault().await;
    };
    let (result, ()) = tokio::join!(running, inject);
    let took = started.elapsed();
    let result = result.unwrap_or_else(|e| panic!("execute refused: {}", e.message));
    eprintln!("answered after {took:?}: exit {}", result["exitCode"]);
    assert!(took < Duration::from_millis(EXECUTE_MS), "{took:?}");
    assert_eq!(result["exitCode"], 0, "{result}");
    assert_eq!(result["timedOut"], false, "{result}");
    assert_eq!(result["stdout"], all_lines(), "{result}");
    assert_eq!(sink.streamed(OutputStream::Stdout), all_lines());
}

/// Holds a fault for `secs` (a timer, not a synchronisation: the fault's length is the point).
async fn hold(secs: u64) {
    tokio::time::sleep(Duration::from_secs(secs)).await;
}

/// Until the kubelet has renewed its node Lease since this call: its connection to the API
/// server works again after a fault (the next test's pod needs it: a kubelet whose connection
/// was still in TCP back-off failed a pod with `failed to sync secret cache`).
async fn kubelet_reconnected() {
    let node = node().await;
    let admin = client(&node.kubeconfig).await;
    let name = node.node_name.clone().expect("the node's own kubelet");
    let path = format!("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{name}");
    let renewed = |lease: &Value| lease["spec"]["renewTime"].as_str().map(String::from);
    let before = until("the node Lease to be read", || async {
        let (status, lease) = get(&admin, &path).await;
        (status == 200).then(|| renewed(&lease))
    })
    .await;
    until("the kubelet to renew its Lease", || async {
        let (status, lease) = get(&admin, &path).await;
        (status == 200 && renewed(&lease) != before).then_some(())
    })
    .await;
}

/// A streaming execute on `lease` cut by `fault` once its output has begun: the result says the
/// connection closed under the command (`K8S_EXEC_CONNECTION_CLOSED`), at once, never a timeout;
/// then, once `recovered` returns, the next execute on the lease runs (tried again while the
/// restarted component comes up).
// (how long the answer took goes to the run's log)
#[allow(clippy::print_stderr)]
async fn streaming_execute_cut<F, Fut, R, RFut>(lease: &RealLease, fault: F, recovered: R)
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = ()>,
    R: FnOnce() -> RFut,
    RFut: std::future::Future<Output = ()>,
{
    let sink = RecordingSink::default();
    let params = streaming_params(lease);
    let started = Instant::now();
    let running = async {
        let result = lease.provider.execute(&params, &sink).await;
        (result, started.elapsed())
    };
    let inject = async {
        poll("the command's output to begin", Duration::from_secs(60))
            .every(Duration::from_millis(50))
            .until(|| sink.streamed(OutputStream::Stdout).contains("line-2\n"))
            .await;
        fault().await;
    };
    let ((result, took), ()) = tokio::join!(running, inject);
    let result = result.unwrap_or_else(|e| panic!("execute refused: {}", e.message));
    eprintln!("answered after {took:?}: {result}");
    // Before the command would have ended by itself (25 s), well before its bound.
    assert!(took < Duration::from_secs(LINES as u64 / 2), "{took:?}");
    assert_eq!(result["timedOut"], false, "{result}");
    assert_eq!(result["exitCode"], Value::Null, "{result}");
    let pod = result["metadata"]["podName"].as_str().unwrap();
    // K8S_EXEC_CONNECTION_CLOSED (cmd0 is the wrapper's first word)
    let head = format!(
        "execInPod connection closed before the command's exit status (pod={pod}, container=agent, cmd0="
    );
    let tail = "): the API server, the node or the connection to them went away while the command ran; it was not re-run, and it was ended if the pod could still be reached.";
    let stderr = result["stderr"].as_str().unwrap();
    assert!(
        stderr.starts_with(&head) && stderr.contains(tail),
        "{result}"
    );
    recovered().await;
    // The next execute runs once the node answers again (each try answers at once).
    let mut tries = 0;
    let next = until("the next execute to run", || {
        tries += 1;
        let params = lease.exec_params(json!({"command": "echo", "args": ["after"]}));
        async move {
            let result = lease.provider.execute(&params, &NullSink).await.ok()?;
            (result["exitCode"] == 0).then_some(result)
        }
    })
    .await;
    eprintln!("the next execute ran at try {tries}");
    assert_eq!(next["stdout"], "after\n", "{next}");
}

// --- the tests --------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_server_stopped_under_a_streaming_execute() {
    let _alone = FAULT.lock().await;
    let lease = running_lease("fault-api-exec").await;
    let pid = apiserver_pid(api_port(&node().await.kubeconfig));
    streaming_execute_survives(&lease, || async {
        let stopped = Stopped::stop(pid);
        hold(10).await;
        drop(stopped);
    })
    .await;
    lease.destroy_and_check_gone().await;
    kubelet_reconnected().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_server_unreachable_under_a_streaming_execute() {
    let _alone = FAULT.lock().await;
    let lease = running_lease("fault-drop-exec").await;
    let port = api_port(&node().await.kubeconfig);
    streaming_execute_survives(&lease, || async {
        let unreachable = Unreachable::start(port);
        hold(20).await;
        drop(unreachable);
    })
    .await;
    lease.destroy_and_check_gone().await;
    kubelet_reconnected().await;
}

/// An acquire whose API server cannot be reached (or answers nothing) for longer than its
/// bound: `K8S_API_TIMEOUT` at the bound (20 s of steps, of 25 s), nothing made.
// (how long the answer took goes to the run's log)
#[allow(clippy::print_stderr)]
async fn acquire_cut_at_its_bound(
    prefix: &str,
    fault_secs: u64,
    stop: impl FnOnce() -> Box<dyn std::any::Any + Send>,
) {
    let node = node().await;
    let slug = unique(prefix);
    let config = node.provider_config(&slug, "sandbox-cr", json!({}));
    let guard = stop();
    let started = Instant::now();
    let refused = KubernetesProvider::new()
        .acquire_lease(
            &json!({"config": config, "companyId": COMPANY, "runId": "run-faults"}),
            &NullSink,
        )
        .await
        .expect_err("the acquire is cut at its bound");
    let took = started.elapsed();
    eprintln!("acquire answered after {took:?}: {}", refused.message);
    assert!(took < Duration::from_secs(25), "{took:?}");
    assert_eq!(refused.message, api_timeout_message(20_000));
    let rest = Duration::from_secs(fault_secs).saturating_sub(took);
    hold(rest.as_secs()).await;
    drop(guard);
    kubelet_reconnected().await;
    // Nothing of a lease in the tenant namespace (the namespace itself is the tenant's).
    let admin = client(&node.kubeconfig).await;
    let ns = format!("paperclip-{slug}");
    for list in [
        format!("/apis/agents.x-k8s.io/v1beta1/namespaces/{ns}/sandboxes"),
        format!("/api/v1/namespaces/{ns}/pods"),
        format!("/api/v1/namespaces/{ns}/secrets"),
    ] {
        let (status, body) = until(&format!("{list} to be listed"), || async {
            let (status, body) = get(&admin, &list).await;
            (status == 200).then_some((status, body))
        })
        .await;
        assert_eq!(status, 200);
        // (a Secret the tenant keeps would have no owner; a lease's are owned)
        let all = items(&body);
        let leases: Vec<&Value> = all
            .iter()
            .filter(|i| !list.ends_with("/secrets") || i["metadata"]["ownerReferences"].is_array())
            .collect();
        assert!(leases.is_empty(), "{list}: {body}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_server_unreachable_from_the_start_of_an_acquire() {
    let _alone = FAULT.lock().await;
    let port = api_port(&node().await.kubeconfig);
    acquire_cut_at_its_bound("fault-drop-acq", 20, || Box::new(Unreachable::start(port))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_stopped_during_an_acquire() {
    let _alone = FAULT.lock().await;
    let etcd = etcd_pid(apiserver_pid(api_port(&node().await.kubeconfig)));
    acquire_cut_at_its_bound("fault-etcd-acq", 0, || Box::new(Stopped::stop(etcd))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kubelet_stopped_for_30s_under_a_streaming_execute() {
    let _alone = FAULT.lock().await;
    let lease = running_lease("fault-kubelet").await;
    // The stream ends with the kubelet; the next execute runs once it is back.
    streaming_execute_cut(&lease, || restart("kubelet", 30), || async {}).await;
    lease.destroy_and_check_gone().await;
    kubelet_reconnected().await;
}

/// The child worker, killed if the test fails before it does.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Set in the child process: the acquire params it runs (and is killed in).
const CHILD_ACQUIRE: &str = "PAPERCLIP_REAL_NODE_CHILD_ACQUIRE";
const THIS_TEST: &str = "a_worker_killed_during_an_acquire_leaves_a_lease_that_ends_by_itself";

/// The child's half: a worker of its own that acquires; it says so if it got that far, then
/// waits to be killed (or for its stdin to close, should the parent die first).
// (how long the answer took goes to the run's log)
#[allow(clippy::print_stderr)]
async fn acquire_as_child(params: &str) {
    let params: Value = serde_json::from_str(params).unwrap();
    let acquired = KubernetesProvider::new()
        .acquire_lease(&params, &NullSink)
        .await;
    eprintln!("ACQUIRED {}", acquired.is_ok());
    let _ = tokio::task::spawn_blocking(|| std::io::stdin().read_to_end(&mut Vec::new())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_during_an_acquire_leaves_a_lease_that_ends_by_itself() {
    if let Ok(params) = std::env::var(CHILD_ACQUIRE) {
        return acquire_as_child(&params).await;
    }
    let _alone = FAULT.lock().await;
    let node = node().await;
    let admin = client(&node.kubeconfig).await;
    // A short end: 1.5 × 20 s after the acquire's 30 s bound.
    let config = node.provider_config(
        &unique("fault-killed-acq"),
        "sandbox-cr",
        json!({"podActivityDeadlineSec": 20, "timeoutMs": 30_000}),
    );
    // The child reaches the API server through a proxy that answers each request a second
    // late: it is killed once its Sandbox exists and before it learnt so, in the middle of its
    // acquire.
    let port = api_port(&node.kubeconfig);
    let proxy = slow_proxy(port, Duration::from_secs(1)).await;
    let mut child_config = config.clone();
    child_config["kubeconfig"] = json!(node.kubeconfig.replace(
        &format!("https://127.0.0.1:{port}"),
        &format!("https://127.0.0.1:{proxy}")
    ));
    let params = json!({"config": child_config, "companyId": COMPANY, "environmentId": "env-real",
        "runId": "run-killed"});
    let child = Command::new(std::env::current_exe().unwrap())
        .args([THIS_TEST, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ACQUIRE, params.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = KillOnDrop(child);
    // Killed as soon as its Sandbox exists (the tenant namespace is named after the slug).
    let slug = config["companySlug"].as_str().unwrap();
    let sandboxes = format!("/apis/agents.x-k8s.io/v1beta1/namespaces/paperclip-{slug}/sandboxes");
    let orphan: Value = poll("the child's Sandbox to exist", Duration::from_secs(60))
        .every(Duration::from_millis(10))
        .until_async(|| async {
            let (status, body) = get(&admin, &sandboxes).await;
            (status == 200)
                .then(|| items(&body).first().cloned())
                .flatten()
        })
        .await;
    child.0.kill().unwrap(); // SIGKILL
    child.0.wait().unwrap();
    let mut said = String::new();
    child
        .0
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut said)
        .unwrap();
    assert!(
        !said.contains("ACQUIRED"),
        "killed after its acquire answered"
    );
    assert_eq!(orphan["spec"]["shutdownPolicy"], "Delete", "{orphan}");
    let end =
        js_compat::date::parse(orphan["spec"]["shutdownTime"].as_str().unwrap()).unwrap() as u64;

    // A new worker: acquire, execute, release.
    let lease =
        RealLease::acquire_with(KubernetesProvider::new(), config.clone(), "run-faults").await;
    assert_ne!(lease.name, orphan["metadata"]["name"].as_str().unwrap());
    assert_eq!(lease.sh("echo new").await, "new\n");
    let released = lease
        .provider
        .release_lease(&lease.lease_params(), &NullSink)
        .await
        .unwrap_or_else(|e| panic!("release refused: {}", e.message));
    assert_eq!(released, None);
    lease.check_gone().await;
    // The dead worker's Sandbox, pod, Secret and policies went by its own end.
    let orphan_lease = RealLease {
        name: orphan["metadata"]["name"].as_str().unwrap().to_string(),
        lease: json!({"providerLeaseId": orphan["metadata"]["name"],
            "metadata": {"sandboxApiVersion": "v1beta1"}}),
        ..lease
    };
    orphan_lease.check_gone().await;
    assert!(now_ms() + 1_000 >= end, "gone before its end");
}
