//! CiliumNetworkPolicy (`cilium-network-policy.ts` @ 1bbb581): egress by FQDN, which
//! standard NetworkPolicy cannot express.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::labels::{ROLE_AGENT, ROLE_LABEL, managed_by_labels_json};
use super::network_policy::PAPERCLIP_SERVER_PORT;
use super::string_map::{self, string_map_object};
use crate::config::adapters::StringMap;
use js_compat::json;

pub const CILIUM_GROUP: &str = "cilium.io";
pub const CILIUM_VERSION: &str = "v2";
pub const CILIUM_PLURAL: &str = "ciliumnetworkpolicies";
pub const CILIUM_API_VERSION: &str = "cilium.io/v2";
pub const CILIUM_EGRESS_POLICY_NAME: &str = "paperclip-egress-fqdn";
/// Cilium's label for an endpoint's namespace.
const POD_NAMESPACE_LABEL: &str = "k8s:io.kubernetes.pod.namespace";

/// Input of [`build_cilium_network_policy_manifest`]; optional fields as the original's `?:` ones.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CiliumNetworkPolicyInput {
    pub namespace: String,
    pub paperclip_server_namespace: String,
    #[serde(default, deserialize_with = "string_map::deserialize_optional")]
    pub paperclip_server_pod_selector: Option<StringMap>,
    pub egress_allow_fqdns: Vec<String>,
    pub egress_allow_cidrs: Vec<String>,
    /// `paperclip-egress-fqdn` when absent.
    #[serde(default)]
    pub name: Option<String>,
    /// The agent role label when absent.
    #[serde(default, deserialize_with = "string_map::deserialize_optional")]
    pub endpoint_selector: Option<StringMap>,
    /// DNS and callback rules; only an explicit `false` leaves them out.
    #[serde(default)]
    pub include_base_rules: Option<bool>,
    #[serde(default)]
    pub owner_references: Option<Vec<Value>>,
}

/// `buildCiliumNetworkPolicyManifest(input)`. Rule order: DNS, FQDNs, callback, CIDRs.
pub fn build_cilium_network_policy_manifest(input: &CiliumNetworkPolicyInput) -> Value {
    let include_base_rules = input.include_base_rules != Some(false);
    let mut egress = Vec::new();
    if include_base_rules {
        egress.push(dns_rule());
    }
    if !input.egress_allow_fqdns.is_empty() {
        let names: Vec<Value> = input
            .egress_allow_fqdns
            .iter()
            .map(|fqdn| json!({ "matchName": fqdn }))
            .collect();
        egress.push(json!({
            "toFQDNs": names,
            "toPorts": [{ "ports": [{ "port": "443", "protocol": "TCP" }] }],
        }));
    }
    if include_base_rules {
        egress.push(callback_rule(
            &input.paperclip_server_namespace,
            input.paperclip_server_pod_selector.as_ref(),
        ));
    }
    if !input.egress_allow_cidrs.is_empty() {
        let cidrs: Vec<Value> = input
            .egress_allow_cidrs
            .iter()
            .map(|cidr| json!({ "cidr": cidr }))
            .collect();
        egress.push(json!({ "toCIDRSet": cidrs }));
    }

    let mut metadata = Map::new();
    let name = input
        .name
        .clone()
        .unwrap_or_else(|| CILIUM_EGRESS_POLICY_NAME.to_string());
    metadata.insert("name".into(), name.into());
    metadata.insert("namespace".into(), input.namespace.clone().into());
    metadata.insert("labels".into(), managed_by_labels_json());
    if let Some(owners) = &input.owner_references {
        metadata.insert("ownerReferences".into(), Value::Array(owners.clone()));
    }
    let endpoint_selector = match &input.endpoint_selector {
        Some(selector) => Value::Object(string_map_object(selector)),
        None => json!({ ROLE_LABEL: ROLE_AGENT }),
    };
    json!({
        "apiVersion": CILIUM_API_VERSION,
        "kind": "CiliumNetworkPolicy",
        "metadata": metadata,
        "spec": {
            "endpointSelector": { "matchLabels": endpoint_selector },
            "egress": egress,
        },
    })
}

/// kube-dns on port 53. Ports are strings in Cilium's schema. The L7 DNS rule makes Cilium's DNS
/// proxy see the lookups, which `toFQDNs` needs to learn the addresses of the allowed names.
fn dns_rule() -> Value {
    json!({
        "toEndpoints": [{ "matchLabels": { POD_NAMESPACE_LABEL: "kube-system", "k8s-app": "kube-dns" } }],
        "toPorts": [{
            "ports": [{ "port": "53", "protocol": "UDP" }, { "port": "53", "protocol": "TCP" }],
            "rules": { "dns": [{ "matchPattern": "*" }] },
        }],
    })
}

/// The callback to paperclip-server. The namespace label is set after the selector's own labels,
/// so a selector cannot point the rule at another namespace (its key keeps its place, with the
/// server namespace as value).
fn callback_rule(server_namespace: &str, server_selector: Option<&StringMap>) -> Value {
    let mut labels = match server_selector {
        Some(selector) => string_map_object(selector),
        None => {
            let mut default = Map::new();
            default.insert("app".into(), "paperclip-server".into());
            default
        }
    };
    labels.insert(POD_NAMESPACE_LABEL.into(), server_namespace.into());
    let labels = json::ordered(labels);
    json!({
        "toEndpoints": [{ "matchLabels": labels }],
        "toPorts": [{ "ports": [{ "port": PAPERCLIP_SERVER_PORT.to_string(), "protocol": "TCP" }] }],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_namespace_wins_over_a_spoofed_selector_key() {
        let input = CiliumNetworkPolicyInput {
            namespace: "t".into(),
            paperclip_server_namespace: "paperclip".into(),
            paperclip_server_pod_selector: Some(vec![
                (POD_NAMESPACE_LABEL.into(), "spoofed".into()),
                ("app".into(), "pc".into()),
            ]),
            ..Default::default()
        };
        let manifest = build_cilium_network_policy_manifest(&input);
        assert_eq!(
            manifest["spec"]["egress"][1]["toEndpoints"][0]["matchLabels"].to_string(),
            r#"{"k8s:io.kubernetes.pod.namespace":"paperclip","app":"pc"}"#
        );
    }

    #[test]
    fn scoped_policy_without_base_rules_holds_only_the_grant() {
        let input = CiliumNetworkPolicyInput {
            namespace: "t".into(),
            egress_allow_fqdns: vec!["github.com".into()],
            egress_allow_cidrs: vec!["10.0.0.0/8".into()],
            include_base_rules: Some(false),
            ..Default::default()
        };
        let egress = build_cilium_network_policy_manifest(&input)["spec"]["egress"].clone();
        assert_eq!(
            egress.to_string(),
            r#"[{"toFQDNs":[{"matchName":"github.com"}],"toPorts":[{"ports":[{"port":"443","protocol":"TCP"}]}]},{"toCIDRSet":[{"cidr":"10.0.0.0/8"}]}]"#
        );
    }
}
