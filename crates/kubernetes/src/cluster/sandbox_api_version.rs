//! Which version of the agent-sandbox `Sandbox` API a cluster is addressed with (G-apiversion), and
//! its discovery through `GET /apis`.
//!
//! G-apiversion: sandbox-cr acquires discover the version before provisioning anything, and
//! record it on the lease; existing leases use the recorded one. [`SandboxApiVersion::default`]
//! (`v1alpha1`, what 1bbb5810 hard-coded) is only what a lease without a Sandbox uses. The
//! manifest the plugin builds is valid under both versions, so only the version in the request
//! path and `apiVersion` differ. The provider keeps one [`SandboxApiVersionCache`] per worker.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;

pub use crate::builders::sandbox_cr::{SANDBOX_GROUP, SANDBOX_PLURAL, SandboxApiVersion};
use crate::cluster::ClusterApi;
use crate::error::Error;
use js_compat::value::{array_items, prop_nullish};

/// `isSandboxApiVersion`: the version recorded in a lease's metadata, if it is one this
/// provider can address (anything else means: discover it again).
pub fn sandbox_api_version_from_metadata(value: Option<&Value>) -> Option<SandboxApiVersion> {
    SandboxApiVersion::from_version(value?.as_str()?)
}

/// A48: the cluster does not serve the Sandbox API group at all.
pub fn group_not_served_message() -> String {
    format!(
        r#"API group {SANDBOX_GROUP} is not served by this cluster. Install the kubernetes-sigs/agent-sandbox controller, or set backend: "job" to dispatch runs as batch/v1 Jobs instead."#
    )
}

/// A49: the group is served, but in no version this provider knows.
pub fn no_known_version_message(served: &[String]) -> String {
    let preference: Vec<&str> = SandboxApiVersion::PREFERENCE
        .iter()
        .map(|v| v.version())
        .collect();
    let served = if served.is_empty() {
        "nothing".to_string()
    } else {
        served.join(", ")
    };
    format!(
        r#"API group {SANDBOX_GROUP} serves none of [{}] (serves: {served}). Upgrade the agent-sandbox controller, or set backend: "job"."#,
        preference.join(", ")
    )
}

/// One uncached discovery: `GET /apis`, then the preferred served version of the group.
pub async fn discover_sandbox_api_version<C: ClusterApi + ?Sized>(
    cluster: &C,
) -> Result<SandboxApiVersion, Error> {
    let list = cluster.get_api_versions().await?;
    let served =
        served_sandbox_versions(&list).ok_or_else(|| Error::Failed(group_not_served_message()))?;
    preferred_sandbox_api_version(&served).ok_or_else(|| {
        let listed: Vec<String> = served.into_iter().map(Option::unwrap_or_default).collect();
        Error::Failed(no_known_version_message(&listed))
    })
}

/// The versions an `APIGroupList` lists for the Sandbox group, or `None` when the group is not
/// in it. A Set in the original: distinct versions, first-seen order. A version entry without a
/// string `version` contributes `undefined` (`None`), which joins as an empty string.
pub fn served_sandbox_versions(list: &Value) -> Option<Vec<Option<String>>> {
    let group = array_items(prop_nullish(Some(list), "groups"))
        .iter()
        .find(|g| prop_nullish(Some(g), "name").and_then(Value::as_str) == Some(SANDBOX_GROUP))?;
    let mut served: Vec<Option<String>> = Vec::new();
    for entry in array_items(prop_nullish(Some(group), "versions")) {
        let version = prop_nullish(Some(entry), "version").map(js_compat::value::to_string);
        if !served.contains(&version) {
            served.push(version);
        }
    }
    Some(served)
}

/// The version of [`SandboxApiVersion::PREFERENCE`] first among those served.
pub fn preferred_sandbox_api_version(served: &[Option<String>]) -> Option<SandboxApiVersion> {
    SandboxApiVersion::PREFERENCE
        .into_iter()
        .find(|v| served.iter().any(|s| s.as_deref() == Some(v.version())))
}

/// Discovery results per API-server URL, for the life of the worker.
///
/// As in the original: callers that arrive while a discovery for the same server is running
/// share its outcome (one request), a success is kept forever, and a failure is not kept, so the
/// next caller discovers again.
#[derive(Debug, Default)]
pub struct SandboxApiVersionCache {
    servers: Mutex<HashMap<String, Arc<ServerSlot>>>,
}

#[derive(Debug, Default)]
struct ServerSlot {
    /// Completed failed discoveries, so a waiter can tell whether one finished while it waited.
    failures: AtomicU64,
    state: tokio::sync::Mutex<SlotState>,
}

#[derive(Debug, Default)]
struct SlotState {
    resolved: Option<SandboxApiVersion>,
    last_failure: Option<(u64, Error)>,
}

impl SandboxApiVersionCache {
    pub fn new() -> Self {
        Self::default()
    }

    /// `resolveSandboxApiVersion(clients, serverUrl)`.
    pub async fn resolve<C: ClusterApi + ?Sized>(
        &self,
        cluster: &C,
        server_url: &str,
    ) -> Result<SandboxApiVersion, Error> {
        let slot = {
            let mut servers = self.servers.lock().expect("api version cache lock");
            servers.entry(server_url.to_string()).or_default().clone()
        };
        let failures_before_waiting = slot.failures.load(Ordering::SeqCst);
        let mut state = slot.state.lock().await;
        if let Some(version) = state.resolved {
            return Ok(version);
        }
        if let Some((failure, err)) = &state.last_failure {
            // A discovery that was in flight when this caller arrived failed: share it.
            if *failure > failures_before_waiting {
                return Err(err.clone());
            }
        }
        match discover_sandbox_api_version(cluster).await {
            Ok(version) => {
                state.resolved = Some(version);
                state.last_failure = None;
                Ok(version)
            }
            Err(err) => {
                let failure = slot.failures.fetch_add(1, Ordering::SeqCst) + 1;
                state.last_failure = Some((failure, err.clone()));
                Err(err)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::ApiMethod;
    use crate::cluster::testing::{ScriptedCluster, ScriptedReply};
    use crate::error::Error;
    use serde_json::json;

    fn groups(versions: &[&str]) -> Value {
        let versions: Vec<Value> = versions.iter().map(|v| json!({"version": v})).collect();
        json!({"groups": [{"name": "apps"}, {"name": SANDBOX_GROUP, "versions": versions}]})
    }

    fn serving(body: Value) -> ScriptedCluster {
        ScriptedCluster::new().script(
            ApiMethod::GetApiVersions,
            vec![ScriptedReply::Returns(body)],
        )
    }

    #[tokio::test]
    async fn prefers_v1beta1_and_falls_back_to_v1alpha1() {
        let both = serving(groups(&["v1alpha1", "v1beta1"]));
        assert_eq!(
            discover_sandbox_api_version(&both).await,
            Ok(SandboxApiVersion::V1beta1)
        );
        let old = serving(groups(&["v1alpha1"]));
        assert_eq!(
            discover_sandbox_api_version(&old).await,
            Ok(SandboxApiVersion::V1alpha1)
        );
    }

    #[tokio::test]
    async fn names_the_missing_controller() {
        let none = serving(json!({"groups": [{"name": "apps"}]}));
        let err = discover_sandbox_api_version(&none).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "API group agents.x-k8s.io is not served by this cluster. Install the kubernetes-sigs/agent-sandbox controller, or set backend: \"job\" to dispatch runs as batch/v1 Jobs instead."
        );
    }

    #[tokio::test]
    async fn lists_what_is_served_when_nothing_is_known() {
        let future = serving(groups(&["v1", "v1"]));
        let err = discover_sandbox_api_version(&future).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "API group agents.x-k8s.io serves none of [v1beta1, v1alpha1] (serves: v1). Upgrade the agent-sandbox controller, or set backend: \"job\"."
        );
        let empty = serving(groups(&[]));
        let err = discover_sandbox_api_version(&empty).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "API group agents.x-k8s.io serves none of [v1beta1, v1alpha1] (serves: nothing). Upgrade the agent-sandbox controller, or set backend: \"job\"."
        );
    }

    #[tokio::test]
    async fn caches_successes_per_server_and_retries_failures() {
        let cache = SandboxApiVersionCache::new();
        let cluster = ScriptedCluster::new().script(
            ApiMethod::GetApiVersions,
            vec![
                ScriptedReply::Throws(Error::new(503, "unavailable")),
                ScriptedReply::Returns(groups(&["v1alpha1"])),
            ],
        );
        let first = cache.resolve(&cluster, "https://a").await;
        assert_eq!(first.unwrap_err().to_string(), "unavailable");
        for _ in 0..2 {
            let again = cache.resolve(&cluster, "https://a").await;
            assert_eq!(again, Ok(SandboxApiVersion::V1alpha1));
        }
        assert_eq!(
            cluster.calls().len(),
            2,
            "the success is served from the cache"
        );
        cache.resolve(&cluster, "https://b").await.unwrap();
        assert_eq!(
            cluster.calls().len(),
            3,
            "each server is discovered on its own"
        );
    }

    #[tokio::test]
    async fn concurrent_first_callers_share_one_discovery() {
        let cache = SandboxApiVersionCache::new();
        let cluster = serving(groups(&["v1beta1"]));
        let (a, b) = tokio::join!(
            cache.resolve(&cluster, "https://a"),
            cache.resolve(&cluster, "https://a")
        );
        assert_eq!(
            (a, b),
            (
                Ok(SandboxApiVersion::V1beta1),
                Ok(SandboxApiVersion::V1beta1)
            )
        );
        assert_eq!(cluster.calls().len(), 1);
    }

    #[test]
    fn reads_known_versions_from_lease_metadata() {
        assert_eq!(
            sandbox_api_version_from_metadata(Some(&json!("v1beta1"))),
            Some(SandboxApiVersion::V1beta1)
        );
        assert_eq!(sandbox_api_version_from_metadata(Some(&json!("v2"))), None);
        assert_eq!(sandbox_api_version_from_metadata(Some(&json!(1))), None);
        assert_eq!(
            SandboxApiVersion::default().api_version(),
            "agents.x-k8s.io/v1alpha1"
        );
    }
}
