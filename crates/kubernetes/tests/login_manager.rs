//! The login-PTY manager against a scripted connector: descriptor checks, ownership, expiry,
//! route reservation, limits, caps, the single exit, cancellation and teardown.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use kubernetes::config::KubernetesConfig;
use kubernetes::login::manager::*;
use sandbox_core::{BoxFuture, HostSink, ProviderResult};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

// The terminal is for the tests that run a real PTY.
#[allow(dead_code)]
#[path = "support/login.rs"]
mod login_support;
use login_support::{ChannelSink, Event};

#[derive(Default)]
struct FakeConn {
    writes: Mutex<Vec<String>>,
    closed: AtomicBool,
}

impl LoginConnection for FakeConn {
    fn write(&self, data: &str) {
        self.writes.lock().unwrap().push(data.to_string());
    }
    fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
    }
}

type Opened = (Vec<String>, Arc<dyn LoginIo>, Arc<FakeConn>);

/// Each connect reports (argv, io, connection) and, when gated, waits for the gate.
struct FakeConnector {
    opened: mpsc::UnboundedSender<Opened>,
    gate: Mutex<Option<oneshot::Receiver<()>>>,
}

impl LoginConnector for FakeConnector {
    fn connect(
        &self,
        _scope: Arc<LoginLeaseScope>,
        argv: Vec<String>,
        io: Arc<dyn LoginIo>,
    ) -> BoxFuture<'static, ProviderResult<Arc<dyn LoginConnection>>> {
        let conn = Arc::new(FakeConn::default());
        let _ = self.opened.send((argv, io, conn.clone()));
        let gate = self.gate.lock().unwrap().take();
        Box::pin(async move {
            if let Some(gate) = gate {
                let _ = gate.await;
            }
            Ok(conn as Arc<dyn LoginConnection>)
        })
    }
}

const HOME: &str = "/tmp/paperclip-adapter-login/0f8e2c1a-1b2c-4d3e-8f90-a1b2c3d4e5f6";

fn scope(company: &str, expires_at: Option<&str>) -> LoginLeaseScope {
    LoginLeaseScope {
        company_id: json!(company),
        environment_id: json!("env-1"),
        lease_id: String::new(),
        namespace: "paperclip-acme".into(),
        pod_name: Some("pod".into()),
        expires_at: expires_at.map(str::to_string),
        sandbox_api_version: Default::default(),
        config: KubernetesConfig::parse(&json!({"inCluster": true})).unwrap(),
    }
}

fn open_params(route: &str, lease: &str, company: &str) -> Value {
    json!({"hostRouteId": route, "driverKey": "kubernetes", "companyId": company,
        "environmentId": "env-1", "providerLeaseId": lease, "loginCommandKey": "codex",
        "sessionHome": HOME})
}

struct Harness {
    manager: LoginPtyManager,
    opened: mpsc::UnboundedReceiver<Opened>,
    events: mpsc::UnboundedReceiver<Event>,
    sink: Arc<dyn HostSink>,
    connector: Arc<FakeConnector>,
}

fn harness(now_ms: f64) -> Harness {
    let (tx, opened) = mpsc::unbounded_channel();
    let (etx, events) = mpsc::unbounded_channel();
    let connector = Arc::new(FakeConnector {
        opened: tx,
        gate: Mutex::new(None),
    });
    Harness {
        manager: LoginPtyManager::with_now(connector.clone(), Box::new(move || now_ms)),
        opened,
        events,
        sink: Arc::new(ChannelSink::new(etx)),
        connector,
    }
}

fn err_of<T: std::fmt::Debug>(r: ProviderResult<T>) -> String {
    r.unwrap_err().message
}

#[tokio::test]
async fn descriptor_ownership_and_expiry() {
    let mut h = harness(1_767_225_600_000.0); // 2026-01-01T00:00:00Z
    h.manager
        .remember("lease-1", scope("c-1", Some("2026-01-01T00:00:01.000Z")));
    h.manager
        .remember("lease-old", scope("c-1", Some("2025-12-31T23:59:59.000Z")));
    for bad in [
        json!({"driverKey": "docker"}),
        json!({"sessionHome": "/tmp/paperclip-adapter-login/not-a-uuid"}),
        json!({"sessionHome": format!("{HOME}/../x")}),
        json!({"loginCommandKey": "bash"}),
        json!({"loginCommandKey": "constructor"}),
    ] {
        let mut params = open_params("r", "lease-1", "c-1");
        for (k, v) in bad.as_object().unwrap() {
            params[k] = v.clone();
        }
        assert_eq!(
            err_of(h.manager.open(&params, h.sink.clone()).await),
            "LOGIN_PTY_DESCRIPTOR_REJECTED"
        );
    }
    for (lease, company, env) in [
        ("nope", "c-1", "env-1"),
        ("lease-1", "c-2", "env-1"),
        ("lease-1", "c-1", "env-2"),
    ] {
        let mut params = open_params("r", lease, company);
        params["environmentId"] = json!(env);
        assert_eq!(
            err_of(h.manager.open(&params, h.sink.clone()).await),
            "Kubernetes login PTY: lease ownership mismatch or unknown lease"
        );
    }
    assert_eq!(
        err_of(
            h.manager
                .open(&open_params("r", "lease-old", "c-1"), h.sink.clone())
                .await
        ),
        "Kubernetes login PTY: lease has expired"
    );
    let opened = h
        .manager
        .open(&open_params("r", "lease-1", "c-1"), h.sink.clone())
        .await
        .unwrap();
    let id = opened["workerSessionId"].as_str().unwrap().to_string();
    assert!(id.starts_with("pty-") && id.len() == 40, "{id}");
    let (argv, _, _) = h.opened.recv().await.unwrap();
    assert_eq!(
        argv,
        vec![
            "/bin/sh".to_string(),
            "-c".into(),
            format!(
                "mkdir -p '{HOME}' && exec env CODEX_HOME='{HOME}' codex -c 'cli_auth_credentials_store=\"file\"' login --device-auth"
            ),
        ]
    );
    assert_eq!(
        err_of(
            h.manager
                .open(&open_params("r", "lease-1", "c-1"), h.sink.clone())
                .await
        ),
        "Kubernetes login PTY: route already open"
    );
    let mut claude = open_params("r2", "lease-1", "c-1");
    claude["loginCommandKey"] = json!("claude");
    h.manager.open(&claude, h.sink.clone()).await.unwrap();
    let (argv, _, _) = h.opened.recv().await.unwrap();
    assert_eq!(
        argv[2],
        format!("mkdir -p '{HOME}' && exec claude setup-token")
    );
    let mut grok = open_params("r3", "lease-1", "c-1");
    grok["loginCommandKey"] = json!("grok");
    h.manager.open(&grok, h.sink.clone()).await.unwrap();
    let (argv, _, _) = h.opened.recv().await.unwrap();
    assert_eq!(
        argv[2],
        format!("mkdir -p '{HOME}' && exec env GROK_HOME='{HOME}' grok login --device-auth")
    );
    assert!(h.events.try_recv().is_err());
}

#[tokio::test]
async fn limits_per_company_and_per_worker() {
    let h = harness(0.0);
    for c in 0..5 {
        h.manager
            .remember(&format!("lease-{c}"), scope(&format!("c-{c}"), None));
    }
    for i in 0..4 {
        h.manager
            .open(
                &open_params(&format!("a{i}"), "lease-0", "c-0"),
                h.sink.clone(),
            )
            .await
            .unwrap();
    }
    assert_eq!(
        err_of(
            h.manager
                .open(&open_params("a4", "lease-0", "c-0"), h.sink.clone())
                .await
        ),
        "Kubernetes login PTY concurrent session limit reached for this company"
    );
    for c in 1..4 {
        for i in 0..4 {
            h.manager
                .open(
                    &open_params(
                        &format!("r{c}-{i}"),
                        &format!("lease-{c}"),
                        &format!("c-{c}"),
                    ),
                    h.sink.clone(),
                )
                .await
                .unwrap();
        }
    }
    assert_eq!(h.manager.route_count(), 16);
    assert_eq!(
        err_of(
            h.manager
                .open(&open_params("x", "lease-4", "c-4"), h.sink.clone())
                .await
        ),
        "Kubernetes login PTY concurrent session limit reached"
    );
    // Closing one route frees a slot.
    assert_eq!(
        h.manager.close(&json!({"hostRouteId": "a0"})),
        json!({"hostRouteId": "a0"})
    );
    h.manager
        .open(&open_params("x", "lease-4", "c-4"), h.sink.clone())
        .await
        .unwrap();
    h.manager.shutdown();
    assert_eq!(h.manager.route_count(), 0);
}

#[tokio::test]
async fn output_caps_single_exit_stop_and_input() {
    let mut h = harness(0.0);
    h.manager.remember("lease-1", scope("c-1", None));
    let open = |route: &str| open_params(route, "lease-1", "c-1");

    // Output is decoded across chunk boundaries; a natural exit is reported once, no Ctrl-C.
    let s1 = h.manager.open(&open("r1"), h.sink.clone()).await.unwrap()["workerSessionId"]
        .as_str()
        .unwrap()
        .to_string();
    let (_, io, conn) = h.opened.recv().await.unwrap();
    let euro = "€".as_bytes();
    io.output(&euro[..1]);
    io.output(&euro[1..]);
    assert_eq!(
        h.events.recv().await.unwrap(),
        Event::Output("r1".into(), s1.clone(), "€".into())
    );
    h.manager
        .input(&json!({"workerSessionId": s1, "data": "a".repeat(65536)}))
        .unwrap();
    assert_eq!(
        err_of(
            h.manager
                .input(&json!({"workerSessionId": s1, "data": "é".repeat(32769)}))
        ),
        "Kubernetes login PTY input exceeds limit"
    );
    h.manager
        .input(&json!({"workerSessionId": "unknown", "data": "x"}))
        .unwrap();
    io.exit(Some(3));
    io.exit(Some(4));
    assert_eq!(
        h.events.recv().await.unwrap(),
        Event::Exit("r1".into(), s1.clone(), Some(3))
    );
    assert_eq!(
        conn.writes.lock().unwrap().len(),
        1,
        "no Ctrl-C after a natural exit"
    );
    assert!(conn.closed.load(Ordering::SeqCst));
    io.output(b"late");
    h.manager
        .input(&json!({"workerSessionId": s1, "data": "ignored"}))
        .unwrap();
    assert_eq!(conn.writes.lock().unwrap().len(), 1);

    // An oversized chunk ends the session: exit(None), Ctrl-C, close.
    let s2 = h.manager.open(&open("r2"), h.sink.clone()).await.unwrap()["workerSessionId"]
        .as_str()
        .unwrap()
        .to_string();
    let (_, io, conn) = h.opened.recv().await.unwrap();
    io.output(&vec![b'x'; 65537]);
    assert_eq!(
        h.events.recv().await.unwrap(),
        Event::Exit("r2".into(), s2, None)
    );
    assert_eq!(*conn.writes.lock().unwrap(), vec!["\u{3}".to_string()]);
    assert!(conn.closed.load(Ordering::SeqCst));

    // The 4 MiB total.
    let s3 = h.manager.open(&open("r3"), h.sink.clone()).await.unwrap()["workerSessionId"]
        .as_str()
        .unwrap()
        .to_string();
    let (_, io, _) = h.opened.recv().await.unwrap();
    for _ in 0..64 {
        io.output(&vec![b'y'; 65536]);
    }
    for _ in 0..64 {
        assert!(matches!(h.events.recv().await.unwrap(), Event::Output(..)));
    }
    io.output(b"z");
    assert_eq!(
        h.events.recv().await.unwrap(),
        Event::Exit("r3".into(), s3, None)
    );

    // stop: exit(None) then Ctrl-C; a second stop is a no-op.
    let s4 = h.manager.open(&open("r4"), h.sink.clone()).await.unwrap()["workerSessionId"]
        .as_str()
        .unwrap()
        .to_string();
    let (_, _, conn) = h.opened.recv().await.unwrap();
    h.manager.stop(&json!({"workerSessionId": s4}));
    h.manager.stop(&json!({"workerSessionId": s4}));
    assert_eq!(
        h.events.recv().await.unwrap(),
        Event::Exit("r4".into(), s4, None)
    );
    assert_eq!(*conn.writes.lock().unwrap(), vec!["\u{3}".to_string()]);

    // close: no exit event, Ctrl-C and close; the route is free again.
    h.manager.open(&open("r5"), h.sink.clone()).await.unwrap();
    let (_, _, conn) = h.opened.recv().await.unwrap();
    assert_eq!(
        h.manager
            .close(&json!({"hostRouteId": "r5", "workerSessionId": "x"})),
        json!({"hostRouteId": "r5"})
    );
    assert!(conn.closed.load(Ordering::SeqCst));
    assert_eq!(
        h.manager.close(&json!({"hostRouteId": "r5"})),
        json!({"hostRouteId": "r5"})
    );

    // forget (release/destroy): exit(None) once per live session.
    let s6 = h.manager.open(&open("r6"), h.sink.clone()).await.unwrap()["workerSessionId"]
        .as_str()
        .unwrap()
        .to_string();
    h.manager.forget("lease-1");
    assert_eq!(
        h.events.recv().await.unwrap(),
        Event::Exit("r6".into(), s6, None)
    );
    assert!(h.events.try_recv().is_err());
    assert_eq!(h.manager.route_count(), 0);
    assert!(!h.manager.is_remembered("lease-1"));
}

#[tokio::test]
async fn routes_are_reserved_while_connecting_and_a_racing_close_cancels() {
    let mut h = harness(0.0);
    h.manager.remember("lease-1", scope("c-1", None));
    let (release, gate) = oneshot::channel();
    *h.connector.gate.lock().unwrap() = Some(gate);
    let manager = h.manager.clone();
    let sink = h.sink.clone();
    let pending = tokio::spawn(async move {
        manager
            .open(&open_params("r1", "lease-1", "c-1"), sink)
            .await
    });
    let (_, _, conn) = h.opened.recv().await.unwrap();
    assert_eq!(
        err_of(
            h.manager
                .open(&open_params("r1", "lease-1", "c-1"), h.sink.clone())
                .await
        ),
        "Kubernetes login PTY: route already open"
    );
    h.manager.close(&json!({"hostRouteId": "r1"}));
    release.send(()).unwrap();
    assert_eq!(
        err_of(pending.await.unwrap()),
        "Kubernetes login PTY open cancelled"
    );
    assert!(conn.closed.load(Ordering::SeqCst));
    assert_eq!(h.manager.route_count(), 0);

    // Re-remembering the lease while connecting cancels too.
    let (release, gate) = oneshot::channel();
    *h.connector.gate.lock().unwrap() = Some(gate);
    let manager = h.manager.clone();
    let sink = h.sink.clone();
    let pending = tokio::spawn(async move {
        manager
            .open(&open_params("r2", "lease-1", "c-1"), sink)
            .await
    });
    let _ = h.opened.recv().await.unwrap();
    h.manager.remember("lease-1", scope("c-1", None));
    release.send(()).unwrap();
    assert_eq!(
        err_of(pending.await.unwrap()),
        "Kubernetes login PTY open cancelled"
    );
    // The forget inside remember reported the pending route's exit.
    assert!(matches!(h.events.recv().await.unwrap(), Event::Exit(r, _, None) if r == "r2"));
}
