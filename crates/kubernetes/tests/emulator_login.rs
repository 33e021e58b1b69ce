//! Login terminals against the Kubernetes API emulator: a real tty exec in the Sandbox pod
//! (echo, line discipline, resize over channel 4), the single exit, release closing sessions.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use emulator::kubernetes::{KubeEmulatorOptions, KubernetesEmulator};
use kubernetes::KubernetesProvider;
use sandbox_core::poll::poll;
use sandbox_core::{HostSink, NullSink};
use serde_json::{Value, json};
use tokio::sync::mpsc;

// Each target uses part of it.
#[allow(dead_code)]
#[path = "support/login.rs"]
mod login_support;
use login_support::{ChannelSink, Terminal};

const CANARY: &str = "canary-token-3b9d1f7e55";
const NS: &str = "paperclip-acme";
const HOME: &str = "/tmp/paperclip-adapter-login/6a1f0c2e-9b3d-4e5f-a6b7-c8d9e0f1a2b3";

/// The pods have no `claude`: every `/bin/sh` of the emulator first installs a fake one on
/// PATH (an interactive line loop), then runs its script as usual.
const FAKE_CLAUDE_SHELL: &str = r#"if [ ! -x /tmp/fakebin/claude ]; then mkdir -p /tmp/fakebin && printf '%s\n' '#!/bin/sh' 'printf "ready\n"' 'while IFS= read -r line; do case "$line" in size) stty size ;; quit) exit 7 ;; *) printf "got:%s\n" "$line" ;; esac; done' > /tmp/fakebin/claude && chmod +x /tmp/fakebin/claude && cp /tmp/fakebin/claude /tmp/fakebin/grok; fi; PATH=/tmp/fakebin:$PATH; eval "$2""#;

/// Waits (bounded) until no object of `plurals` is left in the tenant namespace.
async fn until_none_left(emu: &KubernetesEmulator, plurals: &[&str]) {
    poll("no leaked objects", Duration::from_secs(10))
        .until(|| plurals.iter().all(|p| emu.counts().count(NS, p) == 0))
        .await;
}

fn open_params(route: &str, lease_id: &str) -> Value {
    json!({"hostRouteId": route, "driverKey": "kubernetes", "companyId": "c-1",
        "environmentId": "e-1", "providerLeaseId": lease_id, "loginCommandKey": "claude",
        "sessionHome": HOME})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interactive_tty_with_resize_then_release_closes_the_session() {
    let mut opts = KubeEmulatorOptions::for_tests();
    opts.token = Some(CANARY.into());
    opts.command_overrides = BTreeMap::from([(
        "/bin/sh".to_string(),
        vec![
            "/bin/bash".into(),
            "-c".into(),
            FAKE_CLAUDE_SHELL.into(),
            "sh".into(),
        ],
    )]);
    let emu = KubernetesEmulator::start(opts).await.unwrap();
    let config = json!({"kubeconfig": emu.kubeconfig_yaml(), "companySlug": "acme",
        "egressMode": "cilium"});
    let provider = KubernetesProvider::new();
    let acquired = provider
        .acquire_lease(
            &json!({"config": config, "companyId": "c-1", "environmentId": "e-1", "runId": "run-l"}),
            &NullSink,
        )
        .await
        .unwrap();
    let lease_id = acquired["providerLeaseId"].as_str().unwrap().to_string();
    assert!(provider.login().is_remembered(&lease_id));

    let (tx, events) = mpsc::unbounded_channel();
    let sink: Arc<dyn HostSink> = Arc::new(ChannelSink::guarding(tx, CANARY));
    let mut term = Terminal::new(events, Duration::from_secs(20));
    let opened = provider
        .login_pty_open(&open_params("route-1", &lease_id), sink.clone())
        .await
        .unwrap();
    let session = opened["workerSessionId"].as_str().unwrap().to_string();
    assert!(session.starts_with("pty-"));
    term.until("ready", |s| s.contains("ready\r\n")).await;

    provider
        .login_pty_input(
            &json!({"workerSessionId": session, "data": "hello\n"}),
            &NullSink,
        )
        .await
        .unwrap();
    // The tty echoes the input and maps NL to CR NL.
    term.until("echo", |s| s.contains("hello\r\ngot:hello\r\n"))
        .await;

    provider.login().resize(&session, 100, 30);
    let mut resized = false;
    for _ in 0..50 {
        let before = term.seen.len();
        provider
            .login_pty_input(
                &json!({"workerSessionId": session, "data": "size\n"}),
                &NullSink,
            )
            .await
            .unwrap();
        let sized = |s: &str| {
            s[before..].split("\r\n").any(|l| {
                l.split(' ').count() == 2
                    && l.split(' ')
                        .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            })
        };
        term.until("stty size", sized).await;
        if term.seen[before..].contains("\r\n30 100\r\n") {
            resized = true;
            break;
        }
    }
    assert!(resized, "{:?}", term.seen);

    // The session home was created before the command ran.
    let check = provider
        .execute(
            &json!({"config": config, "companyId": "c-1", "command": "sh",
                "args": ["-c", format!("test -d {HOME} && echo yes")], "timeoutMs": 30000,
                "lease": {"providerLeaseId": lease_id, "metadata": acquired["metadata"]}}),
            &NullSink,
        )
        .await
        .unwrap();
    assert_eq!(check["stdout"], "yes\n", "{check}");

    // Over-long input is refused; the session goes on.
    let big = provider
        .login_pty_input(
            &json!({"workerSessionId": session, "data": "x".repeat(65537)}),
            &NullSink,
        )
        .await
        .unwrap_err();
    assert_eq!(big.message, "Kubernetes login PTY input exceeds limit");

    provider
        .login_pty_input(
            &json!({"workerSessionId": session, "data": "quit\n"}),
            &NullSink,
        )
        .await
        .unwrap();
    assert_eq!(
        term.exit().await,
        ("route-1".into(), session.clone(), Some(7))
    );
    assert_eq!(provider.login().route_count(), 0);
    // Input after the exit is ignored; stop and close are harmless.
    provider
        .login_pty_input(
            &json!({"workerSessionId": session, "data": "late\n"}),
            &NullSink,
        )
        .await
        .unwrap();
    assert_eq!(
        provider
            .login_pty_stop(&json!({"workerSessionId": session}), &NullSink)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        provider
            .login_pty_close(&json!({"hostRouteId": "route-1"}), &NullSink)
            .await
            .unwrap(),
        json!({"hostRouteId": "route-1"})
    );

    // A closed route: Ctrl-C is queued before the socket closes, and the login process is
    // gone (the fake `grok` is only ever run here; it is visible in the host's /proc).
    let mut grok = open_params("route-c", &lease_id);
    grok["loginCommandKey"] = json!("grok");
    let opened = provider.login_pty_open(&grok, sink.clone()).await.unwrap();
    term.seen.clear();
    term.until("ready", |s| s.contains("ready\r\n")).await;
    let running = || {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter(|e| {
                std::fs::read(e.path().join("cmdline"))
                    .is_ok_and(|c| c.windows(27).any(|w| w == b"/tmp/fakebin/grok\0login\0--d"))
            })
            .count()
    };
    assert_eq!(running(), 1);
    assert_eq!(
        provider
            .login_pty_close(
                &json!({"hostRouteId": "route-c", "workerSessionId": opened["workerSessionId"]}),
                &NullSink
            )
            .await
            .unwrap(),
        json!({"hostRouteId": "route-c"})
    );
    assert_eq!(provider.login().route_count(), 0);
    poll("the login process to be ended", Duration::from_secs(10))
        .until(|| running() == 0)
        .await;

    // A second session, ended by the lease's release: exit(None), once.
    let opened = provider
        .login_pty_open(&open_params("route-2", &lease_id), sink.clone())
        .await
        .unwrap();
    let second = opened["workerSessionId"].as_str().unwrap().to_string();
    term.seen.clear();
    term.until("ready", |s| s.contains("ready\r\n")).await;
    provider
        .release_lease(
            &json!({"config": config, "companyId": "c-1", "providerLeaseId": lease_id,
                "leaseMetadata": acquired["metadata"]}),
            &NullSink,
        )
        .await
        .unwrap();
    assert_eq!(term.exit().await, ("route-2".into(), second, None));
    assert_eq!(provider.login().route_count(), 0);
    assert!(!provider.login().is_remembered(&lease_id));
    let gone = provider
        .login_pty_open(&open_params("route-3", &lease_id), sink.clone())
        .await
        .unwrap_err();
    assert_eq!(
        gone.message,
        "Kubernetes login PTY: lease ownership mismatch or unknown lease"
    );
    assert!(!term.seen.contains(CANARY));

    until_none_left(&emu, &["pods", "sandboxes", "secrets"]).await;
    // Nothing more was reported.
    assert!(term.events.try_recv().is_err());
    emu.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_ends_sessions_and_a_missing_sandbox_rejects_the_open() {
    let mut opts = KubeEmulatorOptions::for_tests();
    opts.token = Some(CANARY.into());
    opts.command_overrides = BTreeMap::from([(
        "/bin/sh".to_string(),
        vec![
            "/bin/bash".into(),
            "-c".into(),
            FAKE_CLAUDE_SHELL.into(),
            "sh".into(),
        ],
    )]);
    let emu = KubernetesEmulator::start(opts).await.unwrap();
    let config = json!({"kubeconfig": emu.kubeconfig_yaml(), "companySlug": "acme",
        "egressMode": "cilium"});
    let provider = KubernetesProvider::new();
    let acquired = provider
        .acquire_lease(
            &json!({"config": config, "companyId": "c-1", "environmentId": "e-1", "runId": "run-m"}),
            &NullSink,
        )
        .await
        .unwrap();
    let lease_id = acquired["providerLeaseId"].as_str().unwrap().to_string();
    let (tx, events) = mpsc::unbounded_channel();
    let sink: Arc<dyn HostSink> = Arc::new(ChannelSink::guarding(tx, CANARY));
    let mut term = Terminal::new(events, Duration::from_secs(20));
    let opened = provider
        .login_pty_open(&open_params("route-1", &lease_id), sink.clone())
        .await
        .unwrap();
    let session = opened["workerSessionId"].as_str().unwrap().to_string();
    term.until("ready", |s| s.contains("ready\r\n")).await;
    provider.shutdown(&json!({}), &NullSink).await.unwrap();
    assert_eq!(term.exit().await, ("route-1".into(), session, None));
    assert!(!provider.login().is_remembered(&lease_id));

    // Resume re-remembers the lease; with its Sandbox deleted behind the worker's back the
    // connector's readiness wait fails and the open rejects with the cluster's message.
    let resumed = provider
        .resume_lease(
            &json!({"config": config, "companyId": "c-1", "environmentId": "e-1",
                "providerLeaseId": lease_id, "leaseMetadata": acquired["metadata"]}),
            &NullSink,
        )
        .await
        .unwrap();
    assert_eq!(resumed["providerLeaseId"], json!(lease_id), "{resumed}");
    assert!(provider.login().is_remembered(&lease_id));
    let destroy = json!({"config": config, "companyId": "c-1", "providerLeaseId": lease_id,
        "leaseMetadata": acquired["metadata"]});
    // Delete the Sandbox with a second provider (this worker keeps its memory).
    KubernetesProvider::new()
        .destroy_lease(&destroy, &NullSink)
        .await
        .unwrap();
    until_none_left(&emu, &["pods", "sandboxes"]).await;
    let err = provider
        .login_pty_open(&open_params("route-2", &lease_id), sink.clone())
        .await
        .unwrap_err();
    assert!(!err.message.contains(CANARY));
    assert_eq!(err.code, Some(404), "{}", err.message);
    assert!(err.message.contains(&lease_id), "{}", err.message);
    assert_eq!(provider.login().route_count(), 0);
    provider.destroy_lease(&destroy, &NullSink).await.unwrap();
    until_none_left(&emu, &["pods", "sandboxes", "secrets"]).await;
    emu.shutdown().await;
}
