//! The resource types the emulator serves and the discovery documents that describe them
//! (`/version`, `/api`, `/apis`, per-group and per-version lists, and aggregated discovery).

use serde_json::{Value, json};

const READ_WRITE: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// One served resource (`pods`, `jobs.batch`, `sandboxes.agents.x-k8s.io`, …).
#[derive(Debug, Clone)]
pub struct ResourceType {
    /// `""` for the core group.
    pub group: &'static str,
    /// Served versions; the first is the preferred (and storage) version.
    pub versions: Vec<String>,
    pub kind: &'static str,
    pub plural: &'static str,
    pub singular: &'static str,
    pub namespaced: bool,
    pub short_names: &'static [&'static str],
    /// `(subresource, kind, verbs)`.
    pub subresources: &'static [(&'static str, &'static str, &'static [&'static str])],
    /// A custom resource: strategic-merge patches are refused (415) as for real CRDs.
    pub custom: bool,
    /// The object has a `status` stanza that only `/status` writes may change.
    pub status_subresource: bool,
}

impl ResourceType {
    /// `pods`, `jobs.batch`: the name the API server uses in messages.
    pub fn group_resource(&self) -> String {
        if self.group.is_empty() {
            self.plural.to_string()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    pub fn api_version(&self, version: &str) -> String {
        if self.group.is_empty() {
            version.to_string()
        } else {
            format!("{}/{version}", self.group)
        }
    }

    pub fn preferred_version(&self) -> &str {
        &self.versions[0]
    }

    pub fn list_kind(&self) -> String {
        format!("{}List", self.kind)
    }

    pub fn serves(&self, version: &str) -> bool {
        self.versions.iter().any(|v| v == version)
    }

    fn discovery_entry(&self) -> Vec<Value> {
        let mut out = vec![{
            let mut r = json!({
                "name": self.plural,
                "singularName": self.singular,
                "namespaced": self.namespaced,
                "kind": self.kind,
                "verbs": READ_WRITE,
            });
            if !self.short_names.is_empty() {
                r["shortNames"] = json!(self.short_names);
            }
            r
        }];
        for (sub, kind, verbs) in self.subresources {
            out.push(json!({
                "name": format!("{}/{sub}", self.plural),
                "singularName": "",
                "namespaced": self.namespaced,
                "kind": kind,
                "verbs": verbs,
            }));
        }
        out
    }

    fn aggregated_entry(&self, version: &str) -> Value {
        let kind = |k: &str| json!({ "group": self.group, "version": version, "kind": k });
        let mut r = json!({
            "resource": self.plural,
            "responseKind": kind(self.kind),
            "scope": if self.namespaced { "Namespaced" } else { "Cluster" },
            "singularResource": self.singular,
            "verbs": READ_WRITE,
        });
        if !self.short_names.is_empty() {
            r["shortNames"] = json!(self.short_names);
        }
        if !self.subresources.is_empty() {
            r["subresources"] = self
                .subresources
                .iter()
                .map(|(sub, k, verbs)| {
                    json!({ "subresource": sub, "responseKind": kind(k), "verbs": verbs })
                })
                .collect();
        }
        r
    }
}

const STATUS_VERBS: &[&str] = &["get", "patch", "update"];

/// A built-in type served at one version, with no short names and no subresources.
fn base(
    group: &'static str,
    version: &str,
    kind: &'static str,
    plural: &'static str,
    singular: &'static str,
    namespaced: bool,
) -> ResourceType {
    ResourceType {
        group,
        versions: vec![version.to_string()],
        kind,
        plural,
        singular,
        namespaced,
        short_names: &[],
        subresources: &[],
        custom: false,
        status_subresource: false,
    }
}

/// SelfSubjectAccessReviews: only created, answered without storing anything
/// (`access_review`).
fn access_reviews() -> ResourceType {
    base(
        "authorization.k8s.io",
        "v1",
        "SelfSubjectAccessReview",
        "selfsubjectaccessreviews",
        "selfsubjectaccessreview",
        false,
    )
}

/// Every resource type, with the Sandbox group served at `sandbox_versions`.
pub fn registry(sandbox_versions: &[String]) -> Vec<ResourceType> {
    let mut out = vec![
        ResourceType {
            short_names: &["ns"],
            subresources: &[("status", "Namespace", STATUS_VERBS)],
            status_subresource: true,
            ..base("", "v1", "Namespace", "namespaces", "namespace", false)
        },
        ResourceType {
            short_names: &["po"],
            subresources: &[
                ("exec", "PodExecOptions", &["create", "get"]),
                ("log", "Pod", &["get"]),
                ("status", "Pod", STATUS_VERBS),
            ],
            status_subresource: true,
            ..base("", "v1", "Pod", "pods", "pod", true)
        },
        base("", "v1", "Secret", "secrets", "secret", true),
        ResourceType {
            short_names: &["cm"],
            ..base("", "v1", "ConfigMap", "configmaps", "configmap", true)
        },
        ResourceType {
            short_names: &["sa"],
            ..base(
                "",
                "v1",
                "ServiceAccount",
                "serviceaccounts",
                "serviceaccount",
                true,
            )
        },
        ResourceType {
            short_names: &["quota"],
            subresources: &[("status", "ResourceQuota", STATUS_VERBS)],
            status_subresource: true,
            ..base(
                "",
                "v1",
                "ResourceQuota",
                "resourcequotas",
                "resourcequota",
                true,
            )
        },
        ResourceType {
            short_names: &["limits"],
            ..base("", "v1", "LimitRange", "limitranges", "limitrange", true)
        },
        ResourceType {
            subresources: &[("status", "Job", STATUS_VERBS)],
            status_subresource: true,
            ..base("batch", "v1", "Job", "jobs", "job", true)
        },
        ResourceType {
            short_names: &["netpol"],
            ..base(
                "networking.k8s.io",
                "v1",
                "NetworkPolicy",
                "networkpolicies",
                "networkpolicy",
                true,
            )
        },
        base(
            "rbac.authorization.k8s.io",
            "v1",
            "Role",
            "roles",
            "role",
            true,
        ),
        base(
            "rbac.authorization.k8s.io",
            "v1",
            "RoleBinding",
            "rolebindings",
            "rolebinding",
            true,
        ),
        ResourceType {
            short_names: &["cnp", "ciliumnp"],
            subresources: &[("status", "CiliumNetworkPolicy", STATUS_VERBS)],
            custom: true,
            status_subresource: true,
            ..base(
                "cilium.io",
                "v2",
                "CiliumNetworkPolicy",
                "ciliumnetworkpolicies",
                "ciliumnetworkpolicy",
                true,
            )
        },
    ];
    out.push(access_reviews());
    if !sandbox_versions.is_empty() {
        out.push(ResourceType {
            group: "agents.x-k8s.io",
            versions: sandbox_versions.to_vec(),
            kind: "Sandbox",
            plural: "sandboxes",
            singular: "sandbox",
            namespaced: true,
            short_names: &["sandbox"],
            subresources: &[("status", "Sandbox", STATUS_VERBS)],
            custom: true,
            status_subresource: true,
        });
    }
    out
}

/// Lookups over the served types.
#[derive(Debug, Clone)]
pub struct Registry {
    pub types: Vec<ResourceType>,
}

impl Registry {
    pub fn new(sandbox_versions: &[String]) -> Self {
        Registry {
            types: registry(sandbox_versions),
        }
    }

    /// The type served at `group`/`version` under `plural`.
    pub fn find(&self, group: &str, version: &str, plural: &str) -> Option<&ResourceType> {
        self.types
            .iter()
            .find(|t| t.group == group && t.plural == plural && t.serves(version))
    }

    /// The type stored under `group`/`plural`, whatever version it is served at.
    pub fn by_plural(&self, group: &str, plural: &str) -> Option<&ResourceType> {
        self.types
            .iter()
            .find(|t| t.group == group && t.plural == plural)
    }

    pub fn serves_group_version(&self, group: &str, version: &str) -> bool {
        self.types
            .iter()
            .any(|t| t.group == group && t.serves(version))
    }

    /// Non-core groups in a stable order, each with its versions (preferred first).
    fn groups(&self) -> Vec<(&'static str, Vec<String>)> {
        let mut out: Vec<(&'static str, Vec<String>)> = Vec::new();
        for t in self.types.iter().filter(|t| !t.group.is_empty()) {
            match out.iter_mut().find(|(g, _)| *g == t.group) {
                Some((_, versions)) => {
                    for v in &t.versions {
                        if !versions.contains(v) {
                            versions.push(v.clone());
                        }
                    }
                }
                None => out.push((t.group, t.versions.clone())),
            }
        }
        out
    }

    fn group_json(group: &str, versions: &[String]) -> Value {
        let gv = |v: &String| json!({ "groupVersion": format!("{group}/{v}"), "version": v });
        json!({
            "name": group,
            "versions": versions.iter().map(gv).collect::<Vec<_>>(),
            "preferredVersion": gv(&versions[0]),
        })
    }

    /// `GET /apis`.
    pub fn api_group_list(&self) -> Value {
        let groups: Vec<Value> = self
            .groups()
            .iter()
            .map(|(g, v)| Self::group_json(g, v))
            .collect();
        json!({ "kind": "APIGroupList", "apiVersion": "v1", "groups": groups })
    }

    /// `GET /apis/{group}`.
    pub fn api_group(&self, group: &str) -> Option<Value> {
        let (g, versions) = self.groups().into_iter().find(|(g, _)| *g == group)?;
        let mut v = Self::group_json(g, &versions);
        v["kind"] = json!("APIGroup");
        v["apiVersion"] = json!("v1");
        Some(v)
    }

    /// `GET /api` (core versions).
    pub fn api_versions(&self, server_address: &str) -> Value {
        json!({
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{ "clientCIDR": "0.0.0.0/0", "serverAddress": server_address }],
        })
    }

    /// `GET /api/v1` or `GET /apis/{group}/{version}`.
    pub fn resource_list(&self, group: &str, version: &str) -> Option<Value> {
        if !self.serves_group_version(group, version) {
            return None;
        }
        let resources: Vec<Value> = self
            .types
            .iter()
            .filter(|t| t.group == group && t.serves(version))
            .flat_map(ResourceType::discovery_entry)
            .collect();
        let group_version = if group.is_empty() {
            version.to_string()
        } else {
            format!("{group}/{version}")
        };
        Some(json!({
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": group_version,
            "resources": resources,
        }))
    }

    /// Aggregated discovery (`apidiscovery.k8s.io/v2`) for `/api` (`core`) or `/apis`.
    pub fn aggregated(&self, core: bool) -> Value {
        let groups: Vec<(&str, Vec<String>)> = if core {
            vec![("", vec!["v1".to_string()])]
        } else {
            self.groups()
        };
        let items: Vec<Value> = groups
            .iter()
            .map(|(group, versions)| {
                let versions: Vec<Value> = versions
                    .iter()
                    .map(|v| {
                        let resources: Vec<Value> = self
                            .types
                            .iter()
                            .filter(|t| t.group == *group && t.serves(v))
                            .map(|t| t.aggregated_entry(v))
                            .collect();
                        json!({ "version": v, "resources": resources, "freshness": "Current" })
                    })
                    .collect();
                let metadata = if group.is_empty() {
                    json!({})
                } else {
                    json!({ "name": group })
                };
                json!({ "metadata": metadata, "versions": versions })
            })
            .collect();
        json!({
            "kind": "APIGroupDiscoveryList",
            "apiVersion": "apidiscovery.k8s.io/v2",
            "metadata": {},
            "items": items,
        })
    }
}

/// `GET /version`.
pub fn version_info() -> Value {
    json!({
        "major": "1",
        "minor": "33",
        "emulationMajor": "1",
        "emulationMinor": "33",
        "minCompatibilityMajor": "1",
        "minCompatibilityMinor": "32",
        "gitVersion": "v1.33.0-emulator",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2025-01-01T00:00:00Z",
        "goVersion": "go1.24.0",
        "compiler": "gc",
        "platform": "linux/amd64",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sandbox_group_follows_the_configured_versions() {
        let r = Registry::new(&["v1beta1".into(), "v1alpha1".into()]);
        let g = r.api_group("agents.x-k8s.io").unwrap();
        assert_eq!(g["preferredVersion"]["version"], "v1beta1");
        assert_eq!(g["versions"].as_array().unwrap().len(), 2);
        assert!(r.find("agents.x-k8s.io", "v1alpha1", "sandboxes").is_some());
        let only_alpha = Registry::new(&["v1alpha1".into()]);
        assert!(
            only_alpha
                .find("agents.x-k8s.io", "v1beta1", "sandboxes")
                .is_none()
        );
        let list = only_alpha.resource_list("", "v1").unwrap();
        assert!(
            list["resources"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r["name"] == "pods/exec")
        );
        let none = Registry::new(&[]);
        assert!(none.api_group("agents.x-k8s.io").is_none());
    }
}
