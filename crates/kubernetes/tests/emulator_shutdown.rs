//! Worker shutdown with executes in flight: every one is answered, as cancelled, before
//! shutdown returns; the commands they started are ended in their pods; and shutdown returns
//! within the host's 10 s drain. Also a sync in flight: answered, and nothing of it left on the
//! host.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use emulator::kubernetes::{KubeEmulatorOptions, KubernetesEmulator};
use kubernetes::KubernetesProvider;
use kubernetes::lease::calls::{EXECUTE_CANCELLED, SYNC_CANCELLED};
use kubernetes::sync::host_temp;
use sandbox_core::poll::poll;
use sandbox_core::{NullSink, Provider};
use serde_json::{Value, json};

#[allow(dead_code)]
#[path = "support/emulator.rs"]
mod emulator_support;
use emulator_support::{Lease, NS};

/// Executes in flight at shutdown, spread over the leases.
const EXECUTES: usize = 50;
const LEASES: usize = 2;
/// The host waits this long for the worker to exit after `shutdown`.
const HOST_DRAIN: Duration = Duration::from_secs(10);
/// How long the executes may take to start on a loaded machine.
const START: Duration = Duration::from_secs(60);

async fn start() -> KubernetesEmulator {
    KubernetesEmulator::start(KubeEmulatorOptions::for_tests())
        .await
        .expect("emulator starts")
}

fn pod_of(lease: &Lease) -> String {
    lease.lease["metadata"]["podName"]
        .as_str()
        .expect("the lease names its pod")
        .to_string()
}

/// The host path of `/tmp/<name>` in the lease's pod.
fn pod_tmp(emu: &KubernetesEmulator, lease: &Lease, name: &str) -> PathBuf {
    emu.pod_root(NS, &pod_of(lease))
        .expect("the pod runs")
        .join("tmp")
        .join(name)
}

/// The pid files left in the lease's `/tmp`, but the listing's own (which names its group, `-$$`).
async fn pid_files(provider: &KubernetesProvider, lease: &Lease) -> String {
    let listed = lease
        .sh(
            provider,
            "for f in /tmp/paperclip-exec-*; do [ -e \"$f\" ] && [ \"$(cat \"$f\")\" != \"-$$\" ] && echo \"$f\"; done; true",
        )
        .await;
    assert_eq!(listed["exitCode"], 0, "{listed}");
    listed["stdout"].as_str().unwrap().to_string()
}

/// The command line of every process in the lease's container, one a line, read by a worker
/// other than the one shut down.
async fn processes(provider: &KubernetesProvider, lease: &Lease) -> String {
    let listed = lease
        .sh(
            provider,
            "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done",
        )
        .await;
    assert_eq!(listed["exitCode"], 0, "{listed}");
    listed["stdout"].as_str().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_answers_every_execute_as_cancelled_and_ends_their_commands() {
    let emu = start().await;
    let provider = KubernetesProvider::new();
    let mut leases = Vec::new();
    for n in 0..LEASES {
        let lease = Lease::acquire(&emu, &provider, &format!("run-shutdown-{n}")).await;
        // Ready from now on, and its /tmp clean.
        let ready = lease.sh(&provider, "rm -f /tmp/started-*; true").await;
        assert_eq!(ready["exitCode"], 0, "{ready}");
        leases.push(lease);
    }
    let executes = (0..EXECUTES).map(|i| {
        let lease = &leases[i % LEASES];
        // Each records that it runs, then runs on (a child too) until something ends it.
        let script = format!("touch /tmp/started-{i}; sleep 3000{i} & sleep 3100{i}");
        let params = lease.exec_params(&script, 3_600_000);
        let provider = &provider;
        async move {
            let answer = provider.execute(&params, &NullSink).await;
            (answer, Instant::now())
        }
    });
    let running = futures::future::join_all(executes);
    let stop = async {
        poll("every execute to start", START)
            .until(|| {
                (0..EXECUTES)
                    .all(|i| pod_tmp(&emu, &leases[i % LEASES], &format!("started-{i}")).exists())
            })
            .await;
        assert_eq!(provider.calls().in_flight(), EXECUTES);
        let started = Instant::now();
        let stopped = Provider::shutdown(&provider).await;
        (stopped, started, Instant::now())
    };
    let (answers, (stopped, shutdown_began, shutdown_returned)) =
        tokio::time::timeout(START + HOST_DRAIN * 2, async {
            tokio::join!(running, stop)
        })
        .await
        .expect("shutdown returned and every execute was answered");
    stopped.expect("shutdown succeeds");
    let took = shutdown_returned - shutdown_began;
    assert!(took < HOST_DRAIN, "shutdown took {took:?}");
    for (i, (answer, at)) in answers.iter().enumerate() {
        match answer {
            Err(err) => assert_eq!(err.message, EXECUTE_CANCELLED, "execute {i}"),
            Ok(result) => panic!("execute {i} was not cancelled: {result}"),
        }
        assert!(
            *at <= shutdown_returned,
            "execute {i} answered after shutdown returned"
        );
    }
    assert_eq!(provider.calls().in_flight(), 0);
    // After shutdown the worker takes no new execute.
    let late = provider
        .execute(&leases[0].exec_params("true", 30_000), &NullSink)
        .await
        .unwrap_err();
    assert_eq!(late.message, EXECUTE_CANCELLED);

    // Their commands (and what they started) are ended, their pid files gone: seen by the
    // next worker.
    let next = KubernetesProvider::new();
    for lease in &leases {
        let left = processes(&next, lease).await;
        assert!(!left.contains("sleep 30"), "left running: {left}");
        assert!(!left.contains("sleep 31"), "left running: {left}");
        assert_eq!(pid_files(&next, lease).await, "");
    }
    for lease in &leases {
        lease.destroy(&next).await;
    }
    emu.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_answers_a_sync_in_flight_and_leaves_no_temp_dir() {
    let emu = start().await;
    let provider = KubernetesProvider::new();
    let lease = Lease::acquire(&emu, &provider, "run-shutdown-sync").await;
    // A sparse 4 GiB file: an archive that flows for as long as the test needs.
    let made = lease
        .sh(&provider, "truncate -s 4G /workspace/endless && echo ok")
        .await;
    assert_eq!(made["exitCode"], 0, "{made}");
    let host = tempfile::tempdir().unwrap();
    let before = host_temp::probe::made_dirs().len();
    let params: Value = lease.params(json!([{"operationId": "o", "files": [
        {"kind": "file", "sourcePath": "/workspace/endless", "targetPath": host.path().join("x")}]}]));
    let sync = provider.sync_out(&params, &NullSink);
    let stop = async {
        poll("the archive to flow", START)
            .until(|| {
                host_temp::probe::made_dirs()[before..]
                    .iter()
                    .any(|d| std::fs::metadata(d.join("sync-out.tar")).is_ok_and(|m| m.len() > 0))
            })
            .await;
        Provider::shutdown(&provider).await
    };
    let (answer, stopped) =
        tokio::time::timeout(START + HOST_DRAIN, async { tokio::join!(sync, stop) })
            .await
            .expect("shutdown returned and the sync was answered");
    stopped.expect("shutdown succeeds");
    assert_eq!(answer.unwrap_err().message, SYNC_CANCELLED);
    let made = host_temp::probe::made_dirs();
    let left: Vec<&PathBuf> = made[before..].iter().filter(|d| d.exists()).collect();
    assert!(
        !made[before..].is_empty() && left.is_empty(),
        "left: {left:?}"
    );
    assert!(!host.path().join("x").exists());
    lease.destroy(&KubernetesProvider::new()).await;
    emu.shutdown().await;
}
