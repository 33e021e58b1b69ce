//! The cluster-facing hooks against a scripted cluster and a scripted pod exec.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use kubernetes::KubernetesProvider;
use kubernetes::cluster::testing::{ManualClock, ScriptedCluster, ScriptedReply};
use kubernetes::cluster::{ApiError, ApiMethod, ClusterApi};
use kubernetes::config::KubernetesConfig;
use kubernetes::exec::PodExec;
use kubernetes::exec::{ExecError, ExecOutput, ExecRequest, OutputTap};
use kubernetes::lease::{ClusterConnector, Connection};
use sandbox_core::recording_sink::RecordingSink;
use sandbox_core::{BoxFuture, ErrorClass, LogLevel, OutputStream};
use serde_json::{Value, json};

type ExecReply = Result<(Vec<(OutputStream, String)>, i64), ExecError>;

/// Answers every exec with the scripted chunks (sent through the tap) and exit code.
struct FakeExec {
    reply: ExecReply,
    requests: Mutex<Vec<ExecRequest>>,
}

impl PodExec for FakeExec {
    fn exec(
        &self,
        request: ExecRequest,
        tap: Option<OutputTap>,
    ) -> BoxFuture<'_, Result<ExecOutput, ExecError>> {
        self.requests.lock().unwrap().push(request);
        let reply = self.reply.clone();
        Box::pin(async move {
            let (chunks, exit_code) = reply?;
            let (mut stdout, mut stderr) = (String::new(), String::new());
            for (stream, chunk) in chunks {
                match stream {
                    OutputStream::Stdout => stdout.push_str(&chunk),
                    OutputStream::Stderr => stderr.push_str(&chunk),
                }
                if let Some(tap) = &tap {
                    tap.send((stream, chunk)).await.unwrap();
                }
            }
            Ok(ExecOutput {
                exit_code,
                stdout,
                stderr,
                truncated: false,
            })
        })
    }
}

struct FakeConnector {
    cluster: Arc<ScriptedCluster>,
    exec: Arc<FakeExec>,
    connects: AtomicUsize,
}

impl ClusterConnector for FakeConnector {
    fn connect<'a>(
        &'a self,
        _config: &'a KubernetesConfig,
    ) -> BoxFuture<'a, Result<Connection, ApiError>> {
        self.connects.fetch_add(1, Ordering::SeqCst);
        let connection = Connection {
            api: self.cluster.clone() as Arc<dyn ClusterApi>,
            exec: self.exec.clone() as Arc<dyn PodExec>,
        };
        Box::pin(async move { Ok(connection) })
    }
}

struct Harness {
    provider: KubernetesProvider,
    connector: Arc<FakeConnector>,
}

impl Harness {
    fn new(cluster: ScriptedCluster) -> Self {
        Self::with_exec(cluster, Ok((vec![], 0)))
    }

    fn with_exec(cluster: ScriptedCluster, reply: ExecReply) -> Self {
        let connector = Arc::new(FakeConnector {
            cluster: Arc::new(cluster),
            exec: Arc::new(FakeExec {
                reply,
                requests: Mutex::default(),
            }),
            connects: AtomicUsize::new(0),
        });
        let provider =
            KubernetesProvider::with_connector(connector.clone(), Arc::new(ManualClock::new()));
        Self {
            provider,
            connector,
        }
    }

    fn calls(&self) -> Vec<(ApiMethod, Value)> {
        self.connector
            .cluster
            .calls()
            .into_iter()
            .map(|c| (c.method, c.args))
            .collect()
    }

    fn methods(&self) -> Vec<ApiMethod> {
        self.calls().into_iter().map(|(m, _)| m).collect()
    }

    fn exec_requests(&self) -> Vec<ExecRequest> {
        self.connector.exec.requests.lock().unwrap().clone()
    }
}

/// A cluster with an agent-sandbox controller that serves `versions` of the Sandbox API (what
/// discovery finds), and nothing else scripted.
fn serving(versions: &[&str]) -> ScriptedCluster {
    let versions: Vec<Value> = versions.iter().map(|v| json!({"version": v})).collect();
    ScriptedCluster::new().script(
        ApiMethod::GetApiVersions,
        returns(json!({"groups": [{"name": "agents.x-k8s.io", "versions": versions}]})),
    )
}

/// The usual cluster of these tests: a controller that predates v1beta1.
fn cluster() -> ScriptedCluster {
    serving(&["v1alpha1"])
}

fn returns(body: Value) -> Vec<ScriptedReply> {
    vec![ScriptedReply::Returns(body)]
}

fn throws(code: u16, message: &str) -> Vec<ScriptedReply> {
    vec![ScriptedReply::Throws(ApiError::new(code, message))]
}

const NS: &str = "paperclip-acme";

fn config(backend: &str) -> Value {
    json!({"inCluster": true, "companySlug": "acme", "backend": backend, "egressMode": "cilium"})
}

fn acquire_params(backend: &str) -> Value {
    json!({"config": config(backend), "companyId": "c-1", "environmentId": "e-1", "runId": "run-1",
        "executionWorkspaceSettings": {"networkEgress": {"allowFqdns": ["API.example.com"]}}})
}

fn created_uid() -> Vec<ScriptedReply> {
    returns(json!({"metadata": {"uid": "uid-1"}}))
}

#[tokio::test]
async fn acquire_sandbox_cr_provisions_in_order_without_waiting() {
    let h = Harness::new(
        cluster()
            .script(ApiMethod::CreateNamespacedCustomObject, created_uid())
            .script(
                ApiMethod::GetNamespacedCustomObject,
                returns(json!({"status": {"podName": "pod-a"}})),
            ),
    );
    let sink = RecordingSink::default();
    let lease = h
        .provider
        .acquire_lease(&acquire_params("sandbox-cr"), &sink)
        .await
        .unwrap();
    let id = lease["providerLeaseId"].as_str().unwrap().to_string();
    assert!(id.starts_with("pc-") && id.len() == 29, "{id}");
    assert_eq!(
        lease["metadata"],
        json!({"namespace": NS, "jobName": id, "podName": "pod-a", "secretName": format!("{id}-env"),
            "phase": "Pending", "backend": "sandbox-cr", "scopedNetworkPolicyName": format!("{id}-egress"),
            "scopedNetworkEgress": {"allowFqdns": ["api.example.com"], "allowCidrs": []},
            "nativeFileSyncUnsupported": false, "remoteCwd": "/workspace", "sandboxApiVersion": "v1alpha1"})
    );
    assert!(lease.get("expiresAt").is_none());
    let calls = h.calls();
    let methods: Vec<_> = calls.iter().map(|(m, _)| *m).collect();
    // Tenant reads and creates ({} reads count as present), then claim, two policies, secret,
    // pod lookup; no readiness wait.
    let claim = methods
        .iter()
        .position(|m| *m == ApiMethod::CreateNamespacedCustomObject)
        .unwrap();
    // Discovery first (G-apiversion), before the tenant is provisioned.
    assert_eq!(methods[0], ApiMethod::GetApiVersions);
    assert_eq!(methods[1], ApiMethod::ReadNamespace);
    assert_eq!(calls[claim].1["version"], "v1alpha1");
    assert_eq!(calls[claim].1["plural"], "sandboxes");
    // Issue #38: the Sandbox ends by itself, the acquire's bound (25 s) and 1.5 ×
    // podActivityDeadlineSec (3600 s) after the acquire began (the manual clock's 0); nothing
    // is patched during the acquire.
    let spec = &calls[claim].1["body"]["spec"];
    assert_eq!(spec["shutdownTime"], "1970-01-01T01:30:25Z");
    assert_eq!(spec["shutdownPolicy"], "Delete");
    assert!(!methods.contains(&ApiMethod::PatchNamespacedCustomObject));
    let policies: Vec<_> = calls[claim + 1..claim + 3].iter().collect();
    assert_eq!(policies[0].1["plural"], "ciliumnetworkpolicies");
    assert_eq!(
        policies[0].1["body"]["metadata"]["name"],
        format!("{id}-adapter-egress")
    );
    assert_eq!(
        policies[0].1["body"]["metadata"]["ownerReferences"][0],
        json!({"apiVersion": "agents.x-k8s.io/v1alpha1", "kind": "Sandbox", "name": id, "uid": "uid-1",
            "controller": false, "blockOwnerDeletion": false})
    );
    assert_eq!(
        policies[1].1["body"]["metadata"]["name"],
        format!("{id}-egress")
    );
    let (method, secret) = &calls[claim + 3];
    assert_eq!(*method, ApiMethod::CreateNamespacedSecret);
    let data = &secret["body"]["stringData"];
    let token = data["BOOTSTRAP_TOKEN"].as_str().unwrap();
    assert!(
        token.len() == 64
            && token
                .chars()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
    );
    assert_eq!(
        data["PAPERCLIP_NETWORK_EGRESS_POLICY"],
        "kubernetes-default-deny"
    );
    assert_eq!(
        data["PAPERCLIP_NETWORK_EGRESS_ALLOW_FQDNS"],
        "api.example.com"
    );
    assert_eq!(data["PAPERCLIP_NETWORK_EGRESS_ALLOW_CIDRS"], "");
    assert_eq!(
        secret["body"]["metadata"]["ownerReferences"][0]["apiVersion"],
        "agents.x-k8s.io/v1alpha1"
    );
    assert_eq!(
        secret["body"]["metadata"]["labels"]["paperclip.io/run-id"],
        "run-1"
    );
    assert_eq!(
        calls.last().unwrap().0,
        ApiMethod::GetNamespacedCustomObject
    );
    // After the claim, one Sandbox read (the pod lookup): no readiness wait.
    assert_eq!(
        methods[claim..]
            .iter()
            .filter(|m| **m == ApiMethod::GetNamespacedCustomObject)
            .count(),
        1
    );
    assert!(sink.logs.lock().unwrap().is_empty());
}

#[tokio::test]
async fn acquire_job_backend_and_the_standard_mode_warning() {
    let h = Harness::new(
        cluster()
            .script(ApiMethod::CreateNamespacedJob, created_uid())
            .script(ApiMethod::ListNamespacedPod, returns(json!({"items": []}))),
    );
    let sink = RecordingSink::default();
    let mut params = acquire_params("job");
    params["config"]["egressMode"] = json!("standard");
    let lease = h.provider.acquire_lease(&params, &sink).await.unwrap();
    assert_eq!(lease["metadata"]["backend"], "job");
    assert_eq!(lease["metadata"]["podName"], Value::Null);
    assert_eq!(lease["metadata"]["nativeFileSyncUnsupported"], true);
    let logs = sink.logs.lock().unwrap();
    assert_eq!(logs.len(), 1);
    assert_eq!(logs[0].0, LogLevel::Warn);
    assert!(
        logs[0]
            .1
            .starts_with("[plugin-kubernetes] egressMode=standard cannot enforce FQDN-based egress rules; falling back")
    );
    let secret = h
        .calls()
        .into_iter()
        .find(|(m, _)| *m == ApiMethod::CreateNamespacedSecret)
        .unwrap()
        .1;
    assert_eq!(
        secret["body"]["metadata"]["ownerReferences"][0]["apiVersion"],
        "batch/v1"
    );
    assert!(
        h.methods()
            .contains(&ApiMethod::CreateNamespacedNetworkPolicy)
    );
    // The Job ends by its own deadline and TTL, as in the original: nothing is patched.
    let job = h
        .calls()
        .into_iter()
        .find(|(m, _)| *m == ApiMethod::CreateNamespacedJob)
        .unwrap()
        .1;
    assert_eq!(job["body"]["spec"]["ttlSecondsAfterFinished"], 900);
    assert_eq!(job["body"]["spec"]["activeDeadlineSeconds"], 3600);
    assert!(
        !h.methods()
            .contains(&ApiMethod::PatchNamespacedCustomObject)
    );
}

#[tokio::test]
async fn acquire_refusals_before_the_cluster() {
    let h = Harness::new(cluster());
    let mut params = acquire_params("job");
    params["requestedExpiresAt"] = json!("2999-01-01T00:00:00Z");
    let err = h
        .provider
        .acquire_lease(&params, &RecordingSink::default())
        .await
        .unwrap_err();
    assert_eq!(
        err.message,
        "The Kubernetes job backend cannot honor a requested lease deadline; use the sandbox-cr backend."
    );
    params["requestedExpiresAt"] = json!("not-a-date");
    let err = h
        .provider
        .acquire_lease(&params, &RecordingSink::default())
        .await
        .unwrap_err();
    assert_eq!(
        err.message,
        "Requested lease deadline (\"not-a-date\") is not a valid ISO 8601 timestamp. Failing closed instead of silently substituting a default deadline the caller did not ask for."
    );
    let mut params = acquire_params("sandbox-cr");
    params["adapterType"] = json!("aider_local");
    let err = h
        .provider
        .acquire_lease(&params, &RecordingSink::default())
        .await
        .unwrap_err();
    assert_eq!(err.message, "Unknown adapter type: aider_local");
    assert_eq!(h.connector.connects.load(Ordering::SeqCst), 0);
    assert!(h.calls().is_empty());
}

#[tokio::test]
async fn acquire_with_a_deadline_returns_expires_at() {
    let h = Harness::new(cluster().script(ApiMethod::CreateNamespacedCustomObject, created_uid()));
    let mut params = acquire_params("sandbox-cr");
    params["requestedExpiresAt"] = json!("2999-01-01T00:00:00Z");
    let lease = h
        .provider
        .acquire_lease(&params, &RecordingSink::default())
        .await
        .unwrap();
    assert_eq!(lease["expiresAt"], lease["metadata"]["expiresAt"]);
    assert!(lease["expiresAt"].as_str().unwrap().ends_with(".000Z"));
}

#[tokio::test]
async fn acquire_workload_without_uid() {
    let h = Harness::new(cluster());
    let err = h
        .provider
        .acquire_lease(&acquire_params("sandbox-cr"), &RecordingSink::default())
        .await
        .unwrap_err();
    assert_eq!(err.message, "Sandbox CR created without a UID");
    let err = h
        .provider
        .acquire_lease(&acquire_params("job"), &RecordingSink::default())
        .await
        .unwrap_err();
    assert_eq!(err.message, "Job created without a UID");
}

#[tokio::test]
async fn acquire_policy_failure_releases_the_workload() {
    let h = Harness::new(
        cluster()
            .script(ApiMethod::CreateNamespacedCustomObject, {
                let mut replies = created_uid();
                replies.push(ScriptedReply::Throws(ApiError::new(
                    403,
                    "policies are forbidden",
                )));
                replies
            })
            .script(ApiMethod::DeleteNamespacedCustomObject, returns(json!({}))),
    );
    let err = h
        .provider
        .acquire_lease(&acquire_params("sandbox-cr"), &RecordingSink::default())
        .await
        .unwrap_err();
    assert_eq!(err.message, "policies are forbidden");
    assert_eq!(err.code, Some(403));
    let delete = h
        .calls()
        .into_iter()
        .find(|(m, _)| *m == ApiMethod::DeleteNamespacedCustomObject)
        .unwrap();
    assert_eq!(delete.1["propagationPolicy"], "Foreground");
    assert!(!h.methods().contains(&ApiMethod::CreateNamespacedSecret));

    let h = Harness::new(
        cluster()
            .script(ApiMethod::CreateNamespacedCustomObject, {
                let mut replies = created_uid();
                replies.push(ScriptedReply::Throws(ApiError::new(403, "policy")));
                replies
            })
            .script(
                ApiMethod::DeleteNamespacedCustomObject,
                throws(500, "release"),
            ),
    );
    let err = h
        .provider
        .acquire_lease(&acquire_params("sandbox-cr"), &RecordingSink::default())
        .await
        .unwrap_err();
    // The release inside the policy step failed, and so did the acquire's cleanup (the same
    // Sandbox delete): the fixed message, without the underlying ones.
    assert_eq!(
        err.message,
        "Kubernetes sandbox lease acquisition failed and cleanup was incomplete."
    );
    assert_eq!((err.class, err.code), (ErrorClass::Error, None));
}

#[tokio::test]
async fn tenant_errors_pass_through_with_their_code() {
    let h = Harness::new(cluster().script(
        ApiMethod::ReadNamespace,
        throws(403, "namespaces \"paperclip-acme\" is forbidden"),
    ));
    let err = h
        .provider
        .acquire_lease(&acquire_params("sandbox-cr"), &RecordingSink::default())
        .await
        .unwrap_err();
    assert_eq!(
        (err.message.as_str(), err.code),
        ("namespaces \"paperclip-acme\" is forbidden", Some(403))
    );
}

/// The summary's lines.
fn summary_lines(result: &Value) -> Vec<String> {
    result["summary"]
        .as_str()
        .unwrap()
        .split('\n')
        .map(str::to_string)
        .collect()
}

#[tokio::test]
async fn probe_outcomes() {
    let sink = RecordingSink::default();
    let h = Harness::new(cluster().script(ApiMethod::ListNamespacedPod, throws(404, "nf")));
    let result = h
        .provider
        .probe(
            &json!({"config": config("sandbox-cr"), "companyId": "c"}),
            &sink,
        )
        .await
        .unwrap();
    // The original's first line and metadata keys, then one line per check (issue #37, a
    // deliberate difference: docs/wire-parity.md).
    assert_eq!(result["ok"], true, "{result}");
    let lines = summary_lines(&result);
    assert_eq!(
        lines[..4],
        [
            "Kubernetes cluster reachable. Tenant namespace: paperclip-acme.",
            "Sandbox API agents.x-k8s.io: served in v1alpha1; leases use v1alpha1.",
            "Permissions: all 33 the config needs are granted.",
            "Tenant namespace paperclip-acme: exists.",
        ]
    );
    assert_eq!(result["metadata"]["namespace"], NS);
    assert_eq!(result["metadata"]["provider"], "kubernetes");
    assert_eq!(h.calls()[0].1, json!({"namespace": NS}));
    assert_eq!(
        h.methods()[0],
        ApiMethod::ListNamespacedPod,
        "the original's request first"
    );
    let h =
        Harness::new(cluster().script(ApiMethod::ListNamespacedPod, throws(401, "Unauthorized")));
    let result = h
        .provider
        .probe(
            &json!({"config": config("sandbox-cr"), "companyId": "c"}),
            &sink,
        )
        .await
        .unwrap();
    assert_eq!(result["ok"], false);
    assert_eq!(
        summary_lines(&result)[..2],
        ["Kubernetes cluster probe failed.", "Unauthorized"]
    );
    assert_eq!(result["metadata"]["error"], "Unauthorized");
    assert_eq!(
        h.methods(),
        [ApiMethod::ListNamespacedPod],
        "nothing after a failure"
    );
    let result = h
        .provider
        .probe(&json!({"config": {}}), &sink)
        .await
        .unwrap();
    assert_eq!(
        result["summary"],
        "Invalid Kubernetes provider configuration."
    );
}

#[tokio::test]
async fn probe_with_the_real_connector_reports_credential_errors_without_secrets() {
    let provider = KubernetesProvider::new();
    let sink = RecordingSink::default();
    let blank = json!({"config": {"kubeconfig": "   ", "companySlug": "acme"}, "companyId": "c"});
    let result = provider.probe(&blank, &sink).await.unwrap();
    assert_eq!(
        result["metadata"]["error"],
        "createKubeConfig requires either inCluster=true or a kubeconfig string"
    );
    assert_eq!(
        summary_lines(&result)[1],
        "createKubeConfig requires either inCluster=true or a kubeconfig string"
    );
    let canary = "CANARY-7f3a9c1e5b2d4f60";
    let broken =
        format!("apiVersion: v1\nkind: Config\nusers: [ {{name: u, user: {{token: {canary}}}\n");
    let params = json!({"config": {"kubeconfig": broken, "companySlug": "acme"}, "companyId": "c"});
    let result = provider.probe(&params, &sink).await.unwrap();
    assert_eq!(
        summary_lines(&result)[0],
        "Kubernetes cluster probe failed."
    );
    assert!(!result.to_string().contains(canary), "{result}");
    let err = provider
        .acquire_lease(
            &json!({"config": {"kubeconfig": broken}, "companyId": "c", "runId": "r"}),
            &sink,
        )
        .await
        .unwrap_err();
    assert!(!err.message.contains(canary), "{}", err.message);
    assert!(!format!("{:?}", sink.logs.lock().unwrap()).contains(canary));
    // A well-formed kubeconfig whose server refuses connections.
    let unreachable = format!(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: k\n  cluster:\n    server: https://127.0.0.1:9\ncontexts:\n- name: c\n  context:\n    cluster: k\n    user: u\nusers:\n- name: u\n  user:\n    token: {canary}\n"
    );
    let params =
        json!({"config": {"kubeconfig": unreachable, "companySlug": "acme"}, "companyId": "c"});
    let result = provider.probe(&params, &sink).await.unwrap();
    assert_eq!(
        summary_lines(&result)[0],
        "Kubernetes cluster probe failed."
    );
    let error = result["metadata"]["error"].as_str().unwrap();
    assert!(!error.is_empty() && !error.contains(canary), "{error}");
}

#[tokio::test]
async fn resume_states() {
    let params = |backend: &str| {
        json!({"config": config("sandbox-cr"), "companyId": "c", "environmentId": "e", "providerLeaseId": "pc-1",
        "leaseMetadata": {"namespace": NS, "backend": backend, "expiresAt": "2999-01-01T00:00:00.000Z",
            "scopedNetworkPolicyName": "pc-1-egress", "scopedNetworkEgress": {"allowFqdns": ["a.io"]}}})
    };
    let h = Harness::new(cluster().script(ApiMethod::ReadNamespacedJobStatus, throws(404, "nf")));
    let result = h
        .provider
        .resume_lease(&params("job"), &RecordingSink::default())
        .await
        .unwrap();
    assert_eq!(
        result,
        json!({"providerLeaseId": null, "metadata": {"expired": true, "reason": "Job no longer exists"}})
    );
    let h = Harness::new(
        cluster()
            .script(
                ApiMethod::GetNamespacedCustomObject,
                returns(json!({"status": {"phase": "Ready", "podName": "pod-a"}})),
            )
            .script(
                ApiMethod::ReadNamespacedPod,
                returns(json!({"metadata": {"uid": "uid-a"}, "status": {"phase": "Running"}})),
            ),
    );
    let result = h
        .provider
        .resume_lease(&params("sandbox-cr"), &RecordingSink::default())
        .await
        .unwrap();
    assert_eq!(
        result,
        json!({"providerLeaseId": "pc-1", "metadata": {"namespace": NS, "jobName": "pc-1", "podName": "pod-a",
            "secretName": "pc-1-env", "phase": "Running", "backend": "sandbox-cr",
            "scopedNetworkPolicyName": "pc-1-egress",
            "scopedNetworkEgress": {"allowFqdns": ["a.io"], "allowCidrs": []},
            "nativeFileSyncUnsupported": false, "expiresAt": "2999-01-01T00:00:00.000Z",
            "remoteCwd": "/workspace", "sandboxApiVersion": "v1alpha1", "resumedLease": true}})
    );
    // Issue #38: the resumed lease's end moved before its check (after the version discovery).
    assert_eq!(
        h.methods()[..3],
        [
            ApiMethod::GetApiVersions,
            ApiMethod::PatchNamespacedCustomObject,
            ApiMethod::GetNamespacedCustomObject
        ]
    );
    // The resumed lease is known Ready: execute skips the readiness poll. Its end moves once
    // more only because the execute may run for its whole timeout (`podActivityDeadlineSec`
    // without one), longer than the resume's end leaves.
    let before = h.calls().len();
    let exec = json!({"config": config("sandbox-cr"), "lease": {"providerLeaseId": "pc-1",
        "metadata": {"namespace": NS, "backend": "sandbox-cr", "podName": "pod-a"}}, "command": "true"});
    h.provider
        .execute(&exec, &RecordingSink::default())
        .await
        .unwrap();
    // Issue #38: and the first execute of the lease in this worker reads its pod's `uid` once,
    // so that a pod replaced under a command by one of the same name is told apart.
    assert_eq!(
        h.methods()[before..],
        [
            ApiMethod::PatchNamespacedCustomObject,
            ApiMethod::ReadNamespacedPod
        ]
    );
    // A short execute right after it leaves the end where it is: no request at all.
    let before = h.calls().len();
    let mut short = exec.clone();
    short["timeoutMs"] = json!(30_000);
    h.provider
        .execute(&short, &RecordingSink::default())
        .await
        .unwrap();
    assert_eq!(h.calls().len(), before);
}

#[tokio::test]
async fn release_absorbs_404_only() {
    let params = json!({"config": config("sandbox-cr"), "companyId": "c", "providerLeaseId": "pc-1",
        "leaseMetadata": {"backend": "job"}});
    let h = Harness::new(cluster().script(ApiMethod::DeleteNamespacedJob, throws(404, "gone")));
    let sink = RecordingSink::default();
    assert_eq!(
        h.provider.release_lease(&params, &sink).await.unwrap(),
        None
    );
    assert_eq!(
        h.calls(),
        vec![(
            ApiMethod::DeleteNamespacedJob,
            json!({"namespace": NS, "name": "pc-1", "propagationPolicy": "Foreground"})
        )]
    );
    let h =
        Harness::new(cluster().script(ApiMethod::DeleteNamespacedJob, throws(500, "etcd down")));
    let err = h.provider.release_lease(&params, &sink).await.unwrap_err();
    assert_eq!((err.message.as_str(), err.code), ("etcd down", Some(500)));
    let none = json!({"config": {}, "providerLeaseId": ""});
    assert_eq!(h.provider.release_lease(&none, &sink).await.unwrap(), None);
    assert_eq!(h.provider.destroy_lease(&none, &sink).await.unwrap(), None);
}

#[tokio::test]
async fn destroy_deletes_everything_and_aggregates() {
    let params = json!({"config": config("sandbox-cr"), "companyId": "c", "providerLeaseId": "pc-1",
        "leaseMetadata": {"podName": "pod-a", "sandboxApiVersion": "v1alpha1"}});
    let h = Harness::new(cluster());
    h.provider
        .destroy_lease(&params, &RecordingSink::default())
        .await
        .unwrap();
    assert_eq!(
        h.methods(),
        vec![
            ApiMethod::DeleteNamespacedCustomObject,
            ApiMethod::DeleteNamespacedPod,
            ApiMethod::DeleteNamespacedSecret
        ]
    );
    assert_eq!(h.calls()[2].1, json!({"namespace": NS, "name": "pc-1-env"}));
    let h = Harness::new(
        cluster()
            .script(ApiMethod::DeleteNamespacedPod, throws(500, "a"))
            .script(ApiMethod::DeleteNamespacedSecret, throws(403, "b")),
    );
    let err = h
        .provider
        .destroy_lease(&params, &RecordingSink::default())
        .await
        .unwrap_err();
    assert_eq!(
        err.message,
        "Failed to delete one or more Kubernetes lease resources"
    );
}

#[tokio::test]
async fn realize_workspace_defaults_to_workspace() {
    let h = Harness::new(cluster());
    let sink = RecordingSink::default();
    let result = h
        .provider
        .realize_workspace(&json!({"workspace": {"remotePath": "  /w/repo "}}), &sink)
        .await
        .unwrap();
    assert_eq!(
        result,
        json!({"cwd": "/w/repo", "metadata": {"provider": "kubernetes", "remoteCwd": "/w/repo"}})
    );
    let result = h
        .provider
        .realize_workspace(&json!({"workspace": {"remotePath": "  "}}), &sink)
        .await
        .unwrap();
    assert_eq!(result["cwd"], "/workspace");
    let err = h
        .provider
        .realize_workspace(&json!({}), &sink)
        .await
        .unwrap_err();
    assert_eq!(
        (err.class, err.message.as_str()),
        (
            ErrorClass::TypeError,
            "Cannot read properties of undefined (reading 'remotePath')"
        )
    );
    assert!(h.calls().is_empty());
}

fn execute_params(extra: Value) -> Value {
    let mut params = json!({"config": config("sandbox-cr"), "companyId": "c",
        "lease": {"providerLeaseId": "pc-1", "metadata": {"namespace": NS, "backend": "sandbox-cr"}}});
    for (k, v) in extra.as_object().unwrap() {
        params[k] = v.clone();
    }
    params
}

fn ready_cluster() -> ScriptedCluster {
    cluster().script(
        ApiMethod::GetNamespacedCustomObject,
        returns(json!({"status": {"phase": "Ready", "podName": "pod-a"}})),
    )
}

#[tokio::test]
async fn execute_streams_exactly_what_it_returns() {
    let chunks = vec![
        (OutputStream::Stdout, "hello ".to_string()),
        (OutputStream::Stderr, "warn\n".to_string()),
        (OutputStream::Stdout, "wörld\n".to_string()),
    ];
    let h = Harness::with_exec(ready_cluster(), Ok((chunks, 3)));
    let sink = RecordingSink::default();
    let params = execute_params(json!({"command": "sh", "args": ["-c", "echo hi"],
        "env": {"FOO": "bar", "PATH": "/x"}, "stdin": "input", "timeoutMs": 60000, "cwd": "/workspace/repo"}));
    let result = h.provider.execute(&params, &sink).await.unwrap();
    assert_eq!(
        result,
        json!({"exitCode": 3, "signal": null, "timedOut": false, "stdout": "hello wörld\n", "stderr": "warn\n",
            "metadata": {"provider": "kubernetes", "backend": "sandbox-cr", "namespace": NS,
                "sandboxName": "pc-1", "podName": "pod-a"}})
    );
    assert_eq!(sink.streamed(OutputStream::Stdout), "hello wörld\n");
    assert_eq!(sink.streamed(OutputStream::Stderr), "warn\n");
    let request = &h.exec_requests()[0];
    assert_eq!(
        request.argv,
        vec![
            "/bin/sh",
            "-c",
            "cd '/workspace/repo' && export FOO='bar'; exec 'sh' '-c' 'echo hi'"
        ]
    );
    assert_eq!(request.stdin, b"input");
    assert_eq!(request.container, "agent");
    assert_eq!((request.pod.as_str(), request.timeout_ms), ("pod-a", 60000));
}

#[tokio::test]
async fn execute_command_shapes() {
    for (extra, argv) in [
        (
            json!({"command": " ls -la "}),
            vec!["/bin/sh", "-lc", "ls -la"],
        ),
        (json!({}), vec!["/bin/sh", "-l"]),
        (
            json!({"command": "node", "args": ["run.js"]}),
            vec!["node", "run.js"],
        ),
    ] {
        let h = Harness::new(ready_cluster());
        h.provider
            .execute(&execute_params(extra), &RecordingSink::default())
            .await
            .unwrap();
        assert_eq!(h.exec_requests()[0].argv, argv);
        assert_eq!(h.exec_requests()[0].timeout_ms, 3_600_000);
    }
}

#[tokio::test]
async fn execute_transport_failures_are_timeouts_with_the_hint() {
    let message = "execInPod timed out after 5000ms (pod=pod-a, container=agent, cmd0=/bin/sh). The WebSocket likely dropped before the command produced a status frame.";
    let h = Harness::with_exec(ready_cluster(), Err(ExecError::Timeout(message.into())));
    let result = h
        .provider
        .execute(
            &execute_params(json!({"command": "true"})),
            &RecordingSink::default(),
        )
        .await
        .unwrap();
    assert_eq!(result["exitCode"], Value::Null);
    assert_eq!(result["timedOut"], true);
    assert_eq!(result["stdout"], "");
    assert_eq!(result["stderr"], message);
    let h = Harness::with_exec(
        ready_cluster(),
        Ok((
            vec![(
                OutputStream::Stderr,
                "curl: (6) Could not resolve host: x.io\n".into(),
            )],
            6,
        )),
    );
    let result = h
        .provider
        .execute(
            &execute_params(json!({"command": "curl x.io"})),
            &RecordingSink::default(),
        )
        .await
        .unwrap();
    assert_eq!(
        result["stderr"],
        "curl: (6) Could not resolve host: x.io\nPaperclip network policy denied or could not route this request. No task-scoped destinations are granted. Request access through executionWorkspaceSettings.networkEgress.\n"
    );
    let sink = RecordingSink::default();
    let result = h
        .provider
        .execute(&execute_params(json!({"command": "curl x.io"})), &sink)
        .await
        .unwrap();
    assert_eq!(sink.streamed(OutputStream::Stderr), result["stderr"]);
}

#[tokio::test]
async fn execute_readiness_outcomes() {
    let h = Harness::new(cluster().script(
        ApiMethod::GetNamespacedCustomObject,
        returns(json!({"status": {"phase": "Pending"}})),
    ));
    let result = h
        .provider
        .execute(
            &execute_params(json!({"timeoutMs": 4000})),
            &RecordingSink::default(),
        )
        .await
        .unwrap();
    assert_eq!(
        result,
        json!({"exitCode": null, "signal": null, "timedOut": true, "stdout": "",
            "stderr": "Sandbox pod did not become Ready within 4000ms",
            "metadata": {"provider": "kubernetes", "backend": "sandbox-cr", "namespace": NS, "sandboxName": "pc-1"}})
    );
    let h = Harness::new(
        cluster()
            .script(
                ApiMethod::GetNamespacedCustomObject,
                returns(json!({"status": {"phase": "Ready"}})),
            )
            .script(ApiMethod::ReadNamespacedPod, throws(404, "nf"))
            .script(ApiMethod::ListNamespacedPod, returns(json!({"items": []}))),
    );
    let result = h
        .provider
        .execute(&execute_params(json!({})), &RecordingSink::default())
        .await
        .unwrap();
    assert_eq!(
        result["stderr"],
        "Sandbox pod is Ready but podName could not be resolved."
    );
    assert_eq!(result["exitCode"], 1);
    let h = Harness::new(cluster().script(
        ApiMethod::GetNamespacedCustomObject,
        returns(json!({"status": {"phase": "Terminating"}})),
    ));
    let err = h
        .provider
        .execute(&execute_params(json!({})), &RecordingSink::default())
        .await
        .unwrap_err();
    assert_eq!(
        err.message,
        "Sandbox paperclip-acme/pc-1 is Terminating \u{2014} cannot wait for Ready"
    );
    let h = Harness::new(cluster().script(
        ApiMethod::GetNamespacedCustomObject,
        throws(404, "sandboxes.agents.x-k8s.io \"pc-1\" not found"),
    ));
    let err = h
        .provider
        .execute(&execute_params(json!({})), &RecordingSink::default())
        .await
        .unwrap_err();
    assert_eq!(err.code, Some(404));
    let result = h
        .provider
        .execute(
            &json!({"config": {}, "lease": {"providerLeaseId": null}}),
            &RecordingSink::default(),
        )
        .await
        .unwrap();
    // G-exec2: `signal: null` here too, where every other execute result has it (compared as
    // text, key order included).
    assert_eq!(
        result.to_string(),
        json!({"exitCode": 1, "signal": null, "timedOut": false, "stdout": "",
               "stderr": "No provider lease ID available for execution."})
        .to_string()
    );
}

#[tokio::test]
async fn execute_job_backend_reports_the_pod_log() {
    let h = Harness::new(
        cluster()
            .script(
                ApiMethod::ReadNamespacedJobStatus,
                returns(json!({"status": {"succeeded": 1}})),
            )
            .script(
                ApiMethod::ListNamespacedPod,
                returns(json!({"items": [{"metadata": {"name": "pc-1-abc"}}]})),
            )
            .script(ApiMethod::ReadNamespacedPodLog, returns(json!("done\n"))),
    );
    let sink = RecordingSink::default();
    let mut params = execute_params(json!({"command": "ignored"}));
    params["lease"]["metadata"]["backend"] = json!("job");
    let result = h.provider.execute(&params, &sink).await.unwrap();
    assert_eq!(
        result,
        json!({"exitCode": 0, "signal": null, "timedOut": false, "stdout": "done\n", "stderr": "",
            "metadata": {"provider": "kubernetes", "backend": "job", "namespace": NS, "jobName": "pc-1",
                "podName": "pc-1-abc", "phase": "Succeeded"}})
    );
    assert_eq!(sink.streamed(OutputStream::Stdout), "done\n");
    assert!(h.exec_requests().is_empty());
    let h = Harness::new(cluster());
    let result = h
        .provider
        .execute(&params, &RecordingSink::default())
        .await
        .unwrap();
    assert_eq!(
        (result["exitCode"].clone(), result["timedOut"].clone()),
        (Value::Null, json!(true))
    );
}

#[tokio::test]
async fn execute_fast_upload_acks_then_flushes_in_one_exec() {
    let target = "/workspace/dir/f.bin";
    let temp = format!("{target}.paperclip-upload.b64");
    let scripts = [
        format!("mkdir -p '/workspace/dir' && rm -f '{temp}' && : > '{temp}'"),
        format!("printf '%s' 'aGVs' >> '{temp}'"),
        format!("printf '%s' 'bG8=' >> '{temp}'"),
    ];
    let h = Harness::new(ready_cluster());
    let sink = RecordingSink::default();
    for script in &scripts {
        let result = h
            .provider
            .execute(
                &execute_params(json!({"command": "sh", "args": ["-c", script]})),
                &sink,
            )
            .await
            .unwrap();
        assert_eq!(
            result,
            json!({"exitCode": 0, "signal": null, "timedOut": false, "stdout": "", "stderr": "",
                "metadata": {"provider": "kubernetes", "backend": "sandbox-cr", "namespace": NS,
                    "sandboxName": "pc-1", "podName": "pod-a", "fastUpload": "ack"}})
        );
    }
    assert!(h.exec_requests().is_empty());
    let finalize = format!("base64 -d < '{temp}' > '{target}' && rm -f '{temp}'");
    let result = h
        .provider
        .execute(
            &execute_params(json!({"command": "sh", "args": ["-c", finalize]})),
            &sink,
        )
        .await
        .unwrap();
    assert_eq!(result["metadata"]["fastUpload"], "flush");
    assert_eq!(result["metadata"]["uploadedBytes"], 5);
    let request = &h.exec_requests()[0];
    assert_eq!(
        request.argv,
        vec![
            "/bin/sh",
            "-c",
            "mkdir -p '/workspace/dir' && head -c 8 | base64 -d > '/workspace/dir/f.bin'"
        ]
    );
    assert_eq!(request.stdin, b"aGVsbG8=");
    assert_eq!(
        request.effective_argv()[2],
        "head -c 8 | { '/bin/sh' '-c' 'mkdir -p '\\''/workspace/dir'\\'' && head -c 8 | base64 -d > '\\''/workspace/dir/f.bin'\\'''; s=$?; cat >/dev/null; exit $s; }"
    );

    // A flush whose exec fails is a timed-out result; release drops the lease's buffers.
    let h = Harness::with_exec(
        ready_cluster(),
        Err(ExecError::Transport("socket closed".into())),
    );
    for script in scripts.iter().take(2).chain([&finalize]) {
        let result = h
            .provider
            .execute(
                &execute_params(json!({"command": "sh", "args": ["-c", script]})),
                &sink,
            )
            .await
            .unwrap();
        if script == &finalize {
            assert_eq!(result["stderr"], "fast-upload flush failed: socket closed");
            // Issue #38: only the exec's watchdog is a timeout.
            assert_eq!(result["timedOut"], false);
            assert_eq!(result["exitCode"], Value::Null);
        }
    }
    h.provider
        .execute(
            &execute_params(json!({"command": "sh", "args": ["-c", scripts[0]]})),
            &sink,
        )
        .await
        .unwrap();
    let release =
        json!({"config": config("sandbox-cr"), "companyId": "c", "providerLeaseId": "pc-1"});
    h.provider.release_lease(&release, &sink).await.unwrap();
    let result = h
        .provider
        .execute(
            &execute_params(json!({"command": "sh", "args": ["-c", scripts[1]]})),
            &sink,
        )
        .await
        .unwrap();
    // No buffer any more: the chunk command runs in the pod.
    assert_eq!(result["stderr"], "socket closed");
}

#[tokio::test]
async fn acquire_adapter_and_deadline_errors_before_the_cluster() {
    let h = Harness::new(cluster());
    let sink = RecordingSink::default();
    let mut params = acquire_params("sandbox-cr");
    params["config"]["adapters"] =
        json!([{"adapterType": "claude_local", "runtimeImage": "img:1"}]);
    params["adapterType"] = json!("codex_local");
    let err = h.provider.acquire_lease(&params, &sink).await.unwrap_err();
    assert_eq!(
        err.message,
        "Adapter \"codex_local\" is not in the configured adapter registry"
    );
    params["config"]["adapters"] = json!([{"adapterType": "codex_local"}]);
    let err = h.provider.acquire_lease(&params, &sink).await.unwrap_err();
    assert_eq!(
        err.message,
        "Adapter \"codex_local\" is missing required runtime field: runtimeImage"
    );
    let mut params = acquire_params("sandbox-cr");
    params["requestedExpiresAt"] = json!("2000-01-01T00:00:00Z");
    let err = h.provider.acquire_lease(&params, &sink).await.unwrap_err();
    assert_eq!(
        err.message,
        "Requested lease deadline (2000-01-01T00:00:00Z) is already past or too close (< 30s) to acquire a bounded lease. Failing closed instead of granting a near-expired lease."
    );
    let err = h
        .provider
        .acquire_lease(&json!({"config": {}}), &sink)
        .await
        .unwrap_err();
    assert_eq!(err.class, ErrorClass::ZodError);
    assert!(h.calls().is_empty());
}

/// The napi layer spawns hook futures on a multi-threaded runtime: they must be `Send`.
#[test]
fn hook_futures_are_send() {
    fn assert_send<T: Send>(_: &T) {}
    let provider = KubernetesProvider::new();
    let sink = RecordingSink::default();
    let params = json!({});
    assert_send(&provider.probe(&params, &sink));
    assert_send(&provider.acquire_lease(&params, &sink));
    assert_send(&provider.resume_lease(&params, &sink));
    assert_send(&provider.release_lease(&params, &sink));
    assert_send(&provider.destroy_lease(&params, &sink));
    assert_send(&provider.realize_workspace(&params, &sink));
    assert_send(&provider.execute(&params, &sink));
    assert_send(&provider.shutdown(&params, &sink));
}

#[tokio::test]
async fn in_cluster_probe_outside_a_cluster_fails_softly() {
    if std::env::var_os("KUBERNETES_SERVICE_HOST").is_some() {
        return;
    }
    let provider = KubernetesProvider::new();
    let result = provider
        .probe(
            &json!({"config": {"inCluster": true, "companySlug": "acme"}, "companyId": "c"}),
            &RecordingSink::default(),
        )
        .await
        .unwrap();
    assert_eq!(result["ok"], false);
    assert_eq!(
        summary_lines(&result)[0],
        "Kubernetes cluster probe failed."
    );
    assert!(!result["metadata"]["error"].as_str().unwrap().is_empty());
}

// ---- later generations: G-apiversion, G-remoteCwd, G-exec2, G-sync/egress acquire cleanup ----

fn calls_of(h: &Harness, method: ApiMethod) -> Vec<Value> {
    h.calls()
        .into_iter()
        .filter(|(m, _)| *m == method)
        .map(|(_, args)| args)
        .collect()
}

#[tokio::test]
async fn acquire_addresses_a_graduated_controller_through_v1beta1() {
    let h = Harness::new(
        serving(&["v1alpha1", "v1beta1"])
            .script(ApiMethod::CreateNamespacedCustomObject, created_uid()),
    );
    let mut params = acquire_params("sandbox-cr");
    params["config"]["egressMode"] = json!("standard");
    let lease = h
        .provider
        .acquire_lease(&params, &RecordingSink::default())
        .await
        .unwrap();
    assert_eq!(lease["metadata"]["sandboxApiVersion"], "v1beta1");
    let created = &calls_of(&h, ApiMethod::CreateNamespacedCustomObject)[0];
    assert_eq!(created["version"], "v1beta1");
    assert_eq!(created["body"]["apiVersion"], "agents.x-k8s.io/v1beta1");
    for policy in calls_of(&h, ApiMethod::CreateNamespacedNetworkPolicy)
        .iter()
        .filter(|p| p["body"]["metadata"]["ownerReferences"].is_array())
    {
        assert_eq!(
            policy["body"]["metadata"]["ownerReferences"][0]["apiVersion"],
            "agents.x-k8s.io/v1beta1"
        );
    }
    let secret = &calls_of(&h, ApiMethod::CreateNamespacedSecret)[0];
    assert_eq!(
        secret["body"]["metadata"]["ownerReferences"][0]["apiVersion"],
        "agents.x-k8s.io/v1beta1"
    );
    // The pod lookup of the same acquire uses it too.
    let read = &calls_of(&h, ApiMethod::GetNamespacedCustomObject)[0];
    assert_eq!(read["version"], "v1beta1");
}

#[tokio::test]
async fn acquire_without_the_sandbox_api_provisions_nothing() {
    let h = Harness::new(ScriptedCluster::new().script(
        ApiMethod::GetApiVersions,
        returns(json!({"groups": [{"name": "batch", "versions": [{"version": "v1"}]}]})),
    ));
    let err = h
        .provider
        .acquire_lease(&acquire_params("sandbox-cr"), &RecordingSink::default())
        .await
        .unwrap_err();
    assert!(
        err.message.contains("kubernetes-sigs/agent-sandbox"),
        "{err:?}"
    );
    assert_eq!(h.methods(), vec![ApiMethod::GetApiVersions]);

    // A failed discovery is not kept: the next acquire asks again.
    let h = Harness::new(ScriptedCluster::new().script(
        ApiMethod::GetApiVersions,
        vec![
            ScriptedReply::Throws(ApiError::new(503, "discovery unavailable")),
            ScriptedReply::Returns(
                json!({"groups": [{"name": "agents.x-k8s.io", "versions": [{"version": "v1alpha1"}]}]}),
            ),
        ],
    )
    .script(ApiMethod::CreateNamespacedCustomObject, created_uid()));
    let err = h
        .provider
        .acquire_lease(&acquire_params("sandbox-cr"), &RecordingSink::default())
        .await
        .unwrap_err();
    assert_eq!(
        (err.message.as_str(), err.code),
        ("discovery unavailable", Some(503))
    );
    assert_eq!(h.methods(), vec![ApiMethod::GetApiVersions]);
    let lease = h
        .provider
        .acquire_lease(&acquire_params("sandbox-cr"), &RecordingSink::default())
        .await
        .unwrap();
    assert_eq!(lease["metadata"]["sandboxApiVersion"], "v1alpha1");
}

#[tokio::test]
async fn the_job_backend_never_discovers() {
    let h = Harness::new(
        ScriptedCluster::new()
            .script(ApiMethod::CreateNamespacedJob, created_uid())
            .script(ApiMethod::ListNamespacedPod, returns(json!({"items": []}))),
    );
    let lease = h
        .provider
        .acquire_lease(&acquire_params("job"), &RecordingSink::default())
        .await
        .unwrap();
    assert!(!h.methods().contains(&ApiMethod::GetApiVersions));
    assert!(lease["metadata"].get("sandboxApiVersion").is_none());
    assert_eq!(lease["metadata"]["remoteCwd"], "/workspace");
    assert_eq!(lease["metadata"]["backend"], "job");
}

#[tokio::test]
async fn acquire_failures_after_the_claim_delete_what_was_created() {
    // The Secret create fails: the Sandbox and the (maybe created) Secret are deleted, and the
    // original error is what the hook rejects with.
    let h = Harness::new(
        cluster()
            .script(ApiMethod::CreateNamespacedCustomObject, created_uid())
            .script(
                ApiMethod::CreateNamespacedSecret,
                throws(500, "secret create rejected"),
            ),
    );
    let err = h
        .provider
        .acquire_lease(&acquire_params("sandbox-cr"), &RecordingSink::default())
        .await
        .unwrap_err();
    assert_eq!(
        (err.message.as_str(), err.code),
        ("secret create rejected", Some(500))
    );
    let name = calls_of(&h, ApiMethod::CreateNamespacedCustomObject)[0]["body"]["metadata"]["name"]
        .as_str()
        .unwrap()
        .to_string();
    let deleted = calls_of(&h, ApiMethod::DeleteNamespacedCustomObject);
    assert_eq!(deleted.len(), 1);
    assert_eq!(deleted[0]["name"], name.as_str());
    assert_eq!(deleted[0]["version"], "v1alpha1");
    assert_eq!(deleted[0]["propagationPolicy"], "Foreground");
    assert_eq!(
        calls_of(&h, ApiMethod::DeleteNamespacedSecret),
        vec![json!({"namespace": NS, "name": format!("{name}-env")})]
    );
    // Pod lookup never ran; no pod is deleted by name (it goes with its Sandbox).
    assert!(!h.methods().contains(&ApiMethod::DeleteNamespacedPod));

    // The follow-up GET fails (job backend: the pod list).
    let h = Harness::new(
        cluster()
            .script(ApiMethod::CreateNamespacedJob, created_uid())
            .script(ApiMethod::ListNamespacedPod, throws(500, "etcd timeout")),
    );
    let err = h
        .provider
        .acquire_lease(&acquire_params("job"), &RecordingSink::default())
        .await
        .unwrap_err();
    assert_eq!(err.message, "etcd timeout");
    assert_eq!(calls_of(&h, ApiMethod::DeleteNamespacedJob).len(), 1);
    assert_eq!(calls_of(&h, ApiMethod::DeleteNamespacedSecret).len(), 1);

    // Cleanup fails too: the fixed message, never the Secret error (it may echo the Secret).
    let h = Harness::new(
        cluster()
            .script(ApiMethod::CreateNamespacedCustomObject, created_uid())
            .script(
                ApiMethod::CreateNamespacedSecret,
                throws(422, "request contained credential-marker"),
            )
            .script(
                ApiMethod::DeleteNamespacedSecret,
                throws(500, "delete failed"),
            ),
    );
    let err = h
        .provider
        .acquire_lease(&acquire_params("sandbox-cr"), &RecordingSink::default())
        .await
        .unwrap_err();
    assert_eq!(
        err.message,
        "Kubernetes sandbox lease acquisition failed and cleanup was incomplete."
    );
    assert_eq!((err.class, err.code), (ErrorClass::Error, None));
    assert!(!format!("{err:?}").contains("credential-marker"));
}

#[tokio::test]
async fn resume_keeps_remote_cwd_and_the_api_version() {
    let h = Harness::new(
        // No discovery scripted: the lease's recorded version is used as it is.
        ScriptedCluster::new()
            .script(
                ApiMethod::GetNamespacedCustomObject,
                returns(json!({"status": {"conditions": [{"type": "Ready", "status": "True"}], "podName": "pod-a"}})),
            )
            .script(
                ApiMethod::ReadNamespacedPod,
                returns(json!({"status": {"phase": "Running"}})),
            ),
    );
    let params = json!({"config": config("sandbox-cr"), "companyId": "c", "providerLeaseId": "pc-1",
        "leaseMetadata": {"namespace": NS, "backend": "sandbox-cr", "remoteCwd": "/workspace/repo",
            "sandboxApiVersion": "v1beta1"}});
    let resumed = h
        .provider
        .resume_lease(&params, &RecordingSink::default())
        .await
        .unwrap();
    assert_eq!(resumed["metadata"]["remoteCwd"], "/workspace/repo");
    assert_eq!(resumed["metadata"]["sandboxApiVersion"], "v1beta1");
    assert!(!h.methods().contains(&ApiMethod::GetApiVersions));
    assert!(
        calls_of(&h, ApiMethod::GetNamespacedCustomObject)
            .iter()
            .all(|c| c["version"] == "v1beta1")
    );
    // A lease without one (or with a blank one) gets /workspace.
    let mut params = params;
    params["leaseMetadata"]["remoteCwd"] = json!("  ");
    let resumed = h
        .provider
        .resume_lease(&params, &RecordingSink::default())
        .await
        .unwrap();
    assert_eq!(resumed["metadata"]["remoteCwd"], "/workspace");
}

#[tokio::test]
async fn release_and_destroy_try_each_version_when_discovery_fails() {
    let failing = || {
        ScriptedCluster::new()
            .script(ApiMethod::GetApiVersions, throws(503, "discovery down"))
            .script(
                ApiMethod::DeleteNamespacedCustomObject,
                vec![
                    ScriptedReply::Throws(ApiError::new(404, "no v1beta1 here")),
                    ScriptedReply::Returns(json!({})),
                ],
            )
    };
    let params = json!({"config": config("sandbox-cr"), "companyId": "c", "providerLeaseId": "pc-1",
        "leaseMetadata": {"namespace": NS, "backend": "sandbox-cr"}});
    let h = Harness::new(failing());
    assert_eq!(
        h.provider
            .release_lease(&params, &RecordingSink::default())
            .await
            .unwrap(),
        None
    );
    let versions: Vec<Value> = calls_of(&h, ApiMethod::DeleteNamespacedCustomObject)
        .into_iter()
        .map(|c| c["version"].clone())
        .collect();
    assert_eq!(versions, [json!("v1beta1"), json!("v1alpha1")]);

    let h = Harness::new(failing());
    h.provider
        .destroy_lease(&params, &RecordingSink::default())
        .await
        .unwrap();
    assert_eq!(
        calls_of(&h, ApiMethod::DeleteNamespacedCustomObject).len(),
        2
    );
    assert_eq!(calls_of(&h, ApiMethod::DeleteNamespacedSecret).len(), 1);

    // With the version on the lease, no discovery and one delete.
    let mut params = params;
    params["leaseMetadata"]["sandboxApiVersion"] = json!("v1alpha1");
    let h = Harness::new(failing());
    h.provider
        .release_lease(&params, &RecordingSink::default())
        .await
        .unwrap();
    assert_eq!(
        h.methods(),
        vec![ApiMethod::DeleteNamespacedCustomObject],
        "the 404 of that one delete is absorbed by release"
    );
}

#[tokio::test]
async fn execute_explains_exits_137_and_143_and_never_claims_a_signal() {
    for (code, stderr, words) in [
        (
            137,
            "boom\n",
            &["boom\n", "SIGKILL", "memory limit", "reports no signal"][..],
        ),
        (143, "", &["SIGTERM", "reports no signal"][..]),
    ] {
        let chunks = vec![(OutputStream::Stderr, stderr.to_string())];
        let h = Harness::with_exec(ready_cluster(), Ok((chunks, code)));
        let sink = RecordingSink::default();
        let result = h
            .provider
            .execute(
                &execute_params(json!({"command": "ls", "args": ["-la"]})),
                &sink,
            )
            .await
            .unwrap();
        assert_eq!(result["exitCode"], code);
        assert_eq!(result["signal"], Value::Null);
        let text = result["stderr"].as_str().unwrap();
        assert!(text.starts_with(stderr));
        for word in words {
            assert!(text.contains(word), "{code}: {word} in {text:?}");
        }
        // Streamed as returned.
        assert_eq!(sink.streamed(OutputStream::Stderr), text);
    }
    let chunks = vec![(OutputStream::Stderr, "usage: ls\n".to_string())];
    let h = Harness::with_exec(ready_cluster(), Ok((chunks, 2)));
    let result = h
        .provider
        .execute(
            &execute_params(json!({"command": "ls"})),
            &RecordingSink::default(),
        )
        .await
        .unwrap();
    assert_eq!(result["stderr"], "usage: ls\n");
    // No cwd and no env: the command goes unwrapped.
    let h = Harness::with_exec(ready_cluster(), Ok((vec![], 0)));
    h.provider
        .execute(
            &execute_params(json!({"command": "ls", "args": ["-la"], "cwd": "   "})),
            &RecordingSink::default(),
        )
        .await
        .unwrap();
    assert_eq!(h.exec_requests()[0].argv, vec!["ls", "-la"]);
}
