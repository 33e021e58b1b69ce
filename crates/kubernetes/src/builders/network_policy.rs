//! Standard Kubernetes NetworkPolicies (the V-B variant of `network-policy.ts` @
//! a8f79c9): a namespace-wide deny-all and an egress allow-list.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::labels::{ROLE_AGENT, ROLE_LABEL, managed_by_labels_json};
use super::string_map::{self, string_map_object};
use crate::config::adapters::StringMap;

pub const NETWORK_POLICY_API_VERSION: &str = "networking.k8s.io/v1";
pub const DENY_ALL_POLICY_NAME: &str = "paperclip-deny-all";
pub const EGRESS_ALLOW_POLICY_NAME: &str = "paperclip-egress-allow";
/// The callback port of paperclip-server.
pub const PAPERCLIP_SERVER_PORT: u16 = 3100;

/// Public IPv4 minus what an agent pod must never reach: this-network, RFC 1918, CGNAT,
/// loopback, link-local (node metadata endpoints) and multicast.
pub const PUBLIC_IPV4_EXCEPT_CIDRS: [&str; 8] = [
    "0.0.0.0/8",
    "10.0.0.0/8",
    "100.64.0.0/10",
    "127.0.0.0/8",
    "169.254.0.0/16",
    "172.16.0.0/12",
    "192.168.0.0/16",
    "224.0.0.0/4",
];

/// Input of [`build_network_policy_manifests`]; optional fields as the original's `?:` ones.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkPolicyInput {
    pub namespace: String,
    pub paperclip_server_namespace: String,
    /// Selects paperclip-server's pods; `{app: paperclip-server}` when absent.
    #[serde(default, deserialize_with = "string_map::deserialize_optional")]
    pub paperclip_server_pod_selector: Option<StringMap>,
    pub egress_allow_cidrs: Vec<String>,
    /// Only their presence matters here: standard policies cannot name hosts.
    #[serde(default)]
    pub egress_allow_fqdns: Option<Vec<String>>,
    /// Name of the egress policy; `paperclip-egress-allow` when absent.
    #[serde(default)]
    pub name: Option<String>,
    /// Pods the egress policy applies to; the agent role label when absent.
    #[serde(default, deserialize_with = "string_map::deserialize_optional")]
    pub pod_selector: Option<StringMap>,
    /// DNS and callback rules; only an explicit `false` leaves them out.
    #[serde(default)]
    pub include_base_rules: Option<bool>,
    #[serde(default)]
    pub owner_references: Option<Vec<Value>>,
}

/// The two policies, in the order the original returns them.
#[derive(Debug, Clone, PartialEq)]
pub struct NetworkPolicyManifests {
    pub deny_all: Value,
    pub egress_allow: Value,
}

impl NetworkPolicyManifests {
    /// `[denyAll, egressAllow]`, the original's return value.
    pub fn to_json_array(&self) -> Value {
        Value::Array(vec![self.deny_all.clone(), self.egress_allow.clone()])
    }
}

/// `buildNetworkPolicyManifests(input)`.
pub fn build_network_policy_manifests(input: &NetworkPolicyInput) -> NetworkPolicyManifests {
    NetworkPolicyManifests {
        deny_all: deny_all(&input.namespace),
        egress_allow: egress_allow(input),
    }
}

/// Selects every pod and allows nothing, in both directions. It has no `ingress`/`egress` keys
/// at all: an empty list would mean the same, but the object must match the original's.
fn deny_all(namespace: &str) -> Value {
    json!({
        "apiVersion": NETWORK_POLICY_API_VERSION,
        "kind": "NetworkPolicy",
        "metadata": {
            "name": DENY_ALL_POLICY_NAME,
            "namespace": namespace,
            "labels": managed_by_labels_json(),
        },
        "spec": { "podSelector": {}, "policyTypes": ["Ingress", "Egress"] },
    })
}

fn egress_allow(input: &NetworkPolicyInput) -> Value {
    let include_base_rules = input.include_base_rules != Some(false);
    let mut egress = Vec::new();
    if include_base_rules {
        egress.push(dns_rule());
        egress.push(callback_rule(
            &input.paperclip_server_namespace,
            input.paperclip_server_pod_selector.as_ref(),
        ));
    }
    // Operator CIDRs are not port-scoped: they may front non-HTTP services.
    egress.extend(
        input
            .egress_allow_cidrs
            .iter()
            .map(|cidr| json!({ "to": [{ "ipBlock": { "cidr": cidr } }] })),
    );
    // NetworkPolicy cannot name hosts, so configured FQDNs are made reachable by opening public
    // IPv4 on 80/443 — unless the operator chose CIDRs, which then replace this fallback.
    let has_fqdns = input
        .egress_allow_fqdns
        .as_ref()
        .is_some_and(|f| !f.is_empty());
    if input.egress_allow_cidrs.is_empty() && has_fqdns {
        egress.push(public_ipv4_fallback_rule());
    }

    let pod_selector = match &input.pod_selector {
        Some(selector) => Value::Object(string_map_object(selector)),
        None => json!({ ROLE_LABEL: ROLE_AGENT }),
    };
    // The original fills `name` (and owner references) in after building the object, so they
    // follow `labels` in the metadata.
    let mut metadata = Map::new();
    metadata.insert("namespace".into(), input.namespace.clone().into());
    metadata.insert("labels".into(), managed_by_labels_json());
    let name = input
        .name
        .clone()
        .unwrap_or_else(|| EGRESS_ALLOW_POLICY_NAME.to_string());
    metadata.insert("name".into(), name.into());
    if let Some(owners) = &input.owner_references {
        metadata.insert("ownerReferences".into(), Value::Array(owners.clone()));
    }
    json!({
        "apiVersion": NETWORK_POLICY_API_VERSION,
        "kind": "NetworkPolicy",
        "metadata": metadata,
        "spec": {
            "podSelector": { "matchLabels": pod_selector },
            "policyTypes": ["Egress"],
            "egress": egress,
        },
    })
}

/// Cluster DNS (kube-dns in kube-system) on port 53, UDP and TCP; ports are numbers here.
fn dns_rule() -> Value {
    json!({
        "to": [{
            "namespaceSelector": { "matchLabels": { "kubernetes.io/metadata.name": "kube-system" } },
            "podSelector": { "matchLabels": { "k8s-app": "kube-dns" } },
        }],
        "ports": [{ "protocol": "UDP", "port": 53 }, { "protocol": "TCP", "port": 53 }],
    })
}

/// The agent's callback to paperclip-server.
fn callback_rule(server_namespace: &str, server_selector: Option<&StringMap>) -> Value {
    let selector = match server_selector {
        Some(selector) => Value::Object(string_map_object(selector)),
        None => json!({ "app": "paperclip-server" }),
    };
    json!({
        "to": [{
            "namespaceSelector": { "matchLabels": { "kubernetes.io/metadata.name": server_namespace } },
            "podSelector": { "matchLabels": selector },
        }],
        "ports": [{ "protocol": "TCP", "port": PAPERCLIP_SERVER_PORT }],
    })
}

fn public_ipv4_fallback_rule() -> Value {
    json!({
        "to": [{ "ipBlock": { "cidr": "0.0.0.0/0", "except": PUBLIC_IPV4_EXCEPT_CIDRS } }],
        "ports": [{ "protocol": "TCP", "port": 443 }, { "protocol": "TCP", "port": 80 }],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input() -> NetworkPolicyInput {
        NetworkPolicyInput {
            namespace: "paperclip-acme".into(),
            paperclip_server_namespace: "paperclip".into(),
            ..Default::default()
        }
    }

    fn egress_rules(manifests: &NetworkPolicyManifests) -> Vec<Value> {
        manifests.egress_allow["spec"]["egress"]
            .as_array()
            .unwrap()
            .clone()
    }

    #[test]
    fn deny_all_has_no_rule_lists() {
        let spec = &build_network_policy_manifests(&input()).deny_all["spec"];
        assert_eq!(
            spec.to_string(),
            r#"{"podSelector":{},"policyTypes":["Ingress","Egress"]}"#
        );
    }

    #[test]
    fn fallback_only_without_cidrs_and_with_fqdns() {
        let mut with_fqdns = input();
        with_fqdns.egress_allow_fqdns = Some(vec!["api.anthropic.com".into()]);
        let rules = egress_rules(&build_network_policy_manifests(&with_fqdns));
        assert_eq!(rules.len(), 3);
        assert_eq!(
            rules[2]["to"][0]["ipBlock"]["except"]
                .as_array()
                .unwrap()
                .len(),
            8
        );

        with_fqdns.egress_allow_cidrs = vec!["10.1.0.0/16".into()];
        let rules = egress_rules(&build_network_policy_manifests(&with_fqdns));
        assert_eq!(rules.len(), 3);
        assert_eq!(
            rules[2].to_string(),
            r#"{"to":[{"ipBlock":{"cidr":"10.1.0.0/16"}}]}"#
        );

        assert_eq!(
            egress_rules(&build_network_policy_manifests(&input())).len(),
            2
        );
    }

    #[test]
    fn only_explicit_false_drops_base_rules() {
        let mut scoped = input();
        scoped.include_base_rules = Some(false);
        assert!(egress_rules(&build_network_policy_manifests(&scoped)).is_empty());
        scoped.include_base_rules = Some(true);
        assert_eq!(
            egress_rules(&build_network_policy_manifests(&scoped)).len(),
            2
        );
    }

    #[test]
    fn metadata_order_puts_name_after_labels() {
        let mut scoped = input();
        scoped.owner_references = Some(vec![json!({"kind": "Job"})]);
        let metadata = &build_network_policy_manifests(&scoped).egress_allow["metadata"];
        let keys: Vec<&String> = metadata.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["namespace", "labels", "name", "ownerReferences"]);
    }
}
