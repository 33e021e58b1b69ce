//! The login PTY on the real node (sandbox-cr), as `tests/emulator_login.rs` drives it on the
//! emulator: a tty exec in the Sandbox pod through the kubelet and containerd, input, a resize
//! the terminal sees (`stty size`), the exit code of the session, and stop/close ending the
//! exec in the pod; then destroy, nothing left.
//!
//! The agent image has no `claude`, and its root filesystem is read-only: the lease's Secret puts
//! `/tmp/fakebin` first on PATH (the adapter's `defaultEnv`), and a stand-in `claude` written
//! there by an execute runs each line it reads as a shell command (a non-interactive shell, so
//! that, like a real login CLI, Ctrl-C ends it: an interactive shell ignores SIGINT, and on the
//! real node closing the exec stream does not end the process; see the report in issue 33).

use std::sync::Arc;
use std::time::Duration;

use sandbox_core::{HostSink, NullSink};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::harness::{COMPANY, RealLease};
use crate::login_support::{ChannelSink, Terminal};
use crate::node::node;
use crate::support::until;

const HOME: &str = "/tmp/paperclip-adapter-login/6a1f0c2e-9b3d-4e5f-a6b7-c8d9e0f1a2b3";
/// The stand-in's command line (`/proc/<pid>/cmdline`, NULs as spaces, less the last): told
/// apart from every other process of the pod.
const STAND_IN: &str = "/bin/sh /tmp/fakebin/claude setup-token";

fn open_params(route: &str, lease_id: &Value) -> Value {
    json!({"hostRouteId": route, "driverKey": "kubernetes", "companyId": COMPANY,
        "environmentId": "env-real", "providerLeaseId": lease_id, "loginCommandKey": "claude",
        "sessionHome": HOME})
}

/// How many stand-ins run in the pod (the execute that counts them is not one).
async fn stand_ins(lease: &RealLease) -> usize {
    lease
        .sh(&format!("for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' 2>/dev/null <$f; echo; done | grep -cx '{STAND_IN} ' || true"))
        .await
        .trim()
        .parse()
        .unwrap()
}

async fn until_stand_ins(lease: &RealLease, what: &str, count: usize) {
    until(what, || async {
        (stand_ins(lease).await == count).then_some(())
    })
    .await
}

async fn open(lease: &RealLease, route: &str, sink: &Arc<dyn HostSink>) -> String {
    let opened = lease
        .provider
        .login_pty_open(
            &open_params(route, &lease.lease["providerLeaseId"]),
            sink.clone(),
        )
        .await
        .unwrap_or_else(|e| panic!("login open refused: {}", e.message));
    let session = opened["workerSessionId"].as_str().unwrap().to_string();
    assert!(session.starts_with("pty-"), "{opened}");
    session
}

async fn input(lease: &RealLease, session: &str, data: &str) {
    lease
        .provider
        .login_pty_input(
            &json!({"workerSessionId": session, "data": data}),
            &NullSink,
        )
        .await
        .unwrap_or_else(|e| panic!("login input refused: {}", e.message));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_pty_input_resize_exit_stop_and_close() {
    let image = node().await.agent_image.clone();
    let lease = RealLease::acquire(
        "login",
        "sandbox-cr",
        json!({"adapters": [{"adapterType": "claude_local", "runtimeImage": image,
            "defaultEnv": {"PATH": "/tmp/fakebin:/usr/local/bin:/usr/bin:/bin"}}]}),
    )
    .await;
    let lease_id = lease.lease["providerLeaseId"].as_str().unwrap().to_string();
    assert!(lease.provider.login().is_remembered(&lease_id));
    assert_eq!(
        lease
            .sh("mkdir -p /tmp/fakebin && printf '%s\\n' '#!/bin/sh' 'while IFS= read -r line; do eval \"$line\"; done' > /tmp/fakebin/claude && chmod +x /tmp/fakebin/claude && command -v claude")
            .await,
        "/tmp/fakebin/claude\n"
    );
    assert_eq!(stand_ins(&lease).await, 0);

    let (tx, events) = mpsc::unbounded_channel();
    let sink: Arc<dyn HostSink> = Arc::new(ChannelSink::new(tx));
    let session = open(&lease, "route-1", &sink).await;
    let mut term = Terminal::new(events, Duration::from_secs(60));
    term.expect_session("route-1", &session);
    // Input reaches the shell, and its output comes back through login_output: the echoed line
    // is `echo hello-$((6*7))`, so `hello-42` can only be the shell's answer.
    input(&lease, &session, "echo hello-$((6*7))\n").await;
    term.until("the shell's answer", |s| s.contains("hello-42\r\n"))
        .await;
    assert!(
        term.seen.contains("echo hello-$((6*7))\r\n"),
        "{:?}",
        term.seen
    );
    // The session home was made before the login command ran.
    assert_eq!(
        lease.sh(&format!("test -d {HOME} && echo yes")).await,
        "yes\n"
    );
    assert_eq!(stand_ins(&lease).await, 1);

    // A resize reaches the terminal (channel 4, applied by the runtime asynchronously to stdin,
    // so `stty size` is asked again until it answers the new size; bounded).
    lease.provider.login().resize(&session, 100, 30);
    let mut resized = false;
    for _ in 0..50 {
        let before = term.seen.len();
        input(&lease, &session, "stty size; echo sized\n").await;
        term.until("stty size", |s| s[before..].contains("\r\nsized\r\n"))
            .await;
        if term.seen[before..].contains("\r\n30 100\r\n") {
            resized = true;
            break;
        }
    }
    assert!(resized, "{:?}", term.seen);

    // `exit 3`: the session ends once, with the code the status frame carries.
    input(&lease, &session, "exit 3\n").await;
    assert_eq!(
        term.exit().await,
        ("route-1".into(), session.clone(), Some(3))
    );
    assert_eq!(lease.provider.login().route_count(), 0);
    until_stand_ins(&lease, "the exited stand-in to be gone", 0).await;
    // Input after the exit is ignored; stop and close are harmless.
    input(&lease, &session, "late\n").await;
    assert_eq!(
        lease
            .provider
            .login_pty_stop(&json!({"workerSessionId": session}), &NullSink)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        lease
            .provider
            .login_pty_close(&json!({"hostRouteId": "route-1"}), &NullSink)
            .await
            .unwrap(),
        json!({"hostRouteId": "route-1"})
    );

    // Stop: exit(None) once, Ctrl-C sent, and the stand-in in the pod ends.
    let session = open(&lease, "route-2", &sink).await;
    term.expect_session("route-2", &session);
    term.seen.clear();
    input(&lease, &session, "echo second-$((1+1))\n").await;
    term.until("the second session", |s| s.contains("second-2\r\n"))
        .await;
    assert_eq!(stand_ins(&lease).await, 1);
    assert_eq!(
        lease
            .provider
            .login_pty_stop(&json!({"workerSessionId": session}), &NullSink)
            .await
            .unwrap(),
        None
    );
    assert_eq!(term.exit().await, ("route-2".into(), session, None));
    assert_eq!(lease.provider.login().route_count(), 0);
    until_stand_ins(&lease, "the stopped stand-in to be gone", 0).await;

    // Close of the route: no exit is reported, and the stand-in in the pod ends.
    let session = open(&lease, "route-3", &sink).await;
    term.expect_session("route-3", &session);
    term.seen.clear();
    input(&lease, &session, "echo third-$((1+2))\n").await;
    term.until("the third session", |s| s.contains("third-3\r\n"))
        .await;
    assert_eq!(stand_ins(&lease).await, 1);
    assert_eq!(
        lease
            .provider
            .login_pty_close(
                &json!({"hostRouteId": "route-3", "workerSessionId": session}),
                &NullSink
            )
            .await
            .unwrap(),
        json!({"hostRouteId": "route-3"})
    );
    assert_eq!(lease.provider.login().route_count(), 0);
    until_stand_ins(&lease, "the closed stand-in to be gone", 0).await;

    // Destroy forgets the lease; nothing of it is left; nothing more was reported.
    lease.destroy_and_check_gone().await;
    assert!(!lease.provider.login().is_remembered(&lease_id));
    assert!(
        term.events.try_recv().is_err(),
        "after close: {:?}",
        term.seen
    );
}
