//! The agent-sandbox `Sandbox` custom resource (`sandbox-cr-builder.ts` @ 1bbb581): a
//! long-lived pod that paperclip-server execs into.
//!
//! One code path serves both API versions of the `agents.x-k8s.io` group: the spec sets only
//! fields both versions share: `podTemplate`, and (issue #38, when the input carries a
//! shutdown time) the lifecycle fields `shutdownTime` and `shutdownPolicy: Delete`, which
//! v1alpha1 (agent-sandbox v0.1.1 and later) and v1beta1 both define; never `replicas`, which
//! v1alpha1 has, nor `operatingMode`, which v1beta1 has. 1bbb581 always emits v1alpha1 and no
//! lifecycle fields.

use std::fmt;

use serde::Deserialize;
use serde_json::{Value, json};

use super::labels::pod_template_labels;
use super::pod_template::{AgentPodSpec, ContainerResources, agent_pod_spec};
use super::string_map::{self, string_map_object};
use crate::config::adapters::StringMap;
use js_compat::number;
use sandbox_core::{ProviderError, ProviderResult};

pub const SANDBOX_GROUP: &str = "agents.x-k8s.io";
pub const SANDBOX_PLURAL: &str = "sandboxes";
pub const SANDBOX_KIND: &str = "Sandbox";
/// `spec.shutdownPolicy` of every Sandbox with a shutdown time: at `spec.shutdownTime` the
/// agent-sandbox controller deletes the pod and then the Sandbox itself (`Retain`, the CRD's
/// default, would keep the Sandbox and with it the per-run Secret it owns).
pub const SHUTDOWN_POLICY_DELETE: &str = "Delete";
/// `Number.MAX_SAFE_INTEGER`.
const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

/// The served version of the Sandbox API.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SandboxApiVersion {
    /// What agent-sandbox controllers before v0.5.0 serve, and what 1bbb581 always uses.
    #[default]
    V1alpha1,
    /// The graduated version (agent-sandbox v0.5.0 and later).
    V1beta1,
}

impl SandboxApiVersion {
    /// Discovery preference: the graduated version first.
    pub const PREFERENCE: [SandboxApiVersion; 2] =
        [SandboxApiVersion::V1beta1, SandboxApiVersion::V1alpha1];

    /// The version alone, as the customobjects API's `version` parameter takes it.
    pub fn version(self) -> &'static str {
        match self {
            SandboxApiVersion::V1alpha1 => "v1alpha1",
            SandboxApiVersion::V1beta1 => "v1beta1",
        }
    }

    /// `agents.x-k8s.io/<version>`: the CR's `apiVersion` and owner references' `apiVersion`.
    pub fn api_version(self) -> &'static str {
        match self {
            SandboxApiVersion::V1alpha1 => "agents.x-k8s.io/v1alpha1",
            SandboxApiVersion::V1beta1 => "agents.x-k8s.io/v1beta1",
        }
    }

    /// The version named by `v1alpha1`/`v1beta1`; other values are not addressable.
    pub fn from_version(version: &str) -> Option<Self> {
        Self::PREFERENCE
            .into_iter()
            .find(|v| v.version() == version)
    }
}

impl fmt::Display for SandboxApiVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.version())
    }
}

/// A bounded lease's stop (see [`crate::lease::expiry`]). Both are JS numbers.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HardStop {
    /// Absolute Unix seconds at which the entrypoint exits. Unlike `activeDeadlineSeconds`, it
    /// does not drift by the pod's scheduling and image-pull time.
    pub at_epoch_sec: f64,
    /// Backstop pod `activeDeadlineSeconds`, counted by Kubernetes from pod start.
    pub active_deadline_seconds: f64,
}

/// Input of [`build_sandbox_cr_manifest`].
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxCrManifestInput {
    pub namespace: String,
    pub sandbox_name: String,
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
    #[serde(default)]
    pub image_pull_secrets: Option<Vec<String>>,
    /// Absent for leases without a requested deadline: their pod lives until released.
    #[serde(default)]
    pub hard_stop: Option<HardStop>,
    #[serde(default)]
    pub api_version: SandboxApiVersion,
    /// Issue #38: when the controller ends the Sandbox by itself (`spec.shutdownTime`, an
    /// RFC 3339 time, see [`shutdown_time_text`]). Absent (the original's input), the manifest
    /// carries no lifecycle fields.
    #[serde(default)]
    pub shutdown_time: Option<String>,
}

/// `buildSandboxCrManifest(input)`. No ownerReferences: paperclip-server runs outside the
/// cluster, so nothing in it could own the CR; release deletes it explicitly, and (issue #38)
/// with a shutdown time the controller deletes it when no hook has used it for a while.
pub fn build_sandbox_cr_manifest(input: &SandboxCrManifestInput) -> ProviderResult<Value> {
    // The pod keeps running between execs: PID 1 sleeps forever, or until the hard stop.
    let script = match &input.hard_stop {
        Some(hard_stop) => hard_stop_entrypoint(hard_stop.at_epoch_sec)?,
        None => "sleep infinity".to_string(),
    };
    let command = ["/usr/bin/tini", "--", "/bin/sh", "-c"]
        .iter()
        .map(|s| s.to_string())
        .chain([script])
        .collect();
    let pod_spec = agent_pod_spec(&AgentPodSpec {
        service_account_name: &input.service_account_name,
        // The sandbox controller requires Always.
        restart_policy: "Always",
        active_deadline_seconds: input.hard_stop.map(|h| h.active_deadline_seconds),
        runtime_class_name: input.runtime_class_name.as_deref(),
        image_pull_secrets: input.image_pull_secrets.as_deref(),
        image: &input.image,
        command,
        env_secret_name: &input.env_secret_name,
        resources: &input.resources,
    });
    let mut manifest = json!({
        "apiVersion": input.api_version.api_version(),
        "kind": SANDBOX_KIND,
        "metadata": {
            "name": input.sandbox_name,
            "namespace": input.namespace,
            "labels": string_map_object(&input.labels),
        },
        "spec": {
            "podTemplate": {
                "metadata": { "labels": string_map_object(&pod_template_labels(&input.labels)) },
                "spec": pod_spec,
            },
        },
    });
    if let Some(shutdown_time) = &input.shutdown_time {
        manifest["spec"]["shutdownTime"] = json!(shutdown_time);
        manifest["spec"]["shutdownPolicy"] = json!(SHUTDOWN_POLICY_DELETE);
    }
    Ok(manifest)
}

/// The JSON merge patch that moves a Sandbox's end to `shutdown_time`. It names the policy
/// too, so that a Sandbox made before issue #38 (no lifecycle fields, the CRD's `Retain` read
/// back as its default) is deleted, not kept, when that time comes.
pub fn sandbox_end_patch(shutdown_time: &str) -> Value {
    json!({"spec": {"shutdownTime": shutdown_time, "shutdownPolicy": SHUTDOWN_POLICY_DELETE}})
}

/// `shutdownTime` as the API server writes a `metav1.Time`: RFC 3339 in UTC, whole seconds
/// (`2026-01-02T03:04:05Z`). `epoch_ms` is rounded up to the next second, so the end written
/// is never earlier than the one computed; `None` past what RFC 3339 can write (year 9999).
pub fn shutdown_time_text(epoch_ms: u64) -> Option<String> {
    const LAST_RFC3339_SECOND: u64 = 253_402_300_799;
    let seconds = epoch_ms.div_ceil(1000);
    if seconds > LAST_RFC3339_SECOND {
        return None;
    }
    let iso = js_compat::date::to_iso_string(seconds as f64 * 1000.0)?;
    Some(
        iso.strip_suffix(".000Z")
            .map_or(iso.clone(), |s| format!("{s}Z")),
    )
}

/// A shell program that sleeps until `at_epoch_sec` and then exits, which ends every exec'd
/// process in the container. A restart after the deadline exits at once, so `restartPolicy:
/// Always` cannot revive the sandbox past the attested expiry. The deadline must be a positive
/// safe integer: it is pasted into a shell script.
fn hard_stop_entrypoint(at_epoch_sec: f64) -> ProviderResult<String> {
    let safe_integer = at_epoch_sec.is_finite()
        && at_epoch_sec.fract() == 0.0
        && at_epoch_sec.abs() <= MAX_SAFE_INTEGER;
    if !safe_integer || at_epoch_sec <= 0.0 {
        return Err(ProviderError::new(format!(
            "Invalid sandbox hard-stop deadline: {}",
            number::to_string(at_epoch_sec)
        )));
    }
    let deadline = at_epoch_sec as i64;
    Ok(format!(
        "deadline={deadline}; now=$(date +%s); [ \"$now\" -lt \"$deadline\" ] || exit 0; exec sleep \"$((deadline - now))\""
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input() -> SandboxCrManifestInput {
        SandboxCrManifestInput {
            namespace: "paperclip-acme".into(),
            sandbox_name: "pc-x".into(),
            adapter_type: "claude_local".into(),
            image: "img:1".into(),
            env_secret_name: "pc-x-env".into(),
            service_account_name: "paperclip-tenant-sa".into(),
            labels: vec![("paperclip.io/run-id".into(), "run-1".into())],
            resources: ContainerResources::default(),
            runtime_class_name: None,
            image_pull_secrets: None,
            hard_stop: None,
            api_version: SandboxApiVersion::default(),
            shutdown_time: None,
        }
    }

    #[test]
    fn a_shutdown_time_ends_the_sandbox_by_deletion_in_both_versions() {
        for version in SandboxApiVersion::PREFERENCE {
            let manifest = build_sandbox_cr_manifest(&SandboxCrManifestInput {
                api_version: version,
                shutdown_time: Some("2026-01-02T03:04:05Z".into()),
                ..input()
            })
            .unwrap();
            let spec_keys: Vec<&String> = manifest["spec"].as_object().unwrap().keys().collect();
            assert_eq!(spec_keys, ["podTemplate", "shutdownTime", "shutdownPolicy"]);
            assert_eq!(manifest["spec"]["shutdownTime"], "2026-01-02T03:04:05Z");
            assert_eq!(manifest["spec"]["shutdownPolicy"], "Delete");
        }
        assert_eq!(
            sandbox_end_patch("2026-01-02T03:04:05Z"),
            json!({"spec": {"shutdownTime": "2026-01-02T03:04:05Z", "shutdownPolicy": "Delete"}})
        );
    }

    #[test]
    fn shutdown_times_are_whole_seconds_rounded_up() {
        assert_eq!(
            shutdown_time_text(1_767_323_045_000).as_deref(),
            Some("2026-01-02T03:04:05Z")
        );
        assert_eq!(
            shutdown_time_text(1_767_323_044_001).as_deref(),
            Some("2026-01-02T03:04:05Z")
        );
        assert_eq!(shutdown_time_text(u64::MAX), None);
        assert_eq!(
            shutdown_time_text(253_402_300_799_000).as_deref(),
            Some("9999-12-31T23:59:59Z")
        );
        assert_eq!(shutdown_time_text(253_402_300_799_001), None, "year 10000");
    }

    #[test]
    fn both_api_versions_share_one_spec() {
        let alpha = build_sandbox_cr_manifest(&input()).unwrap();
        let beta = build_sandbox_cr_manifest(&SandboxCrManifestInput {
            api_version: SandboxApiVersion::V1beta1,
            ..input()
        })
        .unwrap();
        assert_eq!(alpha["apiVersion"], "agents.x-k8s.io/v1alpha1");
        assert_eq!(beta["apiVersion"], "agents.x-k8s.io/v1beta1");
        assert_eq!(alpha["spec"], beta["spec"]);
        let spec_keys: Vec<&String> = beta["spec"].as_object().unwrap().keys().collect();
        assert_eq!(spec_keys, ["podTemplate"], "no replicas, no operatingMode");
        assert!(alpha["metadata"].get("ownerReferences").is_none());
    }

    #[test]
    fn versions_parse_and_print() {
        assert_eq!(
            SandboxApiVersion::from_version("v1beta1"),
            Some(SandboxApiVersion::V1beta1)
        );
        assert_eq!(SandboxApiVersion::from_version("v1"), None);
        assert_eq!(SandboxApiVersion::V1alpha1.to_string(), "v1alpha1");
    }

    #[test]
    fn hard_stop_must_be_a_positive_safe_integer() {
        for (bad, text) in [
            (0.0, "0"),
            (-5.0, "-5"),
            (1_767_229_200.5, "1767229200.5"),
            (9_007_199_254_740_992.0, "9007199254740992"),
            (f64::INFINITY, "Infinity"),
            (f64::NAN, "NaN"),
        ] {
            let err = hard_stop_entrypoint(bad).unwrap_err();
            assert_eq!(
                err.message,
                format!("Invalid sandbox hard-stop deadline: {text}")
            );
        }
        assert_eq!(
            hard_stop_entrypoint(9_007_199_254_740_991.0).unwrap(),
            "deadline=9007199254740991; now=$(date +%s); [ \"$now\" -lt \"$deadline\" ] || exit 0; exec sleep \"$((deadline - now))\""
        );
    }
}
