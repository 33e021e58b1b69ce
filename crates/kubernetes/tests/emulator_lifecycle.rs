//! Full lifecycles against the Kubernetes API emulator with the real kube-rs client: HTTPS with
//! the generated kubeconfig, pods/exec over websocket running real processes, faults.

use std::time::Duration;

use emulator::kubernetes::{
    DenyRule, FaultAction, FaultRule, KubeEmulatorOptions, KubernetesEmulator, SandboxPlan,
};
use kubernetes::KubernetesProvider;
use kubernetes::cluster::permissions::needed;
use kubernetes::config::{Backend, EgressMode, KubernetesConfig};
use sandbox_core::OutputStream;
use sandbox_core::poll::poll;
use sandbox_core::recording_sink::RecordingSink;
use serde_json::{Value, json};

#[allow(dead_code)]
#[path = "support/emulator.rs"]
mod emulator_support;
use emulator_support::{NS, config, job_shim_override, leaked_objects};

#[path = "support/timed_out.rs"]
mod timed_out;
use timed_out::assert_timed_out;

const CANARY: &str = "canary-token-5d1c9e7a3b";

async fn start() -> KubernetesEmulator {
    let mut opts = KubeEmulatorOptions::for_tests();
    opts.token = Some(CANARY.into());
    opts.command_overrides = job_shim_override();
    KubernetesEmulator::start(opts)
        .await
        .expect("emulator starts")
}

/// How long the emulator's garbage collection may take before a test fails (it acts at once;
/// only a bug runs into this).
const GC_WAIT: Duration = Duration::from_secs(10);

fn assert_no_canary(sink: &RecordingSink, values: &[&Value]) {
    assert!(!sink.everything().contains(CANARY));
    for value in values {
        assert!(!value.to_string().contains(CANARY), "{value}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sandbox_cr_lifecycle_with_real_exec() {
    let emu = start().await;
    let provider = KubernetesProvider::new();
    let sink = RecordingSink::default();
    let probe = provider
        .probe(
            &json!({"config": config(&emu, "sandbox-cr"), "companyId": "c-1"}),
            &sink,
        )
        .await
        .unwrap();
    assert_eq!(probe["ok"], true, "{probe}");
    let lines: Vec<&str> = probe["summary"].as_str().unwrap().split('\n').collect();
    let needed = needed(Backend::SandboxCr, EgressMode::Cilium).len();
    assert_eq!(
        lines[..4],
        [
            format!("Kubernetes cluster reachable. Tenant namespace: {NS}."),
            "Sandbox API agents.x-k8s.io: served in v1alpha1; leases use v1alpha1.".into(),
            format!("Permissions: all {needed} the config needs are granted."),
            format!("Tenant namespace {NS}: does not exist yet; the first lease creates it."),
        ]
    );

    let lease = provider
        .acquire_lease(
            &json!({"config": config(&emu, "sandbox-cr"), "companyId": "c-1", "environmentId": "e-1",
                "runId": "run-1"}),
            &sink,
        )
        .await
        .unwrap();
    let id = lease["providerLeaseId"].as_str().unwrap().to_string();
    let lease_json = json!({"providerLeaseId": id, "metadata": lease["metadata"]});
    assert!(
        emu.object("agents.x-k8s.io", "sandboxes", NS, &id)
            .is_some()
    );
    assert!(
        emu.object("", "secrets", NS, &format!("{id}-env"))
            .is_some()
    );

    let exec = |extra: Value| {
        let mut params = json!({"config": config(&emu, "sandbox-cr"), "companyId": "c-1",
            "lease": lease_json, "timeoutMs": 30000});
        for (k, v) in extra.as_object().unwrap() {
            params[k] = v.clone();
        }
        params
    };
    let exec_sink = RecordingSink::default();
    let result = provider
        .execute(
            &exec(
                json!({"command": "sh", "args": ["-c", "echo out-$FOO; echo err >&2; exit 3"],
                "env": {"FOO": "bar"}}),
            ),
            &exec_sink,
        )
        .await
        .unwrap();
    assert_eq!(result["exitCode"], 3, "{result}");
    assert_eq!(result["timedOut"], false);
    assert_eq!(result["stdout"], "out-bar\n");
    assert_eq!(result["stderr"], "err\n");
    assert_eq!(exec_sink.streamed(OutputStream::Stdout), "out-bar\n");
    assert_eq!(exec_sink.streamed(OutputStream::Stderr), "err\n");

    // Output is forwarded while the command runs, not at its end.
    let live = RecordingSink::default();
    let result = provider
        .execute(
            &exec(json!({"command": "sh", "args": ["-c", "echo first; sleep 0.5; echo second"]})),
            &live,
        )
        .await
        .unwrap();
    assert_eq!(result["stdout"], "first\nsecond\n");
    assert_eq!(live.streamed(OutputStream::Stdout), "first\nsecond\n");
    assert!(live.output.lock().unwrap().len() >= 2);

    let payload = "héllo\nworld — ünïcode\n".repeat(5000);
    let result = provider
        .execute(
            &exec(json!({"command": "cat", "args": [], "stdin": payload})),
            &sink,
        )
        .await
        .unwrap();
    // `cat` alone is a bare command: it runs under `sh -lc`, with stdin through `head -c`.
    assert_eq!(result["exitCode"], 0, "{result}");
    assert_eq!(result["stdout"], payload);

    let result = provider
        .execute(&exec(json!({"command": "true"})), &sink)
        .await
        .unwrap();
    assert_eq!(result["exitCode"], 0);

    let release = json!({"config": config(&emu, "sandbox-cr"), "companyId": "c-1",
        "providerLeaseId": id, "leaseMetadata": lease["metadata"]});
    assert_eq!(provider.release_lease(&release, &sink).await.unwrap(), None);
    // Released twice: the 404 is absorbed.
    assert_eq!(provider.release_lease(&release, &sink).await.unwrap(), None);
    poll("the lease's objects to be collected", GC_WAIT)
        .until(|| leaked_objects(&emu).is_empty())
        .await;
    assert_no_canary(&sink, &[&lease, &result, &probe]);
    emu.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_lifecycle_reports_the_pod_log() {
    let emu = start().await;
    let provider = KubernetesProvider::new();
    let sink = RecordingSink::default();
    let lease = provider
        .acquire_lease(
            &json!({"config": config(&emu, "job"), "companyId": "c-1", "runId": "run-2"}),
            &sink,
        )
        .await
        .unwrap();
    let id = lease["providerLeaseId"].as_str().unwrap().to_string();
    let result = provider
        .execute(
            &json!({"config": config(&emu, "job"), "companyId": "c-1", "timeoutMs": 30000,
                "lease": {"providerLeaseId": id, "metadata": lease["metadata"]}}),
            &sink,
        )
        .await
        .unwrap();
    assert_eq!(result["exitCode"], 0, "{result}");
    assert_eq!(result["stdout"], "job-output\n");
    assert_eq!(result["metadata"]["phase"], "Succeeded");
    let destroy = json!({"config": config(&emu, "job"), "companyId": "c-1", "providerLeaseId": id,
        "leaseMetadata": lease["metadata"]});
    // Release deletes the Job only; its pod, Secret and policies go by cascade.
    assert_eq!(provider.release_lease(&destroy, &sink).await.unwrap(), None);
    poll("the job lease's objects to be collected", GC_WAIT)
        .until(|| leaked_objects(&emu).is_empty())
        .await;
    assert_eq!(provider.destroy_lease(&destroy, &sink).await.unwrap(), None);
    assert_eq!(provider.destroy_lease(&destroy, &sink).await.unwrap(), None);
    poll("the job lease's objects to be deleted", GC_WAIT)
        .until(|| leaked_objects(&emu).is_empty())
        .await;
    assert_no_canary(&sink, &[&lease, &result]);
    emu.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_errors_pass_through_with_their_status() {
    let emu = start().await;
    let provider = KubernetesProvider::new();
    let sink = RecordingSink::default();
    emu.deny(DenyRule {
        verb: Some("create".into()),
        group: None,
        resource: "secrets".into(),
        namespace: None,
        name: None,
    });
    let err = provider
        .acquire_lease(
            &json!({"config": config(&emu, "sandbox-cr"), "companyId": "c-1", "runId": "run-3"}),
            &sink,
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, Some(403), "{err:?}");
    assert!(err.message.contains("forbidden"), "{}", err.message);
    assert!(!err.message.contains(CANARY));
    // The probe names the permission the acquire lacked (the emulator's access reviews answer
    // from the same deny rules).
    let probe = provider
        .probe(
            &json!({"config": config(&emu, "sandbox-cr"), "companyId": "c-1"}),
            &sink,
        )
        .await
        .unwrap();
    assert_eq!(probe["ok"], false, "{probe}");
    let summary = probe["summary"].as_str().unwrap();
    assert!(
        summary.starts_with("Kubernetes cluster reachable, but 1 of "),
        "{summary}"
    );
    assert!(
        summary.contains(&format!(
            "\nPermission missing: create secrets in namespace {NS}, to each run's Secret with the adapter's keys (pc-<run>-env), deleted with the lease.\n"
        )),
        "{summary}"
    );
    emu.clear_deny();

    emu.add_fault(FaultRule {
        method: Some("GET".into()),
        path: "/api/v1/namespaces/*/pods".into(),
        query: None,
        nth: 1,
        times: 1,
        action: FaultAction::Status {
            code: 500,
            reason: None,
            message: Some("etcd unavailable".into()),
            after: false,
        },
    });
    let probe = provider
        .probe(
            &json!({"config": config(&emu, "sandbox-cr"), "companyId": "c-1"}),
            &sink,
        )
        .await
        .unwrap();
    // The original's failure (its summary line and `metadata.error`), the error on the second
    // line, then the checks that need no cluster.
    assert_eq!(probe["ok"], false, "{probe}");
    let lines: Vec<&str> = probe["summary"].as_str().unwrap().split('\n').collect();
    assert_eq!(
        lines[..2],
        [
            "Kubernetes cluster probe failed.",
            "HTTP-Code: 500 Message: etcd unavailable"
        ]
    );
    assert!(
        lines[2..]
            .iter()
            .all(|l| l.starts_with("Runtime image for adapter "))
    );
    assert_eq!(probe["metadata"]["namespace"], NS);
    assert_eq!(probe["metadata"]["provider"], "kubernetes");
    assert_eq!(
        probe["metadata"]["error"],
        "HTTP-Code: 500\nMessage: etcd unavailable"
    );
    emu.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sandbox_failures_at_execute() {
    let emu = start().await;
    let provider = KubernetesProvider::new();
    let sink = RecordingSink::default();
    let lease = provider
        .acquire_lease(
            &json!({"config": config(&emu, "sandbox-cr"), "companyId": "c-1", "runId": "run-4"}),
            &sink,
        )
        .await
        .unwrap();
    let id = lease["providerLeaseId"].as_str().unwrap().to_string();
    assert!(emu.set_sandbox_plan(
        NS,
        &id,
        SandboxPlan::Failed {
            reason: "ImagePullBackOff".into(),
            message: "no such image".into(),
        }
    ));
    let params = json!({"config": config(&emu, "sandbox-cr"), "companyId": "c-1", "timeoutMs": 30000,
        "lease": {"providerLeaseId": id, "metadata": lease["metadata"]}, "command": "true"});
    let err = provider.execute(&params, &sink).await.unwrap_err();
    assert_eq!(
        err.message,
        format!("Sandbox {NS}/{id} failed: ImagePullBackOff \u{2014} no such image")
    );
    let resume = json!({"config": config(&emu, "sandbox-cr"), "companyId": "c-1",
        "providerLeaseId": id, "leaseMetadata": lease["metadata"]});
    let resumed = provider.resume_lease(&resume, &sink).await.unwrap();
    assert_eq!(resumed["providerLeaseId"], Value::Null);
    assert_eq!(
        resumed["metadata"]["reason"],
        format!("Sandbox {NS}/{id} failed: ImagePullBackOff \u{2014} no such image")
    );
    provider.destroy_lease(&resume, &sink).await.unwrap();
    poll("the failed lease's objects to be deleted", GC_WAIT)
        .until(|| leaked_objects(&emu).is_empty())
        .await;
    emu.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_cut_before_status_answers_at_once_with_what_happened() {
    let emu = start().await;
    let provider = KubernetesProvider::new();
    let sink = RecordingSink::default();
    let lease = provider
        .acquire_lease(
            &json!({"config": config(&emu, "sandbox-cr"), "companyId": "c-1", "runId": "run-5"}),
            &sink,
        )
        .await
        .unwrap();
    let id = lease["providerLeaseId"].as_str().unwrap().to_string();
    // Known Ready first, so the short timeout below only bounds the exec.
    let ready = json!({"config": config(&emu, "sandbox-cr"), "companyId": "c-1", "timeoutMs": 30000,
        "lease": {"providerLeaseId": id, "metadata": lease["metadata"]}, "command": "true"});
    provider.execute(&ready, &sink).await.unwrap();
    emu.add_fault(FaultRule {
        method: None,
        path: "/api/v1/namespaces/*/pods/*/exec".into(),
        query: None,
        nth: 1,
        times: 1,
        action: FaultAction::CutExec {
            after_frames: 0,
            abort: false,
            after_stdin_bytes: None,
        },
    });
    // 1000 ms is under the 5 s exec floor: the watchdog fires after 5000 ms.
    let params = json!({"config": config(&emu, "sandbox-cr"), "companyId": "c-1", "timeoutMs": 1000,
        "lease": {"providerLeaseId": id, "metadata": lease["metadata"]}, "command": "sleep 1; echo late"});
    let started = std::time::Instant::now();
    let result = provider.execute(&params, &sink).await.unwrap();
    // Issue #38: the drop answers at once with what happened, not at the watchdog (the
    // original reported the watchdog's timeout); it is no timeout.
    assert!(started.elapsed() < std::time::Duration::from_millis(5_000));
    let pod = result["metadata"]["podName"].as_str().unwrap();
    assert_eq!(result["timedOut"], false, "{result}");
    assert_eq!(result["exitCode"], Value::Null, "{result}");
    assert_eq!(
        result["stderr"],
        kubernetes::exec::transport::exec_closed_message(pod, "agent", "/bin/sh"),
        "{result}"
    );
    provider
        .destroy_lease(
            &json!({"config": config(&emu, "sandbox-cr"), "companyId": "c-1", "providerLeaseId": id,
                "leaseMetadata": lease["metadata"]}),
            &sink,
        )
        .await
        .unwrap();
    poll("objects to be deleted", GC_WAIT)
        .until(|| leaked_objects(&emu).is_empty())
        .await;
    emu.shutdown().await;
}

async fn acquire_ready_lease(
    emu: &KubernetesEmulator,
    provider: &KubernetesProvider,
    run: &str,
) -> (String, Value) {
    let lease = provider
        .acquire_lease(
            &json!({"config": config(emu, "sandbox-cr"), "companyId": "c-1", "runId": run}),
            &RecordingSink::default(),
        )
        .await
        .unwrap();
    let id = lease["providerLeaseId"].as_str().unwrap().to_string();
    (
        id.clone(),
        json!({"providerLeaseId": id, "metadata": lease["metadata"]}),
    )
}

fn destroy_params(emu: &KubernetesEmulator, lease: &Value) -> Value {
    json!({"config": config(emu, "sandbox-cr"), "companyId": "c-1",
        "providerLeaseId": lease["providerLeaseId"], "leaseMetadata": lease["metadata"]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v4_exec_keeps_stdin_open_and_output_whole() {
    let mut opts = KubeEmulatorOptions::for_tests();
    opts.exec_protocols = vec!["v4.channel.k8s.io".into()];
    let emu = KubernetesEmulator::start(opts).await.unwrap();
    let provider = KubernetesProvider::new();
    let (_, lease) = acquire_ready_lease(&emu, &provider, "run-v4").await;
    let payload = "x".repeat(200_000);
    let result = provider
        .execute(
            &json!({"config": config(&emu, "sandbox-cr"), "companyId": "c-1", "lease": lease,
                "command": "sh", "args": ["-c", "wc -c; echo done >&2"], "stdin": payload, "timeoutMs": 30000}),
            &RecordingSink::default(),
        )
        .await
        .unwrap();
    assert_eq!(result["exitCode"], 0, "{result}");
    assert_eq!(result["stdout"].as_str().unwrap().trim(), "200000");
    assert_eq!(result["stderr"], "done\n");
    provider
        .destroy_lease(&destroy_params(&emu, &lease), &RecordingSink::default())
        .await
        .unwrap();
    poll("objects to be deleted", GC_WAIT)
        .until(|| leaked_objects(&emu).is_empty())
        .await;
    emu.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_watchdog_is_a_timed_out_result_and_a_refused_setup_is_not() {
    let emu = start().await;
    let provider = KubernetesProvider::new();
    let sink = RecordingSink::default();
    let (_, lease) = acquire_ready_lease(&emu, &provider, "run-6").await;
    // Known Ready from now on.
    let base = json!({"config": config(&emu, "sandbox-cr"), "companyId": "c-1", "lease": lease});
    let mut params = base.clone();
    params["command"] = json!("true");
    provider.execute(&params, &sink).await.unwrap();
    let mut params = base.clone();
    params["command"] = json!("sleep 30");
    params["timeoutMs"] = json!(100);
    let result = provider.execute(&params, &sink).await.unwrap();
    assert_timed_out(&result, "/bin/sh");

    let mut params = base.clone();
    params["lease"]["metadata"]["podName"] = json!("no-such-pod");
    params["command"] = json!("true");
    let result = provider.execute(&params, &sink).await.unwrap();
    // Issue #38: the upgrade refused (404) for a pod that is gone never started the command:
    // the execute finds the Sandbox's pod again and runs it there, once.
    assert_eq!(result["timedOut"], false, "{result}");
    assert_eq!(result["exitCode"], 0, "{result}");
    assert_eq!(
        result["metadata"]["podName"], lease["metadata"]["podName"],
        "{result}"
    );
    // A pod that runs and still refuses the exec: said at once, not a timeout.
    emu.add_fault(FaultRule {
        method: None,
        path: "/api/v1/namespaces/*/pods/*/exec".into(),
        query: None,
        nth: 1,
        times: 1,
        action: FaultAction::Status {
            code: 403,
            reason: None,
            message: Some("exec is not allowed here".into()),
            after: false,
        },
    });
    let mut params = base.clone();
    params["command"] = json!("true");
    let result = provider.execute(&params, &sink).await.unwrap();
    assert_eq!(result["timedOut"], false, "{result}");
    assert_eq!(result["exitCode"], Value::Null, "{result}");
    let pod = lease["metadata"]["podName"].as_str().unwrap();
    assert_eq!(
        result["stderr"],
        kubernetes::exec::transport::exec_refused_message(
            403,
            pod,
            "agent",
            "exec is not allowed here"
        ),
        "{result}"
    );
    provider
        .destroy_lease(&destroy_params(&emu, &lease), &sink)
        .await
        .unwrap();
    poll("objects to be deleted", GC_WAIT)
        .until(|| leaked_objects(&emu).is_empty())
        .await;
    emu.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_and_the_readiness_timeout() {
    let emu = start().await;
    let provider = KubernetesProvider::new();
    let sink = RecordingSink::default();
    let (id, lease) = acquire_ready_lease(&emu, &provider, "run-7").await;
    let resume = destroy_params(&emu, &lease);
    let resumed = provider.resume_lease(&resume, &sink).await.unwrap();
    assert_eq!(resumed["providerLeaseId"], id.as_str(), "{resumed}");
    assert_eq!(resumed["metadata"]["phase"], "Running");
    assert_eq!(resumed["metadata"]["resumedLease"], true);

    emu.set_default_sandbox_plan(SandboxPlan::Never);
    let (slow_id, slow) = acquire_ready_lease(&emu, &provider, "run-8").await;
    let result = provider
        .execute(
            &json!({"config": config(&emu, "sandbox-cr"), "companyId": "c-1", "lease": slow,
                "command": "true", "timeoutMs": 300}),
            &sink,
        )
        .await
        .unwrap();
    assert_eq!(
        result,
        json!({"exitCode": null, "signal": null, "timedOut": true, "stdout": "",
            "stderr": "Sandbox pod did not become Ready within 300ms",
            "metadata": {"provider": "kubernetes", "backend": "sandbox-cr", "namespace": NS,
                "sandboxName": slow_id}})
    );
    for lease in [&lease, &slow] {
        provider
            .destroy_lease(&destroy_params(&emu, lease), &sink)
            .await
            .unwrap();
    }
    poll("objects to be deleted", GC_WAIT)
        .until(|| leaked_objects(&emu).is_empty())
        .await;
    let gone = provider.resume_lease(&resume, &sink).await.unwrap();
    assert_eq!(
        gone,
        json!({"providerLeaseId": null, "metadata": {"expired": true, "reason": "Sandbox CR no longer exists"}})
    );
    emu.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_exec_and_buffered_caps_on_the_wire() {
    use kubernetes::cluster::ClientCache;
    use kubernetes::exec::{
        ExecError, ExecRequest, StreamingIo, exec_in_pod, exec_in_pod_streaming,
    };

    let emu = start().await;
    let provider = KubernetesProvider::new();
    let (_, lease) = acquire_ready_lease(&emu, &provider, "run-9").await;
    // Resolve the pod through a first execute (waits for Ready).
    let first = provider
        .execute(
            &json!({"config": config(&emu, "sandbox-cr"), "companyId": "c-1", "lease": lease,
                "command": "true", "timeoutMs": 30000}),
            &RecordingSink::default(),
        )
        .await
        .unwrap();
    let pod = first["metadata"]["podName"].as_str().unwrap().to_string();
    let parsed = KubernetesConfig::parse(&config(&emu, "sandbox-cr")).unwrap();
    let handle = ClientCache::new().client_for(&parsed).await.unwrap();

    let input = b"line-1\nline-2\n".repeat(1000);
    let mut sink_bytes: Vec<u8> = Vec::new();
    let argv: Vec<String> = [
        "/bin/sh",
        "-c",
        &format!("head -c {} | tr a-z A-Z; echo warn >&2", input.len()),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let output = exec_in_pod_streaming(
        &handle.client,
        &handle.redactor,
        NS,
        &pod,
        "agent",
        &argv,
        StreamingIo {
            stdin: Some(Box::new(&input[..])),
            stdout: Some(Box::new(&mut sink_bytes)),
            timeout_ms: 30_000,
            max_stderr_bytes: Some(1_048_576),
        },
    )
    .await
    .unwrap();
    assert_eq!(output.exit_code, 0);
    assert_eq!(output.stderr, "warn\n");
    assert_eq!(sink_bytes, b"LINE-1\nLINE-2\n".repeat(1000));

    let noisy: Vec<String> = ["/bin/sh", "-c", "head -c 5000 /dev/zero >&2"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let err = exec_in_pod_streaming(
        &handle.client,
        &handle.redactor,
        NS,
        &pod,
        "agent",
        &noisy,
        StreamingIo {
            stdin: None,
            stdout: None,
            timeout_ms: 30_000,
            max_stderr_bytes: Some(100),
        },
    )
    .await
    .unwrap_err();
    assert_eq!(
        err,
        ExecError::Cap(format!(
            "execInPodStreaming stderr exceeded the 100-byte cap (pod={pod}, container=agent); the sandbox produced more diagnostics than the buffer allows."
        ))
    );
    let sleepy: Vec<String> = ["sleep", "30"].iter().map(|s| s.to_string()).collect();
    let err = exec_in_pod_streaming(
        &handle.client,
        &handle.redactor,
        NS,
        &pod,
        "agent",
        &sleepy,
        StreamingIo {
            stdin: None,
            stdout: None,
            timeout_ms: 200,
            max_stderr_bytes: None,
        },
    )
    .await
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "execInPodStreaming timed out after 200ms (pod={pod}, container=agent, cmd0=sleep). The WebSocket likely dropped before the command produced a status frame."
        )
    );

    let mut request = ExecRequest::new(
        NS,
        &pod,
        vec!["sh".into(), "-c".into(), "head -c 3000 /dev/zero".into()],
    );
    request.max_stdout_bytes = Some(1000);
    let err = exec_in_pod(&handle.client, &handle.redactor, &request, None)
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "execInPod stdout exceeded the 1000-byte cap (pod={pod}, container=agent); the sandbox produced more output than the buffer allows."
        )
    );
    let mut request = ExecRequest::new(
        NS,
        &pod,
        vec![
            "sh".into(),
            "-c".into(),
            "head -c 3000 /dev/zero >&2; exit 7".into(),
        ],
    );
    request.max_stderr_bytes = Some(1000);
    let err = exec_in_pod(&handle.client, &handle.redactor, &request, None)
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "execInPod stderr exceeded the 1000-byte cap (pod={pod}, container=agent); the sandbox produced more output than the buffer allows."
        )
    );
    request.max_stderr_bytes = None;
    let output = exec_in_pod(&handle.client, &handle.redactor, &request, None)
        .await
        .unwrap();
    assert_eq!((output.exit_code, output.stderr.len()), (7, 3000));

    emu.add_fault(FaultRule {
        method: None,
        path: "/api/v1/namespaces/*/pods/*/exec".into(),
        query: None,
        nth: 1,
        times: 1,
        action: FaultAction::CutExec {
            after_frames: 1,
            abort: true,
            after_stdin_bytes: None,
        },
    });
    let request = ExecRequest::new(
        NS,
        &pod,
        vec!["sh".into(), "-c".into(), "echo a; sleep 1; echo b".into()],
    );
    let err = exec_in_pod(&handle.client, &handle.redactor, &request, None)
        .await
        .unwrap_err();
    // Issue #38: what happened, at once (the original waited for its watchdog, and reported
    // its timeout).
    assert_eq!(
        err,
        ExecError::Transport(format!(
            "execInPod connection closed before the command's exit status (pod={pod}, container=agent, cmd0=sh): the API server, the node or the connection to them went away while the command ran; it was not re-run, and it was ended if the pod could still be reached."
        ))
    );

    provider
        .destroy_lease(&destroy_params(&emu, &lease), &RecordingSink::default())
        .await
        .unwrap();
    poll("objects to be deleted", GC_WAIT)
        .until(|| leaked_objects(&emu).is_empty())
        .await;
    emu.shutdown().await;
}
