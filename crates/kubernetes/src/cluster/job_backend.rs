//! The batch/v1 Job backend: claim, status, pod lookup, release and the completion wait.

use serde_json::{Value, json};

use super::clock::{Clock, PollOptions};
use super::response::{created_uid, pick_pod_name};
use super::status::{SandboxStatus, WorkloadPhase};
use crate::cluster::ClusterApi;
use crate::error::{Error, JOB_CREATED_WITHOUT_UID};
use js_compat::value::{array_items, prop_nullish, prop_str};
use js_compat::{string, value};

/// `createJob`: creates the Job and returns its UID.
pub async fn create_job<C: ClusterApi + ?Sized>(
    cluster: &C,
    namespace: &str,
    manifest: Value,
) -> Result<String, Error> {
    let created = cluster
        .create_namespaced_job(json!({"namespace": namespace, "body": manifest}))
        .await?;
    created_uid(&created).ok_or_else(|| Error::Failed(JOB_CREATED_WITHOUT_UID.into()))
}

/// `getJobStatus`: reads `jobs/status` and maps it.
pub async fn get_job_status<C: ClusterApi + ?Sized>(
    cluster: &C,
    namespace: &str,
    name: &str,
) -> Result<SandboxStatus, Error> {
    let job = cluster
        .read_namespaced_job_status(json!({"namespace": namespace, "name": name}))
        .await?;
    Ok(map_job_status(&job))
}

/// A Job's status in `SandboxStatus` terms. Failure wins over success, success over activity:
/// a `Failed=True` condition or any failed pod, then a `Complete=True` condition or any
/// succeeded pod, then any active pod; otherwise Pending.
pub fn map_job_status(job: &Value) -> SandboxStatus {
    let status = prop_nullish(Some(job), "status");
    // The counters are copied through as sent, 0 when absent.
    let counter = |key: &str| prop_nullish(status, key).cloned().unwrap_or(json!(0));
    let (active, succeeded, failed) = (counter("active"), counter("succeeded"), counter("failed"));
    let conditions = array_items(prop_nullish(status, "conditions"));
    let condition_true = |kind: &str| {
        conditions.iter().find(|c| {
            prop_str(Some(c), "type") == Some(kind) && prop_str(Some(c), "status") == Some("True")
        })
    };
    let failed_condition = condition_true("Failed");
    let complete_condition = condition_true("Complete");

    let base = |phase| SandboxStatus {
        phase,
        complete: false,
        active: active.clone(),
        succeeded: succeeded.clone(),
        failed: failed.clone(),
        reason: None,
        message: None,
    };
    if failed_condition.is_some() || js_greater_than_zero(&failed) {
        return SandboxStatus {
            reason: failed_condition.and_then(|c| c.get("reason")).cloned(),
            message: failed_condition.and_then(|c| c.get("message")).cloned(),
            ..base(WorkloadPhase::Failed)
        };
    }
    if complete_condition.is_some() || js_greater_than_zero(&succeeded) {
        return SandboxStatus {
            complete: true,
            ..base(WorkloadPhase::Succeeded)
        };
    }
    if js_greater_than_zero(&active) {
        return base(WorkloadPhase::Running);
    }
    base(WorkloadPhase::Pending)
}

/// `value > 0` in JS, for a counter the API server should have sent as a number.
fn js_greater_than_zero(value: &Value) -> bool {
    let number = match value {
        Value::Number(n) => n.as_f64().unwrap_or(f64::NAN),
        Value::Bool(b) => f64::from(u8::from(*b)),
        Value::Null => 0.0,
        // Strings, arrays and objects compare through their string form (ToPrimitive).
        other => {
            let text = value::to_string(other);
            let trimmed = string::trim(&text);
            if trimmed.is_empty() {
                0.0
            } else {
                trimmed.parse::<f64>().unwrap_or(f64::NAN)
            }
        }
    };
    number > 0.0
}

/// `findPodForJob`: the pods labelled `job-name=<job>`; the first `Running` one, else the
/// first, else `None`.
pub async fn find_pod_for_job<C: ClusterApi + ?Sized>(
    cluster: &C,
    namespace: &str,
    job_name: &str,
) -> Result<Option<String>, Error> {
    let list = cluster
        .list_namespaced_pod(json!({
            "namespace": namespace,
            "labelSelector": format!("job-name={job_name}"),
        }))
        .await?;
    let pods: Vec<&Value> = array_items(prop_nullish(Some(&list), "items"))
        .iter()
        .collect();
    Ok(pick_pod_name(&pods))
}

/// `deleteJob`: deletes the Job with Foreground propagation.
pub async fn delete_job<C: ClusterApi + ?Sized>(
    cluster: &C,
    namespace: &str,
    name: &str,
) -> Result<(), Error> {
    cluster
        .delete_namespaced_job(json!({
            "namespace": namespace,
            "name": name,
            "propagationPolicy": "Foreground",
        }))
        .await?;
    Ok(())
}

/// `waitForJobCompletion`: polls the status until the Job has Succeeded or Failed, else
/// [`Error::JobTimeout`].
pub async fn wait_for_job_completion<C: ClusterApi + ?Sized>(
    cluster: &C,
    clock: &dyn Clock,
    namespace: &str,
    name: &str,
    options: PollOptions,
) -> Result<SandboxStatus, Error> {
    let deadline = clock.now_ms().saturating_add(options.timeout_ms);
    while clock.now_ms() < deadline {
        let status = get_job_status(cluster, namespace, name).await?;
        if status.phase.is_terminal() {
            return Ok(status);
        }
        clock.sleep(options.poll_ms).await;
    }
    Err(Error::JobTimeout {
        namespace: namespace.into(),
        name: name.into(),
        timeout_ms: options.timeout_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_compare_like_js() {
        assert!(js_greater_than_zero(&json!(1)));
        assert!(!js_greater_than_zero(&json!(0)));
        assert!(js_greater_than_zero(&json!("2")));
        assert!(!js_greater_than_zero(&json!("x")));
        assert!(js_greater_than_zero(&json!(true)));
        assert!(!js_greater_than_zero(&json!(null)));
        assert!(js_greater_than_zero(&json!([3])));
        assert!(!js_greater_than_zero(&json!({})));
    }

    #[test]
    fn failed_wins_and_carries_the_condition_text() {
        let job = json!({"status": {"failed": 1, "succeeded": 1,
            "conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}]}});
        assert_eq!(
            map_job_status(&job).to_json(),
            json!({"phase": "Failed", "complete": false, "active": 0, "succeeded": 1, "failed": 1,
                "reason": "BackoffLimitExceeded"})
        );
    }
}

#[cfg(test)]
mod cluster_tests {
    use super::*;
    use crate::cluster::ApiMethod;
    use crate::cluster::testing::{ManualClock, ScriptedCluster, ScriptedReply};

    #[tokio::test]
    async fn claim_requires_a_uid() {
        let err = create_job(&ScriptedCluster::new(), "ns", json!({}))
            .await
            .unwrap_err();
        assert_eq!(err.to_string(), "Job created without a UID");
    }

    #[tokio::test]
    async fn completion_wait_times_out_as_job_timeout() {
        let running = vec![ScriptedReply::Returns(json!({"status": {"active": 1}}))];
        let cluster = ScriptedCluster::new().script(ApiMethod::ReadNamespacedJobStatus, running);
        let options = PollOptions {
            timeout_ms: 4000,
            poll_ms: 2000,
        };
        let err = wait_for_job_completion(&cluster, &ManualClock::new(), "ns", "pc-1", options)
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "Job ns/pc-1 did not complete within 4000ms"
        );
        assert_eq!(err.js_name(), "JobTimeoutError");
        assert_eq!(cluster.calls().len(), 2);
    }

    #[tokio::test]
    async fn completion_wait_returns_a_finished_job() {
        let replies = vec![
            ScriptedReply::Returns(json!({})),
            ScriptedReply::Returns(json!({"status": {"succeeded": 1}})),
        ];
        let cluster = ScriptedCluster::new().script(ApiMethod::ReadNamespacedJobStatus, replies);
        let status = wait_for_job_completion(
            &cluster,
            &ManualClock::new(),
            "ns",
            "pc-1",
            PollOptions::default(),
        )
        .await
        .unwrap();
        assert_eq!(status.phase, WorkloadPhase::Succeeded);
        assert!(status.complete);
    }
}
