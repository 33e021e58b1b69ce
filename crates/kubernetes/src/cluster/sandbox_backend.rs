//! The Sandbox CR backend (agent-sandbox `agents.x-k8s.io`, plural `sandboxes`): claim,
//! status, pod lookup, logs, release, and the wait for a Ready pod.
//!
//! Behaviour of the target's `sandbox-cr-orchestrator.ts`: the status uses the *phase* mapping,
//! while the ready-wait also accepts a `Ready=True` condition and fails fast on `Failed` and
//! `Terminating`. Every call is bound to one [`SandboxApiVersion`].

use serde_json::{Value, json};

use super::clock::{Clock, PollOptions};
use super::response::{created_uid, pick_pod_name};
use super::sandbox_api_version::{SANDBOX_GROUP, SANDBOX_PLURAL, SandboxApiVersion};
use super::status::{SandboxStatus, WorkloadPhase};
use crate::cluster::ClusterApi;
use crate::error::{Error, SANDBOX_CREATED_WITHOUT_UID};
use js_compat::value::{array_items, prop_nullish, prop_str};
use js_compat::{string, value};

/// The pod label the agent-sandbox controller puts the Sandbox name in.
pub const SANDBOX_NAME_LABEL: &str = "agents.x-k8s.io/sandbox-name";

/// `{group, version, namespace, plural}` of every Sandbox call.
fn sandbox_request(version: SandboxApiVersion, namespace: &str) -> serde_json::Map<String, Value> {
    let mut request = serde_json::Map::new();
    request.insert("group".into(), json!(SANDBOX_GROUP));
    request.insert("version".into(), json!(version.version()));
    request.insert("namespace".into(), json!(namespace));
    request.insert("plural".into(), json!(SANDBOX_PLURAL));
    request
}

/// The request naming one Sandbox: `{group, version, namespace, plural, name}`.
fn named_sandbox_request(version: SandboxApiVersion, namespace: &str, name: &str) -> Value {
    let mut request = sandbox_request(version, namespace);
    request.insert("name".into(), json!(name));
    Value::Object(request)
}

async fn get_sandbox<C: ClusterApi + ?Sized>(
    cluster: &C,
    version: SandboxApiVersion,
    namespace: &str,
    name: &str,
) -> Result<Value, Error> {
    let request = named_sandbox_request(version, namespace, name);
    cluster.get_namespaced_custom_object(request).await
}

/// `createSandboxCr`: creates the CR and returns its UID.
pub async fn create_sandbox_cr<C: ClusterApi + ?Sized>(
    cluster: &C,
    version: SandboxApiVersion,
    namespace: &str,
    manifest: Value,
) -> Result<String, Error> {
    let mut request = sandbox_request(version, namespace);
    request.insert("body".into(), manifest);
    let created = cluster
        .create_namespaced_custom_object(Value::Object(request))
        .await?;
    created_uid(&created).ok_or_else(|| Error::Failed(SANDBOX_CREATED_WITHOUT_UID.into()))
}

/// `mapSandboxPhase`: a Sandbox CR's `status.phase` in Job terms.
pub fn map_sandbox_phase(cr: &Value) -> SandboxStatus {
    let status = prop_nullish(Some(cr), "status");
    match prop_nullish(status, "phase")
        .and_then(Value::as_str)
        .unwrap_or("Pending")
    {
        "Ready" => SandboxStatus::counted(WorkloadPhase::Running, 1, 0, 0),
        "Terminating" => SandboxStatus {
            reason: Some(json!("Terminating")),
            ..SandboxStatus::counted(WorkloadPhase::Running, 0, 0, 0)
        },
        "Failed" => {
            let failed = array_items(prop_nullish(status, "conditions"))
                .iter()
                .find(|c| prop_str(Some(c), "type") == Some("Failed"));
            SandboxStatus {
                reason: failed.and_then(|c| c.get("reason")).cloned(),
                message: failed.and_then(|c| c.get("message")).cloned(),
                ..SandboxStatus::counted(WorkloadPhase::Failed, 0, 0, 1)
            }
        }
        _ => SandboxStatus::counted(WorkloadPhase::Pending, 0, 0, 0),
    }
}

/// `getSandboxCrStatus`.
pub async fn get_sandbox_cr_status<C: ClusterApi + ?Sized>(
    cluster: &C,
    version: SandboxApiVersion,
    namespace: &str,
    name: &str,
) -> Result<SandboxStatus, Error> {
    let cr = get_sandbox(cluster, version, namespace, name).await?;
    Ok(map_sandbox_phase(&cr))
}

/// `findPodForSandbox`: the pod backing the Sandbox, or `None` when there is none yet.
///
/// 1. `status.podName` of the CR, when it is non-blank (a failed CR read propagates, 404 too);
/// 2. the pod named exactly like the Sandbox (agent-sandbox v0.4.x names it so and labels it
///    only with a hash); a 404 moves on, any other error propagates;
/// 3. the pods labelled `agents.x-k8s.io/sandbox-name=<name>`, re-checked on the label value
///    and never matched by name prefix (that could pick another lease's pod); the first
///    `Running` one, else the first.
pub async fn find_pod_for_sandbox<C: ClusterApi + ?Sized>(
    cluster: &C,
    version: SandboxApiVersion,
    namespace: &str,
    name: &str,
) -> Result<Option<String>, Error> {
    let cr = get_sandbox(cluster, version, namespace, name).await?;
    if let Some(pod_name) = prop_str(prop_nullish(Some(&cr), "status"), "podName")
        && !string::trim(pod_name).is_empty()
    {
        return Ok(Some(pod_name.to_string()));
    }

    match cluster
        .read_namespaced_pod(json!({"namespace": namespace, "name": name}))
        .await
    {
        Ok(pod) => {
            if let Some(pod_name) = prop_nullish(prop_nullish(Some(&pod), "metadata"), "name")
                && value::truthy(Some(pod_name))
            {
                return Ok(Some(value::to_string(pod_name)));
            }
        }
        Err(err) if err.is_not_found() => {}
        Err(err) => return Err(err),
    }

    let selector = format!("{SANDBOX_NAME_LABEL}={name}");
    let list = cluster
        .list_namespaced_pod(json!({"namespace": namespace, "labelSelector": selector}))
        .await?;
    let matching: Vec<&Value> = array_items(prop_nullish(Some(&list), "items"))
        .iter()
        .filter(|pod| {
            let labels = prop_nullish(prop_nullish(Some(pod), "metadata"), "labels");
            prop_nullish(labels, SANDBOX_NAME_LABEL).and_then(Value::as_str) == Some(name)
        })
        .collect();
    Ok(pick_pod_name(&matching))
}

/// `deleteSandboxCr`: deletes the CR with Foreground propagation (the controller removes the
/// pod; the Secret and scoped policies go through their ownerReferences).
pub async fn delete_sandbox_cr<C: ClusterApi + ?Sized>(
    cluster: &C,
    version: SandboxApiVersion,
    namespace: &str,
    name: &str,
) -> Result<(), Error> {
    let mut request = sandbox_request(version, namespace);
    request.insert("name".into(), json!(name));
    request.insert("propagationPolicy".into(), json!("Foreground"));
    cluster
        .delete_namespaced_custom_object(Value::Object(request))
        .await?;
    Ok(())
}

/// A16/A18/A19's sandbox reference.
fn sandbox_ref(namespace: &str, name: &str) -> String {
    format!("Sandbox {namespace}/{name}")
}

/// `waitForSandboxReady`: polls the CR until its pod can be exec'd into.
///
/// Ready (a `Ready` condition with status `True`, or `phase: Ready`) returns the *phase* mapping
/// of that CR, so a condition-only Ready reports `Pending`, as in the original. Failed and
/// Terminating fail at once; API errors (404 included) propagate without retry; running out of
/// time is [`Error::SandboxReadyTimeout`]. It polls; it never watches.
pub async fn wait_for_sandbox_ready<C: ClusterApi + ?Sized>(
    cluster: &C,
    clock: &dyn Clock,
    version: SandboxApiVersion,
    namespace: &str,
    name: &str,
    options: PollOptions,
) -> Result<SandboxStatus, Error> {
    let deadline = clock.now_ms().saturating_add(options.timeout_ms);
    while clock.now_ms() < deadline {
        let cr = get_sandbox(cluster, version, namespace, name).await?;
        match readiness(&cr) {
            Readiness::Ready => return Ok(map_sandbox_phase(&cr)),
            Readiness::Failed { reason, message } => {
                return Err(Error::Failed(format!(
                    "{} failed: {reason} \u{2014} {message}",
                    sandbox_ref(namespace, name)
                )));
            }
            Readiness::Terminating => {
                return Err(Error::Failed(format!(
                    "{} is Terminating \u{2014} cannot wait for Ready",
                    sandbox_ref(namespace, name)
                )));
            }
            Readiness::NotYet => clock.sleep(options.poll_ms).await,
        }
    }
    Err(Error::SandboxReadyTimeout {
        namespace: namespace.into(),
        name: name.into(),
        timeout_ms: options.timeout_ms,
    })
}

/// What one poll of the ready-wait concluded.
enum Readiness {
    Ready,
    Failed { reason: String, message: String },
    Terminating,
    NotYet,
}

/// A status condition's `type`.
fn condition_type(condition: &Value) -> Option<&str> {
    prop_str(Some(condition), "type")
}

fn readiness(cr: &Value) -> Readiness {
    let status = prop_nullish(Some(cr), "status");
    let conditions = array_items(prop_nullish(status, "conditions"));
    let ready_condition = conditions
        .iter()
        .find(|c| condition_type(c) == Some("Ready"));
    // A `Ready=False` whose reason says "failed" is picked as the failure condition, but it only
    // fails the wait if its status is "True", which it is not: kept as the original has it (its
    // reason still names the failure when the phase is Failed).
    let failed_condition = conditions.iter().find(|c| match condition_type(c) {
        Some("Failed") => true,
        Some("Ready") => {
            prop_str(Some(c), "status") == Some("False")
                && c.get("reason")
                    .and_then(Value::as_str)
                    // `/failed/i` without the `u` flag folds ASCII letters only.
                    .is_some_and(|r| r.to_ascii_lowercase().contains("failed"))
        }
        _ => false,
    });
    let phase = prop_nullish(status, "phase");
    let phase_is = |expected: &str| phase.and_then(Value::as_str) == Some(expected);
    let status_true = |c: Option<&Value>| prop_str(c, "status") == Some("True");

    if status_true(ready_condition) || phase_is("Ready") {
        return Readiness::Ready;
    }
    if status_true(failed_condition) || phase_is("Failed") {
        let mapped = map_sandbox_phase(cr);
        let reason = mapped
            .reason_value()
            .or_else(|| prop_nullish(failed_condition, "reason"))
            .map_or_else(|| "unknown reason".to_string(), value::to_string);
        let message = mapped
            .message_value()
            .or_else(|| prop_nullish(failed_condition, "message"))
            .map_or_else(String::new, value::to_string);
        return Readiness::Failed { reason, message };
    }
    if phase_is("Terminating") {
        return Readiness::Terminating;
    }
    Readiness::NotYet
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::ApiMethod;
    use crate::cluster::testing::{ManualClock, ScriptedCluster, ScriptedReply};
    use crate::error::Error;

    const NS: &str = "paperclip-acme";
    const NAME: &str = "pc-01";

    fn sandbox_returning(bodies: Vec<Value>) -> ScriptedCluster {
        let replies = bodies.into_iter().map(ScriptedReply::Returns).collect();
        ScriptedCluster::new().script(ApiMethod::GetNamespacedCustomObject, replies)
    }

    async fn wait(
        cluster: &ScriptedCluster,
        clock: &ManualClock,
        options: PollOptions,
    ) -> Result<SandboxStatus, Error> {
        let version = SandboxApiVersion::V1alpha1;
        wait_for_sandbox_ready(cluster, clock, version, NS, NAME, options).await
    }

    #[tokio::test]
    async fn failed_phase_names_the_failed_condition() {
        let cluster = sandbox_returning(vec![json!({"status": {"phase": "Failed",
            "conditions": [{"type": "Failed", "reason": "OOMKilled", "message": "out of memory"}]}})]);
        let err = wait(&cluster, &ManualClock::new(), PollOptions::default())
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "Sandbox paperclip-acme/pc-01 failed: OOMKilled \u{2014} out of memory"
        );
        assert_eq!(err.js_name(), "Error");
    }

    #[tokio::test]
    async fn failure_without_details_says_unknown_reason() {
        let cluster = sandbox_returning(vec![json!({"status": {"phase": "Failed"}})]);
        let err = wait(&cluster, &ManualClock::new(), PollOptions::default())
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "Sandbox paperclip-acme/pc-01 failed: unknown reason \u{2014} "
        );
    }

    #[tokio::test]
    async fn failed_phase_falls_back_to_a_failed_ready_condition() {
        let cluster = sandbox_returning(vec![json!({"status": {"phase": "Failed",
            "conditions": [{"type": "Ready", "status": "False", "reason": "PodFailed", "message": "exit 1"}]}})]);
        let err = wait(&cluster, &ManualClock::new(), PollOptions::default())
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "Sandbox paperclip-acme/pc-01 failed: PodFailed \u{2014} exit 1"
        );
    }

    #[tokio::test]
    async fn a_failed_ready_condition_alone_keeps_waiting() {
        // Its status is "False", so it never meets the `status === "True"` failure test.
        let cluster = sandbox_returning(vec![json!({"status": {
            "conditions": [{"type": "Ready", "status": "False", "reason": "PodFailed"}]}})]);
        let options = PollOptions {
            timeout_ms: 3000,
            poll_ms: 1000,
        };
        let err = wait(&cluster, &ManualClock::new(), options)
            .await
            .unwrap_err();
        assert!(matches!(err, Error::SandboxReadyTimeout { .. }));
    }

    #[tokio::test]
    async fn terminating_fails_fast() {
        let cluster = sandbox_returning(vec![json!({"status": {"phase": "Terminating"}})]);
        let err = wait(&cluster, &ManualClock::new(), PollOptions::default())
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "Sandbox paperclip-acme/pc-01 is Terminating \u{2014} cannot wait for Ready"
        );
        assert_eq!(cluster.calls().len(), 1);
    }

    #[tokio::test]
    async fn times_out_after_polling_on_the_clock() {
        let cluster = sandbox_returning(vec![json!({"status": {"phase": "Pending"}})]);
        let clock = ManualClock::new();
        let options = PollOptions {
            timeout_ms: 5000,
            poll_ms: 2000,
        };
        let err = wait(&cluster, &clock, options).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "Sandbox paperclip-acme/pc-01 did not reach Ready phase within 5000ms"
        );
        assert_eq!(err.js_name(), "SandboxCrTimeoutError");
        assert_eq!(cluster.calls().len(), 3, "polls at 0, 2000 and 4000 ms");
        assert_eq!(clock.sleeps(), vec![2000, 2000, 2000]);
    }

    #[tokio::test]
    async fn polls_until_ready() {
        let cluster = sandbox_returning(vec![
            json!({"status": {"phase": "Pending"}}),
            json!({"status": {"phase": "Ready"}}),
        ]);
        let status = wait(&cluster, &ManualClock::new(), PollOptions::default())
            .await
            .unwrap();
        assert_eq!(status.phase, WorkloadPhase::Running);
        assert_eq!(cluster.calls().len(), 2);
    }

    #[tokio::test]
    async fn api_errors_propagate_without_retry() {
        let cluster = ScriptedCluster::new().script(
            ApiMethod::GetNamespacedCustomObject,
            vec![ScriptedReply::Throws(Error::new(404, "not found"))],
        );
        let err = wait(&cluster, &ManualClock::new(), PollOptions::default())
            .await
            .unwrap_err();
        assert!(err.is_not_found());
        assert_eq!(cluster.calls().len(), 1);
    }

    #[tokio::test]
    async fn claim_requires_a_uid() {
        let cluster = ScriptedCluster::new();
        let err = create_sandbox_cr(&cluster, SandboxApiVersion::V1alpha1, NS, json!({}))
            .await
            .unwrap_err();
        assert_eq!(err.to_string(), "Sandbox CR created without a UID");

        let created = vec![ScriptedReply::Returns(json!({"metadata": {"uid": "u-1"}}))];
        let cluster =
            ScriptedCluster::new().script(ApiMethod::CreateNamespacedCustomObject, created);
        let uid = create_sandbox_cr(
            &cluster,
            SandboxApiVersion::V1beta1,
            NS,
            json!({"kind": "Sandbox"}),
        )
        .await;
        assert_eq!(uid.unwrap(), "u-1");
        assert_eq!(
            cluster.calls_json(),
            json!([{"api": "custom", "method": "createNamespacedCustomObject", "args": {
                "group": "agents.x-k8s.io", "version": "v1beta1", "namespace": NS,
                "plural": "sandboxes", "body": {"kind": "Sandbox"}}}])
        );
    }

    #[tokio::test]
    async fn exact_name_lookup_errors_other_than_404_propagate() {
        let cluster = ScriptedCluster::new().script(
            ApiMethod::ReadNamespacedPod,
            vec![ScriptedReply::Throws(Error::new(403, "forbidden"))],
        );
        let err = find_pod_for_sandbox(&cluster, SandboxApiVersion::V1alpha1, NS, NAME)
            .await
            .unwrap_err();
        assert_eq!(err.to_string(), "forbidden");
        assert_eq!(cluster.calls().len(), 2, "no label listing after a 403");
    }

    #[tokio::test]
    async fn release_deletes_in_the_foreground() {
        let cluster = ScriptedCluster::new();
        delete_sandbox_cr(&cluster, SandboxApiVersion::V1beta1, NS, NAME)
            .await
            .unwrap();
        assert_eq!(
            cluster.calls_json(),
            json!([{"api": "custom", "method": "deleteNamespacedCustomObject", "args": {
                "group": "agents.x-k8s.io", "version": "v1beta1", "namespace": NS,
                "plural": "sandboxes", "name": NAME, "propagationPolicy": "Foreground"}}])
        );
    }
}
