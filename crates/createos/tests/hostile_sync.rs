//! A hostile sandbox against the host (issue 15, attack 2): link chains a root agent builds in
//! a real emulator sandbox, confined only as text, synced out by the real provider. The refusal
//! is the contract's, and nothing outside the destination changes.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::*;
use createos::messages;
use serde_json::json;

fn snapshot(root: &Path) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let what = if meta.file_type().is_symlink() {
                format!("-> {}", std::fs::read_link(&path).unwrap().display())
            } else if meta.is_dir() {
                stack.push(path.clone());
                "dir".to_owned()
            } else {
                format!("{:?}", std::fs::read(&path).unwrap())
            };
            out.insert(path, what);
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn link_chains_confined_only_as_text_never_land_on_the_host() {
    let h = Harness::start().await;
    let lease = h.acquire(&h.run_params(json!({}))).await;
    let result = h
        .provider
        .execute(
            &h.exec_params(
                &lease,
                "bash",
                &[
                    "-c",
                    "mkdir -p /paperclip-workspace/chain && cd /paperclip-workspace/chain \
                     && ln -s . d && ln -s d/.. e && ln -s e/e/e/e/etc/passwd p && ln -s e/e/e/e r",
                ],
                json!({}),
            ),
            &*h.sink,
        )
        .await
        .unwrap();
    assert_eq!(result["exitCode"], json!(0), "{result}");
    let host = tempfile_dir();
    std::fs::create_dir(host.join("victim")).unwrap();
    std::fs::write(host.join("victim/keep"), b"host").unwrap();
    let before = snapshot(&host);
    let target = host.join("out");
    let params = h.params(json!({
        "lease": { "providerLeaseId": lease["providerLeaseId"], "metadata": lease["metadata"], "expiresAt": null },
        "operations": [{ "files": [{ "kind": "directory", "sourcePath": "/paperclip-workspace/chain",
            "targetPath": target.to_string_lossy() }] }],
    }));
    assert_eq!(
        message(h.provider.sync_out(&params, &*h.sink).await),
        messages::ARCHIVE_UNSAFE
    );
    assert_eq!(
        snapshot(&host),
        before,
        "nothing lands, not even the target"
    );
    std::fs::remove_dir_all(&host).unwrap();
    h.destroy(&lease).await;
    h.finish().await;
}

fn tempfile_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("createos-hostile-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
