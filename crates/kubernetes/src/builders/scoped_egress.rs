//! Egress policies scoped to one run's pod (the per-lease adapter policy and the task grant;
//! `scoped-network-egress.ts` @
//! 1bbb581): the task grant a caller asks for, the hint added to network errors, and the policy
//! object itself. Creating it in the cluster is the orchestrator's job.

use serde::Deserialize;
use serde_json::{Value, json};

use super::cilium::{CiliumNetworkPolicyInput, build_cilium_network_policy_manifest};
use super::labels::RUN_ID_LABEL;
use super::naming::scoped_policy_name;
use super::network_policy::{NetworkPolicyInput, build_network_policy_manifests};
use crate::config::EgressMode;
use crate::config::adapters::StringMap;
use js_compat::string;

/// Where a task asks for egress; named in the hint and in the Secret.
pub const NETWORK_EGRESS_GRANT_PATH: &str = "executionWorkspaceSettings.networkEgress";
/// Suffix of the task policy (the default).
pub const TASK_EGRESS_POLICY_SUFFIX: &str = "-egress";
/// Suffix of the per-lease adapter policy.
pub const ADAPTER_EGRESS_POLICY_SUFFIX: &str = "-adapter-egress";

/// Destinations a task may reach beyond the lease's base policy.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScopedNetworkEgressGrant {
    pub allow_fqdns: Vec<String>,
    pub allow_cidrs: Vec<String>,
}

impl ScopedNetworkEgressGrant {
    pub fn is_empty(&self) -> bool {
        self.allow_fqdns.is_empty() && self.allow_cidrs.is_empty()
    }

    pub fn to_json(&self) -> Value {
        json!({ "allowFqdns": self.allow_fqdns, "allowCidrs": self.allow_cidrs })
    }
}

/// `parseScopedNetworkEgressGrant(settings)`: reads `settings.networkEgress.{allowFqdns,
/// allowCidrs}`. Anything that is not a plain object gives an empty grant; non-string and blank
/// entries are dropped; entries are trimmed and de-duplicated in first-seen order. FQDNs are
/// lower-cased *after* de-duplication, so `GitHub.com` and `github.com` both remain.
pub fn parse_scoped_network_egress_grant(settings: Option<&Value>) -> ScopedNetworkEgressGrant {
    let Some(network_egress) = settings
        .and_then(Value::as_object)
        .and_then(|s| s.get("networkEgress"))
        .and_then(Value::as_object)
    else {
        return ScopedNetworkEgressGrant::default();
    };
    let entries = |key: &str| -> Vec<String> {
        let Some(items) = network_egress.get(key).and_then(Value::as_array) else {
            return Vec::new();
        };
        let mut unique: Vec<String> = Vec::new();
        for item in items.iter().filter_map(Value::as_str).map(string::trim) {
            if !item.is_empty() && !unique.iter().any(|seen| seen == item) {
                unique.push(item.to_string());
            }
        }
        unique
    };
    ScopedNetworkEgressGrant {
        allow_fqdns: entries("allowFqdns")
            .iter()
            .map(|f| string::to_lower_case(f))
            .collect(),
        allow_cidrs: entries("allowCidrs"),
    }
}

/// Error texts that usually mean the network policy dropped the connection.
const NETWORK_DENIAL_MARKERS: [&str; 5] = [
    "could not resolve host",
    "network is unreachable",
    "connection timed out",
    "failed to connect",
    "temporary failure in name resolution",
];

/// `appendNetworkEgressDenyHint(stderr, grant)`: when stderr looks like a blocked connection,
/// tell the agent which destinations its task was granted and where to ask for more. Other
/// stderr is returned unchanged.
pub fn append_network_egress_deny_hint(stderr: &str, grant: &ScopedNetworkEgressGrant) -> String {
    // The original's regex is case-insensitive without the `u` flag: only ASCII letters fold.
    let lowered = stderr.to_ascii_lowercase();
    if !NETWORK_DENIAL_MARKERS
        .iter()
        .any(|marker| lowered.contains(marker))
    {
        return stderr.to_string();
    }
    let allowed: Vec<&str> = grant
        .allow_fqdns
        .iter()
        .chain(&grant.allow_cidrs)
        .map(String::as_str)
        .collect();
    let detail = if allowed.is_empty() {
        " No task-scoped destinations are granted.".to_string()
    } else {
        format!(" Current task grant: {}.", allowed.join(", "))
    };
    let trimmed = string::trim_end(stderr);
    format!(
        "{trimmed}\nPaperclip network policy denied or could not route this request.{detail} Request access through {NETWORK_EGRESS_GRANT_PATH}.\n"
    )
}

/// DNS and callback rules for a scoped policy (the per-lease adapter policy has them; a task
/// policy does not).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopedPolicyBaseRules {
    pub paperclip_server_namespace: String,
    pub paperclip_server_pod_selector: Option<StringMap>,
}

/// What a scoped policy is built from (`createScopedNetworkEgressPolicy`'s input minus the
/// clients).
#[derive(Debug, Clone, PartialEq)]
pub struct ScopedEgressPolicyInput {
    pub namespace: String,
    pub mode: EgressMode,
    /// Value of the run-id label on the run's pod, which the policy selects.
    pub run_id: String,
    pub workload_name: String,
    /// The Sandbox/Job, with `controller: false` and `blockOwnerDeletion: false`, so the policy
    /// is garbage-collected with it.
    pub owner_reference: Value,
    pub grant: ScopedNetworkEgressGrant,
    /// [`TASK_EGRESS_POLICY_SUFFIX`] when absent.
    pub suffix: Option<String>,
    pub base_rules: Option<ScopedPolicyBaseRules>,
}

/// Which API creates a scoped policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScopedPolicyKind {
    /// `cilium.io/v2` `ciliumnetworkpolicies`, created as a namespaced custom object.
    CiliumNetworkPolicy,
    /// `networking.k8s.io/v1` NetworkPolicy.
    NetworkPolicy,
}

/// A scoped policy ready to be created.
#[derive(Debug, Clone, PartialEq)]
pub struct ScopedEgressPolicy {
    pub name: String,
    pub kind: ScopedPolicyKind,
    pub manifest: Value,
}

/// The policy `createScopedNetworkEgressPolicy` creates, or `None` when it creates nothing (no
/// base rules and an empty grant). Standard mode yields only the egress policy of the pair the
/// standard builder makes: the tenant already has its deny-all.
pub fn build_scoped_network_egress_policy(
    input: &ScopedEgressPolicyInput,
) -> Option<ScopedEgressPolicy> {
    if input.base_rules.is_none() && input.grant.is_empty() {
        return None;
    }
    let suffix = input.suffix.as_deref().unwrap_or(TASK_EGRESS_POLICY_SUFFIX);
    let name = scoped_policy_name(&input.workload_name, suffix);
    let run_selector: StringMap = vec![(RUN_ID_LABEL.to_string(), input.run_id.clone())];
    let server_namespace = input
        .base_rules
        .as_ref()
        .map(|b| b.paperclip_server_namespace.clone())
        .unwrap_or_default();
    let server_selector = input
        .base_rules
        .as_ref()
        .and_then(|b| b.paperclip_server_pod_selector.clone());
    let include_base_rules = Some(input.base_rules.is_some());
    let owner_references = Some(vec![input.owner_reference.clone()]);
    let (kind, manifest) = match input.mode {
        EgressMode::Cilium => (
            ScopedPolicyKind::CiliumNetworkPolicy,
            build_cilium_network_policy_manifest(&CiliumNetworkPolicyInput {
                namespace: input.namespace.clone(),
                paperclip_server_namespace: server_namespace,
                paperclip_server_pod_selector: server_selector,
                egress_allow_fqdns: input.grant.allow_fqdns.clone(),
                egress_allow_cidrs: input.grant.allow_cidrs.clone(),
                name: Some(name.clone()),
                endpoint_selector: Some(run_selector),
                include_base_rules,
                owner_references,
            }),
        ),
        EgressMode::Standard => (
            ScopedPolicyKind::NetworkPolicy,
            build_network_policy_manifests(&NetworkPolicyInput {
                namespace: input.namespace.clone(),
                paperclip_server_namespace: server_namespace,
                paperclip_server_pod_selector: server_selector,
                egress_allow_cidrs: input.grant.allow_cidrs.clone(),
                egress_allow_fqdns: Some(input.grant.allow_fqdns.clone()),
                name: Some(name.clone()),
                pod_selector: Some(run_selector),
                include_base_rules,
                owner_references,
            })
            .egress_allow,
        ),
    };
    Some(ScopedEgressPolicy {
        name,
        kind,
        manifest,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(fqdns: &[&str], cidrs: &[&str]) -> ScopedNetworkEgressGrant {
        ScopedNetworkEgressGrant {
            allow_fqdns: fqdns.iter().map(|s| s.to_string()).collect(),
            allow_cidrs: cidrs.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn grant_parsing_dedupes_before_lower_casing() {
        let settings = json!({"networkEgress": {"allowFqdns": [" GitHub.com ", "github.com", 3, ""], "allowCidrs": ["1.2.3.4/32", "1.2.3.4/32 "]}});
        assert_eq!(
            parse_scoped_network_egress_grant(Some(&settings)),
            grant(&["github.com", "github.com"], &["1.2.3.4/32"])
        );
        for not_an_object in [
            json!(null),
            json!([]),
            json!("x"),
            json!({"networkEgress": []}),
        ] {
            assert!(parse_scoped_network_egress_grant(Some(&not_an_object)).is_empty());
        }
        assert!(parse_scoped_network_egress_grant(None).is_empty());
    }

    #[test]
    fn deny_hint_texts() {
        assert_eq!(
            append_network_egress_deny_hint(
                "curl: Could not resolve host: x\n",
                &grant(&["a.example"], &["10.0.0.0/8"])
            ),
            "curl: Could not resolve host: x\nPaperclip network policy denied or could not route this request. Current task grant: a.example, 10.0.0.0/8. Request access through executionWorkspaceSettings.networkEgress.\n"
        );
        assert_eq!(
            append_network_egress_deny_hint("NETWORK IS UNREACHABLE", &grant(&[], &[])),
            "NETWORK IS UNREACHABLE\nPaperclip network policy denied or could not route this request. No task-scoped destinations are granted. Request access through executionWorkspaceSettings.networkEgress.\n"
        );
        assert_eq!(
            append_network_egress_deny_hint("permission denied\n", &grant(&[], &[])),
            "permission denied\n"
        );
    }

    fn policy_input(mode: EgressMode, grant: ScopedNetworkEgressGrant) -> ScopedEgressPolicyInput {
        ScopedEgressPolicyInput {
            namespace: "paperclip-acme".into(),
            mode,
            run_id: "run-1".into(),
            workload_name: "pc-x".into(),
            owner_reference: json!({"kind": "Sandbox"}),
            grant,
            suffix: None,
            base_rules: None,
        }
    }

    #[test]
    fn nothing_to_create_without_base_rules_or_grant() {
        assert_eq!(
            build_scoped_network_egress_policy(&policy_input(
                EgressMode::Standard,
                grant(&[], &[])
            )),
            None
        );
    }

    #[test]
    fn adapter_policy_is_created_even_with_an_empty_grant() {
        let mut input = policy_input(EgressMode::Cilium, grant(&[], &[]));
        input.suffix = Some(ADAPTER_EGRESS_POLICY_SUFFIX.into());
        input.base_rules = Some(ScopedPolicyBaseRules {
            paperclip_server_namespace: "paperclip".into(),
            paperclip_server_pod_selector: None,
        });
        let policy = build_scoped_network_egress_policy(&input).unwrap();
        assert_eq!(policy.name, "pc-x-adapter-egress");
        assert_eq!(policy.kind, ScopedPolicyKind::CiliumNetworkPolicy);
        assert_eq!(
            policy.manifest["spec"]["egress"].as_array().unwrap().len(),
            2
        );
        assert_eq!(
            policy.manifest["spec"]["endpointSelector"]["matchLabels"]["paperclip.io/run-id"],
            "run-1"
        );
    }

    #[test]
    fn standard_task_policy_is_the_egress_half() {
        let policy = build_scoped_network_egress_policy(&policy_input(
            EgressMode::Standard,
            grant(&[], &["1.2.3.0/24"]),
        ))
        .unwrap();
        assert_eq!(policy.name, "pc-x-egress");
        assert_eq!(policy.kind, ScopedPolicyKind::NetworkPolicy);
        assert_eq!(
            policy.manifest["spec"]["egress"].to_string(),
            r#"[{"to":[{"ipBlock":{"cidr":"1.2.3.0/24"}}]}]"#
        );
    }
}
