//! The generations after 1bbb5810 (G-apiversion, G-remoteCwd, G-exec2, the G-sync/egress acquire
//! cleanup) and the LimitRange wire parity, against the Kubernetes API emulator with the real
//! kube-rs client: discovery served by the emulator at the versions each test chooses, commands
//! really run in the pod, faults injected on the wire.

use std::time::Duration;

use emulator::kubernetes::{FaultAction, FaultRule, KubeEmulatorOptions, KubernetesEmulator};
use kubernetes::KubernetesProvider;
use sandbox_core::recording_sink::RecordingSink;
use serde_json::{Value, json};

#[allow(dead_code)]
#[path = "support/emulator.rs"]
mod emulator_support;
use emulator_support::{NS, config, until_clean};

async fn start(versions: &[&str]) -> KubernetesEmulator {
    let mut opts = KubeEmulatorOptions::for_tests();
    opts.sandbox_versions = versions.iter().map(|v| v.to_string()).collect();
    // agent-sandbox v1beta1 reports conditions only.
    opts.sandbox_phase = versions.first().is_none_or(|v| *v != "v1beta1");
    KubernetesEmulator::start(opts)
        .await
        .expect("emulator starts")
}

fn acquire_params(emu: &KubernetesEmulator, backend: &str, run: &str) -> Value {
    json!({"config": config(emu, backend), "companyId": "c-1", "environmentId": "e-1", "runId": run,
        "executionWorkspaceSettings": {"networkEgress": {"allowFqdns": ["github.com"]}}})
}

fn lease_params(emu: &KubernetesEmulator, backend: &str, lease: &Value) -> Value {
    json!({"config": config(emu, backend), "companyId": "c-1",
        "providerLeaseId": lease["providerLeaseId"], "leaseMetadata": lease["metadata"]})
}

fn status_fault(method: &str, path: &str, nth: u64) -> FaultRule {
    FaultRule {
        method: Some(method.into()),
        path: path.into(),
        query: None,
        nth,
        times: 1,
        action: FaultAction::Status {
            code: 500,
            reason: None,
            message: Some("injected failure".into()),
            after: false,
        },
    }
}

fn requests(
    emu: &KubernetesEmulator,
    verb: &str,
    resource: &str,
) -> Vec<emulator::kubernetes::RequestRecord> {
    emu.request_log()
        .into_iter()
        .filter(|r| r.verb.as_deref() == Some(verb) && r.resource.as_deref() == Some(resource))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_v1beta1_cluster_gets_v1beta1_sandboxes_end_to_end() {
    let emu = start(&["v1beta1", "v1alpha1"]).await;
    let provider = KubernetesProvider::new();
    let sink = RecordingSink::default();
    let lease = provider
        .acquire_lease(&acquire_params(&emu, "sandbox-cr", "run-beta"), &sink)
        .await
        .unwrap();
    assert_eq!(lease["metadata"]["sandboxApiVersion"], "v1beta1", "{lease}");
    assert_eq!(lease["metadata"]["remoteCwd"], "/workspace");
    let created = requests(&emu, "create", "sandboxes");
    assert_eq!(created.len(), 1);
    assert_eq!(created[0].version.as_deref(), Some("v1beta1"));
    assert_eq!(
        created[0].body_json.as_ref().unwrap()["apiVersion"],
        "agents.x-k8s.io/v1beta1"
    );
    let secret = &requests(&emu, "create", "secrets")[0];
    assert_eq!(
        secret.body_json.as_ref().unwrap()["metadata"]["ownerReferences"][0]["apiVersion"],
        "agents.x-k8s.io/v1beta1"
    );
    // Discovery ran before anything was provisioned.
    let log = emu.request_log();
    let discovery = log
        .iter()
        .position(|r| r.path == "/apis")
        .expect("discovery");
    let first_write = log
        .iter()
        .position(|r| r.verb.as_deref() == Some("create"))
        .unwrap();
    assert!(discovery < first_write);

    // Execute in the pod, with cwd honoured for real.
    let exec = |extra: Value| {
        let mut params = json!({"config": config(&emu, "sandbox-cr"), "companyId": "c-1",
            "lease": {"providerLeaseId": lease["providerLeaseId"], "metadata": lease["metadata"]},
            "timeoutMs": 30000});
        for (k, v) in extra.as_object().unwrap() {
            params[k] = v.clone();
        }
        params
    };
    let made = provider
        .execute(
            &exec(json!({"command": "mkdir", "args": ["-p", "/workspace/repo"]})),
            &sink,
        )
        .await
        .unwrap();
    assert_eq!(made["exitCode"], 0, "{made}");
    let pwd = provider
        .execute(
            &exec(json!({"command": "sh", "args": ["-c", "pwd; echo $FOO"],
                "cwd": "/workspace/repo", "env": {"FOO": "bar"}})),
            &sink,
        )
        .await
        .unwrap();
    assert_eq!(pwd["stdout"], "/workspace/repo\nbar\n", "{pwd}");
    assert_eq!(pwd["signal"], Value::Null);
    let exec_request = emu
        .request_log()
        .into_iter()
        .rfind(|r| r.verb.as_deref() == Some("exec"))
        .unwrap();
    // On the wire: G-exec2's `cd` wrapper, as the original's argv, inside the group wrapper
    // that lets a timed-out command be ended (docs/wire-parity.md).
    let query = exec_request.query.clone().unwrap();
    let argv: Vec<String> = url::form_urlencoded::parse(query.as_bytes())
        .filter(|(k, _)| k == "command")
        .map(|(_, v)| v.into_owned())
        .collect();
    let pid_file = argv[2]
        .split(['\'', ' ', ';'])
        .find(|w| w.starts_with("/tmp/paperclip-exec-") && w.ends_with(".pid"))
        .unwrap_or_else(|| panic!("no pid file in {argv:?}"));
    let original = [
        "/bin/sh",
        "-c",
        "cd '/workspace/repo' && export FOO='bar'; exec 'sh' '-c' 'pwd; echo $FOO'",
    ]
    .map(String::from);
    assert_eq!(
        argv,
        kubernetes::exec::group::group_argv(pid_file, &original),
        "{query}"
    );
    let killed = provider
        .execute(
            &exec(json!({"command": "sh", "args": ["-c", "echo oom >&2; exit 137"]})),
            &sink,
        )
        .await
        .unwrap();
    assert_eq!(killed["exitCode"], 137);
    assert_eq!(killed["signal"], Value::Null);
    let stderr = killed["stderr"].as_str().unwrap();
    assert!(
        stderr.starts_with("oom\n")
            && stderr.contains("SIGKILL")
            && stderr.contains("memory limit")
    );
    let stopped = provider
        .execute(
            &exec(json!({"command": "sh", "args": ["-c", "exit 143"]})),
            &sink,
        )
        .await
        .unwrap();
    assert!(
        stopped["stderr"].as_str().unwrap().contains("SIGTERM"),
        "{stopped}"
    );

    // Resume keeps both; release deletes through v1beta1.
    let resumed = provider
        .resume_lease(&lease_params(&emu, "sandbox-cr", &lease), &sink)
        .await
        .unwrap();
    assert_eq!(
        resumed["metadata"]["sandboxApiVersion"], "v1beta1",
        "{resumed}"
    );
    assert_eq!(resumed["metadata"]["remoteCwd"], "/workspace");
    emu.clear_request_log();
    provider
        .release_lease(&lease_params(&emu, "sandbox-cr", &lease), &sink)
        .await
        .unwrap();
    let deleted = requests(&emu, "delete", "sandboxes");
    assert_eq!(deleted.len(), 1);
    assert_eq!(deleted[0].version.as_deref(), Some("v1beta1"));
    until_clean(&emu, "after release", Duration::from_secs(10)).await;
    emu.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_v1alpha1_only_cluster_gets_v1alpha1_and_sends_the_limit_range_without_default() {
    let emu = start(&["v1alpha1"]).await;
    let provider = KubernetesProvider::new();
    let sink = RecordingSink::default();
    let lease = provider
        .acquire_lease(&acquire_params(&emu, "sandbox-cr", "run-alpha"), &sink)
        .await
        .unwrap();
    assert_eq!(lease["metadata"]["sandboxApiVersion"], "v1alpha1");
    assert_eq!(
        requests(&emu, "create", "sandboxes")[0].version.as_deref(),
        Some("v1alpha1")
    );
    let limit_range = &requests(&emu, "create", "limitranges")[0];
    let item = &limit_range.body_json.as_ref().unwrap()["spec"]["limits"][0];
    assert!(item.get("default").is_none(), "{item}");
    assert_eq!(
        item["defaultRequest"],
        json!({"cpu": "250m", "memory": "512Mi"})
    );
    assert_eq!(item["max"], json!({"cpu": "4", "memory": "8Gi"}));

    // A lease without a recorded version, while discovery fails: destroy tries v1beta1 (not
    // served: 404) and then v1alpha1, so nothing is stranded.
    let provider = KubernetesProvider::new();
    emu.add_fault(status_fault("GET", "/apis", 1));
    emu.clear_request_log();
    let mut metadata = lease["metadata"].clone();
    metadata
        .as_object_mut()
        .unwrap()
        .remove("sandboxApiVersion");
    let params = json!({"config": config(&emu, "sandbox-cr"), "companyId": "c-1",
        "providerLeaseId": lease["providerLeaseId"], "leaseMetadata": metadata});
    provider.destroy_lease(&params, &sink).await.unwrap();
    // (A version the server does not serve is not even a route: matched by path.)
    let deletes: Vec<String> = emu
        .request_log()
        .into_iter()
        .filter(|r| r.method == "DELETE" && r.path.contains("/sandboxes/"))
        .map(|r| r.path)
        .collect();
    assert_eq!(deletes.len(), 2, "{deletes:?}");
    assert!(deletes[0].starts_with("/apis/agents.x-k8s.io/v1beta1/"));
    assert!(deletes[1].starts_with("/apis/agents.x-k8s.io/v1alpha1/"));
    until_clean(&emu, "after destroy", Duration::from_secs(10)).await;
    emu.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_sandbox_api_a_sandbox_acquire_provisions_nothing() {
    let emu = start(&[]).await;
    let provider = KubernetesProvider::new();
    let sink = RecordingSink::default();
    let err = provider
        .acquire_lease(&acquire_params(&emu, "sandbox-cr", "run-none"), &sink)
        .await
        .unwrap_err();
    assert_eq!(
        err.message,
        "API group agents.x-k8s.io is not served by this cluster. Install the kubernetes-sigs/agent-sandbox controller, or set backend: \"job\" to dispatch runs as batch/v1 Jobs instead."
    );
    let writes: Vec<_> = emu
        .request_log()
        .into_iter()
        .filter(|r| r.method != "GET")
        .collect();
    assert!(writes.is_empty(), "{writes:?}");
    assert!(emu.object("", "namespaces", "", NS).is_none());

    // The job backend does not need it, and never asks.
    emu.clear_request_log();
    let lease = provider
        .acquire_lease(&acquire_params(&emu, "job", "run-job"), &sink)
        .await
        .unwrap();
    assert!(lease["metadata"].get("sandboxApiVersion").is_none());
    assert_eq!(lease["metadata"]["remoteCwd"], "/workspace");
    assert!(!emu.request_log().iter().any(|r| r.path == "/apis"));
    provider
        .destroy_lease(&lease_params(&emu, "job", &lease), &sink)
        .await
        .unwrap();
    until_clean(&emu, "after the job destroy", Duration::from_secs(10)).await;
    emu.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_acquire_leaves_nothing_behind() {
    let emu = start(&["v1alpha1"]).await;
    let provider = KubernetesProvider::new();
    let sink = RecordingSink::default();
    // Provision the tenant first, so the faults below hit the lease's own requests.
    let lease = provider
        .acquire_lease(&acquire_params(&emu, "sandbox-cr", "run-0"), &sink)
        .await
        .unwrap();
    provider
        .destroy_lease(&lease_params(&emu, "sandbox-cr", &lease), &sink)
        .await
        .unwrap();
    until_clean(&emu, "the first lease", Duration::from_secs(10)).await;

    let faults = [
        (
            "sandbox-cr",
            "the Secret POST",
            status_fault("POST", "/api/v1/namespaces/*/secrets", 1),
        ),
        (
            "sandbox-cr",
            "the follow-up Sandbox GET",
            status_fault("GET", "/apis/agents.x-k8s.io/*/namespaces/*/sandboxes/*", 1),
        ),
        (
            "sandbox-cr",
            "the adapter egress policy",
            status_fault(
                "POST",
                "/apis/cilium.io/v2/namespaces/*/ciliumnetworkpolicies",
                1,
            ),
        ),
        (
            "sandbox-cr",
            "the task egress policy",
            status_fault(
                "POST",
                "/apis/cilium.io/v2/namespaces/*/ciliumnetworkpolicies",
                2,
            ),
        ),
        (
            "job",
            "the Secret POST",
            status_fault("POST", "/api/v1/namespaces/*/secrets", 1),
        ),
        (
            "job",
            "the follow-up pod list",
            status_fault("GET", "/api/v1/namespaces/*/pods", 1),
        ),
    ];
    for (i, (backend, step, fault)) in faults.into_iter().enumerate() {
        emu.clear_faults();
        emu.add_fault(fault);
        emu.clear_request_log();
        let err = provider
            .acquire_lease(
                &acquire_params(&emu, backend, &format!("run-{}", i + 1)),
                &sink,
            )
            .await
            .unwrap_err();
        assert_eq!(
            (err.message.as_str(), err.code),
            ("HTTP-Code: 500\nMessage: injected failure", Some(500)),
            "{backend}, {step}"
        );
        // The workload was created, and deleted again.
        let workload = if backend == "job" {
            "jobs"
        } else {
            "sandboxes"
        };
        assert_eq!(
            requests(&emu, "create", workload).len(),
            1,
            "{backend}, {step}"
        );
        assert!(
            !requests(&emu, "delete", workload).is_empty(),
            "{backend}, {step}"
        );
        emu.clear_faults();
        until_clean(&emu, &format!("{backend}, {step}"), Duration::from_secs(10)).await;
    }
    emu.shutdown().await;
}
