//! Managed processes: journal replay, stdin, PTY, signals, wait, delete and eviction.

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use serde_json::{Value, json};

use crate::common::{Http, Resp, decode_output, eventually, no_live_processes, start};

async fn spawn(http: &Http, id: &str, body: Value) -> String {
    let r = http
        .call("POST", &format!("/v1/sandboxes/{id}/processes"), Some(body))
        .await;
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    r.data()["process_id"].as_str().unwrap().to_string()
}

async fn input(http: &Http, base: &str, text: &str) -> u16 {
    http.code(
        "POST",
        &format!("{base}/input"),
        Some(json!({ "data_base64": B64.encode(text) })),
    )
    .await
}

async fn newest_seq(http: &Http, base: &str) -> u64 {
    http.call("GET", base, None).await.data()["output"]["newest_seq"]
        .as_u64()
        .unwrap()
}

/// Starts `bash -c script` and waits for its first output; returns the process's path.
async fn spawn_script(http: &Http, id: &str, script: &str) -> String {
    let body = json!({ "cmd": "/bin/bash", "args": ["-c", script] });
    let pid = spawn(http, id, body).await;
    let base = format!("/v1/sandboxes/{id}/processes/{pid}");
    assert!(
        eventually(Duration::from_secs(5), || async {
            newest_seq(http, &base).await >= 1
        })
        .await
    );
    base
}

/// Every frame of the process at `base` from the start of its journal, up to its exit.
async fn replay(http: &Http, base: &str) -> Vec<Value> {
    let (_, mut frames) = http
        .stream("GET", &format!("{base}/connect?after=0"), None)
        .await;
    frames.collect().await
}

async fn signal(http: &Http, base: &str, name: &str) -> Resp {
    let body = json!({ "signal": name });
    http.call("POST", &format!("{base}/signal"), Some(body))
        .await
}

#[tokio::test]
async fn pipe_process_replays_after_n_and_ends_with_exit() {
    let (emu, http) = start(|_| {}).await;
    let id = http.sandbox().await;
    let script = "echo one; echo two >&2; echo three; read line; echo \"got $line\"; exit 5";
    let pid = spawn(
        &http,
        &id,
        json!({ "cmd": "/bin/bash", "args": ["-lc", script], "cwd": "/paperclip-workspace" }),
    )
    .await;
    let base = format!("/v1/sandboxes/{id}/processes/{pid}");
    // Wait (as a client would, by polling) until stdout and stderr have both been journaled
    // (separate pipes, so at least two chunks, however the lines were coalesced).
    assert!(
        eventually(Duration::from_secs(5), || async {
            newest_seq(&http, &base).await >= 2
        })
        .await
    );

    let (status, mut live) = http
        .stream("GET", &format!("{base}/connect?after=1"), None)
        .await;
    assert_eq!(status, 200);
    assert_eq!(input(&http, &base, "hello\n").await, 200);
    let frames = live.collect().await;
    let seqs: Vec<u64> = frames.iter().filter_map(|f| f["seq"].as_u64()).collect();
    assert_eq!(seqs.first(), Some(&2), "replay starts after the cursor");
    assert!(
        seqs.windows(2).all(|w| w[1] == w[0] + 1),
        "contiguous: {seqs:?}"
    );
    assert_eq!(
        frames.last().unwrap(),
        &json!({ "type": "exit", "exit_code": 5, "signal": null })
    );

    // A full replay from 0 returns everything, stdout and stderr separately.
    let all = replay(&http, &base).await;
    assert_eq!(decode_output(&all, "stdout"), "one\nthree\ngot hello\n");
    assert_eq!(decode_output(&all, "stderr"), "two\n");
    let newest = all.iter().filter_map(|f| f["seq"].as_u64()).max().unwrap();

    let waited = http
        .call(
            "GET",
            &format!("{base}/wait?scope=tree&timeout_ms=30000"),
            None,
        )
        .await
        .data();
    assert_eq!(waited["exit_code"], 5);
    assert_eq!(waited["output"]["newest_seq"], newest);
    // Input after exit, closing stdin of an exited process.
    assert_eq!(input(&http, &base, "late").await, 409);
    let r = http
        .call("DELETE", &format!("{base}?grace_ms=1000"), None)
        .await;
    assert_eq!(r.data()["tree_exited"], true);
    assert_eq!(http.code("GET", &base, None).await, 404);
    assert_eq!(
        http.code("DELETE", &format!("{base}?grace_ms=1000"), None)
            .await,
        404
    );
    no_live_processes(&emu).await;
    assert_eq!(emu.counts().managed_processes, 0);
}

#[tokio::test]
async fn stdin_close_ends_cat_and_enforces_limits() {
    let (_emu, http) = start(|o| o.max_input_bytes = 16).await;
    let id = http.sandbox().await;
    let pid = spawn(&http, &id, json!({ "cmd": "/bin/cat" })).await;
    let base = format!("/v1/sandboxes/{id}/processes/{pid}");
    assert_eq!(input(&http, &base, "x".repeat(17).as_str()).await, 413);
    let r = http
        .call(
            "POST",
            &format!("{base}/input"),
            Some(json!({ "data_base64": "not base64!" })),
        )
        .await;
    assert_eq!(r.status, 400);
    assert_eq!(input(&http, &base, "abc").await, 200);
    assert_eq!(input(&http, &base, "").await, 200);
    assert_eq!(
        http.code("POST", &format!("{base}/stdin/close"), None)
            .await,
        200
    );
    assert_eq!(
        http.code("POST", &format!("{base}/stdin/close"), None)
            .await,
        409
    );
    assert_eq!(input(&http, &base, "more").await, 409);
    let frames = replay(&http, &base).await;
    assert_eq!(decode_output(&frames, "stdout"), "abc");
    assert_eq!(frames.last().unwrap()["exit_code"], 0);
}

#[tokio::test]
async fn pty_process_has_a_terminal_of_the_requested_size() {
    let (emu, http) = start(|_| {}).await;
    let id = http.sandbox().await;
    let script = "stty size; [ -t 0 ] && echo is-tty; echo TERM=$TERM; read x; echo got:$x";
    let pid = spawn(
        &http,
        &id,
        json!({
            "cmd": "/bin/bash", "args": ["-lc", script], "cwd": "/paperclip-workspace",
            "pty": { "cols": 120, "rows": 30 }
        }),
    )
    .await;
    let base = format!("/v1/sandboxes/{id}/processes/{pid}");
    assert_eq!(
        http.code("POST", &format!("{base}/stdin/close"), None)
            .await,
        409
    );
    let (_, mut frames) = http
        .stream("GET", &format!("{base}/connect?after=0"), None)
        .await;
    assert_eq!(input(&http, &base, "typed\n").await, 200);
    let frames = frames.collect().await;
    assert!(
        frames
            .iter()
            .filter(|f| f["type"] == "data")
            .all(|f| f["stream"] == "pty")
    );
    let text = decode_output(&frames, "pty");
    assert!(text.contains("30 120"), "{text:?}");
    assert!(text.contains("is-tty"), "{text:?}");
    assert!(text.contains("TERM=xterm-256color"), "{text:?}");
    assert!(text.contains("got:typed"), "{text:?}");
    assert_eq!(frames.last().unwrap()["exit_code"], 0);
    no_live_processes(&emu).await;
}

#[tokio::test]
async fn signals_reach_the_command_not_bwrap() {
    let (emu, http) = start(|_| {}).await;
    let id = http.sandbox().await;
    // A trap proves the command itself got SIGTERM and could clean up.
    let script = "trap 'echo trapped; exit 7' TERM; echo ready; while :; do sleep 0.05; done";
    let base = spawn_script(&http, &id, script).await;
    let r = signal(&http, &base, "SIGTERM").await;
    assert_eq!(r.data()["delivered"], true);
    let waited = http
        .call("GET", &format!("{base}/wait?timeout_ms=5000"), None)
        .await
        .data();
    assert_eq!(waited["exit_code"], 7);
    let frames = replay(&http, &base).await;
    assert_eq!(decode_output(&frames, "stdout"), "ready\ntrapped\n");

    // Without a handler the command dies of the signal, reported by name.
    let pid = spawn(&http, &id, json!({ "cmd": "/bin/sleep", "args": ["1000"] })).await;
    let base = format!("/v1/sandboxes/{id}/processes/{pid}");
    let r = signal(&http, &base, "SIGINT").await;
    assert_eq!(r.status, 200);
    let frames = replay(&http, &base).await;
    assert_eq!(
        frames,
        vec![json!({ "type": "exit", "exit_code": null, "signal": "SIGINT" })]
    );
    assert_eq!(signal(&http, &base, "SIGTERM").await.status, 409);
    let r = signal(&http, &base, "SIGNOPE").await;
    assert_eq!(r.status, 400);
    no_live_processes(&emu).await;
}

#[tokio::test]
async fn delete_escalates_to_sigkill_after_the_grace_period() {
    let (emu, http) = start(|_| {}).await;
    let id = http.sandbox().await;
    let script = "trap '' TERM; echo ready; while :; do sleep 0.05; done";
    let base = spawn_script(&http, &id, script).await;
    let r = http
        .call("GET", &format!("{base}/wait?timeout_ms=10"), None)
        .await;
    assert_eq!(r.status, 408);
    let r = http
        .call("DELETE", &format!("{base}?grace_ms=50"), None)
        .await
        .data();
    assert_eq!(r["tree_exited"], true);
    assert_eq!(r["signal"], "SIGKILL");
    no_live_processes(&emu).await;
}

#[tokio::test]
async fn evicted_output_is_410_and_newer_output_still_replays() {
    let (_emu, http) = start(|o| {
        o.journal_limit_bytes = 64;
        o.frame_bytes = 16;
    })
    .await;
    let id = http.sandbox().await;
    let pid = spawn(
        &http,
        &id,
        json!({ "cmd": "/bin/bash", "args": ["-c", "head -c 1000 /dev/zero | tr '\\0' z"] }),
    )
    .await;
    let base = format!("/v1/sandboxes/{id}/processes/{pid}");
    let waited = http
        .call("GET", &format!("{base}/wait?timeout_ms=5000"), None)
        .await
        .data();
    let newest = waited["output"]["newest_seq"].as_u64().unwrap();
    let oldest = waited["output"]["oldest_seq"].as_u64().unwrap();
    assert!(oldest > 1 && newest >= oldest);
    let r = http
        .call("GET", &format!("{base}/connect?after=0"), None)
        .await;
    assert_eq!(r.status, 410);
    assert_eq!(r.json()["data"]["code"], "output_offset_expired");
    let (status, mut frames) = http
        .stream("GET", &format!("{base}/connect?after={}", oldest - 1), None)
        .await;
    assert_eq!(status, 200);
    let frames = frames.collect().await;
    assert!(decode_output(&frames, "stdout").len() <= 64);
    assert_eq!(frames.last().unwrap()["type"], "exit");
}

#[tokio::test]
async fn deleting_a_sandbox_kills_runaway_processes() {
    let (emu, http) = start(|_| {}).await;
    let id = http.sandbox().await;
    spawn(
        &http,
        &id,
        json!({ "cmd": "/bin/bash", "args": ["-c", "while :; do :; done"] }),
    )
    .await;
    spawn(&http, &id, json!({ "cmd": "/bin/bash", "args": ["-c", "sleep 1000 & sleep 1000"], "pty": { "cols": 80, "rows": 24 } })).await;
    let body = json!({ "cmd": "/bin/sleep", "args": ["1000"], "stream": true });
    let (_, stream) = http.exec_stream(&id, body).await;
    assert_eq!(emu.counts().live_processes, 3);
    assert_eq!(emu.counts().managed_processes, 2);
    let root = emu.sandbox_root(&id).unwrap();
    assert_eq!(
        http.code("DELETE", &format!("/v1/sandboxes/{id}"), None)
            .await,
        200
    );
    no_live_processes(&emu).await;
    assert!(!root.exists());
    drop(stream);
    assert_eq!(
        emu.counts(),
        emulator::EmulatorCounts {
            sandboxes: 0,
            live_processes: 0,
            managed_processes: 0
        }
    );
}

#[tokio::test]
async fn env_overrides_must_be_declared_at_creation() {
    let (_emu, http) = start(|_| {}).await;
    let plain = http.sandbox().await;
    let r = http
        .call(
            "POST",
            &format!("/v1/sandboxes/{plain}/processes"),
            Some(json!({ "cmd": "/bin/true", "env": { "FOO": "x" } })),
        )
        .await;
    assert_eq!(r.status, 400);
    let r = http
        .call(
            "POST",
            "/v1/sandboxes",
            Some(json!({ "shape": "s-1vcpu-1gb", "envs": { "FOO": "declared" } })),
        )
        .await;
    let id = r.data()["id"].as_str().unwrap().to_string();
    assert_eq!(http.bash(&id, "echo $FOO").await["stdout"], "declared\n");
    let r = http
        .call(
            "POST",
            &format!("/v1/sandboxes/{id}/processes"),
            Some(json!({ "cmd": "/bin/bash", "args": ["-c", "echo $FOO"], "env": { "FOO": "override" } })),
        )
        .await;
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
}

#[tokio::test]
async fn connect_sends_heartbeats_while_the_process_is_quiet() {
    let (_emu, http) = start(|o| o.heartbeat_interval = Duration::from_millis(20)).await;
    let id = http.sandbox().await;
    let pid = spawn(&http, &id, json!({ "cmd": "/bin/sleep", "args": ["0.3"] })).await;
    let (_, mut frames) = http
        .stream(
            "GET",
            &format!("/v1/sandboxes/{id}/processes/{pid}/connect?after=0"),
            None,
        )
        .await;
    let mut heartbeats = 0;
    loop {
        match frames.next().await {
            crate::common::Line::Frame(f) if f["type"] == "heartbeat" => heartbeats += 1,
            crate::common::Line::Frame(f) => {
                assert_eq!(f, json!({ "type": "exit", "exit_code": 0, "signal": null }));
                break;
            }
            _ => panic!("stream ended without exit"),
        }
    }
    assert!(heartbeats >= 2, "only {heartbeats} heartbeats");
}

/// The provider's managed-process `execute` (the original's exported helper): staged stdin file, start gate, connect before
/// stdin close, gate release, then `/bin/rm` of both files.
#[tokio::test]
async fn provider_managed_execute_sequence_works_end_to_end() {
    let (emu, http) = start(|_| {}).await;
    let id = http.sandbox().await;
    let (stdin_path, gate) = ("/tmp/paperclip-stdin-1", "/tmp/paperclip-start-1");
    let enc = |p: &str| p.replace('/', "%2F");
    let r = http
        .raw(
            "PUT",
            &format!("/v1/sandboxes/{id}/files?path={}", enc(stdin_path)),
            Some(b"line from stdin\n".to_vec()),
        )
        .await;
    assert_eq!(r.status, 200);
    let script = format!(
        "until [ -e '{gate}' ]; do sleep 0.01; done\nrm -f -- '{gate}'\ncd -- '/paperclip-workspace' || exit\nexec env  'bash' '-c' 'cat; echo err >&2; exit 3' < '{stdin_path}'"
    );
    let pid = spawn(
        &http,
        &id,
        json!({ "cmd": "/bin/bash", "args": ["-lc", script], "cwd": "/paperclip-workspace" }),
    )
    .await;
    let base = format!("/v1/sandboxes/{id}/processes/{pid}");
    let (status, mut frames) = http
        .stream("GET", &format!("{base}/connect?after=0"), None)
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        http.code("POST", &format!("{base}/stdin/close"), None)
            .await,
        200
    );
    let r = http
        .raw(
            "PUT",
            &format!("/v1/sandboxes/{id}/files?path={}", enc(gate)),
            Some(Vec::new()),
        )
        .await;
    assert_eq!(r.status, 200);
    let frames = frames.collect().await;
    assert_eq!(decode_output(&frames, "stdout"), "line from stdin\n");
    assert_eq!(decode_output(&frames, "stderr"), "err\n");
    assert_eq!(
        frames.last().unwrap(),
        &json!({ "type": "exit", "exit_code": 3, "signal": null })
    );
    let r = http
        .exec(
            &id,
            json!({ "cmd": "/bin/rm", "args": ["-f", "--", gate, stdin_path] }),
        )
        .await;
    assert_eq!(r.data()["result"]["exit_code"], 0);
    assert_eq!(http.bash(&id, "ls /tmp").await["stdout"], "");
    no_live_processes(&emu).await;
}
