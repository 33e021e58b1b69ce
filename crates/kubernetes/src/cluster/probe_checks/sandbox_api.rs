//! The Sandbox API check: whether the cluster serves `agents.x-k8s.io` (agent-sandbox's CRDs),
//! in which versions, and the one leases use; the job backend does not need it.

use serde_json::{Value, json};

use super::report::{Check, Report, one_line};
use crate::cluster::ClusterApi;
use crate::cluster::sandbox_api_version::{
    SANDBOX_GROUP, no_known_version_message, preferred_sandbox_api_version, served_sandbox_versions,
};
use crate::config::Backend;

pub fn sandbox_api_served_line(served: &[String], version: &str) -> String {
    format!(
        "Sandbox API {SANDBOX_GROUP}: served in {}; leases use {version}.",
        served.join(", ")
    )
}

pub fn sandbox_api_not_installed_line() -> String {
    format!(
        r#"Sandbox API {SANDBOX_GROUP}: not served, so the agent-sandbox CRDs are not installed on this cluster. Install kubernetes-sigs/agent-sandbox (v1.0.x), or set backend: "job"."#
    )
}

pub fn sandbox_api_unknown_line(error: &str) -> String {
    format!(
        "Sandbox API {SANDBOX_GROUP}: could not be discovered: {}",
        one_line(error)
    )
}

/// The job backend's Sandbox API line: what it needs instead.
pub const SANDBOX_API_NOT_USED_BY_JOBS: &str = r#"Sandbox API: not used by backend "job" (each run is a batch/v1 Job, run by the cluster's own Job controller; no agent-sandbox install is needed)."#;

/// `GET /apis` (sandbox-cr only): the Sandbox group, the versions served, the one leases use.
pub async fn sandbox_api_check<C: ClusterApi + ?Sized>(cluster: &C, backend: Backend) -> Report {
    const KIND: &str = "sandboxApi";
    if backend == Backend::Job {
        return Report::single(Check::new(KIND, true, SANDBOX_API_NOT_USED_BY_JOBS));
    }
    let list = match cluster.get_api_versions().await {
        Ok(list) => list,
        Err(err) => {
            let line = sandbox_api_unknown_line(&err.to_string());
            return Report::single(Check::new(KIND, false, line).with("error", err.to_string()));
        }
    };
    let Some(served) = served_sandbox_versions(&list) else {
        let check = Check::new(KIND, false, sandbox_api_not_installed_line())
            .with("group", SANDBOX_GROUP)
            .with("served", Value::Array(vec![]));
        return Report::single(check);
    };
    let listed: Vec<String> = served
        .iter()
        .cloned()
        .map(Option::unwrap_or_default)
        .collect();
    let check = match preferred_sandbox_api_version(&served) {
        Some(version) => Check::new(
            KIND,
            true,
            sandbox_api_served_line(&listed, version.version()),
        )
        .with("version", version.version()),
        None => Check::new(KIND, false, no_known_version_message(&listed)),
    };
    Report::single(
        check
            .with("group", SANDBOX_GROUP)
            .with("served", json!(listed)),
    )
}
