//! A sync whose exec stream dies in the middle of its archive (the connection cut with a close
//! frame, or dead without one, as when the API server goes away) answers within seconds, with the message that
//! says so, instead of at the pod's activity deadline (an hour by default); and no sync leaves
//! anything on the host: its temp dir goes when it ends, however it ends, and one left by a
//! worker that died in the middle of a sync is removed by the next worker.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use emulator::kubernetes::{FaultRule, KubeEmulatorOptions, KubernetesEmulator};
use kubernetes::KubernetesProvider;
use kubernetes::exec::transport::streaming_closed_message;
use kubernetes::sync::host_temp::{self, TEMP_DIR_PREFIX};
use sandbox_core::poll::poll;
use sandbox_core::{NullSink, ProviderResult};
use serde_json::{Value, json};

#[allow(dead_code)]
#[path = "support/emulator.rs"]
mod emulator_support;
use emulator_support::Lease;

/// How long a cut sync may take to answer: seconds, where it used to wait for the pod's
/// activity deadline (3600 s). Generous for a loaded machine.
const ANSWER: Duration = Duration::from_secs(20);
/// The archive the pod sends or receives: many exec frames.
const ARCHIVE_BYTES: u64 = 24 * 1024 * 1024;

/// The tests share the process-wide record of temp dirs made; one at a time keeps each test's
/// view of it its own.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn start() -> KubernetesEmulator {
    KubernetesEmulator::start(KubeEmulatorOptions::for_tests())
        .await
        .expect("emulator starts")
}

fn cut_exec(action: Value) -> FaultRule {
    serde_json::from_value(json!({"path": "/api/v1/namespaces/*/pods/*/exec", "nth": 1,
        "times": 1, "action": action}))
    .unwrap()
}

/// Runs a sync that must be cut, and returns its rejection and how long it took; fails if it
/// does not answer within [`ANSWER`].
async fn cut(sync: impl Future<Output = ProviderResult<Value>>) -> (String, Duration) {
    let started = Instant::now();
    let outcome = tokio::time::timeout(ANSWER, sync)
        .await
        .unwrap_or_else(|_| panic!("a cut sync got no answer within {ANSWER:?}"));
    match outcome {
        Ok(value) => panic!("a cut sync succeeded: {value}"),
        Err(err) => (err.message, started.elapsed()),
    }
}

/// Every sync temp dir made since `before` (a count of [`host_temp::probe::made_dirs`]) is gone.
fn no_temp_dir_left(before: usize) {
    let made = host_temp::probe::made_dirs();
    assert!(made.len() > before, "the sync made no temp dir");
    let left: Vec<&PathBuf> = made[before..].iter().filter(|d| d.exists()).collect();
    assert!(left.is_empty(), "temp dirs left on the host: {left:?}");
}

fn pod_of(lease: &Lease) -> String {
    lease.lease["metadata"]["podName"]
        .as_str()
        .expect("the lease names its pod")
        .to_string()
}

async fn sync_out_cut_mid_archive(abort: bool) {
    let _one = ONE_AT_A_TIME.lock().await;
    let emu = start().await;
    let provider = KubernetesProvider::new();
    let lease = Lease::acquire(&emu, &provider, "run-cut-out").await;
    let made = lease
        .sh(
            &provider,
            &format!("head -c {ARCHIVE_BYTES} /dev/urandom > /workspace/big && mkdir -p /workspace/tree && cp /workspace/big /workspace/tree/"),
        )
        .await;
    assert_eq!(made["exitCode"], 0, "{made}");
    let host = tempfile::tempdir().unwrap();
    let before = host_temp::probe::made_dirs().len();
    for (kind, source) in [("file", "/workspace/big"), ("directory", "/workspace/tree")] {
        emu.add_fault(cut_exec(
            json!({"kind": "cutExec", "afterFrames": 20, "abort": abort}),
        ));
        let target = host.path().join(kind);
        let params = lease.params(json!([{"operationId": "o", "files": [
            {"kind": kind, "sourcePath": source, "targetPath": target}]}]));
        let (message, took) = cut(provider.sync_out(&params, &NullSink)).await;
        assert_eq!(
            message,
            streaming_closed_message(&pod_of(&lease), "agent", "/bin/sh"),
            "{kind}, after {took:?}"
        );
        assert!(
            emu.faults().iter().all(|f| f.fired == 1),
            "{:?}",
            emu.faults()
        );
        emu.clear_faults();
        // Nothing was extracted from the cut archive.
        assert!(!target.exists(), "{kind}: {target:?} was written");
    }
    no_temp_dir_left(before);
    lease.destroy(&provider).await;
    emu.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sync_out_whose_connection_is_cut_mid_archive_answers_at_once() {
    sync_out_cut_mid_archive(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sync_out_whose_connection_dies_mid_archive_answers_at_once() {
    sync_out_cut_mid_archive(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sync_in_whose_connection_is_cut_mid_archive_answers_at_once() {
    let _one = ONE_AT_A_TIME.lock().await;
    let emu = start().await;
    let provider = KubernetesProvider::new();
    let lease = Lease::acquire(&emu, &provider, "run-cut-in").await;
    let host = tempfile::tempdir().unwrap();
    let big = host.path().join("tree/big");
    std::fs::create_dir_all(big.parent().unwrap()).unwrap();
    std::fs::write(&big, vec![7u8; ARCHIVE_BYTES as usize]).unwrap();
    let before = host_temp::probe::made_dirs().len();
    for abort in [false, true] {
        for (kind, source, target) in [
            ("file", big.clone(), "/workspace/in/big"),
            ("directory", host.path().join("tree"), "/workspace/tree"),
        ] {
            emu.add_fault(cut_exec(json!({"kind": "cutExec", "abort": abort,
                "afterStdinBytes": ARCHIVE_BYTES / 4})));
            let params = lease.params(json!([{"operationId": "o", "files": [
                {"kind": kind, "sourcePath": source, "targetPath": target}]}]));
            let (message, took) = cut(provider.sync_in(&params, &NullSink)).await;
            assert_eq!(
                message,
                streaming_closed_message(&pod_of(&lease), "agent", "/bin/sh"),
                "{kind}, abort {abort}, after {took:?}"
            );
            assert!(
                emu.faults().iter().all(|f| f.fired == 1),
                "{:?}",
                emu.faults()
            );
            emu.clear_faults();
        }
    }
    no_temp_dir_left(before);
    // The lease still syncs once the connection is back.
    let params = lease.params(json!([{"operationId": "o", "files": [
        {"kind": "file", "sourcePath": big, "targetPath": "/workspace/in/big"}]}]));
    let synced = provider.sync_in(&params, &NullSink).await.unwrap();
    assert_eq!(
        synced["operations"][0]["bytesTransferred"], ARCHIVE_BYTES,
        "{synced}"
    );
    lease.destroy(&provider).await;
    emu.shutdown().await;
}

/// A dir as a worker that died in the middle of a sync left it: a sync's name, an archive in
/// it, unchanged for an hour, and no process holding it.
fn abandoned_dir() -> PathBuf {
    let dir = tempfile::Builder::new()
        .prefix(TEMP_DIR_PREFIX)
        .tempdir()
        .unwrap()
        .keep();
    std::fs::write(dir.join("sync-out.tar"), vec![1u8; 1024 * 1024]).unwrap();
    let an_hour_ago = std::time::SystemTime::now() - Duration::from_secs(3600);
    std::fs::File::open(&dir)
        .unwrap()
        .set_modified(an_hour_ago)
        .unwrap();
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_worker_removes_the_sync_dirs_of_a_worker_that_died_and_no_live_ones() {
    let dead = abandoned_dir();
    // A live worker's: held by its lock, as a sync holds its dir.
    let live = abandoned_dir();
    let held = std::fs::File::open(&live).unwrap();
    rustix::fs::flock(&held, rustix::fs::FlockOperation::NonBlockingLockExclusive).unwrap();
    // The worker the host starts next: its `setup` starts no thread (a JS test checks that), its
    // first asynchronous hook starts the sweep.
    let next = KubernetesProvider::new();
    sandbox_core::Provider::setup(&next, &NullSink);
    let first = sandbox_core::Provider::call(
        &next,
        sandbox_core::Hook::DestroyLease,
        &Value::Null,
        std::sync::Arc::new(NullSink),
    );
    drop(first);
    poll("the dead worker's sync dir to go", Duration::from_secs(10))
        .until(|| !dead.exists())
        .await;
    assert!(live.join("sync-out.tar").exists(), "a held dir stays");
    drop(held);
    // Once its holder is gone, a sweep removes it (this one, or the new worker's, still going).
    host_temp::sweep_abandoned(&std::env::temp_dir(), host_temp::MIN_AGE);
    assert!(!Path::new(&live).exists());
}
