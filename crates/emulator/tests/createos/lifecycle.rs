//! Auth, envelopes, users, sandbox CRUD, lists, tombstones and the status machine.

use std::time::{Duration, Instant};

use emulator::createos::Status;
use serde_json::json;

use crate::common::{eventually, no_live_processes, start};

#[tokio::test]
async fn rejects_missing_or_wrong_api_key_and_unknown_routes() {
    let (_emu, http) = start(|_| {}).await;
    for key in ["", "wrong"] {
        let r = http
            .send("GET", "/v1/sandboxes", None, Some(key))
            .await
            .unwrap();
        assert_eq!(r.status(), 401);
        // The catalogue is served without a key, as the real server does.
        for route in ["/v1/rootfs", "/v1/shapes", "/healthz"] {
            let r = http.send("GET", route, None, Some(key)).await.unwrap();
            assert_eq!(r.status(), 200, "{route}");
        }
    }
    let r = http.call("GET", "/v1/rootfs", None).await;
    assert_eq!(
        r.data(),
        json!({ "rootfs": ["devbox:1", "debian:12", "ubuntu:24.04"], "default": "devbox:1",
            "entries": [{ "name": "devbox:1" }, { "name": "debian:12" }, { "name": "ubuntu:24.04" }] })
    );
    let shapes = http.call("GET", "/v1/shapes?limit=2", None).await.data();
    assert_eq!(shapes["data"][0]["id"], "s-1vcpu-256mb");
    assert_eq!(shapes["pagination"]["count"], 2);
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
    assert_eq!(r.status, 200);
    let created = r.data();
    assert_eq!(created["rootfs"], "debian:12");
    assert!(created["name"].as_str().is_some_and(|n| !n.is_empty()));
    let id = created["id"].as_str().unwrap().to_string();
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
    assert_eq!(r.data(), json!({ "id": id, "status": "destroyed" }));
    assert!(!root.exists(), "root directory removed");
    // The row stays visible as destroyed; a second delete is a no-op; nothing else works.
    let view = http
        .call("GET", &format!("/v1/sandboxes/{id}"), None)
        .await
        .data();
    assert_eq!(view["status"], "destroyed");
    assert!(view["destroyed_at"].is_string());
    let r = http
        .call("DELETE", &format!("/v1/sandboxes/{id}"), None)
        .await;
    assert_eq!(r.data()["status"], "destroyed");
    assert_eq!(
        http.code("POST", &format!("/v1/sandboxes/{id}/pause"), None)
            .await,
        404
    );
    assert_eq!(
        http.code("DELETE", "/v1/sandboxes/sb_0000000000000000", None)
            .await,
        404
    );
    assert_eq!(emu.counts().sandboxes, 0);
    assert!(emu.sandbox_views().is_empty());
}

#[tokio::test]
async fn views_omit_absent_fields_and_names_are_unique_per_user() {
    let (_emu, http) = start(|o| o.other_api_keys = vec!["other".into()]).await;
    let body =
        json!({ "shape": "s-1vcpu-1gb", "name": "pc-0123456789abcdef", "envs": { "A": "1" } });
    let r = http.call("POST", "/v1/sandboxes", Some(body.clone())).await;
    let id = r.data()["id"].as_str().unwrap().to_string();
    let view = http
        .call("GET", &format!("/v1/sandboxes/{id}"), None)
        .await
        .data();
    assert_eq!(view["name"], "pc-0123456789abcdef");
    assert_eq!(view["envs"], json!(["A"]));
    for absent in [
        "region",
        "forked_from",
        "labels",
        "auto_pause_after_seconds",
    ] {
        assert!(view.get(absent).is_none(), "{absent}: {view}");
    }
    assert!(view.as_object().unwrap().values().all(|v| !v.is_null()));
    // The same live name again is 409; another user may use it; a bad name is 400.
    assert_eq!(
        http.code("POST", "/v1/sandboxes", Some(body.clone())).await,
        409
    );
    let theirs = http
        .send(
            "POST",
            "/v1/sandboxes",
            Some(body.to_string().into_bytes()),
            Some("other"),
        )
        .await
        .unwrap();
    assert_eq!(theirs.status(), 200);
    let bad = json!({ "shape": "s-1vcpu-1gb", "name": "Not A Name" });
    assert_eq!(http.code("POST", "/v1/sandboxes", Some(bad)).await, 400);
    // Another user's sandbox is 404 to them and not in their list.
    let foreign = http
        .send("GET", &format!("/v1/sandboxes/{id}"), None, Some("other"))
        .await
        .unwrap();
    assert_eq!(foreign.status(), 404);
    let listed = http.call("GET", "/v1/sandboxes", None).await.data();
    assert_eq!(listed["pagination"]["total"], 1);
    assert_eq!(listed["data"][0]["id"], id.as_str());
}

#[tokio::test]
async fn refuses_fields_and_query_parameters_the_api_does_not_define() {
    let (_emu, http) = start(|_| {}).await;
    let r = http
        .call(
            "POST",
            "/v1/sandboxes",
            Some(json!({ "shape": "s-1vcpu-1gb", "labels": { "a": "b" } })),
        )
        .await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["status"], "fail");
    assert_eq!(r.json()["data"]["field"], "labels");
    let id = http.sandbox().await;
    for (method, path, body) in [
        (
            "POST",
            format!("/v1/sandboxes/{id}/fork"),
            json!({ "labels": {} }),
        ),
        ("PATCH", format!("/v1/sandboxes/{id}"), json!({ "x": 1 })),
        (
            "PUT",
            format!("/v1/sandboxes/{id}/egress"),
            json!({ "x": 1 }),
        ),
        (
            "POST",
            format!("/v1/sandboxes/{id}/exec"),
            json!({ "cmd": "true", "stdin": "x" }),
        ),
        (
            "POST",
            format!("/v1/sandboxes/{id}/processes"),
            json!({ "cmd": "true", "timeout_ms": 5 }),
        ),
    ] {
        assert_eq!(
            http.code(method, &path, Some(body.clone())).await,
            400,
            "{path} {body}"
        );
    }
    assert_eq!(
        http.code("GET", "/v1/sandboxes?label=a%3Db", None).await,
        400
    );
    assert_eq!(
        http.code("GET", "/v1/sandboxes?status=nope", None).await,
        400
    );
}

#[tokio::test]
async fn lists_page_and_filter_and_keep_a_bounded_number_of_destroyed_rows() {
    let (_emu, http) = start(|o| o.tombstone_limit = 2).await;
    let mut ids = Vec::new();
    for _ in 0..5 {
        ids.push(http.sandbox().await);
    }
    let page = http
        .call("GET", "/v1/sandboxes?limit=2&offset=2", None)
        .await
        .data();
    assert_eq!(
        page["pagination"],
        json!({ "total": 5, "limit": 2, "offset": 2, "count": 2 })
    );
    assert_eq!(page["data"][0]["id"], ids[2].as_str());
    assert_eq!(page["data"][1]["id"], ids[3].as_str());
    for id in &ids[..3] {
        http.call("DELETE", &format!("/v1/sandboxes/{id}"), None)
            .await;
    }
    let destroyed = http
        .call("GET", "/v1/sandboxes?status=destroyed", None)
        .await
        .data();
    // Only the newest two tombstones are kept.
    let listed: Vec<_> = destroyed["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["id"].clone())
        .collect();
    assert_eq!(listed, vec![json!(ids[1]), json!(ids[2])]);
    assert_eq!(
        http.code("GET", &format!("/v1/sandboxes/{}", ids[0]), None)
            .await,
        404
    );
    let running = http
        .call("GET", "/v1/sandboxes?status=running", None)
        .await
        .data();
    assert_eq!(running["pagination"]["total"], 2);
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
    let (emu, http) = start(|o| o.transition_delay = delay).await;
    // Create is synchronous: it answers once the sandbox is running.
    let t = Instant::now();
    let r = http
        .call(
            "POST",
            "/v1/sandboxes",
            Some(json!({ "shape": "s-1vcpu-1gb" })),
        )
        .await;
    assert!(t.elapsed() >= delay);
    let id = r.data()["id"].as_str().unwrap().to_string();
    assert_eq!(http.status(&id).await, "running");
    let sb = format!("/v1/sandboxes/{id}");
    // Commands need a running sandbox.
    emu.force_status(&id, Status::Creating);
    assert_eq!(
        http.code(
            "POST",
            &format!("{sb}/exec"),
            Some(json!({ "cmd": "true" }))
        )
        .await,
        409
    );
    emu.force_status(&id, Status::Running);

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
