//! A timed-out CreateOS execute does not outlive its call, whatever the service does with the
//! exec stream the provider drops on the deadline. The emulator kills the command's tree when
//! the stream's reader goes away (the vendor's client says the service tears the command down);
//! under the `keepRunning` fault a dropped stream ends nothing, as a service that does not
//! do so would. Either way the provider's second request (`createos::exec::end`) ends the
//! command, and the execute answers what the original answers. Checked while the sandbox lives
//! on, so it is not the destroy that ends it.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::*;
use createos::exec::end::{END_REQUEST_TIMEOUT_MS, end_script};
use sandbox_core::poll::poll;
use serde_json::{Value, json};

/// Prints a line, ignores `TERM`, and leaves a child of its own running in the background.
const STUBBORN: &str = "echo started; trap '' TERM; sleep 300 & exec sleep 301";
const TIMEOUT_MS: u64 = 1500;

/// The original's answer for a timed-out command: no `signal` key, the output so far.
fn timed_out() -> String {
    json!({
        "exitCode": null,
        "timedOut": true,
        "stdout": "started\n",
        "stderr": "",
        "metadata": { "outputTruncated": false },
    })
    .to_string()
}

/// A `keepRunning` fault on every streaming exec: its end ends nothing.
fn streams_end_nothing(h: &Harness) {
    h.fault(json!({
        "method": "POST", "path": "/v1/sandboxes/*/exec", "query": "stream=true", "times": 0,
        "action": { "kind": "keepRunning" }
    }));
}

/// The FIFO the command's wrapper was sent with (`f='…'` on its first line).
fn control_of(exec: &Call) -> String {
    let script = exec.body.as_ref().unwrap()["args"][1].as_str().unwrap();
    let quoted = script
        .strip_prefix("f='")
        .and_then(|s| s.split_once("';"))
        .unwrap_or_else(|| panic!("not a wrapped script: {script}"))
        .0;
    let uuid = quoted.strip_prefix("/tmp/paperclip-exec-").unwrap();
    assert_eq!(uuid.len(), 36, "{quoted}");
    quoted.to_owned()
}

/// Runs STUBBORN with a deadline and checks the answer; returns the exec and end requests.
async fn time_out(h: &Harness, lease: &Value) -> (Call, Option<Call>) {
    h.clear_log();
    let params = h.exec_params(
        lease,
        "bash",
        &["-c", STUBBORN],
        json!({ "timeoutMs": TIMEOUT_MS }),
    );
    let started = Instant::now();
    let result = h.provider.execute(&params, &*h.sink).await.unwrap();
    let took = started.elapsed();
    assert_eq!(result.to_string(), timed_out());
    assert!(
        took < Duration::from_millis(TIMEOUT_MS + END_REQUEST_TIMEOUT_MS + 2_000),
        "answered after {took:?}"
    );
    let id = lease["providerLeaseId"].as_str().unwrap();
    let calls = h.calls();
    assert!(calls[0].is("POST", &format!("/sandboxes/{id}/exec?stream=true")));
    let end = calls.get(1).cloned();
    if let Some(end) = &end {
        assert!(
            end.is("POST", &format!("/sandboxes/{id}/exec")),
            "{}",
            show(&calls)
        );
        assert_eq!(calls.len(), 2, "{}", show(&calls));
    }
    (calls[0].clone(), end)
}

/// The end request carries the end script for the FIFO the command was wrapped with.
fn assert_ends(exec: &Call, end: &Call) {
    let script = end_script(&control_of(exec)).unwrap();
    assert_eq!(
        end.body,
        Some(json!({ "cmd": "/bin/bash", "args": ["-c", script] }))
    );
}

/// Nothing of the wrapper is left in the sandbox's `/tmp`.
fn no_control_files(h: &Harness, lease: &Value) {
    let root = h
        .emu
        .sandbox_root(lease["providerLeaseId"].as_str().unwrap())
        .expect("the sandbox's root");
    let tmp = root.join("tmp");
    let left: Vec<String> = std::fs::read_dir(&tmp)
        .map(|dir| {
            dir.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|name| name.starts_with("paperclip-exec-"))
                .collect()
        })
        .unwrap_or_default();
    assert!(left.is_empty(), "left in {}: {left:?}", Path::display(&tmp));
}

async fn nothing_left_running(h: &Harness) {
    poll(
        "the timed-out command to end in the sandbox",
        Duration::from_secs(15),
    )
    .until(|| h.emu.counts().live_processes == 0)
    .await;
    assert_eq!(h.emu.counts().sandboxes, 1, "the sandbox lives on");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_command_and_what_it_started_end_with_the_stream() {
    let h = Harness::start().await;
    let lease = h.acquire(&h.run_params(json!({}))).await;
    assert_eq!(h.emu.counts().live_processes, 0, "{:?}", h.emu.counts());
    let (exec, end) = time_out(&h, &lease).await;
    assert_ends(&exec, &end.expect("the end request"));
    nothing_left_running(&h).await;
    no_control_files(&h, &lease);
    h.destroy(&lease).await;
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_command_ends_where_a_dropped_stream_ends_nothing() {
    let h = Harness::start().await;
    let lease = h.acquire(&h.run_params(json!({}))).await;
    streams_end_nothing(&h);
    let (exec, end) = time_out(&h, &lease).await;
    nothing_left_running(&h).await;
    assert_ends(&exec, &end.expect("the end request"));
    no_control_files(&h, &lease);

    // A command that ends in time is not ended by anything, and leaves nothing behind.
    h.clear_log();
    let params = h.exec_params(&lease, "echo", &["in time"], json!({ "timeoutMs": 30_000 }));
    let result = h.provider.execute(&params, &*h.sink).await.unwrap();
    assert_eq!(result["stdout"], json!("in time\n"));
    assert_eq!(h.calls().len(), 1, "{}", show(&h.calls()));
    no_control_files(&h, &lease);
    h.destroy(&lease).await;
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_or_hung_end_request_changes_nothing_in_the_answer() {
    let h = Harness::start().await;
    let lease = h.acquire(&h.run_params(json!({}))).await;
    streams_end_nothing(&h);
    // Counted from here: the command's streaming exec is the first POST …/exec, its end
    // request the second.
    h.fault(json!({
        "method": "POST", "path": "/v1/sandboxes/*/exec", "nth": 2,
        "action": { "kind": "status", "status": 500 }
    }));
    let (_, end) = time_out(&h, &lease).await;
    let end = end.expect("the end request");
    let records = h.records();
    assert_eq!(records.last().unwrap().status, Some(500), "{end}");
    // The command runs on (nothing ended it); the next end request hangs past its bound.
    assert_eq!(h.emu.counts().live_processes, 1, "{:?}", h.emu.counts());
    h.fault(json!({
        "method": "POST", "path": "/v1/sandboxes/*/exec", "nth": 2,
        "action": { "kind": "delay", "ms": 60_000 }
    }));
    let (_, end) = time_out(&h, &lease).await;
    assert!(end.is_some(), "the end request was sent");
    // Deleting the sandbox ends what the failed requests could not.
    h.destroy(&lease).await;
    h.finish().await;
}
