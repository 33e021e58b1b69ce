//! The labels every object of a run carries and the fixed label keys and values the
//! policies select on.

use serde::Deserialize;

use crate::config::adapters::StringMap;

pub const RUN_ID_LABEL: &str = "paperclip.io/run-id";
pub const AGENT_ID_LABEL: &str = "paperclip.io/agent-id";
pub const COMPANY_ID_LABEL: &str = "paperclip.io/company-id";
pub const ADAPTER_LABEL: &str = "paperclip.io/adapter";
pub const MANAGED_BY_LABEL: &str = "paperclip.io/managed-by";
/// The one value of [`MANAGED_BY_LABEL`]; also the only label of the policy objects.
pub const MANAGED_BY_VALUE: &str = "paperclip-k8s-plugin";
/// Added on pod templates only, so tenant-wide policies select the agent pods and not the
/// Sandbox/Job objects themselves.
pub const ROLE_LABEL: &str = "paperclip.io/role";
pub const ROLE_AGENT: &str = "agent";

/// What the run labels are made of. Acquire passes the run id as `agent_id` too: the real agent
/// id is not available to the plugin.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelsInput {
    pub run_id: String,
    pub agent_id: String,
    pub company_id: String,
    pub adapter_type: String,
}

/// `paperclipLabels(input)`: exactly these five labels, in this order.
pub fn paperclip_labels(input: &LabelsInput) -> StringMap {
    [
        (RUN_ID_LABEL, input.run_id.as_str()),
        (AGENT_ID_LABEL, input.agent_id.as_str()),
        (COMPANY_ID_LABEL, input.company_id.as_str()),
        (ADAPTER_LABEL, input.adapter_type.as_str()),
        (MANAGED_BY_LABEL, MANAGED_BY_VALUE),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// `{...labels, "paperclip.io/role": "agent"}`: a caller's own `role` label keeps its place but
/// takes the value `agent`.
pub fn pod_template_labels(labels: &StringMap) -> StringMap {
    let mut out = labels.clone();
    super::string_map::assign(&mut out, ROLE_LABEL, ROLE_AGENT.to_string());
    out
}

/// `{"paperclip.io/managed-by": "paperclip-k8s-plugin"}` as a JSON object.
pub fn managed_by_labels_json() -> serde_json::Value {
    serde_json::json!({ MANAGED_BY_LABEL: MANAGED_BY_VALUE })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn role_is_forced_to_agent_in_place() {
        let labels: StringMap = vec![
            ("paperclip.io/role".into(), "custom".into()),
            ("team".into(), "a".into()),
        ];
        assert_eq!(
            pod_template_labels(&labels),
            vec![
                ("paperclip.io/role".to_string(), "agent".to_string()),
                ("team".to_string(), "a".to_string())
            ]
        );
    }
}
