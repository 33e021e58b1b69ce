//! What became of the pod an exec ran in, read once after the exec failed or ended the way a
//! deleted pod ends it (issue #38).
//!
//! Exec reports no signal: a command whose pod was deleted (an eviction, a drain, a manual
//! delete) ends with 137 (the runtime's `SIGKILL` after the grace period) or a connection that
//! closes, exactly as an out-of-memory kill or a network fault would. And an exec into a pod
//! that its Sandbox's controller is replacing is refused (`404` while it is gone, `500
//! container not found` while the new one starts). One bounded read of the pod tells them
//! apart: a pod that is gone (404), terminating (`deletionTimestamp`) or another pod by the
//! same name (another `uid` than the one this worker saw) was deleted; a pod whose `agent`
//! container is not running is not ready for an exec yet.

use serde_json::{Value, json};

use super::api::ClusterApi;
use super::api_bound;
use js_compat::value::{array_items, prop_nullish, prop_str};

/// The container every exec targets (`exec::AGENT_CONTAINER`, in the layer above).
const AGENT_CONTAINER: &str = "agent";

/// The bound of one read of the pod after a failed exec.
pub const POD_READ_BOUND_MS: u64 = 3_000;

/// What one read of a pod shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PodFate {
    /// Not there (404), being deleted, or another pod (a new `uid`) by the same name.
    Deleted,
    /// There, but its `agent` container is not running yet (or not any more).
    NotRunning { uid: Option<String> },
    /// There, with its `agent` container running.
    Running { uid: Option<String> },
}

impl PodFate {
    /// The pod's `uid`, when the read found one that is not being deleted.
    pub fn uid(&self) -> Option<&str> {
        match self {
            PodFate::Deleted => None,
            PodFate::NotRunning { uid } | PodFate::Running { uid } => uid.as_deref(),
        }
    }
}

/// Judges one pod object (`known_uid`: the `uid` this worker saw the lease's pod with, if any).
pub fn judge_pod(pod: &Value, known_uid: Option<&str>) -> PodFate {
    let metadata = prop_nullish(Some(pod), "metadata");
    if metadata
        .and_then(|m| m.get("deletionTimestamp"))
        .is_some_and(|d| !d.is_null())
    {
        return PodFate::Deleted;
    }
    let uid = prop_str(metadata, "uid").map(str::to_string);
    if let (Some(known), Some(now)) = (known_uid, uid.as_deref())
        && known != now
    {
        return PodFate::Deleted;
    }
    let statuses = prop_nullish(prop_nullish(Some(pod), "status"), "containerStatuses");
    let running = array_items(statuses).iter().any(|status| {
        prop_str(Some(status), "name") == Some(AGENT_CONTAINER)
            && prop_nullish(prop_nullish(Some(status), "state"), "running").is_some()
    });
    if running {
        PodFate::Running { uid }
    } else {
        PodFate::NotRunning { uid }
    }
}

/// Reads pod `namespace/pod` once, within [`POD_READ_BOUND_MS`]: its fate, or `None` when the
/// read failed otherwise than with a 404 (the API server is away too: nothing can be said).
pub async fn read_pod_fate<C: ClusterApi + ?Sized>(
    cluster: &C,
    namespace: &str,
    pod: &str,
    known_uid: Option<&str>,
) -> Option<PodFate> {
    let read = cluster.read_namespaced_pod(json!({"namespace": namespace, "name": pod}));
    match api_bound::with_api_bound(POD_READ_BOUND_MS, read).await {
        Ok(object) => Some(judge_pod(&object, known_uid)),
        Err(err) if err.is_not_found() => Some(PodFate::Deleted),
        Err(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(uid: &str, deleting: bool, agent_running: bool) -> Value {
        let state = if agent_running {
            json!({"running": {"startedAt": "2026-01-01T00:00:00Z"}})
        } else {
            json!({"waiting": {"reason": "ContainerCreating"}})
        };
        let mut pod = json!({"metadata": {"name": "p", "uid": uid},
            "status": {"containerStatuses": [{"name": "agent", "state": state}]}});
        if deleting {
            pod["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        }
        pod
    }

    #[test]
    fn a_pod_is_deleted_when_terminating_or_another_by_the_same_name() {
        assert_eq!(judge_pod(&pod("u1", true, true), None), PodFate::Deleted);
        assert_eq!(
            judge_pod(&pod("u2", false, true), Some("u1")),
            PodFate::Deleted
        );
        let running = judge_pod(&pod("u1", false, true), Some("u1"));
        assert_eq!(
            running,
            PodFate::Running {
                uid: Some("u1".into())
            }
        );
        assert_eq!(running.uid(), Some("u1"));
        assert_eq!(
            judge_pod(&pod("u3", false, false), None),
            PodFate::NotRunning {
                uid: Some("u3".into())
            }
        );
        // No status at all yet: not running.
        assert!(matches!(
            judge_pod(&json!({"metadata": {"uid": "u4"}}), None),
            PodFate::NotRunning { .. }
        ));
    }
}
