//! Native sync in and out on the real node (sandbox-cr): a directory tree and a single file both
//! ways, checked in the pod with an execute and back on the host byte for byte with their modes;
//! `exclude` both ways; `followSymlinks` (links inside the workspace followed, a link loop
//! refused at once); a 50 MiB tree; and the hostile trees a root agent can build in a real pod
//! (links escaping the destination, a link planted in the destination, hard links and FIFOs),
//! each refused with the emulator's message and nothing outside the destination changed. The
//! emulator's versions: `tests/emulator_sync.rs`, `tests/hostile_sync.rs`.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use sandbox_core::NullSink;
use sandbox_core::hostile::{ESCAPING_TREES, assert_links_stay_inside, snapshot};
use serde_json::{Value, json};

use crate::harness::{COMPANY, RealLease};

const LINK_ESCAPES: &str =
    "Kubernetes syncOut refusing tarball link whose target escapes the extraction dir: ";

/// `podActivityDeadlineSec`, the bound of each sync exec, at 5 min instead of the default: a
/// sync that hangs fails the test instead of holding the node.
fn guard() -> Value {
    json!({"podActivityDeadlineSec": 300})
}

fn sync_params(lease: &RealLease, operations: Value) -> Value {
    json!({"config": lease.config, "companyId": COMPANY, "lease": lease.lease,
        "operations": operations})
}

async fn sync_in(lease: &RealLease, operations: Value) -> Value {
    lease
        .provider
        .sync_in(&sync_params(lease, operations), &NullSink)
        .await
        .unwrap_or_else(|e| panic!("syncIn refused: {}", e.message))
}

async fn sync_out(lease: &RealLease, operations: Value) -> Value {
    lease
        .provider
        .sync_out(&sync_params(lease, operations), &NullSink)
        .await
        .unwrap_or_else(|e| panic!("syncOut refused: {}", e.message))
}

async fn sync_out_err(lease: &RealLease, operations: Value) -> String {
    match lease
        .provider
        .sync_out(&sync_params(lease, operations), &NullSink)
        .await
    {
        Ok(v) => panic!("syncOut unexpectedly answered {v}"),
        Err(e) => e.message,
    }
}

fn write(path: &Path, body: &[u8], mode: u32) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, body).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .unwrap()
        .permissions()
        .mode()
        & 0o7777
}

/// The regular files under `root` (relative path → bytes and mode), skipping every entry whose
/// name is in `skip` and `._*` names, at any depth.
fn files(root: &Path, skip: &[&str]) -> BTreeMap<PathBuf, (Vec<u8>, u32)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if skip.contains(&name.as_str()) || name.starts_with("._") {
                continue;
            }
            let path = entry.path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                stack.push(path);
            } else if meta.is_file() {
                let rel = path.strip_prefix(root).unwrap().to_path_buf();
                out.insert(rel, (std::fs::read(&path).unwrap(), mode(&path)));
            }
        }
    }
    out
}

/// `sha256sum` lines (`<hash>  ./<path>`, sorted by path) of the regular files under `dir` on the
/// host, skipping the directories named in `prune`, as the pod's script below prints them.
fn host_hashes(dir: &Path, prune: &[&str]) -> String {
    let prune: String = prune
        .iter()
        .map(|p| format!(" -name '{p}' -prune -o"))
        .collect();
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "find .{prune} ! -name '._*' -type f -exec sha256sum {{}} + | LC_ALL=C sort -k2"
        ))
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

fn pod_hashes(dir: &str) -> String {
    format!("cd '{dir}' && find . -type f -exec sha256sum {{}} + | LC_ALL=C sort -k2")
}

/// A directory tree (nested directories, a name with spaces and a quote, an empty file, an
/// executable, an excluded directory, a `._` file) and a single file with a mode, synced in,
/// checked in the pod, then synced out into a fresh directory (`exclude` there too) and
/// compared byte for byte with their modes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sync_round_trips_a_tree_and_a_file_with_modes_and_exclusions() {
    let lease = RealLease::acquire("sync-rt", "sandbox-cr", guard()).await;
    // G-remoteCwd: acquire already put the workspace on the lease.
    assert_eq!(
        lease.lease["metadata"]["remoteCwd"], "/workspace",
        "{}",
        lease.lease
    );
    let host = tempfile::tempdir().unwrap();
    let src = host.path().join("src");
    write(&src.join("top.txt"), b"top\n", 0o644);
    write(
        &src.join("nested/deeper/deep.bin"),
        &(0..=255u8).collect::<Vec<_>>(),
        0o640,
    );
    write(&src.join("it's a file.txt"), b"spaces and a quote\n", 0o644);
    write(&src.join("empty"), b"", 0o644);
    write(&src.join("run.sh"), b"#!/bin/sh\necho ran\n", 0o755);
    write(&src.join(".hidden"), b"dot\n", 0o644);
    write(&src.join("node_modules/x.js"), b"excluded\n", 0o644);
    write(&src.join("._junk"), b"apple double\n", 0o644);
    let single = host.path().join("single.txt");
    write(&single, b"one file\n", 0o644);

    let result = sync_in(
        &lease,
        json!([{"operationId": "in", "files": [
            {"kind": "file", "sourcePath": single, "targetPath": "/workspace/one/single.txt",
                "mode": 0o600},
            {"kind": "directory", "sourcePath": src, "targetPath": "/workspace/tree",
                "exclude": ["node_modules"]},
        ]}]),
    )
    .await;
    let op = &result["operations"][0];
    // The file, then top.txt, deep.bin, the quoted name, empty, run.sh, .hidden and ._junk
    // (the count is by name, so `._junk` counts though it never leaves the host).
    assert_eq!(op["filesTransferred"], 8, "{result}");
    let bytes = op["bytesTransferred"].as_u64().unwrap() - 9;
    assert!(bytes >= 1024 && bytes.is_multiple_of(512), "{result}");

    // In the pod: the same bytes, the modes, no excluded or `._` entry, no scratch left.
    assert_eq!(
        lease.sh(&pod_hashes("/workspace/tree")).await,
        host_hashes(&src, &["node_modules"])
    );
    assert_eq!(
        lease
            .sh("cd /workspace && stat -c '%a %s %n' one/single.txt tree/run.sh tree/empty \"tree/it's a file.txt\" && tree/run.sh && cat one/single.txt && ls -A . tree")
            .await,
        "600 9 one/single.txt\n755 19 tree/run.sh\n644 0 tree/empty\n644 19 tree/it's a file.txt\nran\none file\n\
         .:\none\ntree\n\ntree:\n.hidden\nempty\nit's a file.txt\nnested\nrun.sh\ntop.txt\n"
    );

    // Back out into a fresh directory: the file (no mode: it keeps the pod's 600) and the tree
    // excluding `nested`; a `._` file made in the pod stays there.
    lease.sh("echo pod > /workspace/tree/._pod").await;
    let back = tempfile::tempdir().unwrap();
    let b = back.path();
    let result = sync_out(
        &lease,
        json!([{"operationId": "out", "files": [
            {"kind": "file", "sourcePath": "/workspace/one/single.txt",
                "targetPath": b.join("x/single.txt")},
            {"kind": "directory", "sourcePath": "/workspace/tree", "targetPath": b.join("tree"),
                "exclude": ["nested"]},
        ]}]),
    )
    .await;
    let op = &result["operations"][0];
    // 1 + top.txt, the quoted name, empty, run.sh, .hidden.
    assert_eq!(op["filesTransferred"], 6, "{result}");
    assert_eq!(
        std::fs::read(b.join("x/single.txt")).unwrap(),
        b"one file\n"
    );
    assert_eq!(mode(&b.join("x/single.txt")), 0o600);
    assert_eq!(
        files(&b.join("tree"), &[]),
        files(&src, &["node_modules", "nested"]),
        "byte-identical with their modes"
    );
    assert!(!b.join("tree/nested").exists());
    assert!(!b.join("tree/._pod").exists());
    assert!(!b.join("tree/node_modules").exists());

    // The whole tree back, `nested` too, into another fresh directory.
    let again = tempfile::tempdir().unwrap();
    sync_out(
        &lease,
        json!([{"operationId": "all", "files": [
            {"kind": "directory", "sourcePath": "/workspace/tree", "targetPath": again.path()}]}]),
    )
    .await;
    assert_eq!(
        files(again.path(), &[]),
        files(&src, &["node_modules"]),
        "byte-identical with their modes"
    );
    assert_eq!(mode(&again.path().join("nested/deeper")), 0o755);

    lease.destroy_and_check_gone().await;
}

/// `followSymlinks` on sync-out: links to a file and to a directory inside the workspace (the
/// directory outside the synced tree) come out as what they point at; a link to a directory of
/// the same tree (reached twice) and a link loop (`a -> .`) are refused at once with the pod
/// path named, nothing landing on the host; without the flag the links stay links. On sync-in,
/// a loop on the host is refused before anything reaches the pod.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sync_follows_symlinks_and_refuses_a_loop() {
    let lease = RealLease::acquire("sync-links", "sandbox-cr", guard()).await;
    lease
        .sh(
            "mkdir -p /workspace/follow /workspace/elsewhere/sub /workspace/twice/real \
             /workspace/loop/sub && cd /workspace/follow && echo target > file.txt \
             && echo inner > ../elsewhere/sub/f && ln -s file.txt lfile \
             && ln -s ../elsewhere ldir && ln -s ../elsewhere/sub/f lup \
             && echo y > ../twice/real/f && ln -s real ../twice/ldir \
             && echo x > ../loop/sub/f && ln -s . ../loop/a",
        )
        .await;
    let host = tempfile::tempdir().unwrap();
    let h = host.path();
    let op = |source: &str, target: &Path, follow: bool| {
        json!([{"operationId": "links", "files": [{"kind": "directory", "sourcePath": source,
            "targetPath": target, "followSymlinks": follow}]}])
    };

    let result = sync_out(&lease, op("/workspace/follow", &h.join("followed"), true)).await;
    // file.txt, lfile, ldir/sub/f, lup.
    assert_eq!(result["operations"][0]["filesTransferred"], 4, "{result}");
    let followed = h.join("followed");
    for (path, body) in [
        ("lfile", "target\n"),
        ("ldir/sub/f", "inner\n"),
        ("lup", "inner\n"),
    ] {
        assert!(!followed.join(path).is_symlink(), "{path}");
        assert_eq!(std::fs::read_to_string(followed.join(path)).unwrap(), body);
    }
    assert!(!followed.join("ldir").is_symlink() && followed.join("ldir").is_dir());

    // Without the flag the links stay links: one out of the synced tree is refused (it escapes
    // the destination), one inside it is kept.
    assert_eq!(
        sync_out_err(&lease, op("/workspace/follow", &h.join("kept"), false)).await,
        format!("{LINK_ESCAPES}ldir -> ../elsewhere")
    );
    sync_out(&lease, op("/workspace/twice", &h.join("kept"), false)).await;
    assert_eq!(
        std::fs::read_link(h.join("kept/ldir")).unwrap(),
        Path::new("real")
    );
    assert_eq!(std::fs::read(h.join("kept/ldir/f")).unwrap(), b"y\n");

    // A link to a directory of the same tree reaches it twice: refused as on the emulator
    // (GNU find names whichever it meets first).
    let message = |path: &str| {
        format!(
            "Kubernetes sync source repeats a directory through symbolic links at {path}; followSymlinks needs a tree without link loops or two links to one directory."
        )
    };
    let twice = sync_out_err(&lease, op("/workspace/twice", &h.join("twice"), true)).await;
    assert!(
        twice == message("/workspace/twice/real") || twice == message("/workspace/twice/ldir"),
        "{twice}"
    );
    assert!(!h.join("twice").exists());

    // A loop: refused at once, nothing on the host.
    let started = Instant::now();
    assert_eq!(
        sync_out_err(&lease, op("/workspace/loop", &h.join("loop"), true)).await,
        message("/workspace/loop/a")
    );
    assert!(started.elapsed().as_secs() < 30, "{:?}", started.elapsed());
    assert!(!h.join("loop").exists());

    // The host side of the same loop on sync-in: nothing created in the pod.
    let src = h.join("hostloop");
    write(&src.join("f"), b"x", 0o644);
    std::os::unix::fs::symlink(".", src.join("a")).unwrap();
    let e = lease
        .provider
        .sync_in(
            &sync_params(
                &lease,
                json!([{"operationId": "l", "files": [{"kind": "directory", "sourcePath": src,
                    "targetPath": "/workspace/hostloop", "followSymlinks": true}]}]),
            ),
            &NullSink,
        )
        .await
        .unwrap_err();
    assert_eq!(
        e.message,
        format!(
            "Kubernetes sync source repeats a directory through symbolic links at {}; followSymlinks needs a tree without link loops or two links to one directory.",
            src.join("a").display()
        )
    );
    assert_eq!(
        lease.sh("test -e /workspace/hostloop; echo $?").await,
        "1\n"
    );

    lease.destroy_and_check_gone().await;
}

/// 50 files of 1 MiB of pseudo-random bytes in, hashed in the pod, and back out byte for byte.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sync_round_trips_a_50_mib_tree() {
    let lease = RealLease::acquire("sync-big", "sandbox-cr", guard()).await;
    let host = tempfile::tempdir().unwrap();
    let src = host.path().join("big");
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    for i in 0..50 {
        let mut body = Vec::with_capacity(1 << 20);
        while body.len() < 1 << 20 {
            // xorshift64
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            body.extend_from_slice(&state.to_le_bytes());
        }
        write(&src.join(format!("d{}/f{i:02}", i % 5)), &body, 0o644);
    }
    let started = Instant::now();
    let result = sync_in(
        &lease,
        json!([{"operationId": "big", "files": [
            {"kind": "directory", "sourcePath": src, "targetPath": "/workspace/big"}]}]),
    )
    .await;
    let sync_in_took = started.elapsed();
    assert_eq!(result["operations"][0]["filesTransferred"], 50, "{result}");
    assert!(
        result["operations"][0]["bytesTransferred"]
            .as_u64()
            .unwrap()
            > 50 << 20,
        "{result}"
    );
    assert_eq!(
        lease.sh(&pod_hashes("/workspace/big")).await,
        host_hashes(&src, &[])
    );
    let back = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let result = sync_out(
        &lease,
        json!([{"operationId": "big", "files": [
            {"kind": "directory", "sourcePath": "/workspace/big", "targetPath": back.path()}]}]),
    )
    .await;
    eprintln!(
        "50 MiB: sync-in {sync_in_took:?}, sync-out {:?}",
        started.elapsed()
    );
    assert_eq!(result["operations"][0]["filesTransferred"], 50, "{result}");
    assert!(
        files(back.path(), &[]) == files(&src, &[]),
        "byte-identical"
    );

    // A target the pod refuses before reading the archive (a link out of the workspace): a
    // small archive and this 50 MiB tree are both refused at once. (The 50 MiB one never
    // answered until podActivityDeadlineSec before the in-pod script read the rest of its
    // stdin after refusing: the node's stdin copy blocked, issue 33, docs/wire-parity.md.)
    lease.sh("ln -s /tmp /workspace/out").await;
    let small = host.path().join("small");
    write(&small.join("f"), &[7u8; 1024], 0o644);
    for (source, name, bound) in [(&small, "small", 60), (&src, "big", 30)] {
        let started = Instant::now();
        let refused = tokio::time::timeout(
            Duration::from_secs(bound),
            lease.provider.sync_in(
                &sync_params(
                    &lease,
                    json!([{"operationId": "esc", "files": [
                    {"kind": "directory", "sourcePath": source,
                     "targetPath": format!("/workspace/out/{name}")}]}]),
                ),
                &NullSink,
            ),
        )
        .await
        .unwrap_or_else(|_| panic!("a refused sync-in of {name} answers within {bound} s"))
        .unwrap_err();
        assert_eq!(
            refused.message, "Kubernetes syncIn directory transfer failed (exit 42): ESCAPE",
            "{name}"
        );
        eprintln!("{name} refused in {:?}", started.elapsed());
        assert_eq!(
            lease.sh(&format!("test -e /tmp/{name}; echo $?")).await,
            "1\n",
            "{name}"
        );
    }

    lease.destroy_and_check_gone().await;
}

/// What a root agent can build in a real pod against the host: links escaping the destination
/// (absolute, `../../..`, a link named `x -> y`, chains confined only as text), a tree to write
/// through a link left in the destination, hard links and a FIFO, and a FIFO as a file source.
/// Each refused with the emulator's message; nothing outside the destination changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sync_out_of_hostile_pod_trees_cannot_touch_the_host() {
    let lease = RealLease::acquire("sync-hostile", "sandbox-cr", guard()).await;
    let host = tempfile::tempdir().unwrap();
    let victim = host.path().join("victim");
    std::fs::create_dir(&victim).unwrap();
    std::fs::write(victim.join("keep"), b"host data").unwrap();
    let out = host.path().join("out");
    let op = |source: &str, kind: &str, target: &Path| {
        json!([{"operationId": "o", "files": [
            {"kind": kind, "sourcePath": source, "targetPath": target}]}])
    };

    // 1. Links escaping the destination.
    for tree in ESCAPING_TREES {
        lease.sh(&tree.script("/workspace")).await;
        let source = format!("/workspace/{}", tree.dir);
        let before = snapshot(host.path(), Some(&out));
        let message = sync_out_err(&lease, op(&source, "directory", &out)).await;
        match tree.refused {
            Some(refused) => assert_eq!(message, format!("{LINK_ESCAPES}{refused}"), "{source}"),
            None => assert!(message.starts_with(LINK_ESCAPES), "{source}: {message}"),
        }
        assert_eq!(snapshot(host.path(), Some(&out)), before, "{source}");
        assert!(!out.exists() || std::fs::read_dir(&out).unwrap().next().is_none());
    }

    // 2. A link left in the destination is never written through.
    std::fs::create_dir_all(&out).unwrap();
    std::os::unix::fs::symlink(&victim, out.join("l")).unwrap();
    lease
        .sh("mkdir -p /workspace/later/l && echo pwned > /workspace/later/l/pwned")
        .await;
    let before = snapshot(host.path(), Some(&out));
    assert_eq!(
        sync_out_err(&lease, op("/workspace/later", "directory", &out)).await,
        format!(
            "Kubernetes syncOut refusing to write a tarball member through the symbolic link {}",
            out.join("l").display()
        )
    );
    assert_eq!(snapshot(host.path(), Some(&out)), before);
    assert!(!victim.join("pwned").exists());
    std::fs::remove_file(out.join("l")).unwrap();

    // 3. A confined tree of links, a hard link and a FIFO: links resolving inside, the hard
    //    link as a file, no FIFO on the host.
    lease
        .sh(
            "mkdir -p /workspace/ok/sub && echo a > /workspace/ok/a && ln /workspace/ok/a /workspace/ok/sub/h \
             && ln -s ../a /workspace/ok/sub/l && ln -s sub/l /workspace/ok/l2 && mkfifo /workspace/ok/fifo",
        )
        .await;
    let ok = host.path().join("ok");
    sync_out(&lease, op("/workspace/ok", "directory", &ok)).await;
    assert_eq!(std::fs::read(ok.join("sub/h")).unwrap(), b"a\n");
    assert_eq!(std::fs::read(ok.join("l2")).unwrap(), b"a\n");
    assert!(std::fs::symlink_metadata(ok.join("fifo")).is_err());
    assert_links_stay_inside(&ok);

    // 4. A FIFO as a file source fails at once.
    lease.sh("mkfifo /workspace/pipe").await;
    let started = Instant::now();
    assert_eq!(
        sync_out_err(
            &lease,
            op("/workspace/pipe", "file", &host.path().join("pipe"))
        )
        .await,
        "Kubernetes syncOut file transfer failed (exit 45): NOTREG"
    );
    assert!(started.elapsed().as_secs() < 30, "{:?}", started.elapsed());
    assert!(!host.path().join("pipe").exists());
    assert_eq!(std::fs::read(victim.join("keep")).unwrap(), b"host data");

    lease.destroy_and_check_gone().await;
}
