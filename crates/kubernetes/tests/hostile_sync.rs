//! A hostile sandbox against the host (links that fool the listing or escape through chains, links
//! planted for a later sync-out to write through, a FIFO in the workspace): trees a root agent
//! builds in a real emulator pod with an ordinary execute, synced out by the real provider. Each
//! case asserts the catalogued refusal and that nothing outside the destination changed (a victim
//! directory and the destination's parent are snapshotted around the call).

use std::path::Path;

use emulator::kubernetes::{KubeEmulatorOptions, KubernetesEmulator};
use kubernetes::KubernetesProvider;
use sandbox_core::NullSink;
use sandbox_core::hostile::{ESCAPING_TREES, assert_links_stay_inside, snapshot};
use serde_json::json;

#[allow(dead_code)]
#[path = "support/emulator.rs"]
mod emulator_support;
use emulator_support::Lease;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_pod_cannot_touch_the_host_through_sync_out() {
    let emu = KubernetesEmulator::start(KubeEmulatorOptions::for_tests())
        .await
        .expect("emulator starts");
    let provider = KubernetesProvider::new();
    let lease = Lease::acquire(&emu, &provider, "run-h").await;
    let host = tempfile::tempdir().unwrap();
    let victim = host.path().join("victim");
    std::fs::create_dir(&victim).unwrap();
    std::fs::write(victim.join("keep"), b"host data").unwrap();
    let out = host.path().join("out");
    let sync_out = |source: &str, kind: &str, target: &Path| {
        lease.params(json!([{"operationId": "o", "files": [
            {"kind": kind, "sourcePath": source, "targetPath": target}]}]))
    };

    // 1. The escaping trees (a link named `x -> y`, link chains confined only as text, an
    //    absolute link and a `../../..` one): each refused, nothing outside the destination
    //    changed, nothing extracted.
    for tree in ESCAPING_TREES {
        let built = lease.sh(&provider, &tree.script("/workspace")).await;
        assert_eq!(built["exitCode"], json!(0), "{built}");
        let source = format!("/workspace/{}", tree.dir);
        let before = snapshot(host.path(), Some(&out));
        let e = provider
            .sync_out(&sync_out(&source, "directory", &out), &NullSink)
            .await
            .unwrap_err();
        let prefix =
            "Kubernetes syncOut refusing tarball link whose target escapes the extraction dir: ";
        match tree.refused {
            Some(refused) => assert_eq!(e.message, format!("{prefix}{refused}"), "{source}"),
            None => assert!(e.message.starts_with(prefix), "{source}: {}", e.message),
        }
        assert_eq!(snapshot(host.path(), Some(&out)), before, "{source}");
        assert!(!out.exists() || std::fs::read_dir(&out).unwrap().next().is_none());
    }

    // 2. A link an older version left in the destination is never written through: a later
    //    sync-out of `l/pwned` refuses instead of creating VICTIM_DIR/pwned.
    std::fs::create_dir_all(&out).unwrap();
    std::os::unix::fs::symlink(&victim, out.join("l")).unwrap();
    lease
        .sh(
            &provider,
            "mkdir -p /workspace/later/l && echo pwned > /workspace/later/l/pwned",
        )
        .await;
    let before = snapshot(host.path(), Some(&out));
    let e = provider
        .sync_out(&sync_out("/workspace/later", "directory", &out), &NullSink)
        .await
        .unwrap_err();
    assert_eq!(
        e.message,
        format!(
            "Kubernetes syncOut refusing to write a tarball member through the symbolic link {}",
            out.join("l").display()
        )
    );
    assert_eq!(snapshot(host.path(), Some(&out)), before);
    assert!(!victim.join("pwned").exists());
    std::fs::remove_file(out.join("l")).unwrap();

    // 3. What a confined tree of links, hard links and a FIFO gives: links that resolve
    //    inside, the hard link as a file, no FIFO on the host.
    lease
        .sh(
            &provider,
            "mkdir -p /workspace/ok/sub && echo a > /workspace/ok/a && ln /workspace/ok/a /workspace/ok/sub/h \
             && ln -s ../a /workspace/ok/sub/l && ln -s sub/l /workspace/ok/l2 && mkfifo /workspace/ok/fifo",
        )
        .await;
    let ok = host.path().join("ok");
    provider
        .sync_out(&sync_out("/workspace/ok", "directory", &ok), &NullSink)
        .await
        .unwrap();
    assert_eq!(std::fs::read(ok.join("sub/h")).unwrap(), b"a\n");
    assert_eq!(std::fs::read(ok.join("l2")).unwrap(), b"a\n");
    assert!(std::fs::symlink_metadata(ok.join("fifo")).is_err());
    assert_links_stay_inside(&ok);

    // 4. A FIFO as a file source fails at once (it used to block the open until
    //    podActivityDeadlineSec).
    let made = lease.sh(&provider, "mkfifo /workspace/pipe").await;
    assert_eq!(made["exitCode"], json!(0), "{made}");
    let e = provider
        .sync_out(
            &sync_out("/workspace/pipe", "file", &host.path().join("pipe")),
            &NullSink,
        )
        .await
        .unwrap_err();
    assert_eq!(
        e.message,
        "Kubernetes syncOut file transfer failed (exit 45): NOTREG"
    );
    assert!(!host.path().join("pipe").exists());
    assert_eq!(std::fs::read(victim.join("keep")).unwrap(), b"host data");
    emu.shutdown().await;
}
