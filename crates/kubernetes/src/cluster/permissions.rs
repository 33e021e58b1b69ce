//! Every permission the provider needs on a cluster, in one list ([`PERMISSIONS`]): the probe
//! checks each one a config needs with a SelfSubjectAccessReview, and the operator's RBAC
//! (`docs/rbac/*.yaml`, rendered by [`super::rbac_yaml`]) grants exactly these.
//!
//! The list is derived from the requests the provider makes: each [`ApiMethod`] names the
//! accesses it needs ([`accesses_of`]; a test fails when a method has none, or needs one the
//! list lacks), and beside them the requests that are not `ApiMethod`s: the exec websocket of
//! execute, sync and the login PTY ([`EXEC_ACCESSES`]), and the `blockOwnerDeletion` owner
//! reference of the per-run Secret ([`OWNER_REFERENCE_ACCESSES`]).
//!
//! Tenant namespaces are made per company on its first lease (`<namespacePrefix><slug>`), so
//! their permissions cannot be granted ahead in a namespaced Role: the RBAC grants them
//! cluster-wide ([`Scope::Tenant`] is checked in the config's tenant namespace). The provider
//! makes no request in the namespace paperclip-server runs in (`paperclip`): the egress policy
//! only names it in a rule.

use crate::builders::cilium::{CILIUM_GROUP, CILIUM_PLURAL};
use crate::builders::sandbox_cr::{SANDBOX_GROUP, SANDBOX_PLURAL as SANDBOXES};
use crate::cluster::ApiMethod;
use crate::config::{Backend, EgressMode};

/// Where a permission applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    /// A cluster-scoped resource (namespaces, access reviews).
    Cluster,
    /// A namespaced resource, used in the tenant namespaces.
    Tenant,
    /// A non-resource URL (discovery).
    Url,
}

/// Which configs need a permission.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NeededBy {
    Every,
    /// `backend: "sandbox-cr"` (the default).
    SandboxBackend,
    /// `backend: "job"`.
    JobBackend,
    /// `egressMode: "cilium"`.
    CiliumEgress,
}

impl NeededBy {
    pub fn applies(self, backend: Backend, egress: EgressMode) -> bool {
        match self {
            NeededBy::Every => true,
            NeededBy::SandboxBackend => backend == Backend::SandboxCr,
            NeededBy::JobBackend => backend == Backend::Job,
            NeededBy::CiliumEgress => egress == EgressMode::Cilium,
        }
    }

    /// The condition in words, for the RBAC comments.
    pub fn describe(self) -> &'static str {
        match self {
            NeededBy::Every => "every config",
            NeededBy::SandboxBackend => "backend sandbox-cr, the default",
            NeededBy::JobBackend => "backend job",
            NeededBy::CiliumEgress => "egressMode cilium",
        }
    }
}

/// One rule: the verbs on one resource (or subresource, or URL) in one API group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Permission {
    /// `""` is the core group.
    pub group: &'static str,
    /// A resource (`pods`), or a URL path for [`Scope::Url`].
    pub resource: &'static str,
    pub subresource: Option<&'static str>,
    pub verbs: &'static [&'static str],
    pub scope: Scope,
    pub needed_by: NeededBy,
    /// What the provider does with it.
    pub why: &'static str,
}

/// One verb on one resource: what a request needs and what an access review asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Access {
    pub group: &'static str,
    pub resource: &'static str,
    pub subresource: Option<&'static str>,
    pub verb: &'static str,
}

impl Access {
    const fn new(group: &'static str, resource: &'static str, verb: &'static str) -> Self {
        Access {
            group,
            resource,
            subresource: None,
            verb,
        }
    }

    const fn sub(
        group: &'static str,
        resource: &'static str,
        subresource: &'static str,
        verb: &'static str,
    ) -> Self {
        Access {
            group,
            resource,
            subresource: Some(subresource),
            verb,
        }
    }

    /// `pods/exec`, `sandboxes.agents.x-k8s.io`, `jobs.batch/status`, `/apis`: the resource
    /// with its group, as kubectl names it.
    pub fn resource_name(&self) -> String {
        let mut name = self.resource.to_string();
        if !self.group.is_empty() {
            name = format!("{name}.{}", self.group);
        }
        if let Some(sub) = self.subresource {
            name = format!("{name}/{sub}");
        }
        name
    }
}

/// Every permission the provider needs, for any config (the RBAC's rules, in this order).
pub const PERMISSIONS: &[Permission] = &[
    Permission {
        group: "",
        resource: "namespaces",
        subresource: None,
        verbs: &["get", "create"],
        scope: Scope::Cluster,
        needed_by: NeededBy::Every,
        why: "read each company's tenant namespace, and create it on the company's first lease",
    },
    Permission {
        group: "",
        resource: "serviceaccounts",
        subresource: None,
        verbs: &["get", "create"],
        scope: Scope::Tenant,
        needed_by: NeededBy::Every,
        why: "the tenant ServiceAccount agent pods run as (paperclip-tenant-sa)",
    },
    Permission {
        group: "",
        resource: "resourcequotas",
        subresource: None,
        verbs: &["get", "create"],
        scope: Scope::Tenant,
        needed_by: NeededBy::Every,
        why: "the tenant ResourceQuota (paperclip-quota)",
    },
    Permission {
        group: "",
        resource: "limitranges",
        subresource: None,
        verbs: &["get", "create"],
        scope: Scope::Tenant,
        needed_by: NeededBy::Every,
        why: "the tenant LimitRange (paperclip-limits)",
    },
    Permission {
        group: "",
        resource: "secrets",
        subresource: None,
        verbs: &["create", "delete"],
        scope: Scope::Tenant,
        needed_by: NeededBy::Every,
        why: "each run's Secret with the adapter's keys (pc-<run>-env), deleted with the lease",
    },
    Permission {
        group: "",
        resource: "pods",
        subresource: None,
        verbs: &["get", "list", "watch", "delete"],
        scope: Scope::Tenant,
        needed_by: NeededBy::Every,
        why: "find a lease's pod, follow its readiness, delete it on destroy",
    },
    Permission {
        group: "",
        resource: "pods",
        subresource: Some("log"),
        verbs: &["get"],
        scope: Scope::Tenant,
        needed_by: NeededBy::Every,
        why: "a Job's output; the tenant Role grants it to the tenant ServiceAccount, and RBAC lets only a holder grant it",
    },
    Permission {
        group: "",
        resource: "pods",
        subresource: Some("exec"),
        verbs: &["create", "get"],
        scope: Scope::Tenant,
        needed_by: NeededBy::SandboxBackend,
        why: "execute, file sync and the login terminal (a websocket: API servers from 1.30 authorize it as create, older ones as get)",
    },
    Permission {
        group: "batch",
        resource: "jobs",
        subresource: None,
        verbs: &["create", "delete"],
        scope: Scope::Tenant,
        needed_by: NeededBy::JobBackend,
        why: "each run's Job, deleted on release",
    },
    Permission {
        group: "batch",
        resource: "jobs",
        subresource: Some("status"),
        verbs: &["get"],
        scope: Scope::Tenant,
        needed_by: NeededBy::JobBackend,
        why: "follow a Job to its end",
    },
    Permission {
        group: "batch",
        resource: "jobs",
        subresource: Some("finalizers"),
        verbs: &["update"],
        scope: Scope::Tenant,
        needed_by: NeededBy::JobBackend,
        why: "the run Secret's owner reference blocks the Job's deletion (clusters with the OwnerReferencesPermissionEnforcement admission plugin, e.g. OpenShift, require it)",
    },
    Permission {
        group: SANDBOX_GROUP,
        resource: SANDBOXES,
        subresource: None,
        verbs: &["create", "get", "watch", "patch", "delete"],
        scope: Scope::Tenant,
        needed_by: NeededBy::SandboxBackend,
        why: "each lease's agent-sandbox Sandbox, its readiness, moving its end (shutdownTime) forward while it is used, and its deletion on release",
    },
    Permission {
        group: SANDBOX_GROUP,
        resource: SANDBOXES,
        subresource: Some("finalizers"),
        verbs: &["update"],
        scope: Scope::Tenant,
        needed_by: NeededBy::SandboxBackend,
        why: "the run Secret's owner reference blocks the Sandbox's deletion (clusters with the OwnerReferencesPermissionEnforcement admission plugin, e.g. OpenShift, require it)",
    },
    Permission {
        group: "networking.k8s.io",
        resource: "networkpolicies",
        subresource: None,
        verbs: &["get", "create"],
        scope: Scope::Tenant,
        needed_by: NeededBy::Every,
        why: "the tenant's deny-all and egress policies, and each run's scoped egress policy (egressMode: standard)",
    },
    Permission {
        group: CILIUM_GROUP,
        resource: CILIUM_PLURAL,
        subresource: None,
        verbs: &["get", "create"],
        scope: Scope::Tenant,
        needed_by: NeededBy::CiliumEgress,
        why: "the tenant's FQDN egress policy and each run's scoped one",
    },
    Permission {
        group: "rbac.authorization.k8s.io",
        resource: "roles",
        subresource: None,
        verbs: &["get", "create"],
        scope: Scope::Tenant,
        needed_by: NeededBy::Every,
        why: "the tenant Role (paperclip-tenant-role: get pods/log)",
    },
    Permission {
        group: "rbac.authorization.k8s.io",
        resource: "rolebindings",
        subresource: None,
        verbs: &["get", "create"],
        scope: Scope::Tenant,
        needed_by: NeededBy::Every,
        why: "the tenant RoleBinding (paperclip-tenant-rb) of that Role to the tenant ServiceAccount",
    },
    Permission {
        group: "authorization.k8s.io",
        resource: "selfsubjectaccessreviews",
        subresource: None,
        verbs: &["create"],
        scope: Scope::Cluster,
        needed_by: NeededBy::Every,
        why: "the probe's check of these permissions (every authenticated user has it by default)",
    },
    Permission {
        group: "",
        resource: "/apis",
        subresource: None,
        verbs: &["get"],
        scope: Scope::Url,
        needed_by: NeededBy::SandboxBackend,
        why: "discover which Sandbox API version the cluster serves (every user has it by default)",
    },
];

impl Permission {
    /// `pods/exec`, `sandboxes.agents.x-k8s.io`, `jobs.batch/status`, `/apis`.
    pub fn name(&self) -> String {
        Access {
            group: self.group,
            resource: self.resource,
            subresource: self.subresource,
            verb: "",
        }
        .resource_name()
    }

    /// One [`Access`] per verb.
    pub fn accesses(&self) -> impl Iterator<Item = Access> + '_ {
        self.verbs.iter().map(|verb| Access {
            group: self.group,
            resource: self.resource,
            subresource: self.subresource,
            verb,
        })
    }
}

/// What a config needs: every access of the permissions that apply to its backend and egress
/// mode, in list order, with the permission it comes from.
pub fn needed(backend: Backend, egress: EgressMode) -> Vec<(Access, &'static Permission)> {
    PERMISSIONS
        .iter()
        .filter(|p| p.needed_by.applies(backend, egress))
        .flat_map(|p| p.accesses().map(move |a| (a, p)))
        .collect()
}

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// The exec websocket (`pods/exec`): execute, sync and the login terminal. API servers before
/// 1.30 authorize the upgrade (a GET) as `get`, later ones as `create`.
pub const EXEC_ACCESSES: &[Access] = &[
    Access::sub("", "pods", "exec", "create"),
    Access::sub("", "pods", "exec", "get"),
];

/// The per-run Secret's owner reference has `blockOwnerDeletion: true`; where the
/// OwnerReferencesPermissionEnforcement admission plugin runs, that needs `update` on the
/// owner's `finalizers`.
pub const OWNER_REFERENCE_ACCESSES: &[Access] = &[
    Access::sub(SANDBOX_GROUP, SANDBOXES, "finalizers", "update"),
    Access::sub("batch", "jobs", "finalizers", "update"),
];

/// The accesses one API call needs (the custom-object calls address both Sandboxes and
/// CiliumNetworkPolicies).
pub fn accesses_of(method: ApiMethod) -> &'static [Access] {
    METHOD_ACCESSES
        .iter()
        .find(|(m, _)| *m == method)
        .map_or(&[], |(_, accesses)| accesses)
}

/// Each [`ApiMethod`] with what it needs. A table rather than a `match`, so a new method
/// without an entry fails the unit test below instead of another module's build.
const METHOD_ACCESSES: &[(ApiMethod, &[Access])] = {
    use ApiMethod::*;
    &[
        (ReadNamespace, &[Access::new("", "namespaces", "get")]),
        (CreateNamespace, &[Access::new("", "namespaces", "create")]),
        (
            ReadNamespacedServiceAccount,
            &[Access::new("", "serviceaccounts", "get")],
        ),
        (
            CreateNamespacedServiceAccount,
            &[Access::new("", "serviceaccounts", "create")],
        ),
        (
            ReadNamespacedResourceQuota,
            &[Access::new("", "resourcequotas", "get")],
        ),
        (
            CreateNamespacedResourceQuota,
            &[Access::new("", "resourcequotas", "create")],
        ),
        (
            ReadNamespacedLimitRange,
            &[Access::new("", "limitranges", "get")],
        ),
        (
            CreateNamespacedLimitRange,
            &[Access::new("", "limitranges", "create")],
        ),
        (
            CreateNamespacedSecret,
            &[Access::new("", "secrets", "create")],
        ),
        (
            DeleteNamespacedSecret,
            &[Access::new("", "secrets", "delete")],
        ),
        (ReadNamespacedPod, &[Access::new("", "pods", "get")]),
        (ListNamespacedPod, &[Access::new("", "pods", "list")]),
        (DeleteNamespacedPod, &[Access::new("", "pods", "delete")]),
        (
            ReadNamespacedPodLog,
            &[Access::sub("", "pods", "log", "get")],
        ),
        (
            CreateNamespacedJob,
            &[Access::new("batch", "jobs", "create")],
        ),
        (
            ReadNamespacedJobStatus,
            &[Access::sub("batch", "jobs", "status", "get")],
        ),
        (
            DeleteNamespacedJob,
            &[Access::new("batch", "jobs", "delete")],
        ),
        (
            CreateNamespacedCustomObject,
            &[
                Access::new(SANDBOX_GROUP, SANDBOXES, "create"),
                Access::new(CILIUM_GROUP, CILIUM_PLURAL, "create"),
            ],
        ),
        (
            GetNamespacedCustomObject,
            &[
                Access::new(SANDBOX_GROUP, SANDBOXES, "get"),
                Access::new(CILIUM_GROUP, CILIUM_PLURAL, "get"),
            ],
        ),
        (
            DeleteNamespacedCustomObject,
            &[Access::new(SANDBOX_GROUP, SANDBOXES, "delete")],
        ),
        (
            PatchNamespacedCustomObject,
            &[Access::new(SANDBOX_GROUP, SANDBOXES, "patch")],
        ),
        (
            ReadNamespacedNetworkPolicy,
            &[Access::new("networking.k8s.io", "networkpolicies", "get")],
        ),
        (
            CreateNamespacedNetworkPolicy,
            &[Access::new(
                "networking.k8s.io",
                "networkpolicies",
                "create",
            )],
        ),
        (
            ReadNamespacedRole,
            &[Access::new(RBAC_GROUP, "roles", "get")],
        ),
        (
            CreateNamespacedRole,
            &[Access::new(RBAC_GROUP, "roles", "create")],
        ),
        (
            ReadNamespacedRoleBinding,
            &[Access::new(RBAC_GROUP, "rolebindings", "get")],
        ),
        (
            CreateNamespacedRoleBinding,
            &[Access::new(RBAC_GROUP, "rolebindings", "create")],
        ),
        (GetApiVersions, &[Access::new("", "/apis", "get")]),
        (
            WatchNamespacedCustomObject,
            &[Access::new(SANDBOX_GROUP, SANDBOXES, "watch")],
        ),
        (WatchNamespacedPod, &[Access::new("", "pods", "watch")]),
        (
            CreateSelfSubjectAccessReview,
            &[Access::new(
                "authorization.k8s.io",
                "selfsubjectaccessreviews",
                "create",
            )],
        ),
    ]
};

/// The permission of [`PERMISSIONS`] that grants `access`, if any.
pub fn granting(access: &Access) -> Option<&'static Permission> {
    PERMISSIONS.iter().find(|p| {
        p.group == access.group
            && p.resource == access.resource
            && p.subresource == access.subresource
            && p.verbs.contains(&access.verb)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// Every request the provider makes, as accesses.
    fn every_request() -> Vec<Access> {
        ApiMethod::ALL
            .iter()
            .flat_map(|m| accesses_of(*m).iter().copied())
            .chain(EXEC_ACCESSES.iter().copied())
            .chain(OWNER_REFERENCE_ACCESSES.iter().copied())
            .collect()
    }

    #[test]
    fn every_api_call_has_its_permissions_in_the_list() {
        for method in ApiMethod::ALL {
            let accesses = accesses_of(*method);
            assert!(
                !accesses.is_empty(),
                "{} makes a request: say which permission it needs in METHOD_ACCESSES",
                method.key()
            );
            for access in accesses {
                assert!(
                    granting(access).is_some(),
                    "{} needs {} {}, which PERMISSIONS (and so the RBAC) lacks",
                    method.key(),
                    access.verb,
                    access.resource_name()
                );
            }
        }
        for access in EXEC_ACCESSES.iter().chain(OWNER_REFERENCE_ACCESSES) {
            assert!(granting(access).is_some(), "{access:?}");
        }
    }

    #[test]
    fn the_list_grants_nothing_no_request_needs() {
        let used: HashSet<Access> = every_request().into_iter().collect();
        for permission in PERMISSIONS {
            for access in permission.accesses() {
                assert!(
                    used.contains(&access),
                    "{} {} is in PERMISSIONS but no request needs it",
                    access.verb,
                    access.resource_name()
                );
            }
        }
        let methods: HashSet<ApiMethod> = METHOD_ACCESSES.iter().map(|(m, _)| *m).collect();
        assert_eq!(methods.len(), METHOD_ACCESSES.len(), "one entry per method");
    }

    #[test]
    fn what_each_config_needs() {
        let names = |backend, egress| -> Vec<String> {
            needed(backend, egress)
                .iter()
                .map(|(a, _)| format!("{} {}", a.verb, a.resource_name()))
                .collect()
        };
        let sandbox = names(Backend::SandboxCr, EgressMode::Standard);
        assert!(sandbox.contains(&"create pods/exec".to_string()));
        assert!(sandbox.contains(&"get /apis".to_string()));
        assert!(!sandbox.iter().any(|n| n.contains("jobs")));
        assert!(!sandbox.iter().any(|n| n.contains("cilium")));
        let job = names(Backend::Job, EgressMode::Cilium);
        assert!(job.contains(&"create jobs.batch".to_string()));
        assert!(job.contains(&"create ciliumnetworkpolicies.cilium.io".to_string()));
        assert!(
            !job.iter()
                .any(|n| n.contains("sandboxes") || n.contains("exec"))
        );
        assert_eq!(
            Access::sub(SANDBOX_GROUP, SANDBOXES, "finalizers", "update").resource_name(),
            "sandboxes.agents.x-k8s.io/finalizers"
        );
    }
}
