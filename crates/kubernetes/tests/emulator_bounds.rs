//! Bounded waits and results that fit the host (a hung API server, stdin to a command that exits
//! early, outputs past the host's 128 MiB reply line), against the Kubernetes emulator:
//! - an output too large for one reply line is cut to its tail, flagged `outputTruncated`, with
//!   the exit code kept (24, 256 and 1,024 MiB);
//! - 8 MiB of stdin to a command that exits without reading it, and 1 MB and 8 MiB to one that
//!   reads 10 bytes: the exit status and the output are taken as soon as the status arrives,
//!   not at the timeout;
//! - an API server that accepts requests and never answers: acquire, release, destroy, resume
//!   and probe each finish within their bound (`kubernetes::cluster::api_bound`) with
//!   `K8S_API_TIMEOUT`, and an acquire cut after creating objects leaves nothing behind;
//! - the same before a stream starts: execute's pod lookup, its exec upgrade and the job
//!   backend's status poll, sync's readiness wait and pod lookup, a login open's readiness wait
//!   and its terminal's exec upgrade each end on their bound with the contract's message where
//!   it has one (readiness and exec timeouts), else `K8S_API_TIMEOUT`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use emulator::kubernetes::{KubeEmulatorOptions, KubernetesEmulator};
use kubernetes::KubernetesProvider;
use kubernetes::cluster::DESTROY_LEASE_FAILED;
use kubernetes::cluster::api_bound::{self, api_timeout_message};
use kubernetes::exec::RESULT_TAIL_BYTES;
use kubernetes::login::connector::{LOGIN_OPEN_BUDGET_MS, LOGIN_READY_WAIT};
use sandbox_core::poll::poll;
use sandbox_core::{HostSink, NullSink};
use serde_json::{Value, json};

#[allow(dead_code)]
#[path = "support/emulator.rs"]
mod emulator_support;
use emulator_support::{config, start_with_job_shim};

/// The host drops a reply line over this many characters (its JSON-RPC line limit).
const HOST_LINE_LIMIT: usize = 128 * 1024 * 1024;

struct Bed {
    emu: KubernetesEmulator,
    provider: KubernetesProvider,
    config: Value,
    lease: Value,
}

impl Bed {
    async fn start() -> Self {
        let emu = KubernetesEmulator::start(KubeEmulatorOptions::for_tests())
            .await
            .expect("emulator starts");
        let provider = KubernetesProvider::new();
        let config = config(&emu, "sandbox-cr");
        let acquired = provider
            .acquire_lease(
                &json!({"config": config, "companyId": "c-1", "environmentId": "e-1",
                    "runId": "run-1"}),
                &NullSink,
            )
            .await
            .expect("acquire");
        let lease = json!({"providerLeaseId": acquired["providerLeaseId"],
            "metadata": acquired["metadata"]});
        Self {
            emu,
            provider,
            config,
            lease,
        }
    }

    async fn execute(&self, extra: Value) -> Value {
        let mut params = json!({"config": self.config, "companyId": "c-1", "lease": self.lease,
            "timeoutMs": 600_000});
        for (k, v) in extra.as_object().unwrap() {
            params[k] = v.clone();
        }
        self.provider
            .execute(&params, &NullSink)
            .await
            .expect("execute")
    }
}

async fn assert_cut_to_tail(bed: &Bed, mib: u64) {
    let bytes = mib * 1024 * 1024;
    // `a`s, then a marker the tail must end with, then exit 7.
    let script = format!(
        "head -c {bytes} /dev/zero | tr '\\0' a | dd bs=65536 iflag=fullblock status=none; printf END; exit 7"
    );
    let result = bed
        .execute(json!({"command": "sh", "args": ["-c", script]}))
        .await;
    assert_eq!(result["exitCode"], 7, "{}", result["stderr"]);
    assert_eq!(result["timedOut"], false);
    assert_eq!(result["metadata"]["outputTruncated"], true);
    let stdout = result["stdout"].as_str().unwrap();
    assert_eq!(stdout.len(), RESULT_TAIL_BYTES, "{mib} MiB");
    assert!(stdout.ends_with("aaaEND"));
    let line = serde_json::to_string(&result).unwrap();
    assert!(line.len() < HOST_LINE_LIMIT, "{} bytes", line.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_output_too_large_for_the_host_is_cut_to_its_tail() {
    let bed = Bed::start().await;
    // Small outputs stay whole and unflagged (the original's result shape).
    let small = bed
        .execute(json!({"command": "sh", "args": ["-c", "echo hi"]}))
        .await;
    assert_eq!(small["stdout"], "hi\n");
    assert!(
        small["metadata"].get("outputTruncated").is_none(),
        "{small}"
    );
    assert_cut_to_tail(&bed, 24).await;
    bed.emu.shutdown().await;
}

/// The sizes of the report: 256 MiB used to become one ~268 MB reply line (over the host's
/// 128 MiB, so the call never resolved) and 1 GiB a napi string conversion error. Slow (1.25 GiB
/// through the emulator's exec), so on its own, in parallel with the rest of the suite.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outputs_of_256_mib_and_1_gib_are_cut_to_their_tail_with_the_exit_code() {
    let bed = Bed::start().await;
    assert_cut_to_tail(&bed, 256).await;
    assert_cut_to_tail(&bed, 1024).await;
    bed.emu.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_that_exits_without_reading_its_stdin_returns_at_once() {
    let bed = Bed::start().await;
    let stdin = "x".repeat(8 * 1024 * 1024);
    let started = std::time::Instant::now();
    let result = bed
        .execute(
            json!({"command": "sh", "args": ["-c", "echo early; echo err >&2; exit 3"],
            "stdin": stdin, "timeoutMs": 120_000}),
        )
        .await;
    assert_eq!(result["exitCode"], 3, "{result}");
    assert_eq!(result["timedOut"], false, "{result}");
    assert_eq!(result["stdout"], "early\n");
    assert_eq!(result["stderr"], "err\n");
    // Far from the 120 s timeout (not a timing assertion on the command itself).
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
    // A command that does read its stdin still gets all of it.
    let read = bed
        .execute(json!({"command": "sh", "args": ["-c", "wc -c"],
            "stdin": "y".repeat(3 * 1024 * 1024)}))
        .await;
    assert_eq!(read["stdout"].as_str().unwrap().trim(), "3145728", "{read}");
    bed.emu.shutdown().await;
}

/// The real node's case (tests/real_cluster/stdin.rs): a command that reads 10 bytes of 1 MB
/// and 8 MiB of stdin and exits answers its exact result at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_that_reads_part_of_its_stdin_answers_at_once() {
    let bed = Bed::start().await;
    for size in [1_000_000, 8 * 1024 * 1024] {
        let started = std::time::Instant::now();
        let result = bed
            .execute(json!({"command": "sh",
                "args": ["-c", "head -c 10; echo; echo done; echo err >&2"],
                "stdin": "0123456789".repeat(size / 10), "timeoutMs": 120_000}))
            .await;
        assert_eq!(result["exitCode"], 0, "{size}: {result}");
        assert_eq!(result["timedOut"], false, "{size}: {result}");
        assert_eq!(result["stdout"], "0123456789\ndone\n", "{size}: {result}");
        assert_eq!(result["stderr"], "err\n", "{size}: {result}");
        assert!(started.elapsed() < std::time::Duration::from_secs(60));
    }
    bed.emu.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_server_that_never_answers_the_readiness_poll_times_out_on_the_deadline() {
    let bed = Bed::start().await;
    // A fresh worker has not seen the lease ready; every Sandbox GET now hangs for 10 minutes.
    let fresh = KubernetesProvider::new();
    bed.emu.add_fault(
        serde_json::from_value(json!({"method": "GET",
            "path": "/apis/agents.x-k8s.io/*/namespaces/*/sandboxes/*",
            "times": 0, "action": {"kind": "delay", "ms": 600_000}}))
        .unwrap(),
    );
    let params = json!({"config": bed.config, "companyId": "c-1", "lease": bed.lease,
        "timeoutMs": 1500, "command": "echo", "args": ["hi"]});
    let result = fresh.execute(&params, &NullSink).await.expect("execute");
    assert_eq!(result["timedOut"], true, "{result}");
    assert_eq!(result["exitCode"], Value::Null);
    assert_eq!(
        result["stderr"],
        "Sandbox pod did not become Ready within 1500ms"
    );
    assert!(
        bed.emu.faults().iter().any(|f| f.fired > 0),
        "the hang was hit"
    );
    bed.emu.clear_faults();
    bed.emu.shutdown().await;
}

const NS: &str = "paperclip-acme";
/// The bound every hang test gets: `config.timeoutMs` 1500, raised to the hooks' 10 s floor.
const FLOOR_MS: u64 = 10_000;
/// Slack over a bound for the reply (and an acquire's cleanup) on a loaded machine.
const SLACK: Duration = Duration::from_secs(8);

/// Every request matching `method path` hangs for 10 minutes.
fn hang(emu: &KubernetesEmulator, method: &str, path: &str) {
    emu.add_fault(
        serde_json::from_value(json!({"method": method, "path": path, "times": 0,
            "action": {"kind": "delay", "ms": 600_000}}))
        .unwrap(),
    );
}

fn hung_config(bed_config: &Value) -> Value {
    let mut config = bed_config.clone();
    config["timeoutMs"] = json!(1500);
    config
}

fn within(started: Instant, bound_ms: u64) {
    let elapsed = started.elapsed();
    assert!(
        elapsed < Duration::from_millis(bound_ms) + SLACK,
        "took {elapsed:?}, bound {bound_ms}ms"
    );
    assert!(
        elapsed >= Duration::from_millis(bound_ms),
        "answered before the bound ({elapsed:?}): not the hang?"
    );
}

/// Objects a lease owns still in the tenant namespace (the tenant's own policies stay).
fn leaked(emu: &KubernetesEmulator) -> Vec<(&'static str, usize)> {
    let counts = emu.counts();
    [
        ("pods", 0),
        ("sandboxes", 0),
        ("jobs", 0),
        ("secrets", 0),
        ("ciliumnetworkpolicies", 1),
        ("networkpolicies", 1),
    ]
    .into_iter()
    .map(|(plural, tenant)| (plural, counts.count(NS, plural).saturating_sub(tenant)))
    .filter(|(_, n)| *n > 0)
    .collect()
}

async fn until_nothing_leaked(emu: &KubernetesEmulator) {
    poll("nothing left behind", Duration::from_secs(10))
        .until(|| {
            let left = leaked(emu);
            if left.is_empty() {
                Ok(())
            } else {
                Err(format!("left behind: {left:?}"))
            }
        })
        .await;
}

async fn hung_acquire(method: &str, path: &str, created: &str) {
    let emu = KubernetesEmulator::start(KubeEmulatorOptions::for_tests())
        .await
        .expect("emulator starts");
    let config = hung_config(&json!({"kubeconfig": emu.kubeconfig_yaml(),
        "companySlug": "acme", "backend": "sandbox-cr", "egressMode": "cilium"}));
    hang(&emu, method, path);
    let started = Instant::now();
    let err = KubernetesProvider::new()
        .acquire_lease(
            &json!({"config": config, "companyId": "c-1", "environmentId": "e-1",
                "runId": "run-1"}),
            &NullSink,
        )
        .await
        .expect_err("a hung acquire rejects");
    within(started, FLOOR_MS);
    assert_eq!(err.message, api_timeout_message(FLOOR_MS));
    assert!(emu.faults().iter().any(|f| f.fired > 0), "the hang was hit");
    // The acquire got as far as the workload: what it created is deleted.
    assert!(
        emu.request_log()
            .iter()
            .any(|r| r.method == "POST" && r.path.ends_with(created)),
        "{created} was posted"
    );
    emu.clear_faults();
    until_nothing_leaked(&emu).await;
    emu.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acquire_whose_secret_create_hangs_fails_on_its_bound_and_cleans_up() {
    hung_acquire(
        "POST",
        "/api/v1/namespaces/*/secrets",
        &format!("/namespaces/{NS}/sandboxes"),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acquire_whose_sandbox_create_hangs_fails_on_its_bound_and_cleans_up() {
    hung_acquire(
        "POST",
        "/apis/agents.x-k8s.io/*/namespaces/*/sandboxes",
        &format!("/namespaces/{NS}/sandboxes"),
    )
    .await;
}

fn lease_params(bed: &Bed) -> Value {
    json!({"config": hung_config(&bed.config), "companyId": "c-1", "environmentId": "e-1",
        "providerLeaseId": bed.lease["providerLeaseId"],
        "leaseMetadata": bed.lease["metadata"]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_against_a_hung_api_server_fails_on_its_bound() {
    let bed = Bed::start().await;
    hang(
        &bed.emu,
        "DELETE",
        "/apis/agents.x-k8s.io/*/namespaces/*/sandboxes/*",
    );
    let started = Instant::now();
    let err = bed
        .provider
        .release_lease(&lease_params(&bed), &NullSink)
        .await
        .expect_err("a hung release rejects");
    within(started, FLOOR_MS);
    assert_eq!(err.message, api_timeout_message(FLOOR_MS));
    // Once the API server answers again, the same release goes through.
    bed.emu.clear_faults();
    bed.provider
        .release_lease(&lease_params(&bed), &NullSink)
        .await
        .expect("release");
    until_nothing_leaked(&bed.emu).await;
    bed.emu.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_destroy_against_a_hung_api_server_fails_on_its_bound() {
    let bed = Bed::start().await;
    hang(
        &bed.emu,
        "DELETE",
        "/apis/agents.x-k8s.io/*/namespaces/*/sandboxes/*",
    );
    let started = Instant::now();
    let err = bed
        .provider
        .destroy_lease(&lease_params(&bed), &NullSink)
        .await
        .expect_err("a hung destroy rejects");
    within(started, FLOOR_MS);
    // Destroy attempts every delete and rejects with the contract's aggregate (A-destroy).
    assert_eq!(err.message, DESTROY_LEASE_FAILED);
    bed.emu.clear_faults();
    bed.provider
        .destroy_lease(&lease_params(&bed), &NullSink)
        .await
        .expect("destroy");
    until_nothing_leaked(&bed.emu).await;
    bed.emu.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_against_a_hung_api_server_answers_on_its_bound() {
    let bed = Bed::start().await;
    hang(
        &bed.emu,
        "GET",
        "/apis/agents.x-k8s.io/*/namespaces/*/sandboxes/*",
    );
    let bound = api_bound::RESUME.floor_ms;
    let started = Instant::now();
    let result = KubernetesProvider::new()
        .resume_lease(&lease_params(&bed), &NullSink)
        .await
        .expect("resume reports a wait failure as a reason (the original's checkLeaseResumable)");
    within(started, bound);
    assert_eq!(result["providerLeaseId"], Value::Null, "{result}");
    assert_eq!(result["metadata"]["reason"], api_timeout_message(bound));
    bed.emu.clear_faults();
    bed.emu.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_probe_against_a_hung_api_server_answers_on_its_bound() {
    let bed = Bed::start().await;
    hang(&bed.emu, "GET", "/api/v1/namespaces/*/pods");
    let started = Instant::now();
    let result = KubernetesProvider::new()
        .probe(
            &json!({"config": hung_config(&bed.config), "companyId": "c-1"}),
            &NullSink,
        )
        .await
        .expect("probe never throws for cluster errors");
    within(started, FLOOR_MS);
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the host's bound"
    );
    assert_eq!(result["ok"], false, "{result}");
    assert_eq!(result["metadata"]["error"], api_timeout_message(FLOOR_MS));
    bed.emu.clear_faults();
    bed.emu.shutdown().await;
}

/// The probe's pod list answers but its access reviews hang: the probe still answers on its
/// bound, well before the host's 30 s, naming the checks it could not make.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_probe_whose_access_reviews_hang_answers_on_its_bound() {
    let bed = Bed::start().await;
    hang(
        &bed.emu,
        "POST",
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
    );
    let started = Instant::now();
    let result = KubernetesProvider::new()
        .probe(
            &json!({"config": hung_config(&bed.config), "companyId": "c-1"}),
            &NullSink,
        )
        .await
        .expect("probe never throws for cluster errors");
    within(started, FLOOR_MS);
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the host's bound"
    );
    assert_eq!(result["ok"], false, "{result}");
    let summary = result["summary"].as_str().unwrap();
    let needed = kubernetes::cluster::permissions::needed(
        kubernetes::config::Backend::SandboxCr,
        kubernetes::config::EgressMode::Cilium,
    )
    .len();
    assert!(
        summary.contains(&format!(
            "\nPermissions: {needed} could not be checked: {}",
            api_timeout_message(FLOOR_MS)
        )),
        "{summary}"
    );
    // The other checks answered.
    assert!(
        summary.contains("\nSandbox API agents.x-k8s.io: served in "),
        "{summary}"
    );
    assert!(result["metadata"].get("error").is_none(), "{result}");
    bed.emu.clear_faults();
    bed.emu.shutdown().await;
}

/// The lease as execute and sync see it, without the remembered pod name (so they look it up).
fn without_pod_name(lease: &Value) -> Value {
    let mut lease = lease.clone();
    lease["metadata"]
        .as_object_mut()
        .expect("lease metadata")
        .remove("podName");
    lease
}

const SANDBOX_GET: &str = "/apis/agents.x-k8s.io/*/namespaces/*/sandboxes/*";

/// Only the `nth` matching request hangs (a readiness poll and a pod lookup share a path).
fn hang_nth(emu: &KubernetesEmulator, method: &str, path: &str, nth: u64) {
    emu.add_fault(
        serde_json::from_value(
            json!({"method": method, "path": path, "nth": nth, "times": 1,
            "action": {"kind": "delay", "ms": 600_000}}),
        )
        .unwrap(),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_execute_whose_pod_lookup_hangs_fails_on_the_exec_floor() {
    let bed = Bed::start().await;
    // Seen Ready once: the next execute goes straight to the pod lookup.
    let warm = bed.execute(json!({"command": "true"})).await;
    assert_eq!(warm["exitCode"], 0, "{warm}");
    hang(&bed.emu, "GET", SANDBOX_GET);
    let params = json!({"config": bed.config, "companyId": "c-1",
        "lease": without_pod_name(&bed.lease), "timeoutMs": 1500, "command": "echo"});
    let started = Instant::now();
    let err = bed
        .provider
        .execute(&params, &NullSink)
        .await
        .expect_err("a hung pod lookup rejects");
    // timeoutMs 1500 is below the original's 5 s exec floor, which bounds the lookup too.
    within(started, 5_000);
    assert_eq!(err.message, api_timeout_message(5_000));
    assert!(
        bed.emu.faults().iter().any(|f| f.fired > 0),
        "the hang was hit"
    );
    bed.emu.clear_faults();
    bed.emu.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_execute_whose_exec_upgrade_hangs_times_out_on_its_watchdog() {
    let bed = Bed::start().await;
    // Seen Ready once: the next execute goes straight to the exec.
    let warm = bed.execute(json!({"command": "true"})).await;
    assert_eq!(warm["exitCode"], 0, "{warm}");
    hang(&bed.emu, "GET", "/api/v1/namespaces/*/pods/*/exec");
    let params = json!({"config": bed.config, "companyId": "c-1", "lease": bed.lease,
        "timeoutMs": 1500, "command": "echo", "args": ["hi"]});
    let started = Instant::now();
    let result = bed
        .provider
        .execute(&params, &NullSink)
        .await
        .expect("an exec timeout is a result");
    within(started, 5_000);
    assert_eq!(result["timedOut"], true, "{result}");
    assert_eq!(result["exitCode"], Value::Null);
    let pod = result["metadata"]["podName"].as_str().unwrap();
    assert_eq!(
        result["stderr"],
        kubernetes::exec::transport::exec_timeout_message(5_000, pod, "agent", "echo")
    );
    bed.emu.clear_faults();
    bed.emu.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_execute_whose_status_poll_hangs_times_out_on_its_deadline() {
    let emu = start_with_job_shim().await;
    let config = config(&emu, "job");
    let provider = KubernetesProvider::new();
    let acquired = provider
        .acquire_lease(
            &json!({"config": config, "companyId": "c-1", "environmentId": "e-1",
                "runId": "run-job"}),
            &NullSink,
        )
        .await
        .expect("acquire");
    hang(&emu, "GET", "/apis/batch/v1/namespaces/*/jobs/*/status");
    let lease = json!({"providerLeaseId": acquired["providerLeaseId"],
        "metadata": acquired["metadata"]});
    let params = json!({"config": config, "companyId": "c-1", "lease": lease, "timeoutMs": 1500});
    let started = Instant::now();
    let result = provider
        .execute(&params, &NullSink)
        .await
        .expect("a Job still running at the deadline is a result");
    within(started, 1_500);
    assert_eq!(result["timedOut"], true, "{result}");
    assert_eq!(result["exitCode"], Value::Null);
    assert_eq!(result["metadata"]["phase"], Value::Null);
    assert!(emu.faults().iter().any(|f| f.fired > 0), "the hang was hit");
    emu.clear_faults();
    emu.shutdown().await;
}

/// A sync call: it fails before its (empty) operations.
fn sync_params(config: Value, lease: Value) -> Value {
    json!({"config": config, "companyId": "c-1", "lease": lease, "operations": []})
}

fn with_remote_cwd(lease: &Value) -> Value {
    let mut lease = lease.clone();
    lease["metadata"]["remoteCwd"] = json!("/workspace");
    lease
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sync_whose_readiness_poll_hangs_fails_on_the_readiness_deadline() {
    let bed = Bed::start().await;
    hang(&bed.emu, "GET", SANDBOX_GET);
    // The sync's wait is podActivityDeadlineSec (the contract's); a fresh worker waits for Ready.
    let mut config = bed.config.clone();
    config["podActivityDeadlineSec"] = json!(3);
    let params = sync_params(config, with_remote_cwd(&bed.lease));
    let started = Instant::now();
    let err = KubernetesProvider::new()
        .sync_out(&params, &NullSink)
        .await
        .expect_err("a hung readiness wait rejects");
    within(started, 3_000);
    let lease_id = bed.lease["providerLeaseId"].as_str().unwrap();
    assert_eq!(
        err.message,
        format!("Sandbox {NS}/{lease_id} did not reach Ready phase within 3000ms")
    );
    bed.emu.clear_faults();
    bed.emu.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sync_whose_pod_lookup_hangs_fails_on_its_bound() {
    let bed = Bed::start().await;
    let warm = bed.execute(json!({"command": "true"})).await;
    assert_eq!(warm["exitCode"], 0, "{warm}");
    hang(&bed.emu, "GET", SANDBOX_GET);
    let lease = with_remote_cwd(&without_pod_name(&bed.lease));
    let params = sync_params(hung_config(&bed.config), lease);
    let started = Instant::now();
    let err = bed
        .provider
        .sync_in(&params, &NullSink)
        .await
        .expect_err("a hung pod lookup rejects");
    within(started, FLOOR_MS);
    assert_eq!(err.message, api_timeout_message(FLOOR_MS));
    bed.emu.clear_faults();
    bed.emu.shutdown().await;
}

const LOGIN_HOME: &str = "/tmp/paperclip-adapter-login/6a1f0c2e-9b3d-4e5f-a6b7-c8d9e0f1a2b3";

/// A login open with `path` hung: its message, after checking that it came at `bound_ms`.
async fn hung_login_open(path: &str, nth: Option<u64>, bound_ms: u64) -> String {
    let bed = Bed::start().await;
    match nth {
        Some(nth) => hang_nth(&bed.emu, "GET", path, nth),
        None => hang(&bed.emu, "GET", path),
    }
    let params = json!({"hostRouteId": "route-1", "driverKey": "kubernetes",
        "companyId": "c-1", "environmentId": "e-1",
        "providerLeaseId": bed.lease["providerLeaseId"], "loginCommandKey": "claude",
        "sessionHome": LOGIN_HOME});
    let sink: Arc<dyn HostSink> = Arc::new(NullSink);
    let started = Instant::now();
    let err = bed
        .provider
        .login_pty_open(&params, sink)
        .await
        .expect_err("a hung login open rejects");
    // The host waits 30 s for the open: its readiness wait (20 s) and the open as a whole
    // (25 s) end before.
    within(started, bound_ms);
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the host's bound"
    );
    assert!(
        bed.emu.faults().iter().any(|f| f.fired > 0),
        "the hang was hit"
    );
    bed.emu.clear_faults();
    bed.emu.shutdown().await;
    err.message
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_open_whose_readiness_poll_hangs_fails_on_the_readiness_deadline() {
    let ready_ms = LOGIN_READY_WAIT.timeout_ms;
    let message = hung_login_open(SANDBOX_GET, None, ready_ms).await;
    assert!(
        message.starts_with(&format!("Sandbox {NS}/"))
            && message.ends_with(&format!(" did not reach Ready phase within {ready_ms}ms")),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_open_whose_terminal_upgrade_hangs_fails_on_its_bound() {
    let exec = "/api/v1/namespaces/*/pods/*/exec";
    let message = hung_login_open(exec, None, LOGIN_OPEN_BUDGET_MS).await;
    assert!(api_bound::is_timeout(&message), "{message}");
}
