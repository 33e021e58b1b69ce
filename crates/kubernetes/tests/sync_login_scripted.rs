//! Sync and login paths the emulator cannot produce: a Ready Sandbox without a findable pod,
//! readiness timeouts and failures (scripted cluster, manual clock).

use std::sync::Arc;

use kubernetes::KubernetesProvider;
use kubernetes::cluster::testing::{ManualClock, ScriptedCluster, ScriptedReply};
use kubernetes::cluster::{ApiError, ApiMethod, ClusterApi};
use kubernetes::config::KubernetesConfig;
use kubernetes::exec::PodExec;
use kubernetes::exec::{ExecError, ExecOutput, ExecRequest, OutputTap};
use kubernetes::lease::{ClusterConnector, Connection};
use kubernetes::login::LoginLeaseScope;
use sandbox_core::{BoxFuture, HostSink, NullSink};
use serde_json::{Value, json};

struct NoExec;

impl PodExec for NoExec {
    fn exec(
        &self,
        _: ExecRequest,
        _: Option<OutputTap>,
    ) -> BoxFuture<'_, Result<ExecOutput, ExecError>> {
        Box::pin(async { unreachable!("no exec expected") })
    }
}

struct Connector(Arc<ScriptedCluster>);

impl ClusterConnector for Connector {
    fn connect<'a>(
        &'a self,
        _: &'a KubernetesConfig,
    ) -> BoxFuture<'a, Result<Connection, ApiError>> {
        let connection = Connection {
            api: self.0.clone() as Arc<dyn ClusterApi>,
            exec: Arc::new(NoExec),
        };
        Box::pin(async move { Ok(connection) })
    }
}

/// A cluster whose agent-sandbox controller serves `v1alpha1` (what discovery finds).
fn cluster() -> ScriptedCluster {
    ScriptedCluster::new().script(
        ApiMethod::GetApiVersions,
        vec![ScriptedReply::Returns(
            json!({"groups": [{"name": "agents.x-k8s.io", "versions": [{"version": "v1alpha1"}]}]}),
        )],
    )
}

fn provider(sandbox: Value) -> KubernetesProvider {
    let cluster = cluster()
        .script(
            ApiMethod::GetNamespacedCustomObject,
            vec![ScriptedReply::Returns(sandbox)],
        )
        .script(
            ApiMethod::ReadNamespacedPod,
            vec![ScriptedReply::Throws(ApiError::new(404, "nf"))],
        )
        .script(
            ApiMethod::ListNamespacedPod,
            vec![ScriptedReply::Returns(json!({"items": []}))],
        );
    KubernetesProvider::with_connector(
        Arc::new(Connector(Arc::new(cluster))),
        Arc::new(ManualClock::new()),
    )
}

fn ready() -> Value {
    json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}})
}

fn sync_params() -> Value {
    json!({"config": {"inCluster": true, "companySlug": "acme"}, "companyId": "c-1",
        "lease": {"providerLeaseId": "pc-1", "metadata": {"remoteCwd": "/workspace",
            "backend": "sandbox-cr", "namespace": "paperclip-acme"}},
        "operations": []})
}

const HOME: &str = "/tmp/paperclip-adapter-login/6a1f0c2e-9b3d-4e5f-a6b7-c8d9e0f1a2b3";

async fn login_error(provider: &KubernetesProvider) -> String {
    provider.login().remember(
        "pc-1",
        LoginLeaseScope {
            company_id: json!("c-1"),
            environment_id: json!("e-1"),
            lease_id: String::new(),
            namespace: "paperclip-acme".into(),
            pod_name: Some("stale-pod-name".into()),
            expires_at: None,
            sandbox_api_version: Default::default(),
            config: KubernetesConfig::parse(&json!({"inCluster": true})).unwrap(),
        },
    );
    let sink: Arc<dyn HostSink> = Arc::new(NullSink);
    let err = provider
        .login_pty_open(
            &json!({"hostRouteId": "r", "driverKey": "kubernetes", "companyId": "c-1",
                "environmentId": "e-1", "providerLeaseId": "pc-1", "loginCommandKey": "grok",
                "sessionHome": HOME}),
            sink,
        )
        .await
        .unwrap_err();
    assert_eq!(
        provider.login().route_count(),
        0,
        "the reserved route is released"
    );
    err.message
}

#[tokio::test]
async fn ready_sandbox_without_a_pod() {
    let p = provider(ready());
    assert_eq!(
        p.sync_in(&sync_params(), &NullSink)
            .await
            .unwrap_err()
            .message,
        "Kubernetes file sync could not resolve the Sandbox pod name."
    );
    // The remembered pod name is ignored: the connector looks the pod up again.
    assert_eq!(
        login_error(&p).await,
        "Kubernetes login PTY sandbox pod is unavailable"
    );
}

#[tokio::test]
async fn readiness_timeouts_and_failures_reject() {
    let p = provider(json!({"status": {"phase": "Pending"}}));
    assert_eq!(
        p.sync_out(&sync_params(), &NullSink)
            .await
            .unwrap_err()
            .message,
        "Sandbox paperclip-acme/pc-1 did not reach Ready phase within 3600000ms"
    );
    // The login terminal's ready-wait is 20 s (the original's 30 s outlasts the host's open).
    assert_eq!(
        login_error(&p).await,
        "Sandbox paperclip-acme/pc-1 did not reach Ready phase within 20000ms"
    );
    // A Sandbox no controller has given a status: named 30 s after it was first read (it has
    // no creationTimestamp here), within sync's wait; the login's 20 s ends first.
    let p = provider(json!({"status": {}}));
    assert_eq!(
        p.sync_out(&sync_params(), &NullSink)
            .await
            .unwrap_err()
            .message,
        "Sandbox paperclip-acme/pc-1 has no status 30s after it was created: no agent-sandbox controller is reconciling it; check that the agent-sandbox controller is installed and running."
    );
    assert_eq!(
        login_error(&p).await,
        "Sandbox paperclip-acme/pc-1 did not reach Ready phase within 20000ms"
    );
    let p = provider(
        json!({"status": {"phase": "Failed", "reason": "ImagePull", "message": "no such image"}}),
    );
    let sync = p
        .sync_in(&sync_params(), &NullSink)
        .await
        .unwrap_err()
        .message;
    assert!(
        sync.starts_with("Sandbox paperclip-acme/pc-1 failed: "),
        "{sync}"
    );
    assert_eq!(login_error(&p).await, sync);
}

#[tokio::test]
async fn an_unresumable_lease_is_forgotten() {
    let cluster = cluster().script(
        ApiMethod::GetNamespacedCustomObject,
        vec![ScriptedReply::Throws(ApiError::new(404, "gone"))],
    );
    let p = KubernetesProvider::with_connector(
        Arc::new(Connector(Arc::new(cluster))),
        Arc::new(ManualClock::new()),
    );
    p.login().remember(
        "pc-1",
        LoginLeaseScope {
            company_id: json!("c-1"),
            environment_id: json!("e-1"),
            lease_id: String::new(),
            namespace: "paperclip-acme".into(),
            pod_name: None,
            expires_at: None,
            sandbox_api_version: Default::default(),
            config: KubernetesConfig::parse(&json!({"inCluster": true})).unwrap(),
        },
    );
    let resumed = p
        .resume_lease(
            &json!({"config": {"inCluster": true, "companySlug": "acme"}, "companyId": "c-1",
                "environmentId": "e-1", "providerLeaseId": "pc-1",
                "leaseMetadata": {"backend": "sandbox-cr", "namespace": "paperclip-acme"}}),
            &NullSink,
        )
        .await
        .unwrap();
    assert_eq!(resumed["providerLeaseId"], Value::Null, "{resumed}");
    assert!(!p.login().is_remembered("pc-1"));
}

#[test]
fn constants_are_the_contract_lines() {
    use kubernetes::hooks::sync::{
        SYNC_POD_UNRESOLVED, SYNC_REQUIRES_LEASE_ID, SYNC_REQUIRES_REMOTE_DIR,
    };
    use kubernetes::login::connector::{LOGIN_POD_UNAVAILABLE, LOGIN_REQUIRES_LEASE_ID};
    use kubernetes::login::manager::*;
    let path = sandbox_core::golden::contract_file("kubernetes-errors.txt");
    let text = std::fs::read_to_string(path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    for constant in [
        SYNC_REQUIRES_REMOTE_DIR,
        SYNC_REQUIRES_LEASE_ID,
        SYNC_POD_UNRESOLVED,
        LOGIN_PTY_DESCRIPTOR_REJECTED,
        LOGIN_LEASE_MISMATCH,
        LOGIN_LEASE_EXPIRED,
        LOGIN_ROUTE_ALREADY_OPEN,
        LOGIN_LIMIT_REACHED,
        LOGIN_COMPANY_LIMIT_REACHED,
        LOGIN_OPEN_CANCELLED,
        LOGIN_INPUT_TOO_LARGE,
        LOGIN_REQUIRES_LEASE_ID,
        LOGIN_POD_UNAVAILABLE,
    ] {
        assert!(lines.contains(&constant), "{constant}");
    }
    assert!(lines.contains(
        &"Kubernetes file sync is only supported on the sandbox-cr backend (lease backend: ${leaseBackend})."
    ));
}

#[tokio::test]
async fn acquire_remembers_sandbox_leases_only() {
    for (backend, remembered) in [("sandbox-cr", true), ("job", false)] {
        let cluster = cluster()
            .script(
                ApiMethod::CreateNamespacedCustomObject,
                vec![ScriptedReply::Returns(
                    json!({"metadata": {"uid": "uid-1"}}),
                )],
            )
            .script(
                ApiMethod::CreateNamespacedJob,
                vec![ScriptedReply::Returns(
                    json!({"metadata": {"uid": "uid-1"}}),
                )],
            )
            .script(
                ApiMethod::GetNamespacedCustomObject,
                vec![ScriptedReply::Returns(
                    json!({"status": {"podName": "pod-a"}}),
                )],
            );
        let p = KubernetesProvider::with_connector(
            Arc::new(Connector(Arc::new(cluster))),
            Arc::new(ManualClock::new()),
        );
        let lease = p
            .acquire_lease(
                &json!({"config": {"inCluster": true, "companySlug": "acme", "backend": backend,
                    "egressMode": "cilium"}, "companyId": "c-1", "environmentId": "e-1", "runId": "run-1"}),
                &NullSink,
            )
            .await
            .unwrap();
        let id = lease["providerLeaseId"].as_str().unwrap();
        assert_eq!(p.login().is_remembered(id), remembered, "{backend}");
    }
}
