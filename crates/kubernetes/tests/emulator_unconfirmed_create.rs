//! An acquire whose workload create fails after the object exists (a 5xx written after the
//! effect, a connection dropped before the reply) leaves nothing on the cluster: the Sandbox or
//! Job is looked up by the name it was sent with and deleted, and the acquire rejects with the
//! create's own error; when that lookup fails too, the message names the object. A definite
//! refusal (a 4xx) looks nothing up. Every step is bounded: the whole acquire stays within 25 s.

use std::time::{Duration, Instant};

use emulator::kubernetes::{FaultRule, KubernetesEmulator, RequestRecord};
use kubernetes::KubernetesProvider;
use kubernetes::cluster::unconfirmed_create::unconfirmed_create_message;
use kubernetes::cluster::{SandboxApiVersion, WorkloadOrchestrator};
use sandbox_core::NullSink;
use serde_json::{Value, json};

#[allow(dead_code)]
#[path = "support/emulator.rs"]
mod emulator_support;
use emulator_support::{NS, config, leaked_objects, start_with_job_shim, until_clean};

const SANDBOXES: &str = "/apis/agents.x-k8s.io/*/namespaces/*/sandboxes";
const JOBS: &str = "/apis/batch/v1/namespaces/*/jobs";
/// How long the controllers and the garbage collector may take to remove what was deleted.
const CLEAN: Duration = Duration::from_secs(20);

async fn start() -> KubernetesEmulator {
    start_with_job_shim().await
}

fn fault(method: &str, path: &str, times: u32, action: Value) -> FaultRule {
    serde_json::from_value(
        json!({"method": method, "path": path, "nth": 1, "times": times, "action": action}),
    )
    .unwrap()
}

async fn acquire(emu: &KubernetesEmulator, backend: &str, config_extra: Value) -> String {
    let mut config = config(emu, backend);
    for (k, v) in config_extra.as_object().unwrap() {
        config[k] = v.clone();
    }
    let params = json!({"config": config, "companyId": "c-1", "environmentId": "e-1",
        "runId": "run-unconfirmed"});
    match KubernetesProvider::new()
        .acquire_lease(&params, &NullSink)
        .await
    {
        Ok(lease) => panic!("the acquire succeeded: {lease}"),
        Err(err) => err.message,
    }
}

/// The name the workload create was sent with.
fn created_name(log: &[RequestRecord], plural: &str) -> String {
    let create = log
        .iter()
        .find(|r| r.method == "POST" && r.resource.as_deref() == Some(plural))
        .unwrap_or_else(|| panic!("no create of {plural}"));
    create.body_json.as_ref().unwrap()["metadata"]["name"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The requests naming `name` after the create, as `METHOD resource[/subresource]`.
fn after_create(log: &[RequestRecord], name: &str) -> Vec<String> {
    log.iter()
        .filter(|r| r.method != "POST" && r.name.as_deref() == Some(name))
        .map(|r| {
            let resource = r.resource.clone().unwrap_or_default();
            match &r.subresource {
                Some(sub) => format!("{} {resource}/{sub}", r.method),
                None => format!("{} {resource}", r.method),
            }
        })
        .collect()
}

async fn unknown_outcome_leaves_nothing(backend: &str, path: &str, plural: &str, action: Value) {
    let emu = start().await;
    emu.add_fault(fault("POST", path, 1, action.clone()));
    let message = acquire(&emu, backend, json!({})).await;
    assert_eq!(emu.faults()[0].fired, 1, "{:?}", emu.faults());
    let log = emu.request_log();
    let name = created_name(&log, plural);
    let lookup = if plural == "jobs" {
        "GET jobs/status"
    } else {
        "GET sandboxes"
    };
    assert_eq!(
        after_create(&log, &name),
        [lookup, &format!("DELETE {plural}")],
        "{action}"
    );
    // The create's own error.
    if action["kind"] == "status" {
        assert_eq!(message, "HTTP-Code: 500\nMessage: emulator fault");
    } else {
        assert!(!message.contains(&name), "{message}");
    }
    until_clean(&emu, &format!("{backend} {action}"), CLEAN).await;
    emu.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandbox_created_behind_a_5xx_is_found_and_deleted() {
    let action = json!({"kind": "status", "code": 500, "after": true});
    unknown_outcome_leaves_nothing("sandbox-cr", SANDBOXES, "sandboxes", action).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandbox_created_behind_a_dropped_connection_is_found_and_deleted() {
    let action = json!({"kind": "drop", "after": true});
    unknown_outcome_leaves_nothing("sandbox-cr", SANDBOXES, "sandboxes", action).await;
}

/// kube-rs retries a create answered 503: the retry is told the name is taken (409), by the
/// Sandbox the first attempt made.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandbox_made_by_a_create_retried_after_a_503_is_found_and_deleted() {
    let emu = start().await;
    emu.add_fault(fault(
        "POST",
        SANDBOXES,
        1,
        json!({"kind": "status", "code": 503, "after": true}),
    ));
    let message = acquire(&emu, "sandbox-cr", json!({})).await;
    let log = emu.request_log();
    let name = created_name(&log, "sandboxes");
    let creates = log
        .iter()
        .filter(|r| r.method == "POST" && r.resource.as_deref() == Some("sandboxes"))
        .count();
    assert_eq!(creates, 2, "the 503 was retried");
    assert!(message.starts_with("HTTP-Code: 409\n"), "{message}");
    assert_eq!(
        after_create(&log, &name),
        ["GET sandboxes", "DELETE sandboxes"]
    );
    until_clean(&emu, "a retried create", CLEAN).await;
    emu.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_created_behind_a_5xx_or_a_dropped_connection_is_found_and_deleted() {
    for action in [
        json!({"kind": "status", "code": 500, "after": true}),
        json!({"kind": "drop", "after": true}),
    ] {
        unknown_outcome_leaves_nothing("job", JOBS, "jobs", action).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_create_looks_nothing_up() {
    let emu = start().await;
    emu.add_fault(fault(
        "POST",
        SANDBOXES,
        1,
        json!({"kind": "status", "code": 422, "message": "refused"}),
    ));
    let message = acquire(&emu, "sandbox-cr", json!({})).await;
    assert_eq!(message, "HTTP-Code: 422\nMessage: refused");
    let log = emu.request_log();
    let name = created_name(&log, "sandboxes");
    assert_eq!(after_create(&log, &name), Vec::<String>::new());
    assert_eq!(leaked_objects(&emu), []);
    emu.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lookup_that_fails_too_names_the_object_to_delete() {
    let emu = start().await;
    emu.add_fault(fault(
        "POST",
        SANDBOXES,
        1,
        json!({"kind": "status", "code": 503, "after": true}),
    ));
    emu.add_fault(fault(
        "GET",
        &format!("{SANDBOXES}/*"),
        0,
        json!({"kind": "status", "code": 503}),
    ));
    let message = acquire(&emu, "sandbox-cr", json!({})).await;
    let name = created_name(&emu.request_log(), "sandboxes");
    assert_eq!(
        message,
        unconfirmed_create_message(
            WorkloadOrchestrator::SandboxCr(SandboxApiVersion::V1beta1),
            NS,
            &name
        )
    );
    assert_eq!(
        message,
        format!(
            "Kubernetes Sandbox {NS}/{name} may have been created: its create got no clear answer, and looking it up or deleting it failed too; delete it if it exists (kubectl delete sandboxes.agents.x-k8s.io -n {NS} {name})."
        )
    );
    // It does exist, as the message warns; the operator's delete removes it.
    assert!(
        emu.object("agents.x-k8s.io", "sandboxes", NS, &name)
            .is_some()
    );
    emu.clear_faults();
    let deleted = operator_delete(&emu, &name).await;
    assert!(deleted, "the named Sandbox could be deleted");
    until_clean(&emu, "after the operator's delete", CLEAN).await;
    emu.shutdown().await;
}

/// Deletes the Sandbox `name` as an operator would (here through a destroy of a lease of that
/// name).
async fn operator_delete(emu: &KubernetesEmulator, name: &str) -> bool {
    let params = json!({"config": config(emu, "sandbox-cr"), "companyId": "c-1",
        "providerLeaseId": name,
        "leaseMetadata": {"namespace": NS, "jobName": name, "backend": "sandbox-cr"}});
    KubernetesProvider::new()
        .destroy_lease(&params, &NullSink)
        .await
        .is_ok()
}

/// A create and the lookup after it that both hang: without a `timeoutMs` the acquire still
/// answers at its 25 s bound (its steps are cut at 20 s, its cleanup at 5 s more), before the
/// host's 30 s, naming the object.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_create_and_lookup_answer_within_the_acquire_budget() {
    let emu = start().await;
    let hang = json!({"kind": "delay", "ms": 600_000});
    emu.add_fault(fault("POST", SANDBOXES, 0, hang.clone()));
    emu.add_fault(fault("GET", &format!("{SANDBOXES}/*"), 0, hang));
    let started = Instant::now();
    let message = acquire(&emu, "sandbox-cr", json!({})).await;
    let took = started.elapsed();
    assert!(took < Duration::from_secs(28), "took {took:?}");
    assert!(took >= Duration::from_secs(25), "not the hang? {took:?}");
    let name = created_name(&emu.request_log(), "sandboxes");
    assert_eq!(
        message,
        unconfirmed_create_message(
            WorkloadOrchestrator::SandboxCr(SandboxApiVersion::V1beta1),
            NS,
            &name
        )
    );
    emu.clear_faults();
    emu.shutdown().await;
}
