//! Auth, envelope, sandbox CRUD and the status machine.

use std::time::{Duration, Instant};

use emulator::createos::Status;
use serde_json::json;

use crate::common::{eventually, no_live_processes, start};

#[tokio::test]
async fn rejects_missing_or_wrong_api_key_and_unknown_routes() {
    let (_emu, http) = start(|_| {}).await;
    for key in ["", "wrong"] {
        let r = http
            .send("GET", "/v1/rootfs", None, Some(key))
            .await
            .unwrap();
        assert_eq!(r.status(), 401);
    }
    let r = http.call("GET", "/v1/rootfs", None).await;
    assert_eq!(
        r.data(),
        json!({ "default": "devbox:1", "items": [
            { "name": "devbox:1" }, { "name": "debian:12" }, { "name": "ubuntu:24.04" }
        ]})
    );
    let r = http.call("GET", "/v1/nope", None).await;
    assert_eq!(r.status, 404);
    assert_eq!(r.json()["status"], "fail");
}

#[tokio::test]
async fn creates_reads_and_deletes_sandboxes() {
    let (emu, http) = start(|_| {}).await;
    let body = json!({
        "shape": "s-1vcpu-1gb", "rootfs": "debian:12", "region": "eu",
        "egress": ["example.com"], "auto_pause_after_seconds": 600, "ingress_enabled": false
    });
    let r = http.call("POST", "/v1/sandboxes", Some(body)).await;
    assert_eq!(r.status, 201);
    let id = r.data()["id"].as_str().unwrap().to_string();
    assert!(id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
    let view = http
        .call("GET", &format!("/v1/sandboxes/{id}"), None)
        .await
        .data();
    assert_eq!(view["id"], id.as_str());
    assert_eq!(view["status"], "running");
    assert_eq!(view["rootfs"], "debian:12");
    assert_eq!(view["region"], "eu");
    assert_eq!(view["egress"], json!(["example.com"]));
    assert_eq!(view["auto_pause_after_seconds"], 600);
    assert_eq!(emu.counts().sandboxes, 1);
    let root = emu.sandbox_root(&id).unwrap();
    assert!(root.join("paperclip-workspace").is_dir());

    let r = http
        .call("DELETE", &format!("/v1/sandboxes/{id}"), None)
        .await;
    assert_eq!(r.status, 200);
    assert!(r.data().is_object());
    assert!(!root.exists(), "root directory removed");
    assert_eq!(
        http.code("GET", &format!("/v1/sandboxes/{id}"), None).await,
        404
    );
    assert_eq!(
        http.code("DELETE", &format!("/v1/sandboxes/{id}"), None)
            .await,
        404
    );
    assert_eq!(emu.counts().sandboxes, 0);
}

#[tokio::test]
async fn validates_create_patch_and_egress_bodies() {
    let (_emu, http) = start(|_| {}).await;
    for bad in [
        json!({}),
        json!({ "shape": "s-huge" }),
        json!({ "shape": "s-1vcpu-1gb", "rootfs": "nope:1" }),
        json!({ "shape": "s-1vcpu-1gb", "auto_pause_after_seconds": 59 }),
        json!({ "shape": "s-1vcpu-1gb", "egress": [""] }),
    ] {
        let r = http.call("POST", "/v1/sandboxes", Some(bad.clone())).await;
        assert_eq!(r.status, 400, "{bad}");
    }
    let r = http
        .raw("POST", "/v1/sandboxes", Some(b"{not json".to_vec()))
        .await;
    assert_eq!(r.status, 400);

    let id = http.sandbox().await;
    let path = format!("/v1/sandboxes/{id}");
    let r = http
        .call(
            "PATCH",
            &path,
            Some(json!({ "auto_pause_after_seconds": 120 })),
        )
        .await;
    assert_eq!(r.data()["auto_pause_after_seconds"], 120);
    let r = http
        .call("PATCH", &path, Some(json!({ "disable_auto_pause": true })))
        .await;
    assert_eq!(r.data()["auto_pause_after_seconds"], json!(null));
    let r = http
        .call(
            "PATCH",
            &path,
            Some(json!({ "auto_pause_after_seconds": 5 })),
        )
        .await;
    assert_eq!(r.status, 400);
    let r = http
        .call(
            "PUT",
            &format!("{path}/egress"),
            Some(json!({ "egress": ["a.test", "10.0.0.0/8"] })),
        )
        .await;
    assert_eq!(r.data()["egress"], json!(["a.test", "10.0.0.0/8"]));
    let r = http
        .call(
            "PUT",
            &format!("{path}/egress"),
            Some(json!({ "egress": [] })),
        )
        .await;
    assert_eq!(r.data()["egress"], json!([]));
}

#[tokio::test]
async fn transitional_states_last_the_configured_time() {
    let delay = Duration::from_millis(60);
    let (_emu, http) = start(|o| o.transition_delay = delay).await;
    let t = Instant::now();
    let r = http
        .call(
            "POST",
            "/v1/sandboxes",
            Some(json!({ "shape": "s-1vcpu-1gb" })),
        )
        .await;
    assert_eq!(r.data()["status"], "creating");
    let id = r.data()["id"].as_str().unwrap().to_string();
    let sb = format!("/v1/sandboxes/{id}");
    // Commands need a running sandbox.
    assert_eq!(
        http.code(
            "POST",
            &format!("{sb}/exec"),
            Some(json!({ "cmd": "true" }))
        )
        .await,
        409
    );
    http.wait_status(&id, "running").await;
    assert!(t.elapsed() >= delay);

    let t = Instant::now();
    let r = http.call("POST", &format!("{sb}/pause"), None).await;
    assert_eq!(r.status, 202);
    assert_eq!(r.data()["status"], "pausing");
    assert_eq!(http.code("POST", &format!("{sb}/pause"), None).await, 409);
    assert_eq!(http.code("POST", &format!("{sb}/resume"), None).await, 409);
    http.wait_status(&id, "paused").await;
    assert!(t.elapsed() >= delay);
    assert_eq!(
        http.code(
            "POST",
            &format!("{sb}/exec"),
            Some(json!({ "cmd": "true" }))
        )
        .await,
        409
    );
    assert_eq!(
        http.raw("GET", &format!("{sb}/files?path=%2Fetc%2Fhostname"), None)
            .await
            .status,
        409
    );

    let r = http.call("POST", &format!("{sb}/resume"), None).await;
    assert_eq!(r.status, 202);
    assert_eq!(r.data()["status"], "resuming");
    http.wait_status(&id, "running").await;
    assert_eq!(http.code("POST", &format!("{sb}/resume"), None).await, 409);
}

#[tokio::test]
async fn pause_freezes_processes_and_resume_continues_them() {
    let (emu, http) = start(|_| {}).await;
    let id = http.sandbox().await;
    let p = http
        .call(
            "POST",
            &format!("/v1/sandboxes/{id}/processes"),
            Some(json!({ "cmd": "/bin/sleep", "args": ["86399"] })),
        )
        .await
        .data();
    let pid = p["process_id"].as_str().unwrap();
    let sleep_state = || {
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
            .find_map(|pid| {
                let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
                let cmd = std::fs::read_to_string(format!("/proc/{pid}/cmdline")).ok()?;
                (cmd == "/bin/sleep\086399\0").then(|| stat.rsplit(") ").next()?.chars().next())?
            })
    };
    // The command must exist before the pause for there to be something to freeze.
    assert!(eventually(Duration::from_secs(5), || async { sleep_state().is_some() }).await);
    assert_eq!(http.sandbox_action(&id, "pause", None).await.status, 202);
    let stopped = || async { sleep_state() == Some('T') };
    assert!(
        eventually(Duration::from_secs(5), stopped).await,
        "paused sandbox's process is stopped"
    );
    assert_eq!(http.sandbox_action(&id, "resume", None).await.status, 202);
    let running = || async { sleep_state() == Some('S') };
    assert!(
        eventually(Duration::from_secs(5), running).await,
        "resumed process continues"
    );
    let r = http
        .call(
            "DELETE",
            &format!("/v1/sandboxes/{id}/processes/{pid}?grace_ms=100"),
            None,
        )
        .await;
    assert_eq!(r.data()["tree_exited"], true);
    no_live_processes(&emu).await;
}

#[tokio::test]
async fn forks_a_paused_sandbox_with_its_files() {
    let delay = Duration::from_millis(30);
    let (_emu, http) = start(|o| o.transition_delay = delay).await;
    let src = http.sandbox().await;
    let out = http
        .bash(
            &src,
            "echo template > /paperclip-workspace/t.txt && echo ok",
        )
        .await;
    assert_eq!(out["stdout"], "ok\n");
    assert_eq!(http.sandbox_action(&src, "pause", None).await.status, 202);
    // A transition in flight: the provider retries 409s.
    let body = json!({ "start_paused": false, "egress": ["*"], "ingress_enabled": false });
    let r = http.sandbox_action(&src, "fork", Some(body.clone())).await;
    assert_eq!(r.status, 409);
    http.wait_status(&src, "paused").await;
    let r = http.sandbox_action(&src, "fork", Some(body)).await;
    assert_eq!(r.status, 201);
    assert_eq!(r.data()["status"], "forking");
    assert_eq!(r.data()["forked_from"], src.as_str());
    let fork = r.data()["id"].as_str().unwrap().to_string();
    http.wait_status(&fork, "running").await;
    let out = http
        .bash(
            &fork,
            "cat /paperclip-workspace/t.txt; echo changed > /paperclip-workspace/t.txt",
        )
        .await;
    assert_eq!(out["stdout"], "template\n");
    // The source is untouched by the fork's writes.
    assert_eq!(http.sandbox_action(&src, "resume", None).await.status, 202);
    http.wait_status(&src, "running").await;
    assert_eq!(
        http.bash(&src, "cat /paperclip-workspace/t.txt").await["stdout"],
        "template\n"
    );
    let r = http
        .sandbox_action(&fork, "fork", Some(json!({ "start_paused": true })))
        .await;
    let paused_fork = r.data()["id"].as_str().unwrap().to_string();
    http.wait_status(&paused_fork, "paused").await;
    assert_eq!(
        http.code("POST", "/v1/sandboxes/sb_missing/fork", Some(json!({})))
            .await,
        404
    );
}

#[tokio::test]
async fn forced_states_have_their_side_effects() {
    let (emu, http) = start(|_| {}).await;
    let id = http.sandbox().await;
    http.call(
        "POST",
        &format!("/v1/sandboxes/{id}/processes"),
        Some(json!({ "cmd": "/bin/sleep", "args": ["1000"] })),
    )
    .await;
    assert!(emu.force_status(&id, Status::Destroyed));
    assert_eq!(http.status(&id).await, "destroyed");
    no_live_processes(&emu).await;
    assert!(emu.force_status(&id, Status::Error));
    // `error` may be resumed, like the service.
    assert_eq!(http.sandbox_action(&id, "resume", None).await.status, 202);
    http.wait_status(&id, "running").await;
    assert!(!emu.force_status("sb_missing", Status::Paused));
}
