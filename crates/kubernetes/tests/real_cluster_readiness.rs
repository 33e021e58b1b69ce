//! Issue #37's named failures on the real node (containerd, runc, a real kubelet, the real
//! scheduler and the agent-sandbox controller; `tests/real_cluster`'s harness): each fails the
//! Sandbox ready-wait with its catalogued message before the hook's bound, and destroy leaves
//! nothing of the lease.
//!
//! - a missing image (a registry on `localhost` that answers nothing: no traffic leaves the
//!   machine): `K8S_POD_IMAGE_PULL_FAILED`, once the kubelet has failed the pull twice;
//! - an invalid image reference: refused by acquire's check before anything is created
//!   (`K8S_RUNTIME_IMAGE_INVALID`), so the kubelet's `InvalidImageName` is shown on a Sandbox
//!   made by hand from the lease's own;
//! - an image without tini (the node's pause image): `K8S_POD_CONTAINER_CRASHING`;
//! - a node selector no node has (a RuntimeClass that carries one) and more CPU than the node
//!   has (`defaultResources`): `K8S_POD_UNSCHEDULABLE` after a short `unschedulableGraceSec`;
//! - the agent-sandbox controller stopped (SIGSTOP, never killed: node.sh tears the node down
//!   when a component exits; a guard sends SIGCONT whatever happens): `K8S_SANDBOX_NO_CONTROLLER`
//!   30 s after the Sandbox's creation, within execute's `timeoutMs` of 60 s.
//!
//! Its own test target (one node per test process, under node.sh's host lock), so that stopping
//! the controller touches no other suite's leases; inside it, that test runs alone (a write
//! lock every other test here takes for reading).

#[allow(dead_code, unused_imports)]
#[path = "real_cluster/harness.rs"]
mod harness;
#[allow(dead_code)]
#[path = "real_cluster/node.rs"]
mod node;
#[allow(dead_code)]
#[path = "real_apiserver/support.rs"]
mod support;

use std::time::{Duration, Instant};

use sandbox_core::NullSink;
use serde_json::{Value, json};
use tokio::sync::RwLock;

use harness::RealLease;
use node::node;
use support::{delete, get, post, until_gone};

/// The execute bound of these tests (`timeoutMs`): every failure must come before it.
const EXECUTE_MS: u64 = 60_000;
/// The stopped-controller test runs alone (write); the others share (read).
static CONTROLLER: RwLock<()> = RwLock::const_new(());

/// An execute of `true` on `lease`: the rejection's message and how long it took.
async fn execute_rejected(lease: &RealLease) -> (String, Duration) {
    let params = lease.exec_params(json!({"command": "true", "timeoutMs": EXECUTE_MS}));
    let started = Instant::now();
    let result = lease.provider.execute(&params, &NullSink).await;
    let elapsed = started.elapsed();
    let err = result.expect_err("execute rejects with the named failure");
    assert!(
        elapsed < Duration::from_millis(EXECUTE_MS),
        "{elapsed:?}: {}",
        err.message
    );
    (err.message, elapsed)
}

/// `message` is `prefix` + one of `reasons` + `: ` + (the kubelet's text) + `suffix`.
fn assert_named(message: &str, prefix: &str, reasons: &[&str], suffix: &str) {
    assert!(message.starts_with(prefix), "{message}");
    assert!(message.ends_with(suffix), "{message}");
    let middle = &message[prefix.len()..message.len() - suffix.len()];
    assert!(
        reasons
            .iter()
            .any(|r| middle.starts_with(&format!("{r}: ")) && middle.len() > r.len() + 2),
        "{message}"
    );
}

fn image_prefix(lease: &RealLease, image: &str) -> String {
    format!(
        "Sandbox {}/{} cannot start: the node cannot pull image {image} for container agent (",
        lease.namespace, lease.name
    )
}

const IMAGE_SUFFIX: &str =
    "); check the image reference, that the node can reach its registry, and imagePullSecrets.";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_image_is_named_once_the_pull_failed_twice() {
    let _shared = CONTROLLER.read().await;
    let image = "localhost/paperclip-test/not-there:1";
    let lease = RealLease::acquire(
        "missing",
        "sandbox-cr",
        json!({"runtimeImages": {"claude_local": image}}),
    )
    .await;
    let (message, elapsed) = execute_rejected(&lease).await;
    assert_named(
        &message,
        &image_prefix(&lease, image),
        &["ImagePullBackOff", "ErrImagePull"],
        IMAGE_SUFFIX,
    );
    eprintln!("missing image named after {elapsed:?}");
    // Resume names it too, within its own bound.
    let started = Instant::now();
    let resumed = lease
        .provider
        .resume_lease(&lease.lease_params(), &NullSink)
        .await
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(25));
    assert_eq!(resumed["providerLeaseId"], Value::Null, "{resumed}");
    let reason = resumed["metadata"]["reason"].as_str().unwrap();
    assert_named(
        reason,
        &image_prefix(&lease, image),
        &["ImagePullBackOff", "ErrImagePull"],
        IMAGE_SUFFIX,
    );
    lease.destroy_and_check_gone().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_reference_is_refused_before_the_cluster_and_named_by_the_kubelet() {
    let _shared = CONTROLLER.read().await;
    let invalid = "localhost/paperclip-test/Not-Valid:1";
    // Through the config, acquire's check refuses it before anything is created.
    let node = node().await;
    let config = node.provider_config(
        &support::unique("invalid"),
        "sandbox-cr",
        json!({"runtimeImages": {"claude_local": invalid}}),
    );
    let refused = kubernetes::KubernetesProvider::new()
        .acquire_lease(
            &json!({"config": config, "companyId": harness::COMPANY, "runId": "run-invalid"}),
            &NullSink,
        )
        .await
        .expect_err("acquire refuses an invalid reference");
    let prefix = format!(
        "Kubernetes runtime image for adapter \"claude_local\" is not a valid image reference: \"{invalid}\" ("
    );
    assert!(refused.message.starts_with(&prefix), "{}", refused.message);
    assert!(
        refused.message.ends_with("); set a valid reference (host/path:tag or host/path@sha256:…) for it in runtimeImages."),
        "{}",
        refused.message
    );

    // The kubelet's InvalidImageName, on a Sandbox made by hand from a lease's own with the
    // invalid image (what a config the check did not see would make).
    let lease = RealLease::acquire("invalid", "sandbox-cr", json!({})).await;
    let version = lease.lease["metadata"]["sandboxApiVersion"]
        .as_str()
        .unwrap()
        .to_string();
    let sandboxes = format!(
        "/apis/agents.x-k8s.io/{version}/namespaces/{}/sandboxes",
        lease.namespace
    );
    let (status, own) = get(&lease.admin, &format!("{sandboxes}/{}", lease.name)).await;
    assert_eq!(status, 200, "{own}");
    let name = format!("{}-x", lease.name);
    let mut spec = own["spec"].clone();
    spec["podTemplate"]["spec"]["containers"][0]["image"] = json!(invalid);
    let made = json!({"apiVersion": format!("agents.x-k8s.io/{version}"), "kind": "Sandbox",
        "metadata": {"name": name, "namespace": lease.namespace}, "spec": spec});
    let (status, body) = post(&lease.admin, &sandboxes, &made).await;
    assert_eq!(status, 201, "{body}");
    let mut by_hand = lease.lease.clone();
    by_hand["providerLeaseId"] = json!(name);
    by_hand["metadata"]["podName"] = Value::Null;
    let params = json!({"config": lease.config, "companyId": harness::COMPANY,
        "lease": by_hand, "command": "true", "timeoutMs": EXECUTE_MS});
    let started = Instant::now();
    let err = lease
        .provider
        .execute(&params, &NullSink)
        .await
        .expect_err("the kubelet's InvalidImageName is named");
    assert!(started.elapsed() < Duration::from_millis(EXECUTE_MS));
    let prefix = format!(
        "Sandbox {}/{name} cannot start: the node cannot pull image {invalid} for container agent (",
        lease.namespace
    );
    assert_named(&err.message, &prefix, &["InvalidImageName"], IMAGE_SUFFIX);
    let (status, body) = delete(&lease.admin, &format!("{sandboxes}/{name}")).await;
    assert_eq!(status, 200, "{body}");
    until_gone(&lease.admin, &format!("{sandboxes}/{name}")).await;
    lease.destroy_and_check_gone().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_without_tini_is_named_as_a_container_that_does_not_stay_up() {
    let _shared = CONTROLLER.read().await;
    let node = node().await;
    let pause = node
        .pause_image
        .clone()
        .expect("the node's pause image (an external cluster has none to offer)");
    let lease = RealLease::acquire(
        "notini",
        "sandbox-cr",
        json!({"runtimeImages": {"claude_local": pause}}),
    )
    .await;
    let (message, elapsed) = execute_rejected(&lease).await;
    let prefix = format!(
        "Sandbox {}/{} cannot start: container agent of image {pause} does not stay up (",
        lease.namespace, lease.name
    );
    assert_named(
        &message,
        &prefix,
        &["RunContainerError", "CrashLoopBackOff"],
        "); the image must provide /usr/bin/tini and /bin/sh.",
    );
    assert!(message.contains("/usr/bin/tini"), "{message}");
    eprintln!("image without tini named after {elapsed:?}");
    lease.destroy_and_check_gone().await;
}

/// `K8S_POD_UNSCHEDULABLE` for a lease with `extra`, its scheduler message containing `why`.
async fn unschedulable(prefix: &str, extra: Value, why: &str) {
    let mut extra = extra;
    extra["unschedulableGraceSec"] = json!(3);
    let lease = RealLease::acquire(prefix, "sandbox-cr", extra).await;
    let (message, _) = execute_rejected(&lease).await;
    let head = format!(
        "Sandbox {}/{} cannot start: its pod has been unschedulable for more than 3s (0/1 nodes are available: ",
        lease.namespace, lease.name
    );
    assert!(message.starts_with(&head), "{message}");
    assert!(message.contains(why), "{message}");
    assert!(
        message.ends_with(
            "); free or add node capacity, lower defaultResources, or raise unschedulableGraceSec."
        ),
        "{message}"
    );
    lease.destroy_and_check_gone().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_selector_no_node_has_is_named_after_the_grace() {
    let _shared = CONTROLLER.read().await;
    let node = node().await;
    let admin = support::client(&node.kubeconfig).await;
    // A RuntimeClass whose scheduling puts its pods on nodes with a label no node has; the
    // RuntimeClass admission plugin adds it to the pod's node selector.
    let class = support::unique("paperclip-nowhere");
    let path = "/apis/node.k8s.io/v1/runtimeclasses";
    let body = json!({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
        "metadata": {"name": class}, "handler": "runc",
        "scheduling": {"nodeSelector": {"paperclip.io/test-nowhere": "true"}}});
    let (status, created) = post(&admin, path, &body).await;
    assert_eq!(status, 201, "{created}");
    unschedulable(
        "nowhere",
        json!({"runtimeClassName": class}),
        "didn't match Pod's node affinity/selector",
    )
    .await;
    let (status, _) = delete(&admin, &format!("{path}/{class}")).await;
    assert_eq!(status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn more_cpu_than_the_node_has_is_named_after_the_grace() {
    let _shared = CONTROLLER.read().await;
    // Within the tenant LimitRange (at most 4 CPUs a container), over the node's.
    let nproc = std::thread::available_parallelism().map_or(2, usize::from);
    let cpu = (nproc + 1).min(4).to_string();
    assert!(
        nproc < 4,
        "the node has {nproc} CPUs: no request within the LimitRange exceeds it"
    );
    unschedulable(
        "bigcpu",
        json!({"defaultResources": {"requests": {"cpu": cpu, "memory": "256Mi"},
            "limits": {"cpu": "4", "memory": "512Mi"}}}),
        "Insufficient cpu",
    )
    .await;
}

/// Sends SIGCONT to the stopped controller when dropped, whatever the test did.
struct Resume(u32);

impl Drop for Resume {
    fn drop(&mut self) {
        signal("CONT", self.0);
    }
}

fn signal(name: &str, pid: u32) {
    let status = std::process::Command::new("kill")
        .arg(format!("-{name}"))
        .arg(pid.to_string())
        .status()
        .expect("kill runs");
    assert!(status.success(), "kill -{name} {pid}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_controller_is_named() {
    let _alone = CONTROLLER.write().await;
    let node = node().await;
    let pid = node
        .controller_pid
        .expect("the node's controller pid (an external cluster's cannot be stopped here)");
    signal("STOP", pid);
    let resume = Resume(pid);
    let lease = RealLease::acquire("nocontroller", "sandbox-cr", json!({})).await;
    let (message, elapsed) = execute_rejected(&lease).await;
    assert_eq!(
        message,
        format!(
            "Sandbox {}/{} has no status 30s after it was created: no agent-sandbox controller is reconciling it; check that the agent-sandbox controller is installed and running.",
            lease.namespace, lease.name
        )
    );
    eprintln!("stopped controller named after {elapsed:?}");
    drop(resume);
    lease.destroy_and_check_gone().await;
}
