//! `follow_process` on its own: replay after dropped connections, wait recovery, and every
//! catalogued failure of the output protocol (the hooks only show the host `exit(null)`).

use std::sync::{Arc, Mutex};

use createos::CreateOsClient;
use createos::process::follow::follow_process;
use createos::process::messages as pm;
use createos::process::{ManagedProcess, Mode, OutputKind, ProcessExit};
use createos::signal::Signal;
use serde_json::{Value, json};

use crate::common::*;
use crate::lease_id;

/// Five stdout lines in five writes, one stderr line, then exit 5.
const FIVE_LINES: &str =
    "for i in 1 2 3 4 5; do echo line$i; sleep 0.05; done; echo err >&2; exit 5";

fn client(h: &Harness) -> CreateOsClient {
    let config = createos::config::parse_config_arg(Some(&h.config())).unwrap();
    h.provider.clients().client(&config).unwrap()
}

struct Bed {
    h: Harness,
    lease: Value,
}

impl Bed {
    async fn new() -> Self {
        let h = Harness::start().await;
        let lease = h.acquire(&h.params(json!({ "runId": "run_follow" }))).await;
        Self { h, lease }
    }

    /// Starts `sh -c script` and waits until it has exited (so replays are deterministic).
    async fn process(&self, script: &str) -> Arc<ManagedProcess> {
        let process = ManagedProcess::create(
            client(&self.h),
            &lease_id(&self.lease),
            json!({ "cmd": "sh", "args": ["-c", script], "cwd": "/paperclip-workspace" }),
            Mode::Pipe,
        )
        .await
        .unwrap();
        // Wait for the exit through the API itself (no sleeps).
        let path = format!(
            "/sandboxes/{}/processes/{}/wait?timeout_ms=30000",
            lease_id(&self.lease),
            process.process_id()
        );
        client(&self.h)
            .json(reqwest::Method::GET, &path, None, None)
            .await
            .unwrap();
        process
    }

    /// Follows `process` with faults in place: the exit or the error text, and stdout.
    async fn follow(&self, process: &ManagedProcess) -> (Result<ProcessExit, String>, String) {
        let out = Mutex::new(Vec::new());
        let result = follow_process(
            &client(&self.h),
            &lease_id(&self.lease),
            process.process_id(),
            &Signal::new(),
            |kind, bytes| {
                if kind == OutputKind::Stdout {
                    out.lock().unwrap().extend(bytes);
                }
            },
        )
        .await
        .map_err(|e| {
            let message = sandbox_core::ProviderError::from(e).message;
            no_canary(&message);
            message
        });
        let out = String::from_utf8(out.into_inner().unwrap()).unwrap();
        (result, out)
    }

    fn connect_fault(&self, times: u64, action: Value) {
        self.h.fault(json!({
            "method": "GET",
            "path": "/v1/sandboxes/*/processes/*/connect",
            "times": times,
            "action": action,
        }));
    }

    fn connects(&self) -> Vec<String> {
        self.h
            .calls()
            .into_iter()
            .filter(|c| c.path.contains("/connect?") || c.path.contains("/wait?scope"))
            .map(|c| c.path.rsplit('/').next().unwrap().to_owned())
            .collect()
    }

    async fn finish(self) {
        self.h.destroy(&self.lease).await;
        self.h.finish().await;
    }
}

fn exit(code: i64) -> ProcessExit {
    ProcessExit {
        exit_code: Some(json!(code)),
        signal: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_connections_are_replayed_without_duplicates() {
    let bed = Bed::new().await;
    let all = "line1\nline2\nline3\nline4\nline5\n".to_owned();
    for abort in [false, true] {
        let process = bed.process(FIVE_LINES).await;
        bed.h.clear_log();
        bed.connect_fault(
            1,
            json!({ "kind": "cutStream", "afterFrames": 2, "abort": abort }),
        );
        let (result, out) = bed.follow(&process).await;
        assert_eq!(result, Ok(exit(5)));
        assert_eq!(out, all, "abort={abort}");
        assert_eq!(bed.connects(), ["connect?after=0", "connect?after=2"]);
    }
    // Retriable connect failures (5xx, 429, a dropped connection) are retried three times.
    let process = bed.process(FIVE_LINES).await;
    bed.h.clear_log();
    bed.h.fault(json!({ "method": "GET", "path": "/v1/sandboxes/*/processes/*/connect", "times": 1, "action": { "kind": "status", "status": 429 } }));
    bed.h.fault(json!({ "method": "GET", "path": "/v1/sandboxes/*/processes/*/connect", "nth": 2, "times": 1, "action": { "kind": "drop" } }));
    bed.h.fault(json!({ "method": "GET", "path": "/v1/sandboxes/*/processes/*/connect", "nth": 3, "times": 1, "action": { "kind": "status", "status": 502 } }));
    let (result, out) = bed.follow(&process).await;
    assert_eq!((result, out), (Ok(exit(5)), all.clone()));
    assert_eq!(bed.connects().len(), 4);
    bed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_that_keep_ending_recover_the_exit_from_wait_only_when_complete() {
    let bed = Bed::new().await;
    // No output at all: four empty streams, then wait proves nothing is missing.
    let quiet = bed.process("exit 9").await;
    bed.h.clear_log();
    bed.connect_fault(0, json!({ "kind": "cutStream", "afterFrames": 0 }));
    assert_eq!(bed.follow(&quiet).await, (Ok(exit(9)), String::new()));
    let mut expected = vec!["connect?after=0"; 4];
    expected.push("wait?scope=tree&timeout_ms=30000");
    assert_eq!(bed.connects(), expected);

    // Output that never arrives: one more window of four, then the loss is reported.
    let talkative = bed.process(FIVE_LINES).await;
    bed.h.clear_log();
    let (result, _) = bed.follow(&talkative).await;
    assert_eq!(result, Err(pm::REPLAY_INCOMPLETE.to_owned()));
    assert_eq!(bed.connects().len(), 9);

    // The first window delivers part of the output; the second delivers the rest.
    bed.h.emu.clear_faults();
    let process = bed.process(FIVE_LINES).await;
    bed.connect_fault(4, json!({ "kind": "cutStream", "afterFrames": 1 }));
    bed.h.clear_log();
    let (result, out) = bed.follow(&process).await;
    assert_eq!(result, Ok(exit(5)));
    assert_eq!(out, "line1\nline2\nline3\nline4\nline5\n");
    let connects = bed.connects();
    assert_eq!(connects[4], "wait?scope=tree&timeout_ms=30000");
    assert_eq!(connects[5], "connect?after=4");

    // A journal behind the cursor, and an exit without status, are refused.
    for (body, expected) in [
        (
            json!({ "output": { "newest_seq": -1 }, "exit_code": 0 }),
            pm::JOURNAL_INVALID,
        ),
        (
            json!({ "output": { "newest_seq": 0.5 }, "exit_code": 0 }),
            pm::JOURNAL_INVALID,
        ),
        (
            json!({ "output": { "newest_seq": 0 }, "exit_code": null, "signal": "" }),
            pm::EXIT_STATUS_MISSING,
        ),
        (
            json!({ "output": 0, "exit_code": 0 }),
            "CreateOS returned an invalid response.",
        ),
    ] {
        bed.h.emu.clear_faults();
        let process = bed.process("exit 0").await;
        bed.connect_fault(0, json!({ "kind": "cutStream", "afterFrames": 0 }));
        bed.h.fault(json!({
            "method": "GET", "path": "/v1/sandboxes/*/processes/*/wait",
            "action": { "kind": "status", "status": 200, "body": { "status": "success", "data": body } },
        }));
        assert_eq!(
            bed.follow(&process).await.0,
            Err(expected.to_owned()),
            "{body}"
        );
    }
    bed.h.emu.clear_faults();
    bed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protocol_failures_are_the_catalogued_errors() {
    let bed = Bed::new().await;
    let cases: Vec<(Value, &str)> = vec![
        (
            json!({ "kind": "sequenceGap", "afterFrames": 1 }),
            pm::SEQUENCE_GAP,
        ),
        (json!({ "kind": "evicted" }), pm::OUTPUT_EVICTED),
        (
            json!({ "kind": "evicted", "inStream": true, "afterFrames": 2 }),
            pm::OUTPUT_EVICTED,
        ),
        (
            json!({ "kind": "errorFrame", "afterFrames": 1, "error": "internal" }),
            pm::STREAM_ERROR,
        ),
        (
            json!({ "kind": "unknownFrame", "afterFrames": 1 }),
            pm::UNKNOWN_EVENT,
        ),
        (
            json!({ "kind": "oversizedFrame", "afterFrames": 1 }),
            "CreateOS process frame is too large.",
        ),
        (
            json!({ "kind": "frame", "afterFrames": 0, "line": "[1]" }),
            "CreateOS returned an invalid process frame.",
        ),
        (
            json!({ "kind": "frame", "afterFrames": 0, "line": r#"{"type":"data","seq":"1"}"# }),
            pm::SEQUENCE_INVALID,
        ),
        (
            json!({ "kind": "frame", "afterFrames": 0, "line": r#"{"type":"data","seq":1,"stream":"stdout","data_base64":"aGk"}"# }),
            pm::OUTPUT_INVALID,
        ),
        (
            json!({ "kind": "frame", "afterFrames": 0, "line": r#"{"type":"data","seq":1,"stream":"tty","data_base64":""}"# }),
            pm::OUTPUT_INVALID,
        ),
        (
            json!({ "kind": "frame", "afterFrames": 0, "line": r#"{"type":"exit","exit_code":1.5}"#, "end": true }),
            pm::EXIT_STATUS_MISSING,
        ),
        (
            json!({ "kind": "status", "status": 404 }),
            "CreateOS request failed (HTTP 404) during output connection.",
        ),
        (
            json!({ "kind": "status", "status": 401 }),
            "CreateOS request failed (HTTP 401) during output connection.",
        ),
        (
            json!({ "kind": "status", "status": 204 }),
            "CreateOS returned an empty process stream.",
        ),
        (
            json!({ "kind": "redirect" }),
            "(retried as a connection failure)",
        ),
    ];
    let process = bed.process(FIVE_LINES).await;
    for (action, expected) in cases {
        bed.h.emu.clear_faults();
        bed.connect_fault(1, action.clone());
        let (result, _) = bed.follow(&process).await;
        if action["kind"] == "redirect" {
            // A redirect is a connection failure, retried like one; it then connects.
            assert_eq!(result, Ok(exit(5)), "{action}");
            continue;
        }
        assert_eq!(result, Err(expected.to_owned()), "{action}");
    }
    // Four retriable failures in a row.
    bed.h.emu.clear_faults();
    bed.connect_fault(4, json!({ "kind": "status", "status": 503 }));
    bed.h.clear_log();
    assert_eq!(
        bed.follow(&process).await.0,
        Err(pm::OUTPUT_CONNECTION_FAILED.to_owned())
    );
    assert_eq!(bed.connects().len(), 4);
    bed.h.emu.clear_faults();
    bed.finish().await;
}
