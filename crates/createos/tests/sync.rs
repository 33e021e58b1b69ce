//! onEnvironmentSyncIn / onEnvironmentSyncOut against the emulator: round trips, modes,
//! exclusions, post-upload commands, exact counts, confinement, unsafe archives and every
//! transfer error string the hooks can produce.

mod common;

use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};

use common::*;
use createos::messages;
use serde_json::{Value, json};

fn id_of(lease: &Value) -> String {
    lease["providerLeaseId"].as_str().unwrap().to_owned()
}

fn sync_params(h: &Harness, lease: &Value, operations: Value) -> Value {
    h.params(json!({
        "lease": { "providerLeaseId": lease["providerLeaseId"], "metadata": lease["metadata"], "expiresAt": null },
        "operations": operations,
    }))
}

/// A scratch directory on the host, removed on drop.
struct HostDir(PathBuf);

impl HostDir {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "createos-sync-{name}-{}-{}",
            std::process::id(),
            rand_suffix()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }
    fn path(&self, rel: &str) -> PathBuf {
        self.0.join(rel)
    }
    fn s(&self, rel: &str) -> String {
        self.path(rel).to_string_lossy().into_owned()
    }
}

impl Drop for HostDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn rand_suffix() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish()
}

fn write(path: &Path, bytes: &[u8], mode: u32) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn mode_of(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .unwrap()
        .permissions()
        .mode()
        & 0o7777
}

/// node-tar's archive size: a header per entry, contents padded to 512, two zero blocks.
fn tar_size(entries: usize, file_sizes: &[u64]) -> u64 {
    512 * entries as u64
        + file_sizes
            .iter()
            .map(|s| s.div_ceil(512) * 512)
            .sum::<u64>()
        + 1024
}

/// The sandbox's `/paperclip-workspace` on the host.
fn workspace(h: &Harness, lease: &Value) -> PathBuf {
    h.emu
        .sandbox_root(&id_of(lease))
        .unwrap()
        .join("paperclip-workspace")
}

async fn run(h: &Harness, lease: &Value, script: &str) {
    let result = h
        .provider
        .execute(
            &h.exec_params(lease, "bash", &["-c", script], json!({})),
            &*h.sink,
        )
        .await
        .unwrap();
    assert_eq!(result["exitCode"], json!(0), "{result}");
}

/// The sandbox commands of the logged streaming execs (the `-c` text of each).
fn commands(calls: &[Call]) -> Vec<String> {
    calls
        .iter()
        .filter(|c| c.path.ends_with("/exec?stream=true"))
        .map(|c| {
            let script = c.body.as_ref().unwrap()["args"][1].as_str().unwrap();
            let last = script.lines().last().unwrap();
            last.strip_prefix("exec env  '/bin/bash' '-c' ")
                .unwrap()
                .to_owned()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn syncs_files_and_directories_in_and_out_with_modes_exclusions_and_exact_counts() {
    let h = Harness::start().await;
    let lease = h.acquire(&h.run_params(json!({}))).await;
    let id = id_of(&lease);
    let host = HostDir::new("roundtrip");
    write(&host.path("single.bin"), &[0, 1, 2, 255, 10, 13], 0o640);
    write(&host.path("src/a.txt"), b"alpha\n", 0o644);
    write(&host.path("src/run.sh"), b"#!/bin/sh\necho hi\n", 0o755);
    write(&host.path("src/sub/big.bin"), &vec![42u8; 1300], 0o600);
    write(&host.path("src/skip.log"), b"excluded", 0o644);
    write(&host.path("src/node_modules/dep/x.js"), b"excluded", 0o644);
    symlink("a.txt", host.path("src/link")).unwrap();
    // Hard links travel as one file and one link entry (the later name, as node-tar did).
    std::fs::hard_link(host.path("src/a.txt"), host.path("src/hard")).unwrap();
    h.clear_log();

    let params = sync_params(
        &h,
        &lease,
        json!([
            { "operationId": "op-file", "files": [
                { "kind": "file", "sourcePath": host.s("single.bin"), "targetPath": "/paperclip-workspace/in/single.bin" },
                { "kind": "file", "sourcePath": host.s("single.bin"), "targetPath": "/paperclip-workspace/in/moded.bin", "mode": 0o600 },
            ] },
            { "operationId": "op-dir", "files": [
                { "kind": "directory", "sourcePath": host.s("src"), "targetPath": "/paperclip-workspace/tree",
                  "exclude": ["*.log", "node_modules"] },
            ] },
        ]),
    );
    let result = h.provider.sync_in(&params, &*h.sink).await.unwrap();
    // ./, a.txt, hard (link), link, run.sh, sub/, sub/big.bin
    let archive = tar_size(7, &[6, 18, 1300]);
    assert_eq!(
        serde_json::to_string(&result).unwrap(),
        serde_json::to_string(&json!({ "operations": [
            { "operationId": "op-file", "filesTransferred": 2, "bytesTransferred": 12 },
            { "operationId": "op-dir", "filesTransferred": 3, "bytesTransferred": archive },
        ] }))
        .unwrap()
    );

    let ws = workspace(&h, &lease);
    assert_eq!(
        std::fs::read(ws.join("in/single.bin")).unwrap(),
        [0, 1, 2, 255, 10, 13]
    );
    assert_eq!(mode_of(&ws.join("in/single.bin")), 0o640);
    assert_eq!(mode_of(&ws.join("in/moded.bin")), 0o600);
    assert_eq!(std::fs::read(ws.join("tree/a.txt")).unwrap(), b"alpha\n");
    assert_eq!(mode_of(&ws.join("tree/run.sh")), 0o755);
    assert_eq!(mode_of(&ws.join("tree/sub/big.bin")), 0o600);
    assert_eq!(mode_of(&ws.join("tree")), 0o755);
    assert_eq!(
        std::fs::read_link(ws.join("tree/link")).unwrap(),
        Path::new("a.txt")
    );
    assert_eq!(std::fs::read(ws.join("tree/hard")).unwrap(), b"alpha\n");
    assert!(!ws.join("tree/skip.log").exists());
    assert!(!ws.join("tree/node_modules").exists());

    // Per mapping: PUT scratch, the promotion command, rm of the scratch file.
    let calls = h.calls();
    let puts: Vec<&Call> = calls.iter().filter(|c| c.method == "PUT").collect();
    assert_eq!(puts.len(), 3, "{}", show(&calls));
    let scratch: Vec<String> = puts
        .iter()
        .map(|c| {
            let encoded = c.path.split("path=").nth(1).unwrap();
            encoded.replace("%2F", "/")
        })
        .collect();
    let mut expected = Vec::new();
    for s in &scratch {
        assert!(s.starts_with("/tmp/paperclip-createos-transfer-"), "{s}");
        let encoded = s.replace('/', "%2F");
        expected.push((
            "PUT".to_owned(),
            format!("/sandboxes/{id}/files?path={encoded}"),
        ));
        expected.push((
            "POST".to_owned(),
            format!("/sandboxes/{id}/exec?stream=true"),
        ));
        expected.push(("POST".to_owned(), format!("/sandboxes/{id}/exec")));
    }
    let got: Vec<(String, String)> = calls
        .iter()
        .map(|c| (c.method.clone(), c.path.clone()))
        .collect();
    assert_eq!(got, expected, "{}", show(&calls));
    let guard = |p: &str| {
        format!(
            "root=$(realpath -- '/paperclip-workspace') && test \"$root\" = '/paperclip-workspace' && resolved=$(realpath -m -- '{p}') && case \"$resolved\" in \"$root\"|\"$root\"/*) ;; *) exit 1 ;; esac"
        )
    };
    let quote = |s: &str| {
        let inner = format!(
            "{} && mkdir -p -- \"$(dirname -- \"$resolved\")\" && chmod 640 -- '{s}' && mv -f -- '{s}' \"$resolved\"",
            guard("/paperclip-workspace/in/single.bin")
        );
        format!("'{}'", inner.replace('\'', "'\"'\"'"))
    };
    let cmds = commands(&calls);
    assert_eq!(cmds[0], quote(&scratch[0]));
    let dir_cmd = format!(
        "{} && mkdir -p -- \"$resolved\" && tar -xf '{}' -C \"$resolved\" && chmod 755 -- \"$resolved\"",
        guard("/paperclip-workspace/tree"),
        scratch[2]
    );
    assert_eq!(cmds[2], format!("'{}'", dir_cmd.replace('\'', "'\"'\"'")));
    let stream_body = calls[1].body.as_ref().unwrap();
    assert_eq!(stream_body["args"][0], json!("-lc"));
    assert!(
        stream_body["args"][1]
            .as_str()
            .unwrap()
            .starts_with("cd -- '/paperclip-workspace' || exit\nexec env  '/bin/bash' '-c' ")
    );
    for (i, s) in scratch.iter().enumerate() {
        assert_eq!(
            calls[3 * i + 2].body,
            Some(json!({ "cmd": "/bin/rm", "args": ["-f", "--", s] }))
        );
    }

    // Out again: a new target directory is created 0700; a file arrives with its mode.
    h.clear_log();
    let back = HostDir::new("back");
    let out = sync_params(
        &h,
        &lease,
        json!([{ "operationId": "out", "files": [
            { "kind": "directory", "sourcePath": "/paperclip-workspace/tree", "targetPath": back.s("nested/tree"), "exclude": ["run.sh"] },
            { "kind": "file", "sourcePath": "/paperclip-workspace/in/single.bin", "targetPath": back.s("single.bin"), "mode": 0o640 },
            { "kind": "file", "sourcePath": "/paperclip-workspace/in/moded.bin", "targetPath": back.s("default.bin") },
        ] }]),
    );
    let result = h.provider.sync_out(&out, &*h.sink).await.unwrap();
    let op = &result["operations"][0];
    assert_eq!(op["operationId"], json!("out"));
    assert_eq!(op["filesTransferred"], json!(4), "{result}");
    let bytes = op["bytesTransferred"].as_u64().unwrap();
    // GNU tar pads to 10 KiB records: the count is the downloaded archive's size plus 12.
    assert_eq!((bytes - 12) % 10240, 0, "{bytes}");
    assert_eq!(mode_of(&back.path("nested/tree")), 0o700);
    assert_eq!(
        std::fs::read(back.path("nested/tree/a.txt")).unwrap(),
        b"alpha\n"
    );
    assert_eq!(mode_of(&back.path("nested/tree/sub/big.bin")), 0o600);
    assert_eq!(
        std::fs::read(back.path("nested/tree/sub/big.bin")).unwrap(),
        vec![42u8; 1300]
    );
    assert_eq!(
        std::fs::read_link(back.path("nested/tree/link")).unwrap(),
        Path::new("a.txt")
    );
    assert!(!back.path("nested/tree/run.sh").exists());
    {
        use std::os::unix::fs::MetadataExt;
        let a = std::fs::metadata(back.path("nested/tree/a.txt")).unwrap();
        let hard = std::fs::metadata(back.path("nested/tree/hard")).unwrap();
        assert_eq!((a.dev(), a.ino()), (hard.dev(), hard.ino()));
    }
    assert_eq!(mode_of(&back.path("single.bin")), 0o640);
    assert_eq!(mode_of(&back.path("default.bin")), 0o600);
    assert_eq!(
        std::fs::read(back.path("default.bin")).unwrap(),
        [0, 1, 2, 255, 10, 13]
    );
    // No temp directory is left beside the targets.
    let leftovers: Vec<_> = std::fs::read_dir(&back.0)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".paperclip-createos-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    let calls = h.calls();
    let routes: Vec<(String, String)> = calls
        .iter()
        .map(|c| (c.method.clone(), c.path.clone()))
        .collect();
    assert_eq!(routes.len(), 9, "{}", show(&calls));
    for chunk in routes.chunks(3) {
        assert_eq!(
            chunk[0],
            (
                "POST".to_owned(),
                format!("/sandboxes/{id}/exec?stream=true")
            )
        );
        assert_eq!(chunk[1].0, "GET");
        assert!(chunk[1].1.starts_with(&format!(
            "/sandboxes/{id}/files?path=%2Ftmp%2Fpaperclip-createos-transfer-"
        )));
        assert_eq!(
            chunk[2],
            ("POST".to_owned(), format!("/sandboxes/{id}/exec"))
        );
    }
    let cmds = commands(&calls);
    let scratch = calls[1]
        .path
        .split("path=")
        .nth(1)
        .unwrap()
        .replace("%2F", "/");
    let tar_cmd = format!(
        "{} && test -d \"$resolved\" && tar --exclude='run.sh' -cf '{scratch}' -C \"$resolved\" .",
        guard("/paperclip-workspace/tree")
    );
    assert_eq!(cmds[0], format!("'{}'", tar_cmd.replace('\'', "'\"'\"'")));

    h.destroy(&lease).await;
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_post_upload_commands_in_order_and_stops_at_the_first_failure() {
    let h = Harness::start().await;
    let lease = h.acquire(&h.run_params(json!({}))).await;
    let host = HostDir::new("post");
    write(&host.path("f.txt"), b"x", 0o644);
    run(&h, &lease, "mkdir -p /paperclip-workspace/sub").await;
    h.clear_log();
    let params = sync_params(
        &h,
        &lease,
        json!([{ "operationId": "op", "files": [
            { "kind": "file", "sourcePath": host.s("f.txt"), "targetPath": "/paperclip-workspace/f.txt" },
        ], "postUploadCommands": [
            { "command": "echo one >> /paperclip-workspace/log; pwd >> /paperclip-workspace/log" },
            { "command": "echo two >> ../log; exit 3", "cwd": "/paperclip-workspace/sub" },
            { "command": "echo three >> /paperclip-workspace/log" },
        ] }]),
    );
    let error = message(h.provider.sync_in(&params, &*h.sink).await);
    assert_eq!(error, messages::TRANSFER_COMMAND_FAILED);
    let log = std::fs::read_to_string(workspace(&h, &lease).join("log")).unwrap();
    assert_eq!(log, "one\n/paperclip-workspace\ntwo\n");
    let calls = h.calls();
    let scripts: Vec<String> = calls
        .iter()
        .filter(|c| c.path.ends_with("?stream=true"))
        .map(|c| {
            c.body.as_ref().unwrap()["args"][1]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    // promotion, guard + command, guard + failing command; the third never runs.
    assert_eq!(scripts.len(), 5, "{}", show(&calls));
    assert!(scripts[1].starts_with("cd -- '/paperclip-workspace' || exit\n"));
    assert!(scripts[1].contains("realpath -m -- '\"'\"'/paperclip-workspace'\"'\"')"));
    assert_eq!(
        scripts[2],
        "cd -- '/paperclip-workspace' || exit\nexec env  '/bin/bash' '-c' 'echo one >> /paperclip-workspace/log; pwd >> /paperclip-workspace/log'"
    );
    assert!(scripts[3].starts_with("cd -- '/paperclip-workspace' || exit\n"));
    assert!(scripts[3].contains("/paperclip-workspace/sub"));
    assert_eq!(
        scripts[4],
        "cd -- '/paperclip-workspace/sub' || exit\nexec env  '/bin/bash' '-c' 'echo two >> ../log; exit 3'"
    );

    // A command that outlives its own timeout fails the same way.
    let params = sync_params(
        &h,
        &lease,
        json!([{ "operationId": "op", "files": [], "postUploadCommands": [
            { "command": "sleep 30", "timeoutMs": 300 },
        ] }]),
    );
    assert_eq!(
        message(h.provider.sync_in(&params, &*h.sink).await),
        messages::TRANSFER_COMMAND_FAILED
    );
    // Operations without files report zero counts.
    let params = sync_params(
        &h,
        &lease,
        json!([{ "operationId": "empty", "files": [], "postUploadCommands": [{ "command": "true" }] }]),
    );
    assert_eq!(
        h.provider.sync_in(&params, &*h.sink).await.unwrap(),
        json!({ "operations": [{ "operationId": "empty", "filesTransferred": 0, "bytesTransferred": 0 }] })
    );
    h.destroy(&lease).await;
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rejects_invalid_mappings_before_any_request() {
    let h = Harness::start().await;
    let lease = h.acquire(&h.run_params(json!({}))).await;
    h.clear_log();
    let file = |extra: Value| {
        let mut m = json!({ "kind": "file", "sourcePath": "/tmp/x", "targetPath": "/paperclip-workspace/x" });
        merge(&mut m, extra);
        m
    };
    let cases: Vec<(Value, &str)> = vec![
        (
            json!([{ "files": [file(json!({ "kind": "symlink" }))] }]),
            messages::TRANSFER_KIND_UNSUPPORTED,
        ),
        (
            json!([{ "files": [file(json!({ "sourcePath": "relative/x" }))] }]),
            messages::TRANSFER_HOST_PATH_RELATIVE,
        ),
        (
            json!([{ "files": [file(json!({ "mode": 0o1000 }))] }]),
            messages::INVALID_FILE_MODE,
        ),
        (
            json!([{ "files": [file(json!({ "mode": -1 }))] }]),
            messages::INVALID_FILE_MODE,
        ),
        (
            json!([{ "files": [file(json!({ "mode": 1.5 }))] }]),
            messages::INVALID_FILE_MODE,
        ),
        (
            json!([{ "files": [file(json!({ "targetPath": "/etc/passwd" }))] }]),
            messages::TRANSFER_PATH_ESCAPES,
        ),
        (
            json!([{ "files": [file(json!({ "targetPath": "/paperclip-workspace/../secret" }))] }]),
            messages::TRANSFER_PATH_UNCONFINED,
        ),
        (
            json!([{ "files": [file(json!({ "targetPath": "relative" }))] }]),
            messages::TRANSFER_PATH_UNCONFINED,
        ),
        (
            json!([{ "files": [file(json!({ "targetPath": "/paperclip-workspace-other/file" }))] }]),
            messages::TRANSFER_PATH_ESCAPES,
        ),
        (
            json!([{ "files": [], "postUploadCommands": [{ "command": "true", "cwd": "/tmp" }] }]),
            messages::TRANSFER_PATH_ESCAPES,
        ),
        (
            json!([{ "files": [], "postUploadCommands": [{ "command": "true", "timeoutMs": 0 }] }]),
            messages::INVALID_TRANSFER_TIMEOUT,
        ),
        (
            json!([{ "files": [], "postUploadCommands": [{ "command": "true", "timeoutMs": 86_400_001 }] }]),
            messages::INVALID_TRANSFER_TIMEOUT,
        ),
        // A later invalid operation stops the first valid one from running.
        (
            json!([{ "files": [file(json!({}))] }, { "files": [file(json!({ "kind": "pipe" }))] }]),
            messages::TRANSFER_KIND_UNSUPPORTED,
        ),
    ];
    for (operations, expected) in cases {
        let params = sync_params(&h, &lease, operations.clone());
        assert_eq!(
            message(h.provider.sync_in(&params, &*h.sink).await),
            expected,
            "{operations}"
        );
    }
    // Outbound: host path is the target; commands are refused.
    let out = |operations: Value| sync_params(&h, &lease, operations);
    assert_eq!(
        message(h.provider.sync_out(&out(json!([{ "files": [{ "kind": "file", "sourcePath": "/paperclip-workspace/x", "targetPath": "x" }] }])), &*h.sink).await),
        messages::TRANSFER_HOST_PATH_RELATIVE
    );
    assert_eq!(
        message(
            h.provider
                .sync_out(
                    &out(json!([{ "files": [], "postUploadCommands": [{ "command": "true" }] }])),
                    &*h.sink
                )
                .await
        ),
        messages::OUTBOUND_POST_UPLOAD
    );
    // Not this environment's lease.
    let mut foreign = sync_params(&h, &lease, json!([]));
    foreign["companyId"] = json!("co_other");
    assert_eq!(
        message(h.provider.sync_in(&foreign, &*h.sink).await),
        messages::EXECUTION_LEASE_MISMATCH
    );
    assert!(h.calls().is_empty(), "{}", show(&h.calls()));
    h.destroy(&lease).await;
    // After shutdown no sync starts.
    h.provider.shutdown().await.unwrap();
    h.clear_log();
    assert_eq!(
        message(
            h.provider
                .sync_in(&sync_params(&h, &lease, json!([])), &*h.sink)
                .await
        ),
        messages::LEASE_CLOSING
    );
    assert!(h.calls().is_empty(), "{}", show(&h.calls()));
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refuses_unsafe_archives_symlinked_destinations_and_escaping_sandbox_paths() {
    let h = Harness::start().await;
    let lease = h.acquire(&h.run_params(json!({}))).await;
    let host = HostDir::new("unsafe");
    run(
        &h,
        &lease,
        "mkdir -p /paperclip-workspace/evil /paperclip-workspace/ok && echo hi > /paperclip-workspace/evil/a \
         && ln -s ../../etc/passwd /paperclip-workspace/evil/escape && echo fine > /paperclip-workspace/ok/f \
         && ln -s /etc /paperclip-workspace/outside && mkdir -p /paperclip-workspace/pipes \
         && mkfifo /paperclip-workspace/pipes/fifo",
    )
    .await;

    // Entry types other than files, directories and links are refused.
    let params = sync_params(
        &h,
        &lease,
        json!([{ "files": [{ "kind": "directory", "sourcePath": "/paperclip-workspace/pipes", "targetPath": host.s("pipes") }] }]),
    );
    assert_eq!(
        message(h.provider.sync_out(&params, &*h.sink).await),
        messages::ARCHIVE_UNSAFE
    );
    assert!(!host.path("pipes").exists());

    // An escaping symlink: nothing lands, not even the target directory.
    let params = sync_params(
        &h,
        &lease,
        json!([{ "files": [{ "kind": "directory", "sourcePath": "/paperclip-workspace/evil", "targetPath": host.s("evil") }] }]),
    );
    assert_eq!(
        message(h.provider.sync_out(&params, &*h.sink).await),
        messages::ARCHIVE_UNSAFE
    );
    assert!(!host.path("evil").exists());

    // A destination that is a symlink is refused before extraction.
    std::fs::create_dir(host.path("real")).unwrap();
    symlink(host.path("real"), host.path("linked")).unwrap();
    let params = sync_params(
        &h,
        &lease,
        json!([{ "files": [{ "kind": "directory", "sourcePath": "/paperclip-workspace/ok", "targetPath": host.s("linked") }] }]),
    );
    assert_eq!(
        message(h.provider.sync_out(&params, &*h.sink).await),
        messages::ARCHIVE_DESTINATION_SYMLINK
    );
    assert!(
        std::fs::read_dir(host.path("real"))
            .unwrap()
            .next()
            .is_none()
    );

    // A sandbox path that resolves outside the workspace fails the in-sandbox guard.
    h.clear_log();
    let params = sync_params(
        &h,
        &lease,
        json!([{ "files": [{ "kind": "file", "sourcePath": "/paperclip-workspace/outside/hostname", "targetPath": host.s("hostname") }] }]),
    );
    assert_eq!(
        message(h.provider.sync_out(&params, &*h.sink).await),
        messages::TRANSFER_COMMAND_FAILED
    );
    assert!(!host.path("hostname").exists());
    // The scratch file is removed even after a failure.
    let calls = h.calls();
    assert_eq!(calls.len(), 2, "{}", show(&calls));
    assert_eq!(calls[1].body.as_ref().unwrap()["cmd"], json!("/bin/rm"));

    // Inbound to a path behind the symlink fails the same way.
    write(&host.path("up.txt"), b"x", 0o644);
    let params = sync_params(
        &h,
        &lease,
        json!([{ "files": [{ "kind": "file", "sourcePath": host.s("up.txt"), "targetPath": "/paperclip-workspace/outside/x" }] }]),
    );
    assert_eq!(
        message(h.provider.sync_in(&params, &*h.sink).await),
        messages::TRANSFER_COMMAND_FAILED
    );

    h.destroy(&lease).await;
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reports_download_and_upload_failures_with_their_exact_texts() {
    let h = Harness::start().await;
    let lease = h.acquire(&h.run_params(json!({}))).await;
    let host = HostDir::new("faults");
    run(&h, &lease, "echo data > /paperclip-workspace/f").await;
    let out = sync_params(
        &h,
        &lease,
        json!([{ "files": [{ "kind": "file", "sourcePath": "/paperclip-workspace/f", "targetPath": host.s("f") }] }]),
    );
    // A download answered without a body (204).
    h.fault(json!({ "method": "GET", "path": "/v1/sandboxes/*/files", "action": { "kind": "status", "status": 204 } }));
    assert_eq!(
        message(h.provider.sync_out(&out, &*h.sink).await),
        messages::DOWNLOAD_NO_BODY
    );
    // A failed download names the file transfer.
    h.fault(json!({ "method": "GET", "path": "/v1/sandboxes/*/files", "action": { "kind": "status", "status": 500 } }));
    assert_eq!(
        message(h.provider.sync_out(&out, &*h.sink).await),
        "CreateOS request failed (HTTP 500) during file transfer."
    );
    // A download cut after its headers fails as Node's fetch did.
    h.fault(json!({ "method": "GET", "path": "/v1/sandboxes/*/files", "action": { "kind": "cutStream", "afterBytes": 2, "abort": true } }));
    assert_eq!(
        message(h.provider.sync_out(&out, &*h.sink).await),
        messages::TERMINATED
    );
    // A failed upload too.
    write(&host.path("up"), b"x", 0o644);
    let params = sync_params(
        &h,
        &lease,
        json!([{ "files": [{ "kind": "file", "sourcePath": host.s("up"), "targetPath": "/paperclip-workspace/up" }] }]),
    );
    h.fault(json!({ "method": "PUT", "path": "/v1/sandboxes/*/files", "action": { "kind": "status", "status": 413 } }));
    assert_eq!(
        message(h.provider.sync_in(&params, &*h.sink).await),
        "CreateOS request failed (HTTP 413) during file transfer."
    );
    // A missing host source is Node's fs error.
    let params = sync_params(
        &h,
        &lease,
        json!([{ "files": [{ "kind": "file", "sourcePath": host.s("missing"), "targetPath": "/paperclip-workspace/up" }] }]),
    );
    assert_eq!(
        message(h.provider.sync_in(&params, &*h.sink).await),
        format!(
            "ENOENT: no such file or directory, open '{}'",
            host.s("missing")
        )
    );
    // Nothing partial replaced the host target.
    assert!(!host.path("f").exists());
    // And the successful path still works afterwards.
    let result = h.provider.sync_out(&out, &*h.sink).await.unwrap();
    assert_eq!(result["operations"][0]["bytesTransferred"], json!(5));
    assert_eq!(std::fs::read(host.path("f")).unwrap(), b"data\n");
    h.destroy(&lease).await;
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_aborts_a_running_sync_and_nothing_leaks() {
    let h = Harness::start().await;
    let lease = h.acquire(&h.run_params(json!({}))).await;
    let params = sync_params(
        &h,
        &lease,
        json!([{ "files": [], "postUploadCommands": [{ "command": "echo started; sleep 60" }] }]),
    );
    let sync = h.provider.sync_in(&params, &*h.sink);
    let destroy = async {
        // Wait until the long command is running in the sandbox.
        loop {
            if h.calls()
                .iter()
                .filter(|c| c.path.ends_with("?stream=true"))
                .count()
                == 2
            {
                break;
            }
            tokio::task::yield_now().await;
        }
        h.destroy(&lease).await;
    };
    let (result, ()) = tokio::join!(sync, destroy);
    assert_eq!(message(result), messages::COMMAND_CANCELLED);
    assert_eq!(h.provider.state().active_calls(), 0);
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follows_host_symlinks_only_when_asked() {
    let h = Harness::start().await;
    let lease = h.acquire(&h.run_params(json!({}))).await;
    let host = HostDir::new("follow");
    write(&host.path("outside.txt"), b"outside!", 0o644);
    std::fs::create_dir(host.path("src")).unwrap();
    symlink(host.path("outside.txt"), host.path("src/ln")).unwrap();
    let params = |follow: bool, target: &str| {
        sync_params(
            &h,
            &lease,
            json!([{ "operationId": target, "files": [{ "kind": "directory", "sourcePath": host.s("src"),
                "targetPath": format!("/paperclip-workspace/{target}"), "followSymlinks": follow, "mode": 0o700 }] }]),
        )
    };
    let kept = h
        .provider
        .sync_in(&params(false, "kept"), &*h.sink)
        .await
        .unwrap();
    assert_eq!(kept["operations"][0]["filesTransferred"], json!(0));
    assert_eq!(
        kept["operations"][0]["bytesTransferred"],
        json!(tar_size(2, &[]))
    );
    let followed = h
        .provider
        .sync_in(&params(true, "followed"), &*h.sink)
        .await
        .unwrap();
    assert_eq!(followed["operations"][0]["filesTransferred"], json!(1));
    assert_eq!(
        followed["operations"][0]["bytesTransferred"],
        json!(tar_size(2, &[8]))
    );
    let ws = workspace(&h, &lease);
    assert!(
        std::fs::symlink_metadata(ws.join("kept/ln"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(std::fs::read(ws.join("followed/ln")).unwrap(), b"outside!");
    assert_eq!(mode_of(&ws.join("followed")), 0o700);
    // An empty file is an empty upload.
    write(&host.path("empty"), b"", 0o600);
    let empty = sync_params(
        &h,
        &lease,
        json!([{ "operationId": "e", "files": [{ "kind": "file", "sourcePath": host.s("empty"), "targetPath": "/paperclip-workspace/empty" }] }]),
    );
    assert_eq!(
        h.provider.sync_in(&empty, &*h.sink).await.unwrap(),
        json!({ "operations": [{ "operationId": "e", "filesTransferred": 1, "bytesTransferred": 0 }] })
    );
    assert_eq!(std::fs::read(ws.join("empty")).unwrap(), b"");
    assert_eq!(mode_of(&ws.join("empty")), 0o600);
    h.destroy(&lease).await;
    h.finish().await;
}

/// `followSymlinks` on a tree with link loops (`a -> .`, `b -> .`) used to grow the
/// worker for a minute before ELOOP; it now fails at the first repeated directory, uploading
/// nothing, and the same tree syncs fine with the links kept as links.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn following_a_link_loop_fails_fast() {
    let h = Harness::start().await;
    let lease = h.acquire(&h.run_params(json!({}))).await;
    let host = HostDir::new("loop");
    std::fs::create_dir(host.path("src")).unwrap();
    write(&host.path("src/file"), b"x", 0o644);
    symlink(".", host.path("src/a")).unwrap();
    symlink(".", host.path("src/b")).unwrap();
    let params = |follow: bool, target: &str| {
        sync_params(
            &h,
            &lease,
            json!([{ "operationId": target, "files": [{ "kind": "directory", "sourcePath": host.s("src"),
                "targetPath": format!("/paperclip-workspace/{target}"), "followSymlinks": follow }] }]),
        )
    };
    let error = h.provider.sync_in(&params(true, "looped"), &*h.sink).await;
    assert_eq!(
        message(error),
        messages::sync_source_repeated_directory(&host.path("src/a"))
    );
    let ws = workspace(&h, &lease);
    assert!(!ws.join("looped").exists());
    h.provider
        .sync_in(&params(false, "kept"), &*h.sink)
        .await
        .unwrap();
    assert!(
        std::fs::symlink_metadata(ws.join("kept/a"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    h.destroy(&lease).await;
    h.finish().await;
}
