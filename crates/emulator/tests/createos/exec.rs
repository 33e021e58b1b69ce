//! One-shot and streaming exec against real bash inside bubblewrap.

use std::time::Duration;

use serde_json::json;

use crate::common::{Line, eventually, is_heartbeat, no_live_processes, start};

#[tokio::test]
async fn one_shot_exec_runs_bash_in_the_sandbox() {
    let (emu, http) = start(|_| {}).await;
    let id = http.sandbox().await;
    let r = http
        .bash(
            &id,
            "echo out; echo err >&2; pwd; echo $HOME; hostname; exit 3",
        )
        .await;
    assert_eq!(r["exit_code"], 3);
    assert_eq!(
        r["stdout"],
        format!("out\n/paperclip-workspace\n/root\n{id}\n")
    );
    assert_eq!(r["stderr"], "err\n");
    // Exactly the vendor's ExecResult fields.
    let mut keys: Vec<_> = r.as_object().unwrap().keys().cloned().collect();
    keys.sort();
    assert_eq!(keys, ["exit_code", "stderr", "stdout"]);

    // Exactly the provider's prepareWorkspace and marker-check calls.
    let r = http
        .exec(
            &id,
            json!({ "cmd": "/bin/bash", "args": ["-lc", "mkdir -p -- '/paperclip-workspace'"] }),
        )
        .await;
    assert_eq!(r.data()["result"]["exit_code"], 0);
    let r = http
        .exec(
            &id,
            json!({ "cmd": "/bin/rm", "args": ["-f", "--", "/tmp/none"] }),
        )
        .await;
    assert_eq!(r.data()["result"]["exit_code"], 0);

    let r = http.exec(&id, json!({ "cmd": "/bin/pwd" })).await;
    assert!(r.data()["exec_ms"].is_u64());
    for bad in [
        json!({ "cmd": "" }),
        json!({ "cmd": "ls", "args": [1] }),
        json!({ "cmd": "ls", "stream": "yes" }),
        // ExecRequest has no cwd, env, stdin or timeout.
        json!({ "cmd": "/bin/pwd", "cwd": "/tmp" }),
        json!({ "cmd": "ls", "env": {} }),
        json!({ "cmd": "cat", "stdin": "x" }),
        json!({ "cmd": "ls", "timeout_ms": 5 }),
    ] {
        let r = http.exec(&id, bad.clone()).await;
        assert_eq!(r.status, 400, "{bad}");
    }
    no_live_processes(&emu).await;
}

#[tokio::test]
async fn sandboxes_are_isolated_from_the_host_and_each_other() {
    let (_emu, http) = start(|_| {}).await;
    let a = http.sandbox().await;
    let b = http.sandbox().await;
    let r = http.bash(&a, "echo secret > /tmp/a; touch /usr/x 2>/dev/null || echo ro; ls /work 2>/dev/null || echo nohost").await;
    assert_eq!(r["stdout"], "ro\nnohost\n");
    let r = http
        .bash(&b, "cat /tmp/a 2>/dev/null || echo private")
        .await;
    assert_eq!(r["stdout"], "private\n");
    let r = http.bash(&a, "cat /tmp/a").await;
    assert_eq!(r["stdout"], "secret\n");
}

#[tokio::test]
async fn one_shot_exec_caps_its_output() {
    let (emu, http) = start(|o| o.one_shot_output_limit = 1000).await;
    let id = http.sandbox().await;
    let r = http.bash(&id, "head -c 5000 /dev/zero | tr '\\0' a").await;
    assert_eq!(r["stdout"].as_str().unwrap().len(), 1000);
    assert_eq!(r["exit_code"], 0);
    no_live_processes(&emu).await;
}

#[tokio::test]
async fn streaming_exec_frames_stdout_stderr_and_exit() {
    let (emu, http) = start(|_| {}).await;
    let id = http.sandbox().await;
    // The euro sign is written in two halves with a pause between: frames must carry it whole.
    // stdin is empty (the API has none for exec).
    let script = "cat; echo from script; printf '\\xe2\\x82'; sleep 0.05; printf '\\xac\\n'; echo warn >&2; exit 4";
    let body = json!({ "cmd": "/bin/bash", "args": ["-lc", script], "stream": true });
    let (status, mut frames) = http.exec_stream(&id, body).await;
    assert_eq!(status, 200);
    let frames = frames.collect().await;
    let stdout: String = frames.iter().filter_map(|f| f["stdout"].as_str()).collect();
    let stderr: String = frames.iter().filter_map(|f| f["stderr"].as_str()).collect();
    assert_eq!(stdout, "from script\n€\n");
    assert_eq!(stderr, "warn\n");
    assert_eq!(frames.last().unwrap(), &json!({ "exit_code": 4 }));
    for f in &frames {
        assert_eq!(f.as_object().unwrap().len(), 1, "one key per frame: {f}");
    }
    no_live_processes(&emu).await;
}

#[tokio::test]
async fn streaming_exec_sends_heartbeats_while_idle() {
    let (_emu, http) = start(|o| o.heartbeat_interval = Duration::from_millis(20)).await;
    let id = http.sandbox().await;
    let body = json!({ "cmd": "/bin/sleep", "args": ["0.3"], "stream": true });
    let (_, mut frames) = http.exec_stream(&id, body).await;
    let mut heartbeats = 0;
    loop {
        match frames.next().await {
            Line::Frame(f) if is_heartbeat(&f) => {
                assert_eq!(f, json!({ "hb": true }));
                heartbeats += 1;
            }
            Line::Frame(f) => {
                assert_eq!(f, json!({ "exit_code": 0 }));
                break;
            }
            _ => panic!("stream ended without exit"),
        }
    }
    assert!(heartbeats >= 2, "only {heartbeats} heartbeats");
}

#[tokio::test]
async fn closing_the_stream_kills_the_command() {
    let (emu, http) = start(|o| o.heartbeat_interval = Duration::from_millis(20)).await;
    let id = http.sandbox().await;
    let body =
        json!({ "cmd": "/bin/bash", "args": ["-lc", "sleep 1000 & sleep 1000"], "stream": true });
    let (_, mut frames) = http.exec_stream(&id, body).await;
    assert!(matches!(frames.next().await, Line::Frame(_)));
    assert_eq!(emu.counts().live_processes, 1);
    drop(frames);
    no_live_processes(&emu).await;
}

#[tokio::test]
async fn exit_status_of_a_self_signalled_command_is_shell_style() {
    let (_emu, http) = start(|_| {}).await;
    let id = http.sandbox().await;
    let body = json!({ "cmd": "/bin/bash", "args": ["-c", "kill -TERM $$"], "stream": true });
    let (_, mut frames) = http.exec_stream(&id, body).await;
    assert_eq!(frames.collect().await, vec![json!({ "exit_code": 143 })]);
    let background = http.bash(&id, "(sleep 987654 &); echo started").await;
    assert_eq!(background["stdout"], "started\n");
    // The command's pid namespace died with it, taking the background sleep along.
    let ok = eventually(Duration::from_secs(5), || async {
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok())
            .all(|e| {
                std::fs::read_to_string(e.path().join("cmdline")).unwrap_or_default()
                    != "sleep\0987654\0"
            })
    })
    .await;
    assert!(ok, "background process outlived its command");
}
