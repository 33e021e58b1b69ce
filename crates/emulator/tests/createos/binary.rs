//! The `createos-emulator` binary's stdout/stdin contract, as the vitest helper uses it.

use std::ffi::OsStr;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::process::Command;

use crate::binary_util::{exit_status, start_binary};
use crate::common::Http;

const BIN: &str = env!("CARGO_BIN_EXE_createos-emulator");

#[tokio::test]
async fn binary_prints_its_url_and_exits_cleanly_when_stdin_closes() {
    let work = tempfile::tempdir().unwrap();
    let t = Instant::now();
    let args = ["--api-key", "bin-key", "--transition-ms", "0", "--work-dir"];
    let args = args.iter().map(OsStr::new).chain([work.path().as_os_str()]);
    let (mut child, ready) = start_binary(BIN, args).await;
    assert!(
        t.elapsed() < Duration::from_secs(1),
        "ready in {:?}",
        t.elapsed()
    );
    assert_eq!(ready["apiKey"], "bin-key");
    let url = ready["url"].as_str().unwrap();
    assert_eq!(ready["controlUrl"], format!("{url}/_emulator"));
    let http = Http {
        addr: url.trim_start_matches("http://").to_string(),
        key: "bin-key".into(),
    };
    let id = http.sandbox().await;
    assert_eq!(http.bash(&id, "echo hi").await["stdout"], "hi\n");
    assert_eq!(std::fs::read_dir(work.path()).unwrap().count(), 1);

    drop(child.stdin.take());
    let status = exit_status(&mut child).await;
    assert!(status.success());
    assert_eq!(
        std::fs::read_dir(work.path()).unwrap().count(),
        0,
        "work dir cleaned"
    );
}

#[tokio::test]
async fn binary_exits_cleanly_on_sigterm() {
    let (mut child, ready) = start_binary(BIN, [] as [&str; 0]).await;
    assert!(ready["apiKey"].as_str().unwrap().len() > 8);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id().unwrap() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = exit_status(&mut child).await;
    assert!(status.success());
}

#[tokio::test]
async fn binary_names_the_package_when_bwrap_is_missing() {
    let out = Command::new(BIN)
        .env("EMULATOR_BWRAP", "/nonexistent/bwrap")
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("apt-get install -y bubblewrap"), "{err}");
}
