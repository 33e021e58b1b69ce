//! An execute whose exec fails says what happened, and only a real timeout is `timedOut: true`
//! (issue #38): an upgrade the API server refuses while the pod runs, an upgrade that gets no
//! answer, and a connection that closes while the command runs each answer at once with their
//! own message; a pod deleted between executes is waited for and the command runs on the new
//! one; a pod deleted under a command is named as such. Against the Kubernetes emulator (its
//! Sandbox controller replaces a pod that vanished, and a deleted pod's processes die with it).

use std::time::{Duration, Instant};

use emulator::kubernetes::{FaultRule, KubeEmulatorOptions, KubernetesEmulator, SettingsPatch};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams};
use kubernetes::KubernetesProvider;
use kubernetes::exec::exit_hints::pod_deleted_note;
use kubernetes::exec::transport::{
    exec_closed_message, exec_refused_message, exec_unreachable_message,
};
use sandbox_core::NullSink;
use sandbox_core::poll::poll;
use serde_json::{Value, json};

#[allow(dead_code)]
#[path = "support/emulator.rs"]
mod emulator_support;
use emulator_support::{Lease, NS};

/// How soon a failed exec must answer: at once, not at its 60 s watchdog. Generous for a
/// loaded machine.
const AT_ONCE: Duration = Duration::from_secs(15);

async fn start() -> KubernetesEmulator {
    KubernetesEmulator::start(KubeEmulatorOptions::for_tests())
        .await
        .expect("emulator starts")
}

fn exec_fault(action: Value) -> FaultRule {
    serde_json::from_value(json!({"path": "/api/v1/namespaces/*/pods/*/exec", "nth": 1,
        "times": 1, "action": action}))
    .unwrap()
}

/// A lease whose Sandbox this worker has seen Ready, and its pod.
async fn warm(emu: &KubernetesEmulator, provider: &KubernetesProvider) -> (Lease, String) {
    let lease = Lease::acquire(emu, provider, "run-exec-faults").await;
    let ready = lease.sh(provider, "true").await;
    assert_eq!(ready["exitCode"], 0, "{ready}");
    let pod = ready["metadata"]["podName"].as_str().unwrap().to_string();
    (lease, pod)
}

/// Runs `script` (60 s timeout) and returns its result and how long it took.
async fn timed(provider: &KubernetesProvider, lease: &Lease, script: &str) -> (Value, Duration) {
    let started = Instant::now();
    let result = provider
        .execute(&lease.exec_params(script, 60_000), &NullSink)
        .await
        .expect("an exec failure is a result");
    (result, started.elapsed())
}

fn failed_not_timed_out(result: &Value, took: Duration) {
    assert!(took < AT_ONCE, "answered after {took:?}: {result}");
    assert_eq!(result["timedOut"], false, "{result}");
    assert_eq!(result["exitCode"], Value::Null, "{result}");
    assert_eq!(result["signal"], Value::Null, "{result}");
    assert_eq!(result["stdout"], "", "{result}");
}

async fn admin_pods(emu: &KubernetesEmulator) -> Api<Pod> {
    let kubeconfig = kube::config::Kubeconfig::from_yaml(emu.kubeconfig_yaml()).unwrap();
    let options = kube::config::KubeConfigOptions::default();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .unwrap();
    Api::namespaced(kube::Client::try_from(config).unwrap(), NS)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exec_refused_while_the_pod_runs_says_so_at_once() {
    let emu = start().await;
    let provider = KubernetesProvider::new();
    let (lease, pod) = warm(&emu, &provider).await;
    emu.add_fault(exec_fault(
        json!({"kind": "status", "code": 500, "message": "the kubelet is busy"}),
    ));
    let (result, took) = timed(&provider, &lease, "echo never").await;
    failed_not_timed_out(&result, took);
    assert_eq!(
        result["stderr"],
        exec_refused_message(500, &pod, "agent", "the kubelet is busy"),
        "{result}"
    );
    assert_eq!(
        result["stderr"],
        format!(
            "execInPod was refused by the API server with HTTP 500 (pod={pod}, container=agent); the command did not start: the kubelet is busy"
        )
    );
    // The fix: the cause gone, the command runs.
    let (result, _) = timed(&provider, &lease, "echo again").await;
    assert_eq!(result["stdout"], "again\n", "{result}");
    emu.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exec_upgrade_without_an_answer_says_the_api_server_was_not_reached() {
    let emu = start().await;
    let provider = KubernetesProvider::new();
    let (lease, pod) = warm(&emu, &provider).await;
    emu.add_fault(exec_fault(json!({"kind": "drop"})));
    let (result, took) = timed(&provider, &lease, "echo never").await;
    failed_not_timed_out(&result, took);
    let stderr = result["stderr"].as_str().unwrap();
    let head = exec_unreachable_message(&pod, "agent", "");
    assert!(
        stderr.starts_with(&head) && stderr.len() > head.len(),
        "{stderr}"
    );
    assert!(stderr.starts_with(&format!(
        "execInPod could not reach the API server (pod={pod}, container=agent); the command did not start: "
    )));
    let (result, _) = timed(&provider, &lease, "echo again").await;
    assert_eq!(result["stdout"], "again\n", "{result}");
    emu.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_closed_under_a_command_answers_at_once_not_at_the_watchdog() {
    let emu = start().await;
    let provider = KubernetesProvider::new();
    let (lease, pod) = warm(&emu, &provider).await;
    for abort in [false, true] {
        emu.add_fault(exec_fault(
            json!({"kind": "cutExec", "afterFrames": 1, "abort": abort}),
        ));
        let (result, took) = timed(&provider, &lease, "echo started; sleep 50").await;
        failed_not_timed_out(&result, took);
        assert_eq!(
            result["stderr"],
            exec_closed_message(&pod, "agent", "sh"),
            "{result}"
        );
        assert_eq!(
            result["stderr"],
            format!(
                "execInPod connection closed before the command's exit status (pod={pod}, container=agent, cmd0=sh): the API server, the node or the connection to them went away while the command ran; it was not re-run, and it was ended if the pod could still be reached."
            )
        );
    }
    let (result, _) = timed(&provider, &lease, "echo again").await;
    assert_eq!(result["stdout"], "again\n", "{result}");
    emu.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_deleted_between_executes_is_waited_for_and_the_command_runs_on_the_new_one() {
    let emu = start().await;
    let provider = KubernetesProvider::new();
    let (lease, pod) = warm(&emu, &provider).await;
    let pods = admin_pods(&emu).await;
    let old_uid = pods.get(&pod).await.unwrap().metadata.uid.unwrap();
    // The replacement's container takes a second to start, as a real one takes a few: an exec
    // into it before then is refused (`container not found`), and the execute waits for it.
    emu.update_settings(SettingsPatch {
        pod_ready_delay_ms: Some(1_000),
        ..SettingsPatch::default()
    });
    emu.clear_request_log();
    pods.delete(&pod, &DeleteParams::default()).await.unwrap();
    let (result, _) = timed(&provider, &lease, "echo on the new pod").await;
    let execs: Vec<Option<u16>> = emu
        .request_log()
        .iter()
        .filter(|r| r.subresource.as_deref() == Some("exec"))
        .map(|r| r.status)
        .collect();
    assert!(
        execs.first().is_some_and(|s| s.is_some_and(|s| s >= 400)) && execs.len() == 2,
        "one refused exec, then the command's: {execs:?}"
    );
    assert_eq!(result["exitCode"], 0, "{result}");
    assert_eq!(result["timedOut"], false, "{result}");
    assert_eq!(result["stdout"], "on the new pod\n", "{result}");
    let now = result["metadata"]["podName"].as_str().unwrap();
    let new_uid = pods.get(now).await.unwrap().metadata.uid.unwrap();
    assert_ne!(new_uid, old_uid, "ran on the replacement pod");
    emu.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_deleted_under_a_command_is_named_and_the_next_execute_runs_on_the_new_one() {
    let emu = start().await;
    let provider = KubernetesProvider::new();
    let (lease, pod) = warm(&emu, &provider).await;
    let pods = admin_pods(&emu).await;
    let running = timed(&provider, &lease, "touch /tmp/started; sleep 50");
    let delete = async {
        let started = |_: &()| {
            emu.pod_root(NS, &pod)
                .is_some_and(|r| r.join("tmp/started").exists())
        };
        poll("the command to start", Duration::from_secs(30))
            .until(|| started(&()))
            .await;
        pods.delete(&pod, &DeleteParams::default()).await.unwrap();
    };
    let ((result, took), ()) = tokio::join!(running, delete);
    assert!(
        took < AT_ONCE + Duration::from_secs(10),
        "answered after {took:?}"
    );
    assert_eq!(result["timedOut"], false, "{result}");
    let note = pod_deleted_note(NS, &pod);
    assert!(
        note.starts_with(&format!(
            "The pod {NS}/{pod} was deleted while the command ran"
        )),
        "{note}"
    );
    let stderr = result["stderr"].as_str().unwrap();
    match result["exitCode"].as_i64() {
        // The command was killed: its code, with the note in place of the 137/143 note.
        Some(code) => {
            assert!(matches!(code, 137 | 143), "{result}");
            assert!(stderr.ends_with(&format!("{note}\n")), "{result}");
            assert!(!stderr.contains("out-of-memory"), "{result}");
        }
        // The connection went with the pod: the note is the whole stderr.
        None => assert_eq!(stderr, note, "{result}"),
    }
    let (result, _) = timed(&provider, &lease, "echo next").await;
    assert_eq!(result["stdout"], "next\n", "{result}");
    assert_eq!(result["timedOut"], false, "{result}");
    emu.shutdown().await;
}
