//! Execute on the real node (sandbox-cr): output streamed live through `ctx.execution.log`,
//! exit codes with the G-exec2 notes, `cwd` and env, stdin larger than the command reads, and a
//! command that outlives its `timeoutMs`. (That nothing of a timed-out command is left running
//! is `tests/real_cluster_exec_timeout.rs`'s.)

use std::time::Duration;

use kubernetes::exec::exit_hints::{EXIT_137_HINT, EXIT_143_HINT};
use sandbox_core::poll::poll;
use sandbox_core::{NullSink, OutputStream};
use serde_json::{Value, json};

use crate::harness::{RealLease, RecordingSink};
use crate::timed_out::assert_timed_out;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn execute_streams_exit_codes_cwd_env_stdin_and_timeout() {
    let lease = RealLease::acquire("exec", "sandbox-cr", json!({})).await;
    // Ready first, so that the waits below bound only the commands.
    assert_eq!(lease.sh("rm -f /tmp/go; echo ready").await, "ready\n");

    // Streamed live: both streams' first lines reach the sink while the command still waits
    // for a file that only a second execute creates.
    let live = RecordingSink::default();
    let running = lease.execute(
        json!({"command": "sh", "args": ["-c",
            "echo first; echo warn >&2; while [ ! -e /tmp/go ]; do sleep 0.1; done; echo second; echo done >&2"]}),
        &live,
    );
    let release = async {
        poll(
            "the first chunks to stream while the command runs",
            Duration::from_secs(60),
        )
        .until(|| {
            live.streamed(OutputStream::Stdout) == "first\n"
                && live.streamed(OutputStream::Stderr) == "warn\n"
        })
        .await;
        lease.sh("touch /tmp/go").await;
    };
    let (result, ()) = tokio::join!(running, release);
    assert_eq!(result["exitCode"], 0, "{result}");
    assert_eq!(result["timedOut"], false, "{result}");
    assert_eq!(result["signal"], Value::Null, "{result}");
    assert_eq!(result["stdout"], "first\nsecond\n", "{result}");
    assert_eq!(result["stderr"], "warn\ndone\n", "{result}");
    assert_eq!(live.streamed(OutputStream::Stdout), "first\nsecond\n");
    assert_eq!(live.streamed(OutputStream::Stderr), "warn\ndone\n");
    assert!(live.output.lock().unwrap().len() >= 4, "{:?}", live.output);

    // Exit codes: as the shell reports them; 137 and 143 with their notes, no signal claimed.
    let sink = RecordingSink::default();
    let result = lease
        .execute(
            json!({"command": "sh", "args": ["-c", "echo out; echo err >&2; exit 3"]}),
            &sink,
        )
        .await;
    assert_eq!(
        (&result["exitCode"], &result["stdout"], &result["stderr"]),
        (&json!(3), &json!("out\n"), &json!("err\n")),
        "{result}"
    );
    // The command runs as a child of the provider's wrapper shell (its process group, so that a
    // timeout can end it), and dash reports a child that died of a signal on stderr.
    for (script, code, hint, said) in [
        (
            "echo dying >&2; kill -9 $$",
            137,
            EXIT_137_HINT,
            "dying\nKilled",
        ),
        (
            "echo stopping >&2; kill -TERM $$",
            143,
            EXIT_143_HINT,
            "stopping\nTerminated",
        ),
    ] {
        let result = lease
            .execute(json!({"command": "sh", "args": ["-c", script]}), &NullSink)
            .await;
        assert_eq!(result["exitCode"], code, "{result}");
        assert_eq!(result["signal"], Value::Null, "{result}");
        assert_eq!(result["timedOut"], false, "{result}");
        assert_eq!(result["stderr"], format!("{said}\n{hint}\n"), "{result}");
        assert!(hint.contains(if code == 137 { "SIGKILL" } else { "SIGTERM" }));
    }

    // cwd and env (a value with a space and a quote), and a bare command line.
    let result = lease
        .execute(
            json!({"command": "sh", "args": ["-c", "pwd; printf '%s\\n' \"$FOO\" \"$BAR\""],
                "cwd": "/tmp", "env": {"FOO": "b a'r", "BAR": "$HOME"}}),
            &NullSink,
        )
        .await;
    assert_eq!(result["exitCode"], 0, "{result}");
    assert_eq!(result["stdout"], "/tmp\nb a'r\n$HOME\n", "{result}");
    let result = lease
        .execute(json!({"command": "echo $((6 * 7))", "cwd": "/"}), &NullSink)
        .await;
    assert_eq!(result["stdout"], "42\n", "{result}");

    // Stdin larger than the command reads: it takes 10 bytes and exits; the rest is read away in
    // the pod. (1000 bytes here; 1 MB and 8 MiB are `stdin.rs`'s.)
    let more = "0123456789".repeat(100);
    let result = lease
        .execute(
            json!({"command": "sh", "args": ["-c", "head -c 10; echo; echo read >&2"],
                "stdin": more}),
            &NullSink,
        )
        .await;
    assert_eq!(result["exitCode"], 0, "{result}");
    assert_eq!(result["stdout"], "0123456789\n", "{result}");
    assert_eq!(result["stderr"], "read\n", "{result}");

    // A command that never ends: a timed-out result after the 5 s exec floor.
    let result = lease
        .execute(
            json!({"command": "sleep 3600", "timeoutMs": 1000}),
            &NullSink,
        )
        .await;
    assert_timed_out(&result, "/bin/sh");
    // The lease still works afterwards.
    assert_eq!(lease.sh("echo after").await, "after\n");

    lease.destroy_and_check_gone().await;
}
