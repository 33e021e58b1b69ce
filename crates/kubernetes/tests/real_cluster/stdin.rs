//! Stdin larger than the command reads, on the real node: the command takes 10 bytes and exits,
//! and the execute answers with its result at once. (Before the in-pod drain after the command,
//! `head -c N` died of SIGPIPE, nothing read the rest, containerd's stdin copy blocked and no
//! status frame came: 1 MB never answered until the timeout; docs/wire-parity.md.)

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::{RealLease, RecordingSink};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdin_larger_than_the_command_reads_answers_at_once() {
    let lease = RealLease::acquire("stdin", "sandbox-cr", json!({})).await;
    // Ready first, so that the bound below is the execute's alone.
    assert_eq!(lease.sh("echo ready").await, "ready\n");
    for (size, exit) in [(1_000_000, 0), (8 * 1024 * 1024, 0), (1_000_000, 3)] {
        let stdin = "0123456789".repeat(size / 10);
        let script = format!("head -c 10; echo; echo done; echo err >&2; exit {exit}");
        let sink = RecordingSink::default();
        let started = Instant::now();
        let result = lease
            .execute(
                json!({"command": "sh", "args": ["-c", script], "stdin": stdin,
                    "timeoutMs": 120_000}),
                &sink,
            )
            .await;
        let took = started.elapsed();
        assert_eq!(result["exitCode"], exit, "{size}: {result}");
        assert_eq!(result["timedOut"], false, "{size}: {result}");
        assert_eq!(result["signal"], Value::Null, "{size}: {result}");
        assert_eq!(result["stdout"], "0123456789\ndone\n", "{size}: {result}");
        assert_eq!(result["stderr"], "err\n", "{size}: {result}");
        // Far from the 120 s timeout: the time to send the stdin, not a hang.
        assert!(took < Duration::from_secs(30), "{size}: took {took:?}");
    }
    // A command that reads all of it still gets every byte.
    let result = lease
        .execute(
            json!({"command": "sh", "args": ["-c", "wc -c"], "stdin": "y".repeat(8 * 1024 * 1024)}),
            &RecordingSink::default(),
        )
        .await;
    assert_eq!(result["exitCode"], 0, "{result}");
    assert_eq!(
        result["stdout"].as_str().unwrap().trim(),
        "8388608",
        "{result}"
    );
    lease.destroy_and_check_gone().await;
}
