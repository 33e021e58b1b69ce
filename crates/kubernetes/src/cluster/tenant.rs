//! Tenant provisioning (`ensureTenant`): the namespace and everything in it that every lease of a company
//! shares, created on the first acquire.
//!
//! Each object is "first write wins": read it; if it exists, leave it as it is (no comparison,
//! no update, so config-driven values are frozen at first provisioning); on 404 create it; a 409
//! from the create means a concurrent acquire won the race, which is success. Any other error
//! stops provisioning.

use serde::Deserialize;
use serde_json::{Value, json};

use crate::builders::cilium::{
    CILIUM_GROUP, CILIUM_PLURAL, CILIUM_VERSION, CiliumNetworkPolicyInput,
    build_cilium_network_policy_manifest,
};
use crate::builders::labels::{COMPANY_ID_LABEL, MANAGED_BY_LABEL, MANAGED_BY_VALUE};
use crate::builders::network_policy::{NetworkPolicyInput, build_network_policy_manifests};
use crate::builders::pod_template::TENANT_SERVICE_ACCOUNT;
use crate::builders::string_map::{self, string_map_object};
use crate::cluster::{ApiMethod, ClusterApi};
use crate::config::EgressMode;
use crate::config::adapters::StringMap;
use crate::error::Error;

pub const TENANT_ROLE_NAME: &str = "paperclip-tenant-role";
pub const TENANT_ROLE_BINDING_NAME: &str = "paperclip-tenant-rb";
pub const TENANT_RESOURCE_QUOTA_NAME: &str = "paperclip-quota";
pub const TENANT_LIMIT_RANGE_NAME: &str = "paperclip-limits";
/// Pod Security admission level enforced, audited and warned on in tenant namespaces.
const POD_SECURITY_LEVEL: &str = "restricted";

/// The tenant ResourceQuota's `spec.hard`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TenantResourceQuota {
    pub pods: String,
    pub requests_cpu: String,
    pub requests_memory: String,
    pub limits_cpu: String,
    pub limits_memory: String,
}

impl Default for TenantResourceQuota {
    /// The constants acquire provisions with (not configurable).
    fn default() -> Self {
        Self {
            pods: "20".into(),
            requests_cpu: "10".into(),
            requests_memory: "20Gi".into(),
            limits_cpu: "20".into(),
            limits_memory: "40Gi".into(),
        }
    }
}

/// `EnsureTenantInput`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TenantInput {
    pub namespace: String,
    pub company_id: String,
    /// Where paperclip-server runs (the callback rule's namespace).
    pub paperclip_server_namespace: String,
    #[serde(default, deserialize_with = "string_map::deserialize_optional")]
    pub paperclip_server_pod_selector: Option<StringMap>,
    #[serde(deserialize_with = "string_map::deserialize")]
    pub service_account_annotations: StringMap,
    #[serde(deserialize_with = "deserialize_egress_mode")]
    pub egress_mode: EgressMode,
    /// Empty in the target generation: adapter and config destinations go to the per-lease
    /// policy instead.
    pub egress_allow_fqdns: Vec<String>,
    pub egress_allow_cidrs: Vec<String>,
    pub resource_quota: TenantResourceQuota,
}

/// `"cilium"` or anything else, which the original treats as standard.
fn deserialize_egress_mode<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<EgressMode, D::Error> {
    let mode = String::deserialize(deserializer)?;
    Ok(if mode == EgressMode::Cilium.as_str() {
        EgressMode::Cilium
    } else {
        EgressMode::Standard
    })
}

/// `ensureTenant`: Namespace, ServiceAccount, Role, RoleBinding, ResourceQuota, LimitRange,
/// then the NetworkPolicies, strictly in this order.
pub async fn ensure_tenant<C: ClusterApi + ?Sized>(
    cluster: &C,
    tenant: &TenantInput,
) -> Result<(), Error> {
    let ns = tenant.namespace.as_str();
    let named = |name: &str| json!({"name": name, "namespace": ns});
    let create_in_namespace = |body: Value| json!({"namespace": ns, "body": body});

    let namespace = json!({"body": namespace_manifest(tenant)});
    ensure(
        cluster,
        ApiMethod::ReadNamespace,
        json!({"name": ns}),
        ApiMethod::CreateNamespace,
        namespace,
    )
    .await?;
    ensure(
        cluster,
        ApiMethod::ReadNamespacedServiceAccount,
        named(TENANT_SERVICE_ACCOUNT),
        ApiMethod::CreateNamespacedServiceAccount,
        create_in_namespace(service_account_manifest(tenant)),
    )
    .await?;
    ensure(
        cluster,
        ApiMethod::ReadNamespacedRole,
        named(TENANT_ROLE_NAME),
        ApiMethod::CreateNamespacedRole,
        create_in_namespace(role_manifest(ns)),
    )
    .await?;
    ensure(
        cluster,
        ApiMethod::ReadNamespacedRoleBinding,
        named(TENANT_ROLE_BINDING_NAME),
        ApiMethod::CreateNamespacedRoleBinding,
        create_in_namespace(role_binding_manifest(ns)),
    )
    .await?;
    ensure(
        cluster,
        ApiMethod::ReadNamespacedResourceQuota,
        named(TENANT_RESOURCE_QUOTA_NAME),
        ApiMethod::CreateNamespacedResourceQuota,
        create_in_namespace(resource_quota_manifest(ns, &tenant.resource_quota)),
    )
    .await?;
    ensure(
        cluster,
        ApiMethod::ReadNamespacedLimitRange,
        named(TENANT_LIMIT_RANGE_NAME),
        ApiMethod::CreateNamespacedLimitRange,
        create_in_namespace(limit_range_manifest(ns)),
    )
    .await?;
    ensure_network_policies(cluster, tenant).await
}

/// Deny-all is ensured in both modes. The egress allow-list is a CiliumNetworkPolicy in
/// cilium mode and a NetworkPolicy otherwise; switching modes later leaves the old one in place.
async fn ensure_network_policies<C: ClusterApi + ?Sized>(
    cluster: &C,
    tenant: &TenantInput,
) -> Result<(), Error> {
    let ns = tenant.namespace.as_str();
    let standard = build_network_policy_manifests(&NetworkPolicyInput {
        namespace: tenant.namespace.clone(),
        paperclip_server_namespace: tenant.paperclip_server_namespace.clone(),
        paperclip_server_pod_selector: tenant.paperclip_server_pod_selector.clone(),
        egress_allow_cidrs: tenant.egress_allow_cidrs.clone(),
        egress_allow_fqdns: Some(tenant.egress_allow_fqdns.clone()),
        ..Default::default()
    });
    ensure_network_policy(cluster, ns, standard.deny_all).await?;
    match tenant.egress_mode {
        EgressMode::Cilium => {
            let manifest = build_cilium_network_policy_manifest(&CiliumNetworkPolicyInput {
                namespace: tenant.namespace.clone(),
                paperclip_server_namespace: tenant.paperclip_server_namespace.clone(),
                paperclip_server_pod_selector: tenant.paperclip_server_pod_selector.clone(),
                egress_allow_fqdns: tenant.egress_allow_fqdns.clone(),
                egress_allow_cidrs: tenant.egress_allow_cidrs.clone(),
                ..Default::default()
            });
            let name = manifest_name(&manifest);
            let cilium = |extra: (&str, Value)| {
                let mut request = serde_json::Map::new();
                request.insert("group".into(), json!(CILIUM_GROUP));
                request.insert("version".into(), json!(CILIUM_VERSION));
                request.insert("namespace".into(), json!(ns));
                request.insert("plural".into(), json!(CILIUM_PLURAL));
                request.insert(extra.0.into(), extra.1);
                Value::Object(request)
            };
            ensure(
                cluster,
                ApiMethod::GetNamespacedCustomObject,
                cilium(("name", json!(name))),
                ApiMethod::CreateNamespacedCustomObject,
                cilium(("body", manifest)),
            )
            .await
        }
        EgressMode::Standard => ensure_network_policy(cluster, ns, standard.egress_allow).await,
    }
}

async fn ensure_network_policy<C: ClusterApi + ?Sized>(
    cluster: &C,
    namespace: &str,
    manifest: Value,
) -> Result<(), Error> {
    let name = manifest_name(&manifest);
    ensure(
        cluster,
        ApiMethod::ReadNamespacedNetworkPolicy,
        json!({"name": name, "namespace": namespace}),
        ApiMethod::CreateNamespacedNetworkPolicy,
        json!({"namespace": namespace, "body": manifest}),
    )
    .await
}

fn manifest_name(manifest: &Value) -> String {
    manifest["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// One first-write-wins step: an existing object is left alone, a missing one is created, and
/// losing the create race (409) is as good as winning it.
async fn ensure<C: ClusterApi + ?Sized>(
    cluster: &C,
    read: ApiMethod,
    read_request: Value,
    create: ApiMethod,
    create_request: Value,
) -> Result<(), Error> {
    match cluster.call(read, read_request).await {
        Ok(_) => return Ok(()),
        Err(err) if err.is_not_found() => {}
        Err(err) => return Err(err),
    }
    match cluster.call(create, create_request).await {
        Ok(_) => Ok(()),
        Err(err) if err.is_already_exists() => Ok(()),
        Err(err) => Err(err),
    }
}

fn namespace_manifest(tenant: &TenantInput) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": tenant.namespace,
            "labels": {
                COMPANY_ID_LABEL: tenant.company_id,
                MANAGED_BY_LABEL: MANAGED_BY_VALUE,
                "pod-security.kubernetes.io/enforce": POD_SECURITY_LEVEL,
                "pod-security.kubernetes.io/audit": POD_SECURITY_LEVEL,
                "pod-security.kubernetes.io/warn": POD_SECURITY_LEVEL,
            },
        },
    })
}

/// The identity agent pods run as. Its annotations (e.g. a cloud IAM role) come from config.
fn service_account_manifest(tenant: &TenantInput) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {
            "name": TENANT_SERVICE_ACCOUNT,
            "namespace": tenant.namespace,
            "annotations": string_map_object(&tenant.service_account_annotations),
            "labels": {MANAGED_BY_LABEL: MANAGED_BY_VALUE},
        },
    })
}

/// Reading pod logs is all the tenant identity may do.
fn role_manifest(namespace: &str) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": TENANT_ROLE_NAME, "namespace": namespace},
        "rules": [{"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]}],
    })
}

fn role_binding_manifest(namespace: &str) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": TENANT_ROLE_BINDING_NAME, "namespace": namespace},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "Role",
            "name": TENANT_ROLE_NAME,
        },
        "subjects": [{
            "kind": "ServiceAccount",
            "name": TENANT_SERVICE_ACCOUNT,
            "namespace": namespace,
        }],
    })
}

fn resource_quota_manifest(namespace: &str, quota: &TenantResourceQuota) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": TENANT_RESOURCE_QUOTA_NAME, "namespace": namespace},
        "spec": {
            "hard": {
                "pods": quota.pods,
                "requests.cpu": quota.requests_cpu,
                "requests.memory": quota.requests_memory,
                "limits.cpu": quota.limits_cpu,
                "limits.memory": quota.limits_memory,
            },
        },
    })
}

/// Per-container bounds and defaults, so a container without resources still gets some.
fn limit_range_manifest(namespace: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": {"name": TENANT_LIMIT_RANGE_NAME, "namespace": namespace},
        "spec": {
            "limits": [{
                "type": "Container",
                "max": {"cpu": "4", "memory": "8Gi"},
                "min": {"cpu": "100m", "memory": "128Mi"},
                "default": {"cpu": "1", "memory": "2Gi"},
                "defaultRequest": {"cpu": "250m", "memory": "512Mi"},
            }],
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::testing::{ScriptedCluster, ScriptedReply};
    use crate::error::Error;

    fn tenant(mode: EgressMode) -> TenantInput {
        TenantInput {
            namespace: "paperclip-acme".into(),
            company_id: "acme".into(),
            paperclip_server_namespace: "paperclip".into(),
            paperclip_server_pod_selector: None,
            service_account_annotations: vec![],
            egress_mode: mode,
            egress_allow_fqdns: vec![],
            egress_allow_cidrs: vec![],
            resource_quota: TenantResourceQuota::default(),
        }
    }

    fn throws(code: u16, message: &str) -> Vec<ScriptedReply> {
        vec![ScriptedReply::Throws(Error::new(code, message))]
    }

    fn methods(cluster: &ScriptedCluster) -> Vec<&'static str> {
        cluster.calls().iter().map(|c| c.method.name()).collect()
    }

    #[tokio::test]
    async fn cilium_mode_reads_and_creates_the_cnp_as_a_custom_object() {
        let cluster = ScriptedCluster::new()
            .script(ApiMethod::GetNamespacedCustomObject, throws(404, "nf"))
            .script(
                ApiMethod::CreateNamespacedCustomObject,
                throws(409, "exists"),
            );
        ensure_tenant(&cluster, &tenant(EgressMode::Cilium))
            .await
            .unwrap();
        let calls = cluster.calls();
        let (read, create) = (&calls[calls.len() - 2], &calls[calls.len() - 1]);
        assert_eq!(
            read.args,
            json!({"group": "cilium.io", "version": "v2", "namespace": "paperclip-acme",
                "plural": "ciliumnetworkpolicies", "name": "paperclip-egress-fqdn"})
        );
        assert_eq!(create.method, ApiMethod::CreateNamespacedCustomObject);
        assert_eq!(create.args["body"]["kind"], "CiliumNetworkPolicy");
    }

    #[tokio::test]
    async fn a_create_error_other_than_409_stops_provisioning() {
        let cluster = ScriptedCluster::new()
            .script(ApiMethod::ReadNamespace, throws(404, "nf"))
            .script(ApiMethod::CreateNamespace, throws(403, "forbidden"));
        let err = ensure_tenant(&cluster, &tenant(EgressMode::Standard))
            .await
            .unwrap_err();
        assert_eq!(err.to_string(), "forbidden");
        assert_eq!(methods(&cluster), ["readNamespace", "createNamespace"]);
    }

    #[tokio::test]
    async fn deny_all_is_ensured_before_the_egress_policy_in_both_modes() {
        for mode in [EgressMode::Standard, EgressMode::Cilium] {
            let cluster = ScriptedCluster::new();
            ensure_tenant(&cluster, &tenant(mode)).await.unwrap();
            let calls = cluster.calls();
            assert_eq!(calls.len(), 8, "reads only: everything exists");
            assert_eq!(calls[6].args["name"], "paperclip-deny-all");
        }
    }
}
