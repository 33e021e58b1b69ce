//! File upload and download through the sandbox.

use serde_json::json;

use crate::common::{no_live_processes, start};

fn enc(path: &str) -> String {
    path.replace('/', "%2F")
}

#[tokio::test]
async fn binary_files_round_trip_and_create_parent_directories() {
    let (emu, http) = start(|_| {}).await;
    let id = http.sandbox().await;
    let data: Vec<u8> = (0..3 * 1024 * 1024u32)
        .map(|i| (i * 7 % 256) as u8)
        .collect();
    let path = "/paperclip-workspace/.paperclip-runtime/blob.bin";
    let r = http
        .raw(
            "PUT",
            &format!("/v1/sandboxes/{id}/files?path={}", enc(path)),
            Some(data.clone()),
        )
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.data()["size"], data.len());
    let r = http
        .raw(
            "GET",
            &format!("/v1/sandboxes/{id}/files?path={}", enc(path)),
            None,
        )
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.headers["content-type"], "application/octet-stream");
    assert!(r.body == data, "downloaded bytes differ");
    let sum = http.bash(&id, &format!("wc -c < {path}")).await;
    assert_eq!(sum["stdout"], format!("{}\n", data.len()));
    // Empty files (the provider's start gate) work too.
    let r = http
        .raw(
            "PUT",
            &format!("/v1/sandboxes/{id}/files?path={}", enc("/tmp/gate")),
            Some(Vec::new()),
        )
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(
        http.raw(
            "GET",
            &format!("/v1/sandboxes/{id}/files?path={}", enc("/tmp/gate")),
            None
        )
        .await
        .body
        .len(),
        0
    );
    no_live_processes(&emu).await;
}

#[tokio::test]
async fn download_errors_and_symlinks_resolve_inside_the_sandbox() {
    let (_emu, http) = start(|_| {}).await;
    let id = http.sandbox().await;
    let get = |p: &str| format!("/v1/sandboxes/{id}/files?path={}", enc(p));
    assert_eq!(
        http.raw("GET", &get("/paperclip-workspace/missing"), None)
            .await
            .status,
        404
    );
    assert_eq!(
        http.raw("GET", &get("/paperclip-workspace"), None)
            .await
            .status,
        404
    );
    assert_eq!(
        http.raw(
            "GET",
            &format!("/v1/sandboxes/{id}/files?path=relative"),
            None
        )
        .await
        .status,
        400
    );
    assert_eq!(
        http.raw("GET", &format!("/v1/sandboxes/{id}/files"), None)
            .await
            .status,
        400
    );
    assert_eq!(
        http.raw("GET", "/v1/sandboxes/sb_nope/files?path=%2Fx", None)
            .await
            .status,
        404
    );
    http.bash(
        &id,
        "echo sandbox-tmp > /tmp/hosts-test; ln -s /tmp/hosts-test /paperclip-workspace/link",
    )
    .await;
    let r = http
        .raw("GET", &get("/paperclip-workspace/link"), None)
        .await;
    assert_eq!(r.body, "sandbox-tmp\n");
    let r = http
        .raw("PUT", &get("/usr/not-writable"), Some(b"x".to_vec()))
        .await;
    assert_eq!(r.status, 400);
}

#[tokio::test]
async fn tar_archives_round_trip_through_real_tar() {
    let (_emu, http) = start(|_| {}).await;
    let id = http.sandbox().await;
    let r = http.bash(&id, "mkdir -p /tmp/src/d && echo a > /tmp/src/d/a && ln -s d/a /tmp/src/l && chmod 640 /tmp/src/d/a && tar -cf /tmp/x.tar -C /tmp/src .").await;
    assert_eq!(r["exit_code"], 0);
    let tar = http
        .raw(
            "GET",
            &format!("/v1/sandboxes/{id}/files?path={}", enc("/tmp/x.tar")),
            None,
        )
        .await
        .body;
    let r = http
        .raw(
            "PUT",
            &format!("/v1/sandboxes/{id}/files?path={}", enc("/tmp/y.tar")),
            Some(tar.to_vec()),
        )
        .await;
    assert_eq!(r.status, 200);
    let r = http.bash(&id, "mkdir /paperclip-workspace/out && tar -xf /tmp/y.tar -C /paperclip-workspace/out && cat /paperclip-workspace/out/l && stat -c %a /paperclip-workspace/out/d/a").await;
    assert_eq!(r["stdout"], "a\n640\n");
}

#[tokio::test]
async fn request_bodies_are_capped() {
    let (_emu, http) = start(|o| o.max_request_body_bytes = 1024).await;
    let id = http.sandbox().await;
    let r = http
        .raw(
            "PUT",
            &format!("/v1/sandboxes/{id}/files?path=%2Ftmp%2Fbig"),
            Some(vec![b'x'; 2048]),
        )
        .await;
    assert_eq!(r.status, 413);
    let r = http.exec(&id, json!({ "cmd": "true" })).await;
    assert_eq!(r.status, 200);
}
