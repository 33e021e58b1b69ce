//! The batch/v1 Job backend's workload (`pod-spec-builder.ts` as the G-login set's
//! tests expect it, carried in zhangteng-ruijie/paperclip @ ac6c928): a one-shot run of the
//! agent shim.

use serde::Deserialize;
use serde_json::{Value, json};

use super::labels::pod_template_labels;
use super::pod_template::{AgentPodSpec, ContainerResources, agent_pod_spec};
use super::string_map::{self, string_map_object};
use crate::config::adapters::StringMap;
use js_compat::number;

pub const JOB_API_VERSION: &str = "batch/v1";
pub const JOB_KIND: &str = "Job";
/// Tini as PID 1 (signal forwarding, zombie reaping) running the runtime image's shim.
pub const JOB_COMMAND: [&str; 3] = ["/usr/bin/tini", "--", "/usr/local/bin/paperclip-agent-shim"];

/// Input of [`build_job_manifest`].
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobManifestInput {
    pub namespace: String,
    pub job_name: String,
    /// Carried for the caller's convenience; the manifest does not use it (labels do).
    pub adapter_type: String,
    pub image: String,
    pub env_secret_name: String,
    pub service_account_name: String,
    #[serde(deserialize_with = "string_map::deserialize")]
    pub labels: StringMap,
    #[serde(default)]
    pub resources: ContainerResources,
    #[serde(default)]
    pub runtime_class_name: Option<String>,
    /// Job-level `activeDeadlineSeconds` (config `podActivityDeadlineSec`).
    pub active_deadline_sec: f64,
    /// Config `jobTtlSecondsAfterFinished`.
    pub ttl_seconds_after_finished: f64,
    #[serde(default)]
    pub image_pull_secrets: Option<Vec<String>>,
}

/// `buildJobManifest(input)`: never retried (`backoffLimit: 0`), never restarted, deleted
/// `ttlSecondsAfterFinished` after it ends.
pub fn build_job_manifest(input: &JobManifestInput) -> Value {
    let pod_spec = agent_pod_spec(&AgentPodSpec {
        service_account_name: &input.service_account_name,
        restart_policy: "Never",
        active_deadline_seconds: None,
        runtime_class_name: input.runtime_class_name.as_deref(),
        image_pull_secrets: input.image_pull_secrets.as_deref(),
        image: &input.image,
        command: JOB_COMMAND.iter().map(|s| s.to_string()).collect(),
        env_secret_name: &input.env_secret_name,
        resources: &input.resources,
    });
    json!({
        "apiVersion": JOB_API_VERSION,
        "kind": JOB_KIND,
        "metadata": {
            "name": input.job_name,
            "namespace": input.namespace,
            "labels": string_map_object(&input.labels),
        },
        "spec": {
            "backoffLimit": 0,
            "ttlSecondsAfterFinished": number::json_value(input.ttl_seconds_after_finished),
            "activeDeadlineSeconds": number::json_value(input.active_deadline_sec),
            "template": {
                "metadata": { "labels": string_map_object(&pod_template_labels(&input.labels)) },
                "spec": pod_spec,
            },
        },
    })
}
