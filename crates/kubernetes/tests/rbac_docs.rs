//! `docs/rbac/*.yaml` are written from the provider's permission list
//! (`kubernetes::cluster::permissions`, through `cluster::rbac_yaml`) and must not go stale:
//! the probe checks that list, and the real-server tests apply these files.
//! Regenerate with `UPDATE_DOCS=1 cargo test -p kubernetes --test rbac_docs`.

use std::collections::BTreeSet;
use std::path::PathBuf;

use kubernetes::cluster::permissions::{PERMISSIONS, Scope};
use kubernetes::cluster::rbac_yaml::{
    CLUSTER_ROLE, KUBECONFIG_USER, SERVER_NAMESPACE, SERVER_SERVICE_ACCOUNT, rbac_files,
};
use serde_json::{Value, json};

#[allow(dead_code)]
#[path = "support/rbac.rs"]
mod rbac_support;
use rbac_support::{cluster_role, in_cluster_for, rbac_objects, role_without};

fn repo_path(relative: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(relative)
}

#[test]
fn docs_rbac_is_up_to_date() {
    let update = std::env::var_os("UPDATE_DOCS").is_some_and(|v| !v.is_empty() && v != "0");
    let mut stale = Vec::new();
    for (relative, expected) in rbac_files() {
        let path = repo_path(relative);
        if update {
            std::fs::create_dir_all(path.parent().unwrap()).expect("create docs/rbac");
            std::fs::write(&path, &expected).expect("write the RBAC file");
            continue;
        }
        if std::fs::read_to_string(&path).unwrap_or_default() != expected {
            stale.push(relative);
        }
    }
    assert!(
        stale.is_empty(),
        "{stale:?} stale or missing; regenerate with `UPDATE_DOCS=1 cargo test -p kubernetes --test rbac_docs`"
    );
}

/// `(apiGroup, resource, verb)` of every rule, resource URLs as `("", url, verb)`.
fn granted(role: &Value) -> BTreeSet<(String, String, String)> {
    let mut out = BTreeSet::new();
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|a| a.iter().map(|s| s.as_str().unwrap().to_string()).collect())
            .unwrap_or_default()
    };
    for rule in role["rules"].as_array().unwrap() {
        let groups = strings(&rule["apiGroups"]);
        let groups = if groups.is_empty() {
            vec![String::new()]
        } else {
            groups
        };
        let resources = [
            strings(&rule["resources"]),
            strings(&rule["nonResourceURLs"]),
        ]
        .concat();
        for group in &groups {
            for resource in &resources {
                for verb in strings(&rule["verbs"]) {
                    out.insert((group.clone(), resource.clone(), verb));
                }
            }
        }
    }
    out
}

#[test]
fn the_cluster_role_grants_exactly_the_permission_list() {
    let role = cluster_role();
    assert_eq!(role["kind"], "ClusterRole");
    assert_eq!(role["metadata"]["name"], CLUSTER_ROLE);
    let mut expected = BTreeSet::new();
    for permission in PERMISSIONS {
        let resource = match permission.subresource {
            Some(sub) => format!("{}/{sub}", permission.resource),
            None => permission.resource.to_string(),
        };
        let group = if permission.scope == Scope::Url {
            ""
        } else {
            permission.group
        };
        for verb in permission.verbs {
            expected.insert((group.to_string(), resource.clone(), verb.to_string()));
        }
    }
    assert_eq!(granted(&role), expected);
    let without = role_without("variant", "create", "pods/exec");
    assert_eq!(granted(&without).len(), expected.len() - 1);
}

#[test]
fn the_bindings_bind_that_role_cluster_wide() {
    let in_cluster = rbac_objects("in-cluster.yaml");
    assert_eq!(
        in_cluster[0],
        json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": SERVER_SERVICE_ACCOUNT, "namespace": SERVER_NAMESPACE}})
    );
    assert_eq!(in_cluster[1]["kind"], "ClusterRoleBinding");
    assert_eq!(
        in_cluster[1]["roleRef"],
        json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": CLUSTER_ROLE})
    );
    assert_eq!(
        in_cluster[1]["subjects"],
        json!([{"kind": "ServiceAccount", "name": SERVER_SERVICE_ACCOUNT, "namespace": SERVER_NAMESPACE}])
    );
    let user = rbac_objects("kubeconfig-user.yaml");
    assert_eq!(user.len(), 1);
    assert_eq!(user[0]["roleRef"]["name"], CLUSTER_ROLE);
    assert_eq!(
        user[0]["subjects"],
        json!([{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": KUBECONFIG_USER}])
    );
    // What the tests apply: the same objects, only the subject (and the binding's name) changed.
    let adapted = in_cluster_for("test-ns", "test-sa", "test-binding", CLUSTER_ROLE);
    assert_eq!(adapted[1]["roleRef"], in_cluster[1]["roleRef"]);
    assert_eq!(adapted[1]["subjects"][0]["name"], "test-sa");
}
