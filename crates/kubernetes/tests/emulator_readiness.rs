//! The Sandbox ready-wait against the Kubernetes emulator, through the real kube-rs client:
//! followed by watches on the wire (a Ready Sandbox ends it with no poll after the watch
//! opened), watches that end or lose their place are opened again, a credential that may not
//! watch gets the original's poll, and a pod whose status shows a container that cannot start
//! or a pod the scheduler cannot place fails execute and resume with the catalogued message,
//! before the hook's bound.
//!
//! The emulator runs no image pulls and no scheduler: a Sandbox held by
//! `SandboxPlan::Never` keeps its pod in `ContainerCreating`, and the test writes the pod's
//! status (`pods/status`, as a kubelet or the scheduler would) with what a real node reports.
//! The real node shows the same failures for real (`tests/real_cluster/readiness.rs`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use emulator::kubernetes::{
    DenyRule, FaultAction, FaultRule, KubeEmulatorOptions, KubernetesEmulator, SandboxPlan,
};
use kubernetes::KubernetesProvider;
use sandbox_core::NullSink;
use sandbox_core::poll::poll;
use serde_json::{Value, json};

// Each target uses part of it.
#[allow(dead_code)]
#[path = "support/emulator.rs"]
mod emulator_support;
use emulator_support::{NS, config, until_clean};
#[allow(dead_code)]
#[path = "real_apiserver/support.rs"]
mod support;

/// The bound of every execute here (its `timeoutMs`); each failure must come well before it.
const EXECUTE_MS: u64 = 30_000;
/// Longer than anything here takes unless there is a bug.
const WAIT: Duration = Duration::from_secs(20);

async fn start() -> KubernetesEmulator {
    let emu = KubernetesEmulator::start(KubeEmulatorOptions::for_tests())
        .await
        .expect("emulator starts");
    emu.set_default_sandbox_plan(SandboxPlan::Never);
    emu
}

/// A lease whose Sandbox is held (its pod stays `ContainerCreating`): its id and the lease.
async fn held_lease(
    emu: &KubernetesEmulator,
    provider: &KubernetesProvider,
    extra: Value,
) -> (String, Value, Value) {
    let mut config = config(emu, "sandbox-cr");
    for (k, v) in extra.as_object().unwrap() {
        config[k] = v.clone();
    }
    let acquired = provider
        .acquire_lease(
            &json!({"config": config, "companyId": "c-1", "environmentId": "e-1", "runId": "r"}),
            &NullSink,
        )
        .await
        .unwrap_or_else(|e| panic!("acquire refused: {}", e.message));
    let id = acquired["providerLeaseId"].as_str().unwrap().to_string();
    let lease = json!({"providerLeaseId": id, "metadata": acquired["metadata"]});
    (id, lease, config)
}

fn execute_params(config: &Value, lease: &Value) -> Value {
    json!({"config": config, "companyId": "c-1", "lease": lease, "command": "true",
        "timeoutMs": EXECUTE_MS})
}

fn lease_params(config: &Value, lease: &Value) -> Value {
    json!({"config": config, "companyId": "c-1", "environmentId": "e-1",
        "providerLeaseId": lease["providerLeaseId"], "leaseMetadata": lease["metadata"]})
}

/// The watch requests on `resource` so far, as `(query)`.
fn watches(emu: &KubernetesEmulator, resource: &str) -> Vec<String> {
    emu.request_log()
        .into_iter()
        .filter(|r| r.verb.as_deref() == Some("watch") && r.resource.as_deref() == Some(resource))
        .map(|r| r.query.unwrap_or_default())
        .collect()
}

/// The value of `key` in a query string (`""` when empty or absent).
fn query_param(query: &str, key: &str) -> String {
    query
        .split('&')
        .find_map(|pair| pair.strip_prefix(&format!("{key}=")))
        .unwrap_or_default()
        .to_string()
}

/// GETs of the Sandbox `id` so far.
fn sandbox_reads(emu: &KubernetesEmulator, id: &str) -> usize {
    emu.request_log()
        .into_iter()
        .filter(|r| {
            r.verb.as_deref() == Some("get")
                && r.resource.as_deref() == Some("sandboxes")
                && r.name.as_deref() == Some(id)
        })
        .count()
}

/// Waits until the provider has `count` watches of `resource` open or done.
async fn until_watching(emu: &KubernetesEmulator, resource: &str, count: usize) {
    poll(format!("{count} watch(es) of {resource}"), WAIT)
        .until(|| watches(emu, resource).len() >= count)
        .await;
}

/// Writes the pod's status as the kubelet or the scheduler would (a merge patch of
/// `pods/status`).
async fn write_pod_status(emu: &KubernetesEmulator, pod: &str, status: Value) {
    let admin = support::client(emu.kubeconfig_yaml()).await;
    let path = format!("/api/v1/namespaces/{NS}/pods/{pod}/status");
    let (code, body) = support::merge_patch(&admin, &path, &json!({"status": status})).await;
    assert_eq!(code, 200, "{body}");
}

fn waiting(reason: &str, message: &str, image: &str) -> Value {
    json!({"containerStatuses": [{"name": "agent", "image": image, "imageID": "",
        "ready": false, "restartCount": 0, "started": false,
        "state": {"waiting": {"reason": reason, "message": message}}, "lastState": {}}]})
}

/// The pod's image as the provider made it.
fn pod_image(emu: &KubernetesEmulator, pod: &str) -> String {
    let pod = emu.object("", "pods", NS, pod).expect("the pod exists");
    pod["spec"]["containers"][0]["image"]
        .as_str()
        .unwrap()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ready_sandbox_ends_the_wait_from_its_watch() {
    let emu = start().await;
    let provider = Arc::new(KubernetesProvider::new());
    let (id, lease, config) = held_lease(&emu, &provider, json!({})).await;
    let params = execute_params(&config, &lease);
    let running = {
        let provider = provider.clone();
        tokio::spawn(async move { provider.execute(&params, &NullSink).await })
    };
    until_watching(&emu, "sandboxes", 1).await;
    until_watching(&emu, "pods", 1).await;
    let reads_before = sandbox_reads(&emu, &id);
    assert!(emu.set_sandbox_plan(NS, &id, SandboxPlan::Ready));
    let result = running.await.unwrap().unwrap();
    assert_eq!(result["exitCode"], 0, "{result}");
    assert_eq!(
        sandbox_reads(&emu, &id),
        reads_before,
        "the Ready Sandbox came from the watch, not a poll"
    );
    let sandbox_watch = &watches(&emu, "sandboxes")[0];
    assert!(sandbox_watch.contains("watch=true"), "{sandbox_watch}");
    assert!(
        sandbox_watch.contains(&format!("fieldSelector=metadata.name%3D{id}")),
        "{sandbox_watch}"
    );
    let pod_watch = &watches(&emu, "pods")[0];
    assert!(
        pod_watch.contains(&format!("fieldSelector=metadata.name%3D{id}")),
        "{pod_watch}"
    );
    provider
        .destroy_lease(&lease_params(&config, &lease), &NullSink)
        .await
        .unwrap();
    until_clean(&emu, "after destroy", WAIT).await;
    emu.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_that_end_or_expire_are_opened_again() {
    let emu = start().await;
    let provider = Arc::new(KubernetesProvider::new());
    let (id, lease, config) = held_lease(&emu, &provider, json!({})).await;
    let watch_path = "/apis/agents.x-k8s.io/*/namespaces/*/sandboxes";
    // The first watch ends after its first event; the second sends 410 Expired after one.
    for (nth, action) in [
        (
            1,
            FaultAction::CutWatch {
                after_events: 1,
                abort: false,
            },
        ),
        (2, FaultAction::ExpireWatch { after_events: 1 }),
    ] {
        emu.add_fault(FaultRule {
            method: Some("GET".into()),
            path: watch_path.into(),
            query: Some("watch=true".into()),
            nth,
            times: 1,
            action,
        });
    }
    let params = execute_params(&config, &lease);
    let running = {
        let provider = provider.clone();
        tokio::spawn(async move { provider.execute(&params, &NullSink).await })
    };
    until_watching(&emu, "sandboxes", 2).await;
    // A change of the Sandbox: the second watch relays it, then expires.
    let admin = support::client(emu.kubeconfig_yaml()).await;
    let version = lease["metadata"]["sandboxApiVersion"].as_str().unwrap();
    let path = format!("/apis/agents.x-k8s.io/{version}/namespaces/{NS}/sandboxes/{id}");
    let label = json!({"metadata": {"labels": {"touched": "yes"}}});
    assert_eq!(support::merge_patch(&admin, &path, &label).await.0, 200);
    until_watching(&emu, "sandboxes", 3).await;
    assert!(emu.set_sandbox_plan(NS, &id, SandboxPlan::Ready));
    let result = running.await.unwrap().unwrap();
    assert_eq!(result["exitCode"], 0, "{result}");
    let versions: Vec<String> = watches(&emu, "sandboxes")
        .iter()
        .map(|query| query_param(query, "resourceVersion"))
        .collect();
    assert_eq!(versions[0], "", "the first starts at the current state");
    assert_ne!(
        versions[1], "",
        "the second goes on from the version of the first's event"
    );
    assert_eq!(versions[2], "", "after the 410, the current state again");
    assert!(sandbox_reads(&emu, &id) >= 2, "read again after the 410");
    provider
        .destroy_lease(&lease_params(&config, &lease), &NullSink)
        .await
        .unwrap();
    emu.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_credential_that_may_not_watch_gets_the_originals_poll() {
    let emu = start().await;
    let provider = Arc::new(KubernetesProvider::new());
    let (id, lease, config) = held_lease(&emu, &provider, json!({})).await;
    emu.deny(DenyRule {
        verb: Some("watch".into()),
        group: None,
        resource: "sandboxes".into(),
        namespace: None,
        name: None,
    });
    let params = execute_params(&config, &lease);
    let running = {
        let provider = provider.clone();
        tokio::spawn(async move { provider.execute(&params, &NullSink).await })
    };
    // Polled every 2 s, as the original does.
    poll("a second poll of the Sandbox", WAIT)
        .until(|| sandbox_reads(&emu, &id) >= 3)
        .await;
    assert!(emu.set_sandbox_plan(NS, &id, SandboxPlan::Ready));
    let result = running.await.unwrap().unwrap();
    assert_eq!(result["exitCode"], 0, "{result}");
    assert_eq!(watches(&emu, "sandboxes").len(), 1, "refused once");
    assert!(
        watches(&emu, "pods").is_empty(),
        "no pod reads while polling"
    );
    emu.clear_deny();
    provider
        .destroy_lease(&lease_params(&config, &lease), &NullSink)
        .await
        .unwrap();
    emu.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_container_that_cannot_start_fails_execute_and_resume_at_once() {
    let emu = start().await;
    let provider = Arc::new(KubernetesProvider::new());
    let pull = "Back-off pulling image \"ghcr.io/acme/missing:1\": ErrImagePull: not found";
    let cases = [
        ("ImagePullBackOff", pull, "image"),
        (
            "InvalidImageName",
            "Failed to apply default image tag \"https://ghcr.io/acme/x:1\": couldn't parse image name",
            "image",
        ),
        (
            "CrashLoopBackOff",
            "back-off 10s restarting failed container=agent",
            "crash",
        ),
    ];
    for (reason, message, kind) in cases {
        let (id, lease, config) = held_lease(&emu, &provider, json!({})).await;
        let image = pod_image(&emu, &id);
        let expected = match kind {
            "image" => format!(
                "Sandbox {NS}/{id} cannot start: the node cannot pull image {image} for container agent ({reason}: {message}); check the image reference, that the node can reach its registry, and imagePullSecrets."
            ),
            _ => format!(
                "Sandbox {NS}/{id} cannot start: container agent of image {image} does not stay up ({reason}: {message}); the image must provide /usr/bin/tini and /bin/sh."
            ),
        };
        let params = execute_params(&config, &lease);
        let pod_watches = watches(&emu, "pods").len();
        let started = Instant::now();
        let running = {
            let provider = provider.clone();
            tokio::spawn(async move { provider.execute(&params, &NullSink).await })
        };
        until_watching(&emu, "pods", pod_watches + 1).await;
        write_pod_status(&emu, &id, waiting(reason, message, &image)).await;
        let err = running.await.unwrap().unwrap_err();
        assert_eq!(err.message, expected);
        assert!(started.elapsed() < Duration::from_millis(EXECUTE_MS));
        // Resume names it too, as the reason it cannot resume (within its 25 s).
        let started = Instant::now();
        let resumed = provider
            .resume_lease(&lease_params(&config, &lease), &NullSink)
            .await
            .unwrap();
        assert_eq!(
            resumed,
            json!({"providerLeaseId": null, "metadata": {"expired": true, "reason": expected}})
        );
        assert!(started.elapsed() < Duration::from_secs(25));
        provider
            .destroy_lease(&lease_params(&config, &lease), &NullSink)
            .await
            .unwrap();
    }
    until_clean(&emu, "after destroy", WAIT).await;
    emu.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unschedulable_pod_fails_after_the_configured_grace() {
    let emu = start().await;
    let provider = Arc::new(KubernetesProvider::new());
    let (id, lease, config) =
        held_lease(&emu, &provider, json!({"unschedulableGraceSec": 1})).await;
    let scheduler = "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector.";
    let now = js_compat::date::now_iso_string();
    write_pod_status(
        &emu,
        &id,
        json!({"conditions": [{"type": "PodScheduled", "status": "False",
            "reason": "Unschedulable", "message": scheduler, "lastTransitionTime": now}]}),
    )
    .await;
    let started = Instant::now();
    let err = provider
        .execute(&execute_params(&config, &lease), &NullSink)
        .await
        .unwrap_err();
    assert_eq!(
        err.message,
        format!(
            "Sandbox {NS}/{id} cannot start: its pod has been unschedulable for more than 1s ({scheduler}); free or add node capacity, lower defaultResources, or raise unschedulableGraceSec."
        )
    );
    assert!(started.elapsed() < Duration::from_millis(EXECUTE_MS));
    provider
        .destroy_lease(&lease_params(&config, &lease), &NullSink)
        .await
        .unwrap();
    until_clean(&emu, "after destroy", WAIT).await;
    emu.shutdown().await;
}
