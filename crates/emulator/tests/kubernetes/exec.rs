//! Exec over raw WebSockets: v5 and v4 framing, stdin close, status frames, TTY resize, tar
//! streams, handshake errors and output volume.

use emulator::kubernetes::SettingsPatch;
use serde_json::json;

use futures_util::StreamExt;

use crate::common::{PODS, eventually, running_pod, start};

fn exec_path(pod: &str, argv: &[&str], extra: &str) -> String {
    let cmd: String = argv
        .iter()
        .map(|a| {
            format!(
                "&command={}",
                form_urlencoded::byte_serialize(a.as_bytes()).collect::<String>()
            )
        })
        .collect();
    format!("{PODS}/{pod}/exec?container=agent&stdout=true{cmd}{extra}")
}

#[tokio::test]
async fn v5_carries_stdin_close_output_channels_and_the_exit_status() {
    let (emu, http) = start(|_| {}).await;
    running_pod(&http, "e1", &["sleep", "600"]).await;
    let path = exec_path(
        "e1",
        &["sh", "-c", "cat; echo to-err >&2; exit 5"],
        "&stdin=true&stderr=true",
    );
    let mut ex = http
        .exec(&path, "v5.channel.k8s.io, v4.channel.k8s.io")
        .await
        .unwrap();
    assert_eq!(ex.protocol.as_deref(), Some("v5.channel.k8s.io"));
    ex.send(0, b"hello ").await;
    ex.send(0, b"world").await;
    ex.send(255, &[0]).await;
    let out = ex.collect().await;
    assert_eq!(out.stdout, b"hello world");
    assert_eq!(out.stderr, b"to-err\n");
    assert!(out.closed_cleanly);
    assert_eq!(
        out.status.unwrap(),
        json!({ "metadata": {}, "status": "Failure",
            "message": "command terminated with non-zero exit code: command terminated with exit code 5",
            "reason": "NonZeroExitCode",
            "details": { "causes": [{ "reason": "ExitCode", "message": "5" }] } })
    );
    emu.shutdown().await;
}

/// As a real node (containerd, runc) answers: every session opens with an empty frame on the
/// lowest channel the server writes, and a command that is not there gets the runtime's
/// internal error (naming the exec's id) on the status channel, then a normal close.
#[tokio::test]
async fn a_missing_command_gets_the_runtimes_status_after_the_opening_frame() {
    use tokio_tungstenite::tungstenite::Message;
    let (emu, http) = start(|_| {}).await;
    running_pod(&http, "nf", &["sleep", "600"]).await;
    for (extra, hello) in [("", 1u8), ("&stdout=false&stderr=true", 2)] {
        let path = exec_path("nf", &["no-such-command-here"], extra).replace(
            "stdout=true&command=no-such-command-here&stdout=false",
            "stdout=false&command=no-such-command-here",
        );
        let mut ex = http.exec(&path, "v5.channel.k8s.io").await.unwrap();
        let mut frames = Vec::new();
        let mut close = None;
        while let Some(Ok(msg)) =
            tokio::time::timeout(std::time::Duration::from_secs(20), ex.ws.next())
                .await
                .expect("frames in time")
        {
            match msg {
                Message::Binary(b) => frames.push(b.to_vec()),
                Message::Close(c) => close = c.map(|c| u16::from(c.code)),
                _ => {}
            }
        }
        assert_eq!(frames.len(), 2, "{frames:?}");
        assert_eq!(frames[0], vec![hello], "the opening frame");
        assert_eq!(frames[1][0], 3, "the status channel");
        let status: serde_json::Value = serde_json::from_slice(&frames[1][1..]).unwrap();
        let cause = status["details"]["causes"][0]["message"].as_str().unwrap();
        let id = cause
            .split("failed to start exec \"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .unwrap();
        assert!(
            id.len() == 64 && id.bytes().all(|b| b.is_ascii_hexdigit()),
            "{id}"
        );
        assert!(cause.ends_with(
            "exec: \"no-such-command-here\": executable file not found in $PATH: unknown"
        ));
        assert_eq!(
            status,
            json!({"metadata": {}, "status": "Failure", "reason": "InternalError", "code": 500,
                "message": format!("Internal error occurred: {cause}"),
                "details": {"causes": [{"message": cause}]}})
        );
        assert_eq!(close, Some(1000));
    }
    emu.shutdown().await;
}

#[tokio::test]
async fn v4_is_negotiated_when_it_is_all_the_server_or_client_speaks() {
    let (emu, http) = start(|o| o.exec_protocols = vec!["v4.channel.k8s.io".into()]).await;
    running_pod(&http, "e2", &["sleep", "600"]).await;
    let mut ex = http
        .exec(
            &exec_path("e2", &["echo", "hi"], ""),
            "v5.channel.k8s.io, v4.channel.k8s.io",
        )
        .await
        .unwrap();
    assert_eq!(ex.protocol.as_deref(), Some("v4.channel.k8s.io"));
    let out = ex.collect().await;
    assert_eq!(out.stdout, b"hi\n");
    assert_eq!(
        out.status.unwrap(),
        json!({ "metadata": {}, "status": "Success" })
    );
    // No common protocol: the upgrade is refused.
    let err = http
        .exec(&exec_path("e2", &["true"], ""), "v5.channel.k8s.io")
        .await
        .unwrap_err();
    assert!(err.to_string().contains("400"), "{err}");
    emu.update_settings(SettingsPatch {
        exec_protocols: Some(vec!["v5.channel.k8s.io".into(), "v4.channel.k8s.io".into()]),
        ..Default::default()
    });
    let mut ex = http
        .exec(&exec_path("e2", &["true"], ""), "v4.channel.k8s.io")
        .await
        .unwrap();
    assert_eq!(ex.protocol.as_deref(), Some("v4.channel.k8s.io"));
    assert_eq!(ex.collect().await.status.unwrap()["status"], "Success");
    emu.shutdown().await;
}

#[tokio::test]
async fn tty_sessions_resize_and_echo() {
    let (emu, http) = start(|_| {}).await;
    running_pod(&http, "tty", &["sleep", "600"]).await;
    let path = exec_path(
        "tty",
        &[
            "sh",
            "-c",
            "read line; stty size; echo \"got $line\"; exit 2",
        ],
        "&stdin=true&tty=true",
    );
    let mut ex = http.exec(&path, "v5.channel.k8s.io").await.unwrap();
    ex.send(4, br#"{"Width":100,"Height":30}"#).await;
    ex.send(0, b"ping\n").await;
    let out = ex.collect().await;
    let text = String::from_utf8_lossy(&out.stdout).replace('\r', "");
    assert!(text.contains("30 100\n"), "{text:?}");
    assert!(text.contains("got ping\n"), "{text:?}");
    assert!(out.stderr.is_empty(), "a TTY has one output stream");
    assert_eq!(out.status.unwrap()["details"]["causes"][0]["message"], "2");
    emu.shutdown().await;
}

#[tokio::test]
async fn tar_streams_land_in_the_pods_private_root_and_big_outputs_arrive_whole() {
    let (emu, http) = start(|_| {}).await;
    running_pod(&http, "files", &["sleep", "600"]).await;
    let src = tempfile::tempdir().unwrap();
    std::fs::create_dir(src.path().join("dir")).unwrap();
    std::fs::write(src.path().join("dir/a.txt"), b"alpha").unwrap();
    let tar = std::process::Command::new("tar")
        .args(["-c", "-f", "-", "-C"])
        .arg(src.path())
        .arg("dir")
        .output()
        .unwrap()
        .stdout;
    let script = format!(
        "mkdir -p /workspace/in && head -c {} | tar -x -f - -C /workspace/in && cat /workspace/in/dir/a.txt",
        tar.len()
    );
    let mut ex = http
        .exec(
            &exec_path(
                "files",
                &["/bin/sh", "-c", &script],
                "&stdin=true&stderr=true",
            ),
            "v5.channel.k8s.io",
        )
        .await
        .unwrap();
    for chunk in tar.chunks(4096) {
        ex.send(0, chunk).await;
    }
    // stdin is never closed: `head -c` bounds it, as the provider does.
    let out = ex.collect().await;
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    assert_eq!(out.stdout, b"alpha");
    assert_eq!(out.status.unwrap()["status"], "Success");
    let root = emu.pod_root("default", "files").unwrap();
    assert_eq!(
        std::fs::read(root.join("workspace/in/dir/a.txt")).unwrap(),
        b"alpha"
    );
    assert!(
        !std::path::Path::new("/workspace/in/dir/a.txt").exists(),
        "nothing leaks to the host"
    );

    // Outbound: a tar of the workspace, 1 MiB of output, both byte-exact.
    let mut ex = http
        .exec(
            &exec_path(
                "files",
                &["sh", "-c", "head -c 1048576 /dev/zero | tr '\\0' x"],
                "",
            ),
            "v5.channel.k8s.io",
        )
        .await
        .unwrap();
    let out = ex.collect().await;
    assert_eq!(out.stdout.len(), 1 << 20);
    assert!(out.stdout.iter().all(|b| *b == b'x'));
    emu.shutdown().await;
}

#[tokio::test]
async fn stdin_a_command_never_reads_does_not_stall_its_output() {
    let (emu, http) = start(|_| {}).await;
    running_pod(&http, "deaf", &["sleep", "600"]).await;
    let path = exec_path(
        "deaf",
        &["sh", "-c", "head -c 2000000 /dev/zero; echo done >&2"],
        "&stdin=true&stderr=true",
    );
    let mut ex = http.exec(&path, "v5.channel.k8s.io").await.unwrap();
    let chunk = vec![b'z'; 64 * 1024];
    for _ in 0..16 {
        ex.send(0, &chunk).await;
    }
    let out = ex.collect().await;
    assert_eq!(out.stdout.len(), 2_000_000);
    assert_eq!(out.stderr, b"done\n");
    assert_eq!(out.status.unwrap()["status"], "Success");
    emu.shutdown().await;
}

#[tokio::test]
async fn handshake_errors_are_status_responses() {
    let (emu, http) = start(|_| {}).await;
    let err = http
        .exec(&exec_path("ghost", &["true"], ""), "v5.channel.k8s.io")
        .await
        .unwrap_err();
    assert!(err.to_string().contains("404"), "{err}");
    emu.update_settings(SettingsPatch {
        pod_ready_delay_ms: Some(60_000),
        ..Default::default()
    });
    http.create(PODS, crate::common::pod("slow", &["sleep", "600"]))
        .await;
    let r = http.get(&exec_path("slow", &["true"], "")).await;
    assert_eq!(r.status, 400, "a plain GET is not an upgrade");
    let err = http
        .exec(&exec_path("slow", &["true"], ""), "v5.channel.k8s.io")
        .await
        .unwrap_err();
    assert!(err.to_string().contains("400"), "{err}");
    let err = http
        .exec(
            &format!("{PODS}/slow/exec?stdout=true"),
            "v5.channel.k8s.io",
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("400"), "{err}");
    let log = emu.request_log();
    assert!(
        log.iter()
            .any(|r| r.verb.as_deref() == Some("exec") && r.status == Some(404))
    );
    emu.shutdown().await;
}

/// Runs `script` in pod `pod` (container `agent`) to its end; its stdout.
async fn run(http: &crate::common::Http, pod: &str, script: &str) -> String {
    let path = exec_path(pod, &["sh", "-c", script], "&stderr=true");
    let mut ex = http.exec(&path, "v5.channel.k8s.io").await.unwrap();
    let out = ex.collect().await;
    assert_eq!(
        out.status.as_ref().map(|s| s["status"].clone()),
        Some(json!("Success")),
        "{script}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// As on a real node: the execs of one container share its pid namespace (one sees, and can
/// signal, what another left running), and a client that goes away ends nothing (exec has no
/// kill).
#[tokio::test]
async fn execs_share_the_containers_pid_namespace_and_a_closed_stream_kills_nothing() {
    let (emu, http) = start(|_| {}).await;
    running_pod(&http, "shared", &["sleep", "600"]).await;
    // A command whose client goes away mid-run: its pid (in the pod) is its first output.
    let path = exec_path("shared", &["sh", "-c", "echo $$; exec sleep 601"], "");
    let mut ex = http.exec(&path, "v5.channel.k8s.io").await.unwrap();
    // The first frame is the empty one on stdout that opens every session, as on a real node.
    let mut next = async || {
        tokio::time::timeout(std::time::Duration::from_secs(20), ex.ws.next())
            .await
            .expect("the pid in time")
            .expect("a frame")
            .expect("a frame")
            .into_data()
    };
    assert_eq!(&next().await[..], &[1u8][..], "an empty stdout frame first");
    let data = next().await;
    assert_eq!(data[0], 1, "stdout");
    let pid: u32 = std::str::from_utf8(&data[1..])
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    drop(ex);
    // Another exec sees it, by its pid in the pod, and so does the container's own command:
    // both are in the namespace, the exec's process with no parent in it (as `runc exec`).
    let cmdline = format!("tr '\\0' ' ' < /proc/{pid}/cmdline");
    assert_eq!(run(&http, "shared", &cmdline).await, "sleep 601 ");
    let all = run(
        &http,
        "shared",
        "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done",
    )
    .await;
    assert!(all.contains("sleep 600 \n"), "{all}");
    // A background process outlives its exec too.
    let bg: u32 = run(&http, "shared", "sleep 602 >/dev/null 2>&1 & echo $!")
        .await
        .trim()
        .parse()
        .unwrap();
    let alive = format!("kill -0 {pid} && kill -0 {bg} && echo alive");
    assert_eq!(run(&http, "shared", &alive).await, "alive\n");
    // A third exec ends them.
    run(&http, "shared", &format!("kill {pid} {bg}")).await;
    let gone = format!("kill -0 {pid} 2>/dev/null || kill -0 {bg} 2>/dev/null || echo gone");
    eventually(10, || {
        let (http, gone) = (&http, gone.clone());
        async move { (run(http, "shared", &gone).await == "gone\n").then_some(()) }
    })
    .await;
    emu.shutdown().await;
}
