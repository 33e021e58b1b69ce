//! Bounded waits and results that fit the host (issue 15, attack 4), against the Kubernetes
//! emulator:
//! - an output too large for one reply line is cut to its tail, flagged `outputTruncated`, with
//!   the exit code kept (24 MiB in the normal suite; 256 MiB and 1 GiB with `PAPERCLIP_SOAK=long`);
//! - 8 MiB of stdin to a command that exits without reading it: the exit status and the output
//!   are taken as soon as the status arrives, not at the timeout.

use emulator::kubernetes::{KubeEmulatorOptions, KubernetesEmulator};
use kubernetes::KubernetesProvider;
use kubernetes::exec::RESULT_TAIL_BYTES;
use sandbox_core::NullSink;
use serde_json::{Value, json};

/// The host drops a reply line over this many characters (host contract §2.6).
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
        let config = json!({"kubeconfig": emu.kubeconfig_yaml(), "companySlug": "acme",
            "backend": "sandbox-cr", "egressMode": "cilium"});
        let acquired = provider
            .acquire(
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
    if std::env::var("PAPERCLIP_SOAK").as_deref() == Ok("long") {
        assert_cut_to_tail(&bed, 256).await;
        assert_cut_to_tail(&bed, 1024).await;
    }
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
