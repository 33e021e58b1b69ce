//! A workload create whose outcome is unknown (issue #38).
//!
//! The create of an acquire's Sandbox or Job can fail after the API server made the object: a
//! 5xx written after the effect, a connection that dropped before the reply, a reply cut at the
//! hook's bound, a reply without the object's UID. The original rethrows, and the object (with
//! the pod its controller starts) stays on the cluster under a name the host never learns. Here
//! such a create is looked up by the name it was sent with, and deleted when it is there and
//! carries the labels it was sent with (so a same-named object of another acquire is never
//! touched). A definite refusal (a 4xx the API server answered) made nothing, and nothing is
//! looked up; but a 409 `AlreadyExists` is no refusal here: the name is a new ULID (80 random
//! bits), so the object that holds it is this create's own, made by an attempt whose answer was
//! a 503 or 504 that kube-rs's client then retried (docs/wire-parity.md, "retries").

use serde_json::{Value, json};

use super::sandbox_backend::get_sandbox;
use super::workload::WorkloadOrchestrator;
use crate::cluster::ClusterApi;
use crate::error::Error;

/// Whether a failed create of a freshly named object may have taken effect: anything but a 4xx
/// the API server answered, a 409 included (see the module docs).
pub fn outcome_unknown(err: &Error) -> bool {
    err.is_already_exists()
        || !matches!(err.http_status(), Some(code) if (400..500).contains(&code))
}

/// The message of an acquire whose workload create had an unknown outcome and whose lookup or
/// delete failed too: it names the object, which may exist, so that an operator can delete it.
pub fn unconfirmed_create_message(
    orchestrator: WorkloadOrchestrator,
    namespace: &str,
    name: &str,
) -> String {
    let (kind, resource) = match orchestrator {
        WorkloadOrchestrator::SandboxCr(_) => ("Sandbox", "sandboxes.agents.x-k8s.io"),
        WorkloadOrchestrator::Job => ("Job", "jobs"),
    };
    format!(
        "Kubernetes {kind} {namespace}/{name} may have been created: its create got no clear answer, and looking it up or deleting it failed too; delete it if it exists (kubectl delete {resource} -n {namespace} {name})."
    )
}

/// After a create of the workload `name` whose outcome is unknown: reads it by name and, when
/// it is there with every label of `labels` (the labels it was sent with), deletes it
/// (Foreground: its pod, Secret and policies go with it). `Ok` when nothing of this acquire is
/// left; the lookup's or the delete's error otherwise.
pub async fn delete_unconfirmed_workload<C: ClusterApi + ?Sized>(
    cluster: &C,
    orchestrator: WorkloadOrchestrator,
    namespace: &str,
    name: &str,
    labels: &Value,
) -> Result<(), Error> {
    let found = match orchestrator {
        WorkloadOrchestrator::SandboxCr(version) => {
            get_sandbox(cluster, version, namespace, name).await
        }
        WorkloadOrchestrator::Job => {
            cluster
                .read_namespaced_job_status(json!({"namespace": namespace, "name": name}))
                .await
        }
    };
    let object = match found {
        Ok(object) => object,
        Err(err) if err.is_not_found() => return Ok(()),
        Err(err) => return Err(err),
    };
    if !carries_labels(&object, labels) {
        return Ok(());
    }
    match orchestrator.release(cluster, namespace, name).await {
        Err(err) if !err.is_not_found() => Err(err),
        _ => Ok(()),
    }
}

/// Whether `object`'s labels include every one of `labels`.
fn carries_labels(object: &Value, labels: &Value) -> bool {
    let have = object.pointer("/metadata/labels");
    labels.as_object().is_none_or(|wanted| {
        wanted
            .iter()
            .all(|(k, v)| have.and_then(|h| h.get(k)) == Some(v))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::ApiMethod;
    use crate::cluster::SandboxApiVersion;
    use crate::cluster::testing::{ScriptedCluster, ScriptedReply};

    const NS: &str = "paperclip-acme";
    const NAME: &str = "pc-01";

    #[test]
    fn only_a_refusal_the_api_server_answered_is_a_known_outcome() {
        assert!(outcome_unknown(&Error::new(409, "AlreadyExists")));
        assert!(!outcome_unknown(&Error::new(422, "Invalid")));
        assert!(!outcome_unknown(&Error::new(403, "Forbidden")));
        assert!(outcome_unknown(&Error::new(500, "boom")));
        assert!(outcome_unknown(&Error::new(503, "unavailable")));
        assert!(outcome_unknown(&Error::unanswered("connection closed")));
        assert!(outcome_unknown(&Error::Failed(
            crate::error::SANDBOX_CREATED_WITHOUT_UID.into()
        )));
    }

    #[test]
    fn the_message_names_the_object_and_how_to_delete_it() {
        let sandbox = WorkloadOrchestrator::SandboxCr(SandboxApiVersion::V1beta1);
        assert_eq!(
            unconfirmed_create_message(sandbox, NS, NAME),
            "Kubernetes Sandbox paperclip-acme/pc-01 may have been created: its create got no clear answer, and looking it up or deleting it failed too; delete it if it exists (kubectl delete sandboxes.agents.x-k8s.io -n paperclip-acme pc-01)."
        );
        assert_eq!(
            unconfirmed_create_message(WorkloadOrchestrator::Job, NS, NAME),
            "Kubernetes Job paperclip-acme/pc-01 may have been created: its create got no clear answer, and looking it up or deleting it failed too; delete it if it exists (kubectl delete jobs -n paperclip-acme pc-01)."
        );
    }

    #[tokio::test]
    async fn a_found_object_with_the_labels_sent_is_deleted_and_another_is_not() {
        let labels = json!({"paperclip.io/run-id": "run-1"});
        let ours = json!({"metadata": {"name": NAME, "labels": {"paperclip.io/run-id": "run-1", "x": "y"}}});
        let cluster = ScriptedCluster::new().script(
            ApiMethod::ReadNamespacedJobStatus,
            vec![ScriptedReply::Returns(ours)],
        );
        delete_unconfirmed_workload(&cluster, WorkloadOrchestrator::Job, NS, NAME, &labels)
            .await
            .unwrap();
        let methods: Vec<String> = cluster
            .calls()
            .iter()
            .map(|c| c.method.name().to_string())
            .collect();
        assert_eq!(methods, ["readNamespacedJobStatus", "deleteNamespacedJob"]);

        let theirs =
            json!({"metadata": {"name": NAME, "labels": {"paperclip.io/run-id": "run-2"}}});
        let cluster = ScriptedCluster::new().script(
            ApiMethod::ReadNamespacedJobStatus,
            vec![ScriptedReply::Returns(theirs)],
        );
        delete_unconfirmed_workload(&cluster, WorkloadOrchestrator::Job, NS, NAME, &labels)
            .await
            .unwrap();
        assert_eq!(
            cluster.calls().len(),
            1,
            "another acquire's object is left alone"
        );
    }

    #[tokio::test]
    async fn nothing_there_is_nothing_to_delete_and_a_failed_lookup_fails() {
        let sandbox = WorkloadOrchestrator::SandboxCr(SandboxApiVersion::V1beta1);
        let cluster = ScriptedCluster::new().script(
            ApiMethod::GetNamespacedCustomObject,
            vec![ScriptedReply::Throws(Error::new(404, "not found"))],
        );
        delete_unconfirmed_workload(&cluster, sandbox, NS, NAME, &json!({}))
            .await
            .unwrap();
        assert_eq!(cluster.calls().len(), 1);
        let cluster = ScriptedCluster::new().script(
            ApiMethod::GetNamespacedCustomObject,
            vec![ScriptedReply::Throws(Error::new(503, "unavailable"))],
        );
        let err = delete_unconfirmed_workload(&cluster, sandbox, NS, NAME, &json!({}))
            .await
            .unwrap_err();
        assert_eq!(err.to_string(), "unavailable");
    }
}
