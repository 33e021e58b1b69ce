//! Resume and destroy of an existing lease: whether it can be resumed, and the deletion of its
//! workload and per-run Secret.
//!
//! Kubernetes pods cannot be restarted in place, so a lease is resumable only while its
//! workload exists and its pod runs; otherwise the host falls back to a fresh acquire. Destroy
//! is the forced cleanup: idempotent, every 404 counting as already done.

use serde_json::{Value, json};

use super::clock::{Clock, PollOptions};
use super::job_backend::{delete_job, find_pod_for_job, get_job_status};
use super::readiness::{ReadinessLimits, wait_for_sandbox_ready_with};
use super::sandbox_api_version::SandboxApiVersion;
use super::sandbox_backend::{delete_sandbox_cr, find_pod_for_sandbox};
use super::status::WorkloadPhase;
use crate::cluster::ClusterApi;
use crate::config::Backend;
use crate::error::{DESTROY_LEASE_FAILED, Error};
use js_compat::value;
use js_compat::value::prop_nullish;

/// Why a lease cannot resume: its Sandbox custom resource is gone (B11 in the error reference).
pub const SANDBOX_CR_GONE: &str = "Sandbox CR no longer exists";
/// Why a lease cannot resume: its Sandbox is Ready but has no pod behind it (B12 in the error
/// reference).
pub const SANDBOX_READY_WITHOUT_POD: &str = "Sandbox is Ready but no backing pod was found";
/// Why a Job lease cannot resume: its Job is gone (first half of B15 in the error reference).
pub const JOB_GONE: &str = "Job no longer exists";

/// Why a lease cannot resume: its pod is gone (B13 in the error reference).
pub fn pod_gone_reason(pod_name: &str) -> String {
    format!("Pod {pod_name} no longer exists")
}

/// Why a lease cannot resume: its pod is not running, and is `terminating`, in another phase,
/// or `in an unknown phase` (B14 in the error reference).
pub fn pod_not_running_reason(pod_name: &str, terminating: bool, phase: Option<&Value>) -> String {
    let state = if terminating {
        "terminating".to_string()
    } else {
        phase.map_or_else(|| "in an unknown phase".to_string(), value::to_string)
    };
    format!("Pod {pod_name} is {state}")
}

/// Why a Job lease cannot resume: its Job has finished (second half of B15 in the error reference).
pub fn job_finished_reason(phase: WorkloadPhase) -> String {
    format!("Job is {}", phase.as_str())
}

/// `ResumeCheckInput`.
#[derive(Debug, Clone, PartialEq)]
pub struct ResumeCheck {
    pub namespace: String,
    /// The workload name, which is the provider lease id.
    pub name: String,
    pub backend: Backend,
    /// The bounded wait for an existing Sandbox to report Ready.
    pub ready_wait: PollOptions,
    /// The config's limits of that wait (`unschedulableGraceSec`).
    pub readiness: ReadinessLimits,
    pub sandbox_api_version: SandboxApiVersion,
}

impl ResumeCheck {
    /// The wait resume uses when the caller does not choose one: 20 s (the original's 30 s
    /// would outlast the host's 30 s call with what comes before and after it: resume as a
    /// whole stays within 25 s, `api_bound::RESUME`), polling every second where the Sandbox
    /// cannot be watched.
    pub const DEFAULT_READY_WAIT: PollOptions = PollOptions {
        timeout_ms: 20_000,
        poll_ms: 1_000,
    };
}

/// `ResumeCheckResult`.
#[derive(Debug, Clone, PartialEq)]
pub enum ResumeCheckResult {
    /// The workload is alive; `phase` is `Running` or `Pending` (a Job whose pod is not up yet).
    Resumable {
        pod_name: Option<String>,
        phase: WorkloadPhase,
    },
    /// The lease cannot be resumed, and why.
    NotResumable { reason: String },
}

impl ResumeCheckResult {
    fn not_resumable(reason: impl Into<String>) -> Self {
        ResumeCheckResult::NotResumable {
            reason: reason.into(),
        }
    }

    /// `{resumable: true, podName, phase}` or `{resumable: false, reason}`.
    pub fn to_json(&self) -> Value {
        match self {
            ResumeCheckResult::Resumable { pod_name, phase } => {
                json!({"resumable": true, "podName": pod_name, "phase": phase.as_str()})
            }
            ResumeCheckResult::NotResumable { reason } => {
                json!({"resumable": false, "reason": reason})
            }
        }
    }
}

/// `checkLeaseResumable`. "Expected" dead states come back as
/// [`ResumeCheckResult::NotResumable`]; unexpected API errors propagate.
pub async fn check_lease_resumable<C: ClusterApi + ?Sized>(
    cluster: &C,
    clock: &dyn Clock,
    check: &ResumeCheck,
) -> Result<ResumeCheckResult, Error> {
    match check.backend {
        Backend::SandboxCr => check_sandbox_resumable(cluster, clock, check).await,
        Backend::Job => check_job_resumable(cluster, check).await,
    }
}

async fn check_sandbox_resumable<C: ClusterApi + ?Sized>(
    cluster: &C,
    clock: &dyn Clock,
    check: &ResumeCheck,
) -> Result<ResumeCheckResult, Error> {
    let (version, namespace, name) = (check.sandbox_api_version, &check.namespace, &check.name);
    // Any failure of the bounded wait (gone, failed, terminating, timed out) means the pod will
    // not come back; it is a reason, not an error.
    // (A request hung inside the wait is cut by the resume hook's API bound.)
    let (wait, limits) = (check.ready_wait, check.readiness);
    if let Err(err) =
        wait_for_sandbox_ready_with(cluster, clock, version, namespace, name, wait, limits).await
    {
        let reason = if err.is_not_found() {
            SANDBOX_CR_GONE.to_string()
        } else {
            err.to_string()
        };
        return Ok(ResumeCheckResult::not_resumable(reason));
    }

    let pod_name = match find_pod_for_sandbox(cluster, version, namespace, name).await {
        Ok(Some(pod_name)) if !pod_name.is_empty() => pod_name,
        Ok(_) => return Ok(ResumeCheckResult::not_resumable(SANDBOX_READY_WITHOUT_POD)),
        // The CR went away between the wait and the lookup.
        Err(err) if err.is_not_found() => {
            return Ok(ResumeCheckResult::not_resumable(SANDBOX_CR_GONE));
        }
        Err(err) => return Err(err),
    };

    // The CR status can lag the pod's deletion, so the pod itself must be Running.
    let pod = match cluster
        .read_namespaced_pod(json!({"namespace": namespace, "name": pod_name}))
        .await
    {
        Ok(pod) => pod,
        Err(err) if err.is_not_found() => {
            return Ok(ResumeCheckResult::not_resumable(pod_gone_reason(&pod_name)));
        }
        Err(err) => return Err(err),
    };
    let phase = prop_nullish(prop_nullish(Some(&pod), "status"), "phase");
    let terminating = value::truthy(
        prop_nullish(Some(&pod), "metadata").and_then(|m| m.get("deletionTimestamp")),
    );
    if phase.and_then(Value::as_str) != Some("Running") || terminating {
        let reason = pod_not_running_reason(&pod_name, terminating, phase);
        return Ok(ResumeCheckResult::not_resumable(reason));
    }
    Ok(ResumeCheckResult::Resumable {
        pod_name: Some(pod_name),
        phase: WorkloadPhase::Running,
    })
}

async fn check_job_resumable<C: ClusterApi + ?Sized>(
    cluster: &C,
    check: &ResumeCheck,
) -> Result<ResumeCheckResult, Error> {
    let status = match get_job_status(cluster, &check.namespace, &check.name).await {
        Ok(status) => status,
        Err(err) if err.is_not_found() => return Ok(ResumeCheckResult::not_resumable(JOB_GONE)),
        Err(err) => return Err(err),
    };
    if status.phase.is_terminal() {
        return Ok(ResumeCheckResult::not_resumable(job_finished_reason(
            status.phase,
        )));
    }
    // A Job whose pod is not scheduled yet is still resumable: execute waits for it.
    let pod_name = find_pod_for_job(cluster, &check.namespace, &check.name).await?;
    let phase = if status.phase == WorkloadPhase::Running {
        WorkloadPhase::Running
    } else {
        WorkloadPhase::Pending
    };
    Ok(ResumeCheckResult::Resumable { pod_name, phase })
}

/// `DestroyLeaseInput`.
#[derive(Debug, Clone, PartialEq)]
pub struct DestroyLease {
    pub namespace: String,
    /// The workload name, which is the provider lease id.
    pub name: String,
    pub backend: Backend,
    /// Deleted explicitly when non-empty.
    pub pod_name: Option<String>,
    /// Deleted explicitly when non-empty.
    pub secret_name: Option<String>,
    pub sandbox_api_version: SandboxApiVersion,
}

/// `destroyLeaseResources`: deletes the workload (Foreground), then the pod, then the Secret,
/// so a wedged controller or a broken ownerReference cannot strand them.
///
/// Every delete is attempted; 404s count as success. One failure is returned as it is; more
/// than one become an `AggregateError` (A20) holding them in order.
pub async fn destroy_lease_resources<C: ClusterApi + ?Sized>(
    cluster: &C,
    lease: &DestroyLease,
) -> Result<(), Error> {
    destroy_lease_resources_trying_versions(cluster, lease, &[lease.sandbox_api_version]).await
}

/// [`destroy_lease_resources`] for a lease whose Sandbox API version is not known (discovery
/// failed): the Sandbox is deleted under each of `versions` in turn (see
/// [`delete_sandbox_cr_trying_versions`]), so the lease cannot be stranded under a version
/// nobody asked for. `lease.sandbox_api_version` is not used.
pub async fn destroy_lease_resources_trying_versions<C: ClusterApi + ?Sized>(
    cluster: &C,
    lease: &DestroyLease,
    versions: &[SandboxApiVersion],
) -> Result<(), Error> {
    let namespace = lease.namespace.as_str();
    let mut failures = Vec::new();
    let workload = match lease.backend {
        Backend::SandboxCr => {
            delete_sandbox_cr_trying_versions(cluster, versions, namespace, &lease.name).await
        }
        Backend::Job => delete_job(cluster, namespace, &lease.name).await,
    };
    record_failure(&mut failures, workload);
    if let Some(pod_name) = lease.pod_name.as_deref().filter(|n| !n.is_empty()) {
        let request = json!({"namespace": namespace, "name": pod_name});
        let deleted = cluster.delete_namespaced_pod(request).await;
        record_failure(&mut failures, deleted.map(drop));
    }
    if let Some(secret_name) = lease.secret_name.as_deref().filter(|n| !n.is_empty()) {
        let request = json!({"namespace": namespace, "name": secret_name});
        let deleted = cluster.delete_namespaced_secret(request).await;
        record_failure(&mut failures, deleted.map(drop));
    }
    match failures.len() {
        0 => Ok(()),
        1 => Err(failures.remove(0)),
        _ => Err(Error::Aggregate {
            message: DESTROY_LEASE_FAILED,
            errors: failures,
        }),
    }
}

/// Deletes the Sandbox `name` (Foreground) under each of `versions` in order until one delete
/// succeeds. A server that does not serve a version answers 404 for it, so a 404 only means
/// "not under this version". When none succeeds: the first error that is not a 404, else the
/// last 404 (the Sandbox is gone under every version).
pub async fn delete_sandbox_cr_trying_versions<C: ClusterApi + ?Sized>(
    cluster: &C,
    versions: &[SandboxApiVersion],
    namespace: &str,
    name: &str,
) -> Result<(), Error> {
    let mut first_failure = None;
    let mut not_found = None;
    for version in versions {
        match delete_sandbox_cr(cluster, *version, namespace, name).await {
            Ok(()) => return Ok(()),
            Err(err) if err.is_not_found() => not_found = Some(err),
            Err(err) => {
                first_failure.get_or_insert(err);
            }
        }
    }
    match first_failure.or(not_found) {
        Some(err) => Err(err),
        None => Ok(()),
    }
}

/// Keeps a delete's failure unless it is a 404 (already gone).
fn record_failure(failures: &mut Vec<Error>, result: Result<(), Error>) {
    if let Err(err) = result
        && !err.is_not_found()
    {
        failures.push(err);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::ApiMethod;
    use crate::cluster::testing::{ManualClock, ScriptedCluster, ScriptedReply};
    use crate::error::Error;

    const NS: &str = "paperclip-acme";
    const NAME: &str = "pc-01";

    fn returns(body: Value) -> Vec<ScriptedReply> {
        vec![ScriptedReply::Returns(body)]
    }

    fn throws(code: u16, message: &str) -> Vec<ScriptedReply> {
        vec![ScriptedReply::Throws(Error::new(code, message))]
    }

    fn check(backend: Backend) -> ResumeCheck {
        ResumeCheck {
            namespace: NS.into(),
            name: NAME.into(),
            backend,
            ready_wait: PollOptions {
                timeout_ms: 3000,
                poll_ms: 1000,
            },
            readiness: ReadinessLimits::default(),
            sandbox_api_version: SandboxApiVersion::V1alpha1,
        }
    }

    async fn reason(cluster: &ScriptedCluster, backend: Backend) -> String {
        match check_lease_resumable(cluster, &ManualClock::new(), &check(backend))
            .await
            .unwrap()
        {
            ResumeCheckResult::NotResumable { reason } => reason,
            other => panic!("expected not resumable, got {other:?}"),
        }
    }

    fn ready_sandbox(pod_name: Option<&str>) -> ScriptedCluster {
        let status = match pod_name {
            Some(pod) => json!({"status": {"phase": "Ready", "podName": pod}}),
            None => json!({"status": {"phase": "Ready"}}),
        };
        ScriptedCluster::new().script(ApiMethod::GetNamespacedCustomObject, returns(status))
    }

    #[tokio::test]
    async fn sandbox_gone_during_the_wait() {
        let cluster =
            ScriptedCluster::new().script(ApiMethod::GetNamespacedCustomObject, throws(404, "nf"));
        assert_eq!(
            reason(&cluster, Backend::SandboxCr).await,
            "Sandbox CR no longer exists"
        );
    }

    #[tokio::test]
    async fn sandbox_gone_between_the_wait_and_the_pod_lookup() {
        let replies = vec![
            ScriptedReply::Returns(json!({"status": {"phase": "Ready"}})),
            ScriptedReply::Throws(Error::new(404, "nf")),
        ];
        let cluster = ScriptedCluster::new().script(ApiMethod::GetNamespacedCustomObject, replies);
        assert_eq!(
            reason(&cluster, Backend::SandboxCr).await,
            "Sandbox CR no longer exists"
        );
    }

    #[tokio::test]
    async fn wait_failures_become_the_reason() {
        let cluster = ScriptedCluster::new().script(
            ApiMethod::GetNamespacedCustomObject,
            returns(json!({"status": {"phase": "Pending"}})),
        );
        assert_eq!(
            reason(&cluster, Backend::SandboxCr).await,
            "Sandbox paperclip-acme/pc-01 did not reach Ready phase within 3000ms"
        );
        let cluster = ScriptedCluster::new().script(
            ApiMethod::GetNamespacedCustomObject,
            throws(500, "HTTP-Code: 500 Message: boom"),
        );
        assert_eq!(
            reason(&cluster, Backend::SandboxCr).await,
            "HTTP-Code: 500 Message: boom"
        );
    }

    #[tokio::test]
    async fn ready_without_a_pod() {
        let cluster = ready_sandbox(None).script(ApiMethod::ReadNamespacedPod, throws(404, "nf"));
        assert_eq!(
            reason(&cluster, Backend::SandboxCr).await,
            "Sandbox is Ready but no backing pod was found"
        );
    }

    #[tokio::test]
    async fn pod_gone() {
        let cluster =
            ready_sandbox(Some("pod-a")).script(ApiMethod::ReadNamespacedPod, throws(404, "nf"));
        assert_eq!(
            reason(&cluster, Backend::SandboxCr).await,
            "Pod pod-a no longer exists"
        );
    }

    #[tokio::test]
    async fn pod_not_running() {
        let pending = ready_sandbox(Some("pod-a")).script(
            ApiMethod::ReadNamespacedPod,
            returns(json!({"status": {"phase": "Pending"}})),
        );
        assert_eq!(
            reason(&pending, Backend::SandboxCr).await,
            "Pod pod-a is Pending"
        );
        let unknown =
            ready_sandbox(Some("pod-a")).script(ApiMethod::ReadNamespacedPod, returns(json!({})));
        assert_eq!(
            reason(&unknown, Backend::SandboxCr).await,
            "Pod pod-a is in an unknown phase"
        );
        let deleting = ready_sandbox(Some("pod-a")).script(
            ApiMethod::ReadNamespacedPod,
            returns(json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}, "status": {"phase": "Running"}})),
        );
        assert_eq!(
            reason(&deleting, Backend::SandboxCr).await,
            "Pod pod-a is terminating"
        );
    }

    #[tokio::test]
    async fn unexpected_pod_read_errors_propagate() {
        let cluster = ready_sandbox(Some("pod-a"))
            .script(ApiMethod::ReadNamespacedPod, throws(403, "forbidden"));
        let err =
            check_lease_resumable(&cluster, &ManualClock::new(), &check(Backend::SandboxCr)).await;
        assert_eq!(err.unwrap_err().to_string(), "forbidden");
    }

    #[tokio::test]
    async fn job_states() {
        let gone =
            ScriptedCluster::new().script(ApiMethod::ReadNamespacedJobStatus, throws(404, "nf"));
        assert_eq!(reason(&gone, Backend::Job).await, "Job no longer exists");
        let failed = ScriptedCluster::new().script(
            ApiMethod::ReadNamespacedJobStatus,
            returns(json!({"status": {"failed": 1}})),
        );
        assert_eq!(reason(&failed, Backend::Job).await, "Job is Failed");
        let pending = ScriptedCluster::new();
        let result = check_lease_resumable(&pending, &ManualClock::new(), &check(Backend::Job))
            .await
            .unwrap();
        assert_eq!(
            result.to_json(),
            json!({"resumable": true, "podName": null, "phase": "Pending"})
        );
        let forbidden = ScriptedCluster::new()
            .script(ApiMethod::ReadNamespacedJobStatus, throws(403, "forbidden"));
        let err =
            check_lease_resumable(&forbidden, &ManualClock::new(), &check(Backend::Job)).await;
        assert_eq!(err.unwrap_err().to_string(), "forbidden");
    }

    fn lease(backend: Backend) -> DestroyLease {
        DestroyLease {
            namespace: NS.into(),
            name: NAME.into(),
            backend,
            pod_name: Some("pod-a".into()),
            secret_name: Some("pc-01-env".into()),
            sandbox_api_version: SandboxApiVersion::V1beta1,
        }
    }

    #[tokio::test]
    async fn destroy_attempts_every_delete_and_aggregates_failures() {
        let cluster = ScriptedCluster::new()
            .script(ApiMethod::DeleteNamespacedJob, throws(500, "job"))
            .script(ApiMethod::DeleteNamespacedPod, throws(404, "gone"))
            .script(ApiMethod::DeleteNamespacedSecret, throws(403, "secret"));
        let err = destroy_lease_resources(&cluster, &lease(Backend::Job))
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "Failed to delete one or more Kubernetes lease resources"
        );
        assert_eq!(
            err.to_js_json(),
            json!({"name": "AggregateError", "message": "Failed to delete one or more Kubernetes lease resources",
                "errors": [{"name": "Error", "message": "job"}, {"name": "Error", "message": "secret"}]})
        );
        assert_eq!(cluster.calls().len(), 3);
    }

    #[tokio::test]
    async fn destroy_skips_empty_names_and_uses_the_lease_version() {
        let cluster = ScriptedCluster::new();
        let mut lease = lease(Backend::SandboxCr);
        lease.pod_name = Some(String::new());
        lease.secret_name = None;
        destroy_lease_resources(&cluster, &lease).await.unwrap();
        let calls = cluster.calls();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].args["version"], "v1beta1");
    }

    #[tokio::test]
    async fn an_unknown_version_is_deleted_under_each_version_in_turn() {
        let replies = vec![
            ScriptedReply::Throws(Error::new(404, "no v1beta1")),
            ScriptedReply::Returns(json!({})),
        ];
        let cluster =
            ScriptedCluster::new().script(ApiMethod::DeleteNamespacedCustomObject, replies);
        let lease = lease(Backend::SandboxCr);
        destroy_lease_resources_trying_versions(&cluster, &lease, &SandboxApiVersion::PREFERENCE)
            .await
            .unwrap();
        let versions: Vec<Value> = cluster
            .calls()
            .into_iter()
            .filter(|c| c.method == ApiMethod::DeleteNamespacedCustomObject)
            .map(|c| c.args["version"].clone())
            .collect();
        assert_eq!(versions, [json!("v1beta1"), json!("v1alpha1")]);
        assert_eq!(cluster.calls().len(), 4, "then the pod and the Secret");

        let cluster = ScriptedCluster::new()
            .script(ApiMethod::DeleteNamespacedCustomObject, throws(404, "gone"));
        let err =
            delete_sandbox_cr_trying_versions(&cluster, &SandboxApiVersion::PREFERENCE, NS, NAME)
                .await
                .unwrap_err();
        assert!(err.is_not_found());
        let replies = vec![
            ScriptedReply::Throws(Error::new(500, "first")),
            ScriptedReply::Throws(Error::new(404, "gone")),
        ];
        let cluster =
            ScriptedCluster::new().script(ApiMethod::DeleteNamespacedCustomObject, replies);
        let err =
            delete_sandbox_cr_trying_versions(&cluster, &SandboxApiVersion::PREFERENCE, NS, NAME)
                .await
                .unwrap_err();
        assert_eq!(err.to_string(), "first");
    }
}
