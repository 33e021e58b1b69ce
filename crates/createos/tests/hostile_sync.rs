//! A hostile sandbox against the host: link chains a root agent builds in
//! a real emulator sandbox, confined only as text, synced out by the real provider. The refusal
//! is the contract's, and nothing outside the destination changes.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use createos::messages;
use sandbox_core::hostile::snapshot;
use serde_json::json;

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
    let before = snapshot(&host, None);
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
        snapshot(&host, None),
        before,
        "nothing lands, not even the target"
    );
    std::fs::remove_dir_all(&host).unwrap();
    h.destroy(&lease).await;
    h.finish().await;
}

/// A fresh host directory per call (the tests of this file run in parallel).
fn tempfile_dir() -> PathBuf {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("createos-hostile-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn lease_id(lease: &serde_json::Value) -> String {
    lease["providerLeaseId"].as_str().unwrap().to_owned()
}

/// The sandbox's `/` on the host (what a root agent owns).
fn sandbox_root(h: &Harness, lease: &serde_json::Value) -> PathBuf {
    h.emu.sandbox_root(&lease_id(lease)).unwrap()
}

async fn sh(h: &Harness, lease: &serde_json::Value, script: &str) {
    let result = h
        .provider
        .execute(
            &h.exec_params(lease, "bash", &["-c", script], json!({})),
            &*h.sink,
        )
        .await
        .unwrap();
    assert_eq!(result["exitCode"], json!(0), "{script}: {result}");
}

/// What a root agent can do to every later sync-out: put its own `tar` first on the login
/// shell's PATH, one that writes `forged` wherever `-cf` says (other uses run the real one).
fn forge_tar(h: &Harness, lease: &serde_json::Value, forged: &[u8]) {
    let root = sandbox_root(h, lease).join("root");
    std::fs::create_dir_all(root.join("bin")).unwrap();
    std::fs::write(root.join(".bash_profile"), "export PATH=/root/bin:$PATH\n").unwrap();
    let fake = root.join("bin/tar");
    std::fs::write(
        &fake,
        "#!/bin/bash\nwhile [ $# -gt 0 ]; do if [ \"$1\" = -cf ]; then exec cp --sparse=always /root/forged.tar \"$2\"; fi; shift; done\nexit 2\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(root.join("forged.tar"), forged).unwrap();
}

fn ustar(kind: tar::EntryType, path: &str, size: u64, link: Option<&str>) -> tar::Header {
    let mut h = tar::Header::new_ustar();
    h.set_entry_type(kind);
    h.set_path(path).unwrap();
    if let Some(link) = link {
        h.set_link_name(link).unwrap();
    }
    h.set_size(size);
    h.set_mode(0o644);
    h.set_cksum();
    h
}

fn sync_out_dir(
    h: &Harness,
    lease: &serde_json::Value,
    source: &str,
    target: &Path,
    extra: serde_json::Value,
) -> serde_json::Value {
    let mut file = json!({ "kind": "directory", "sourcePath": source,
        "targetPath": target.to_string_lossy() });
    merge(&mut file, extra);
    h.params(json!({
        "lease": { "providerLeaseId": lease["providerLeaseId"], "metadata": lease["metadata"], "expiresAt": null },
        "operations": [{ "files": [file] }],
    }))
}

/// Unbounded host disk: a directory over the limit was downloaded whole before its check
/// refused it. The check now runs on the stream: a member header declaring more than the
/// 10 GiB extraction limit is refused when it arrives (before, the whole archive was fetched
/// and then failed as unreadable), and the destination is not created.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_over_limit_directory_is_refused_while_streaming() {
    let h = Harness::start().await;
    let lease = h.acquire(&h.run_params(json!({}))).await;
    sh(&h, &lease, "mkdir -p /paperclip-workspace/big").await;
    // A header declaring 10 GiB + 1 byte, then only 64 KiB of it: the stream ends long before
    // the member would, so only a check on the header itself can give the limit's refusal.
    let mut forged = ustar(
        tar::EntryType::Regular,
        "./huge",
        sandbox_core::archive::EXTRACTION_LIMIT + 1,
        None,
    )
    .as_bytes()
    .to_vec();
    forged.extend(vec![0u8; 64 * 1024]);
    forge_tar(&h, &lease, &forged);
    let host = tempfile_dir();
    let before = snapshot(&host, None);
    let target = host.join("out");
    let params = sync_out_dir(&h, &lease, "/paperclip-workspace/big", &target, json!({}));
    assert_eq!(
        message(h.provider.sync_out(&params, &*h.sink).await),
        messages::ARCHIVE_UNSAFE
    );
    assert_eq!(
        snapshot(&host, None),
        before,
        "the destination is left as it was"
    );
    std::fs::remove_dir_all(&host).unwrap();
    h.destroy(&lease).await;
    h.finish().await;
}

/// A forged archive whose PAX header declares 2 MiB: refused at its header block, before the
/// `tar` crate would read it into memory; nothing lands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_extended_header_is_refused() {
    let h = Harness::start().await;
    let lease = h.acquire(&h.run_params(json!({}))).await;
    sh(&h, &lease, "mkdir -p /paperclip-workspace/pax").await;
    let size = 2 * 1024 * 1024;
    let mut forged = ustar(tar::EntryType::XHeader, "PaxHeader/f", size, None)
        .as_bytes()
        .to_vec();
    forged.extend(vec![b'a'; size as usize]);
    forged.extend(vec![0u8; 1024]);
    forge_tar(&h, &lease, &forged);
    let host = tempfile_dir();
    let before = snapshot(&host, None);
    let params = sync_out_dir(
        &h,
        &lease,
        "/paperclip-workspace/pax",
        &host.join("out"),
        json!({}),
    );
    assert_eq!(
        message(h.provider.sync_out(&params, &*h.sink).await),
        messages::archive_extended_header_too_large(size)
    );
    assert_eq!(snapshot(&host, None), before);
    std::fs::remove_dir_all(&host).unwrap();
    h.destroy(&lease).await;
    h.finish().await;
}

/// Escape through a hard link: a hard link whose name passes through a link the archive itself
/// creates (`d -> .`, then `h` linked to `d/secret`) would become a hard link to a host file.
/// Forged by a replaced `tar`; refused with the contract's message, nothing lands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hard_link_through_an_in_archive_link_is_refused() {
    let h = Harness::start().await;
    let lease = h.acquire(&h.run_params(json!({}))).await;
    sh(&h, &lease, "mkdir -p /paperclip-workspace/hard").await;
    let mut b = tar::Builder::new(Vec::new());
    b.append(&ustar(tar::EntryType::Directory, "./", 0, None), &b""[..])
        .unwrap();
    b.append(
        &ustar(tar::EntryType::Symlink, "./d", 0, Some(".")),
        &b""[..],
    )
    .unwrap();
    b.append(
        &ustar(tar::EntryType::Link, "./h", 0, Some("d/../victim/keep")),
        &b""[..],
    )
    .unwrap();
    forge_tar(&h, &lease, &b.into_inner().unwrap());
    let host = tempfile_dir();
    std::fs::create_dir(host.join("victim")).unwrap();
    std::fs::write(host.join("victim/keep"), b"host").unwrap();
    let before = snapshot(&host, None);
    let params = sync_out_dir(
        &h,
        &lease,
        "/paperclip-workspace/hard",
        &host.join("out"),
        json!({}),
    );
    assert_eq!(
        message(h.provider.sync_out(&params, &*h.sink).await),
        messages::ARCHIVE_UNSAFE
    );
    assert_eq!(snapshot(&host, None), before);
    std::fs::remove_dir_all(&host).unwrap();
    h.destroy(&lease).await;
    h.finish().await;
}

/// A link an earlier sync-out left in the target is never written through: the entry beneath
/// it is refused with the dedicated message, and the link's target is untouched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_entry_through_a_link_in_the_target_is_refused() {
    let h = Harness::start().await;
    let lease = h.acquire(&h.run_params(json!({}))).await;
    sh(
        &h,
        &lease,
        "mkdir -p /paperclip-workspace/later/l && echo pwned > /paperclip-workspace/later/l/pwned",
    )
    .await;
    let host = tempfile_dir();
    std::fs::create_dir(host.join("victim")).unwrap();
    let target = host.join("out");
    std::fs::create_dir(&target).unwrap();
    std::os::unix::fs::symlink(host.join("victim"), target.join("l")).unwrap();
    let params = sync_out_dir(&h, &lease, "/paperclip-workspace/later", &target, json!({}));
    assert_eq!(
        message(h.provider.sync_out(&params, &*h.sink).await),
        messages::archive_through_symlink(&target.join("l"))
    );
    assert!(!host.join("victim/pwned").exists());
    std::fs::remove_dir_all(&host).unwrap();
    h.destroy(&lease).await;
    h.finish().await;
}

/// `followSymlinks` on a sync-out: `tar -h` copies `a -> .` again and again (GNU tar crashes
/// hundreds of megabytes later); a walk in the sandbox now refuses a loop, or two links to one
/// directory, before anything is archived, and excluding the links lets the tree through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn following_a_link_loop_on_sync_out_fails_fast() {
    let h = Harness::start().await;
    let lease = h.acquire(&h.run_params(json!({}))).await;
    sh(
        &h,
        &lease,
        "mkdir -p /paperclip-workspace/loop /paperclip-workspace/twice/sub /paperclip-workspace/o \
         && cd /paperclip-workspace/loop && echo x > file && ln -s . a && ln -s . b \
         && cd /paperclip-workspace/twice && ln -s ../o x && ln -s ../o y && echo y > /paperclip-workspace/o/f",
    )
    .await;
    let host = tempfile_dir();
    let before = snapshot(&host, None);
    for source in ["/paperclip-workspace/loop", "/paperclip-workspace/twice"] {
        let params = sync_out_dir(
            &h,
            &lease,
            source,
            &host.join("out"),
            json!({ "followSymlinks": true }),
        );
        assert_eq!(
            message(h.provider.sync_out(&params, &*h.sink).await),
            messages::sync_out_repeated_directory(source)
        );
        assert_eq!(snapshot(&host, None), before, "{source}");
    }
    // Excluded, the links are not walked (nor archived): the tree syncs.
    let params = sync_out_dir(
        &h,
        &lease,
        "/paperclip-workspace/loop",
        &host.join("out"),
        json!({ "followSymlinks": true, "exclude": ["a", "b"] }),
    );
    let result = h.provider.sync_out(&params, &*h.sink).await.unwrap();
    assert_eq!(result["operations"][0]["filesTransferred"], json!(1));
    assert_eq!(std::fs::read(host.join("out/file")).unwrap(), b"x\n");
    // One link to a directory is followed.
    let params = sync_out_dir(
        &h,
        &lease,
        "/paperclip-workspace/twice",
        &host.join("one"),
        json!({ "followSymlinks": true, "exclude": ["y"] }),
    );
    h.provider.sync_out(&params, &*h.sink).await.unwrap();
    assert_eq!(std::fs::read(host.join("one/x/f")).unwrap(), b"y\n");
    std::fs::remove_dir_all(&host).unwrap();
    h.destroy(&lease).await;
    h.finish().await;
}

/// Unbounded host disk: a 10 GB sparse file (no disk in the sandbox) in a file sync-out wrote
/// 9.4 GB to the host. A file sync-out is now bounded at 8 GiB (the Kubernetes provider's
/// outbound guard); the stream is cut as it passes it, its zeros were holes on the host all
/// along, and the target is untouched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sparse_file_over_the_bound_is_refused_without_filling_the_host() {
    let h = Harness::start().await;
    let lease = h.acquire(&h.run_params(json!({}))).await;
    sh(
        &h,
        &lease,
        "truncate -s 10GB /paperclip-workspace/sparse && printf tail >> /paperclip-workspace/sparse",
    )
    .await;
    let host = tempfile_dir();
    std::fs::write(host.join("target"), b"before").unwrap();
    let before = snapshot(&host, None);
    // 8 GiB go through the emulator before the cut: the config's default deadline (300 s), not
    // the harness's 60 s, on a busy machine.
    let params = h.params_with(json!({ "timeoutMs": 300_000 }), json!({
        "lease": { "providerLeaseId": lease["providerLeaseId"], "metadata": lease["metadata"], "expiresAt": null },
        "operations": [{ "files": [{ "kind": "file", "sourcePath": "/paperclip-workspace/sparse",
            "targetPath": host.join("target").to_string_lossy() }] }],
    }));
    assert_eq!(
        message(h.provider.sync_out(&params, &*h.sink).await),
        messages::sync_out_file_too_large("/paperclip-workspace/sparse")
    );
    assert_eq!(snapshot(&host, None), before);
    std::fs::remove_dir_all(&host).unwrap();
    h.destroy(&lease).await;
    h.finish().await;
}

/// A download whose `Content-Length` declares more than its bound is refused on the headers,
/// before a byte is read or the host file is created: a file over 8 GiB, an archive over the
/// 10 GiB extraction limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declared_length_over_the_bound_is_refused_before_anything_is_written() {
    let h = Harness::start().await;
    let lease = h.acquire(&h.run_params(json!({}))).await;
    sh(
        &h,
        &lease,
        "mkdir -p /paperclip-workspace/d && echo x > /paperclip-workspace/d/f",
    )
    .await;
    let host = tempfile_dir();
    std::fs::write(host.join("keep"), b"before").unwrap();
    let before = snapshot(&host, None);
    let declare = |bytes: u64| {
        h.fault(json!({"method": "GET", "path": "/v1/sandboxes/*/files",
            "action": {"kind": "declareLength", "bytes": bytes}}))
    };

    declare(createos::sync::SYNC_OUT_FILE_LIMIT + 1);
    let file = h.params(json!({
        "lease": { "providerLeaseId": lease["providerLeaseId"], "metadata": lease["metadata"], "expiresAt": null },
        "operations": [{ "files": [{ "kind": "file", "sourcePath": "/paperclip-workspace/d/f",
            "targetPath": host.join("file").to_string_lossy() }] }],
    }));
    assert_eq!(
        message(h.provider.sync_out(&file, &*h.sink).await),
        messages::sync_out_file_too_large("/paperclip-workspace/d/f")
    );
    assert_eq!(snapshot(&host, None), before);

    declare(sandbox_core::archive::EXTRACTION_LIMIT + 1);
    let dir = sync_out_dir(
        &h,
        &lease,
        "/paperclip-workspace/d",
        &host.join("dir"),
        json!({}),
    );
    assert_eq!(
        message(h.provider.sync_out(&dir, &*h.sink).await),
        messages::ARCHIVE_UNSAFE
    );
    assert_eq!(snapshot(&host, None), before);

    // Within the bounds, the same downloads arrive.
    h.emu.clear_faults();
    h.provider.sync_out(&file, &*h.sink).await.unwrap();
    h.provider.sync_out(&dir, &*h.sink).await.unwrap();
    assert_eq!(std::fs::read(host.join("file")).unwrap(), b"x\n");
    assert_eq!(std::fs::read(host.join("dir/f")).unwrap(), b"x\n");
    std::fs::remove_dir_all(&host).unwrap();
    h.destroy(&lease).await;
    h.finish().await;
}

/// A sparse file within the bound arrives whole, and its holes stay holes on the host (as a
/// file and inside a directory archive).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sparse_file_within_the_bound_keeps_its_holes() {
    use std::os::unix::fs::MetadataExt;
    let h = Harness::start().await;
    let lease = h.acquire(&h.run_params(json!({}))).await;
    let size: u64 = 256 * 1024 * 1024;
    sh(
        &h,
        &lease,
        &format!(
            "mkdir -p /paperclip-workspace/sp && printf head > /paperclip-workspace/sp/f \
             && truncate -s {size} /paperclip-workspace/sp/f && printf tail >> /paperclip-workspace/sp/f"
        ),
    )
    .await;
    let host = tempfile_dir();
    let params = h.params(json!({
        "lease": { "providerLeaseId": lease["providerLeaseId"], "metadata": lease["metadata"], "expiresAt": null },
        "operations": [{ "files": [
            { "kind": "file", "sourcePath": "/paperclip-workspace/sp/f", "targetPath": host.join("file").to_string_lossy() },
            { "kind": "directory", "sourcePath": "/paperclip-workspace/sp", "targetPath": host.join("dir").to_string_lossy() },
        ] }],
    }));
    h.provider.sync_out(&params, &*h.sink).await.unwrap();
    for path in [host.join("file"), host.join("dir/f")] {
        let meta = std::fs::metadata(&path).unwrap();
        assert_eq!(meta.len(), size + 4, "{path:?}");
        assert!(
            meta.blocks() * 512 < 1024 * 1024,
            "{path:?}: {} blocks allocated",
            meta.blocks()
        );
        let mut f = std::fs::File::open(&path).unwrap();
        let mut head = [0u8; 4];
        std::io::Read::read_exact(&mut f, &mut head).unwrap();
        assert_eq!(&head, b"head");
        std::io::Seek::seek(&mut f, std::io::SeekFrom::Start(size)).unwrap();
        std::io::Read::read_exact(&mut f, &mut head).unwrap();
        assert_eq!(&head, b"tail");
    }
    std::fs::remove_dir_all(&host).unwrap();
    h.destroy(&lease).await;
    h.finish().await;
}
