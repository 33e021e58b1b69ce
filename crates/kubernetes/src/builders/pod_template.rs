//! The agent pod both workload kinds run: one hardened `agent` container with writable
//! emptyDirs for the paths an agent writes to. The Sandbox CR and the Job differ only in the
//! fields [`AgentPodSpec`] carries.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::config::DefaultResources;
use js_compat::number;

/// The one container's name; exec and logs address it.
pub const AGENT_CONTAINER_NAME: &str = "agent";
/// The ServiceAccount `ensureTenant` creates in every tenant namespace.
pub const TENANT_SERVICE_ACCOUNT: &str = "paperclip-tenant-sa";
/// HOME must be writable (the root filesystem is read-only), or agent CLIs exit silently.
pub const AGENT_HOME: &str = "/home/paperclip";
/// Uid/gid the agent runs as.
const AGENT_UID: u32 = 1000;

/// Container requests and limits. Each is used whole when given (a partial object is *not*
/// merged with the defaults) and replaced by the default when absent or `null`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct ContainerResources {
    #[serde(default)]
    pub requests: Option<Value>,
    #[serde(default)]
    pub limits: Option<Value>,
}

impl ContainerResources {
    /// `config.defaultResources ?? {}`.
    pub fn from_config(resources: Option<&DefaultResources>) -> Self {
        let Some(resources) = resources else {
            return Self::default();
        };
        Self {
            requests: resources.requests.as_ref().map(|q| q.to_json()),
            limits: resources.limits.as_ref().map(|q| q.to_json()),
        }
    }

    fn to_json(&self) -> Value {
        let requests = self
            .requests
            .clone()
            .unwrap_or_else(|| json!({ "cpu": "250m", "memory": "512Mi" }));
        let limits = self
            .limits
            .clone()
            .unwrap_or_else(|| json!({ "cpu": "2", "memory": "4Gi" }));
        json!({ "requests": requests, "limits": limits })
    }
}

/// The fields in which the two workload kinds' pods differ, plus the caller's choices.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentPodSpec<'a> {
    pub service_account_name: &'a str,
    pub restart_policy: &'static str,
    /// Pod-level `activeDeadlineSeconds` (a JS number), when set.
    pub active_deadline_seconds: Option<f64>,
    /// Emitted only when non-empty.
    pub runtime_class_name: Option<&'a str>,
    /// Emitted only when non-empty.
    pub image_pull_secrets: Option<&'a [String]>,
    pub image: &'a str,
    pub command: Vec<String>,
    pub env_secret_name: &'a str,
    pub resources: &'a ContainerResources,
}

/// The pod spec, keys in the original's order.
pub fn agent_pod_spec(spec: &AgentPodSpec<'_>) -> Value {
    let mut out = Map::new();
    out.insert(
        "serviceAccountName".into(),
        spec.service_account_name.into(),
    );
    // Agents never call the Kubernetes API; a mounted token would only be attack surface.
    out.insert("automountServiceAccountToken".into(), false.into());
    out.insert("restartPolicy".into(), spec.restart_policy.into());
    if let Some(seconds) = spec.active_deadline_seconds {
        out.insert("activeDeadlineSeconds".into(), number::json_value(seconds));
    }
    if let Some(class) = spec.runtime_class_name.filter(|c| !c.is_empty()) {
        out.insert("runtimeClassName".into(), class.into());
    }
    if let Some(secrets) = spec.image_pull_secrets.filter(|s| !s.is_empty()) {
        let refs: Vec<Value> = secrets.iter().map(|name| json!({ "name": name })).collect();
        out.insert("imagePullSecrets".into(), refs.into());
    }
    out.insert(
        "securityContext".into(),
        json!({
            "runAsNonRoot": true,
            "runAsUser": AGENT_UID,
            "runAsGroup": AGENT_UID,
            "fsGroup": AGENT_UID,
            "fsGroupChangePolicy": "OnRootMismatch",
            "seccompProfile": { "type": "RuntimeDefault" },
        }),
    );
    out.insert("containers".into(), json!([agent_container(spec)]));
    out.insert(
        "volumes".into(),
        json!([
            { "name": "workspace", "emptyDir": { "sizeLimit": "8Gi" } },
            { "name": "home", "emptyDir": { "sizeLimit": "1Gi" } },
            { "name": "cache", "emptyDir": { "sizeLimit": "1Gi" } },
            { "name": "tmp", "emptyDir": { "sizeLimit": "2Gi" } },
        ]),
    );
    Value::Object(out)
}

fn agent_container(spec: &AgentPodSpec<'_>) -> Value {
    json!({
        "name": AGENT_CONTAINER_NAME,
        "image": spec.image,
        "imagePullPolicy": "IfNotPresent",
        "command": spec.command,
        "env": [{ "name": "HOME", "value": AGENT_HOME }],
        "envFrom": [{ "secretRef": { "name": spec.env_secret_name } }],
        "securityContext": {
            "runAsNonRoot": true,
            "runAsUser": AGENT_UID,
            "runAsGroup": AGENT_UID,
            "readOnlyRootFilesystem": true,
            "allowPrivilegeEscalation": false,
            "capabilities": { "drop": ["ALL"] },
        },
        "resources": spec.resources.to_json(),
        "volumeMounts": [
            { "name": "workspace", "mountPath": "/workspace" },
            { "name": "home", "mountPath": AGENT_HOME },
            { "name": "cache", "mountPath": "/home/paperclip/.cache" },
            { "name": "tmp", "mountPath": "/tmp" },
        ],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ResourceQuantities;

    #[test]
    fn partial_resources_are_not_merged_with_defaults() {
        let resources = ContainerResources {
            requests: Some(json!({"cpu": "1"})),
            limits: None,
        };
        assert_eq!(
            resources.to_json().to_string(),
            r#"{"requests":{"cpu":"1"},"limits":{"cpu":"2","memory":"4Gi"}}"#
        );
    }

    #[test]
    fn config_resources_convert_whole() {
        let config = DefaultResources {
            requests: Some(ResourceQuantities {
                cpu: None,
                memory: Some("1Gi".into()),
            }),
            limits: None,
        };
        let resources = ContainerResources::from_config(Some(&config));
        assert_eq!(resources.requests, Some(json!({"memory": "1Gi"})));
        assert_eq!(resources.limits, None);
        assert_eq!(
            ContainerResources::from_config(None),
            ContainerResources::default()
        );
    }
}
