//! A timed-out execute does not outlive its call: the command (and what it started) is ended in
//! the pod, `TERM` first and `KILL` after the grace period, and the result is the timed-out
//! result it always was. Against the Kubernetes emulator, whose execs share their container's
//! pid namespace and whose closed exec streams kill nothing, as on a real node.

use std::time::{Duration, Instant};

use emulator::kubernetes::{KubeEmulatorOptions, KubernetesEmulator};
use kubernetes::KubernetesProvider;
use kubernetes::exec::group::KILL_EXEC_TIMEOUT_MS;
use sandbox_core::NullSink;
use sandbox_core::poll::poll;
use serde_json::{Value, json};

#[path = "support/timed_out.rs"]
mod timed_out;
use timed_out::assert_timed_out as timed_out;

/// The exec floor: a `timeoutMs` below it still gets 5 s.
const FLOOR: Duration = Duration::from_millis(5_000);
/// The grace period between `TERM` and `KILL`.
const GRACE: Duration = Duration::from_millis(2_000);
/// Slack for a loaded machine.
const SLACK: Duration = Duration::from_secs(8);

struct Bed {
    emu: KubernetesEmulator,
    provider: KubernetesProvider,
    lease: Value,
}

impl Bed {
    async fn start() -> Bed {
        let emu = KubernetesEmulator::start(KubeEmulatorOptions::for_tests())
            .await
            .expect("emulator starts");
        let provider = KubernetesProvider::new();
        let lease = provider
            .acquire_lease(
                &json!({"config": Self::config_of(&emu), "companyId": "c-1", "runId": "run-kill"}),
                &NullSink,
            )
            .await
            .unwrap();
        let lease =
            json!({"providerLeaseId": lease["providerLeaseId"], "metadata": lease["metadata"]});
        let bed = Bed {
            emu,
            provider,
            lease,
        };
        // Ready from now on.
        let ready = bed
            .execute(json!({"command": "true", "timeoutMs": 30_000}))
            .await;
        assert_eq!(ready["exitCode"], 0, "{ready}");
        bed
    }

    fn config_of(emu: &KubernetesEmulator) -> Value {
        json!({"kubeconfig": emu.kubeconfig_yaml(), "companySlug": "acme", "backend": "sandbox-cr"})
    }

    async fn execute(&self, extra: Value) -> Value {
        let mut params = json!({"config": Self::config_of(&self.emu), "companyId": "c-1",
            "lease": self.lease});
        for (k, v) in extra.as_object().unwrap() {
            params[k] = v.clone();
        }
        self.provider.execute(&params, &NullSink).await.unwrap()
    }

    /// The command line of every process in the agent container, one a line (read by a
    /// further execute, which lists itself too).
    async fn processes(&self) -> String {
        let listed = self
            .execute(json!({"command": "sh", "timeoutMs": 30_000, "args": ["-c",
                "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done"]}))
            .await;
        assert_eq!(listed["exitCode"], 0, "{listed}");
        listed["stdout"].as_str().unwrap().to_string()
    }

    /// The pid files left in the pod's `/tmp`, but the listing's own (which names its group,
    /// `-$$`: the listing's shell is the process the wrapper recorded).
    async fn pid_files(&self) -> String {
        let listed = self
            .execute(json!({"command": "sh", "timeoutMs": 30_000, "args": ["-c",
                "for f in /tmp/paperclip-exec-*; do [ -e \"$f\" ] && [ \"$(cat \"$f\")\" != \"-$$\" ] && echo \"$f\"; done; true"]}))
            .await;
        assert_eq!(listed["exitCode"], 0, "{listed}");
        listed["stdout"].as_str().unwrap().to_string()
    }

    async fn destroy(self) {
        let params = json!({"config": Self::config_of(&self.emu), "companyId": "c-1",
            "providerLeaseId": self.lease["providerLeaseId"], "leaseMetadata": self.lease["metadata"]});
        self.provider
            .destroy_lease(&params, &NullSink)
            .await
            .unwrap();
        self.emu.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_command_and_what_it_started_are_ended_with_term() {
    let bed = Bed::start().await;
    let live_before = bed.emu.counts().live_processes;
    let started = Instant::now();
    let result = bed
        .execute(
            json!({"command": "sh", "args": ["-c", "sleep 301 & sleep 300"],
            "timeoutMs": 2000}),
        )
        .await;
    let took = started.elapsed();
    timed_out(&result, "sh");
    assert!(took >= FLOOR, "answered before the exec floor: {took:?}");
    assert!(
        took < FLOOR + Duration::from_millis(KILL_EXEC_TIMEOUT_MS) + SLACK,
        "took {took:?}"
    );
    // Nothing of it is left: not the command, not its background child, not its pid file, and
    // the emulator counts no exec still running.
    let left = bed.processes().await;
    assert!(!left.contains("sleep 30"), "{left}");
    assert_eq!(bed.pid_files().await, "");
    poll("the timed-out exec to be reaped", Duration::from_secs(10))
        .until(|| bed.emu.counts().live_processes <= live_before)
        .await;
    bed.destroy().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_that_ignores_term_is_killed_after_the_grace_period() {
    let bed = Bed::start().await;
    let started = Instant::now();
    // `trap '' TERM` is inherited: the loop's `sleep` ignores TERM too.
    let result = bed
        .execute(json!({"command": "sh",
            "args": ["-c", "trap '' TERM; while :; do sleep 1; done"],
            "env": {"MARKER": "deaf-to-term"}, "stdin": "unread", "timeoutMs": 1000}))
        .await;
    let took = started.elapsed();
    // With stdin the original's argv is `/bin/sh -c "head -c … | …"`.
    timed_out(&result, "/bin/sh");
    assert!(
        took >= FLOOR + GRACE,
        "KILL came before the grace period: {took:?}"
    );
    assert!(
        took < FLOOR + Duration::from_millis(KILL_EXEC_TIMEOUT_MS) + SLACK,
        "took {took:?}"
    );
    let left = bed.processes().await;
    assert!(!left.contains("trap"), "{left}");
    assert!(!left.contains("head -c"), "{left}");
    assert_eq!(bed.pid_files().await, "");
    bed.destroy().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_that_ends_runs_as_before_and_leaves_nothing_behind() {
    let bed = Bed::start().await;
    // argv, env, cwd and stdin reach the command as they did unwrapped.
    let result = bed
        .execute(json!({"command": "sh",
            "args": ["-c", "pwd; echo \"$FOO\"; cat; echo \"$0 $#\" >&2; exit 7", "it's"],
            "env": {"FOO": "b a'r"}, "cwd": "/tmp", "stdin": "in\n", "timeoutMs": 30_000}))
        .await;
    assert_eq!(result["exitCode"], 7, "{result}");
    assert_eq!(result["timedOut"], false);
    assert_eq!(result["stdout"], "/tmp\nb a'r\nin\n");
    assert_eq!(result["stderr"], "it's 0\n");
    // A command without env or cwd: its status as it is, the 143 note included.
    let result = bed
        .execute(json!({"command": "sh", "args": ["-c", "kill -TERM $$"], "timeoutMs": 30_000}))
        .await;
    assert_eq!(result["exitCode"], 143, "{result}");
    assert!(
        result["stderr"].as_str().unwrap().contains("SIGTERM"),
        "{result}"
    );
    let result = bed
        .execute(json!({"command": "echo", "args": ["plain"], "timeoutMs": 30_000}))
        .await;
    assert_eq!(
        (result["exitCode"].clone(), result["stdout"].clone()),
        (json!(0), json!("plain\n"))
    );
    assert_eq!(bed.pid_files().await, "");
    bed.destroy().await;
}
