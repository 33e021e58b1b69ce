//! The operator's RBAC, written from [`super::permissions::PERMISSIONS`]: the files under
//! `docs/rbac/` (`tests/rbac_docs.rs` fails when they are stale and rewrites them with
//! `UPDATE_DOCS=1`). The real-cluster tests apply these files, with only the subject changed.
//!
//! One ClusterRole holds every rule; two bindings grant it cluster-wide, because tenant
//! namespaces are created per company and cannot be bound ahead: to the ServiceAccount
//! paperclip-server runs as in the cluster (`inCluster: true`), or to the user (or group) of
//! the kubeconfig it is given.

use std::fmt::Write;

use crate::cluster::permissions::{PERMISSIONS, Permission, Scope};

/// The ClusterRole's (and the in-cluster binding's) name.
pub const CLUSTER_ROLE: &str = "paperclip-sandbox-provider";
/// The ServiceAccount paperclip-server runs as in the cluster.
pub const SERVER_SERVICE_ACCOUNT: &str = "paperclip-server";
/// The namespace paperclip-server runs in: the one the tenants' egress policies let agent pods
/// call back to.
pub const SERVER_NAMESPACE: &str = "paperclip";
/// The kubeconfig user the kubeconfig binding names.
pub const KUBECONFIG_USER: &str = "paperclip-sandbox-provider";

const REGENERATE: &str = "# Generated from crates/kubernetes/src/cluster/permissions.rs (the list the probe checks);\n# regenerate with: UPDATE_DOCS=1 cargo test -p kubernetes --test rbac_docs\n";

/// `(path under the repository, content)` of each file.
pub fn rbac_files() -> Vec<(&'static str, String)> {
    vec![
        ("docs/rbac/clusterrole.yaml", cluster_role()),
        ("docs/rbac/in-cluster.yaml", in_cluster()),
        ("docs/rbac/kubeconfig-user.yaml", kubeconfig_user()),
    ]
}

fn quoted(items: &[&str]) -> String {
    let items: Vec<String> = items.iter().map(|i| format!("\"{i}\"")).collect();
    format!("[{}]", items.join(", "))
}

fn rule(out: &mut String, permission: &Permission) {
    let scope = match permission.scope {
        Scope::Cluster => "cluster-scoped",
        Scope::Tenant => "in each tenant namespace",
        Scope::Url => "a non-resource URL",
    };
    let _ = writeln!(
        out,
        "  # {} ({scope}; {}): {}.",
        permission.name(),
        permission.needed_by.describe(),
        permission.why
    );
    let verbs = quoted(permission.verbs);
    if permission.scope == Scope::Url {
        let _ = writeln!(
            out,
            "  - nonResourceURLs: {}",
            quoted(&[permission.resource])
        );
        let _ = writeln!(out, "    verbs: {verbs}");
        return;
    }
    let resource = match permission.subresource {
        Some(sub) => format!("{}/{sub}", permission.resource),
        None => permission.resource.to_string(),
    };
    let _ = writeln!(out, "  - apiGroups: {}", quoted(&[permission.group]));
    let _ = writeln!(out, "    resources: {}", quoted(&[&resource]));
    let _ = writeln!(out, "    verbs: {verbs}");
}

fn cluster_role() -> String {
    let mut out = String::new();
    out.push_str("# What the Paperclip Kubernetes sandbox provider may do on a cluster: every rule it needs for\n# any config (the probe checks only those the environment's backend and egressMode use).\n# Bind it with in-cluster.yaml or kubeconfig-user.yaml.\n");
    out.push_str(REGENERATE);
    let _ = write!(
        out,
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: {CLUSTER_ROLE}\nrules:\n"
    );
    for permission in PERMISSIONS {
        rule(&mut out, permission);
    }
    out
}

fn binding_header(name: &str) -> String {
    format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: {name}\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: {CLUSTER_ROLE}\nsubjects:\n"
    )
}

fn in_cluster() -> String {
    let mut out = format!(
        "# paperclip-server in the cluster (config inCluster: true), as the ServiceAccount\n# {SERVER_SERVICE_ACCOUNT} in the namespace {SERVER_NAMESPACE} (the namespace the tenants' egress policies let agent\n# pods call back to). Run the server's pod with serviceAccountName: {SERVER_SERVICE_ACCOUNT}.\n# Tenant namespaces are created per company, so the role is bound cluster-wide.\n"
    );
    out.push_str(REGENERATE);
    let _ = write!(
        out,
        "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: {SERVER_SERVICE_ACCOUNT}\n  namespace: {SERVER_NAMESPACE}\n---\n"
    );
    out.push_str(&binding_header(CLUSTER_ROLE));
    let _ = write!(
        out,
        "  - kind: ServiceAccount\n    name: {SERVER_SERVICE_ACCOUNT}\n    namespace: {SERVER_NAMESPACE}\n"
    );
    out
}

fn kubeconfig_user() -> String {
    let mut out = format!(
        "# paperclip-server given a kubeconfig (config kubeconfig): binds the role to the kubeconfig's\n# user, here {KUBECONFIG_USER} (a client certificate's CN or an OIDC user name; for a group,\n# set kind: Group). For a ServiceAccount token in the kubeconfig, use in-cluster.yaml instead.\n# Tenant namespaces are created per company, so the role is bound cluster-wide.\n"
    );
    out.push_str(REGENERATE);
    out.push_str(&binding_header(&format!("{CLUSTER_ROLE}-user")));
    let _ = write!(
        out,
        "  - apiGroup: rbac.authorization.k8s.io\n    kind: User\n    name: {KUBECONFIG_USER}\n"
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_permission_is_a_rule_with_its_verbs() {
        let role = cluster_role();
        for permission in PERMISSIONS {
            let verbs = format!("    verbs: {}\n", quoted(permission.verbs));
            let header = format!("  # {} (", permission.name());
            let at = role.find(&header).unwrap_or_else(|| panic!("{header}"));
            assert!(role[at..].contains(&verbs), "{header}");
        }
        assert!(role.contains("  - apiGroups: [\"\"]\n    resources: [\"pods/exec\"]\n    verbs: [\"create\", \"get\"]\n"));
        assert!(role.contains("  - nonResourceURLs: [\"/apis\"]\n    verbs: [\"get\"]\n"));
        let files = rbac_files();
        assert_eq!(files.len(), 3);
        assert!(files[1].1.contains(
            "  - kind: ServiceAccount\n    name: paperclip-server\n    namespace: paperclip\n"
        ));
    }
}
