//! The operator's RBAC files (`docs/rbac/*.yaml`) as the tests use them: read and parsed as
//! they are, adapted only by substituting the subject (and, for the one-permission-removed
//! case, dropping one verb from a renamed copy of the role), applied with the admin client, and
//! a ServiceAccount's kubeconfig made with the TokenRequest API. Shared by `rbac_docs`, the
//! real control plane's tests and the real node's.

use std::path::PathBuf;

use serde_json::{Value, json};

/// The repository file `docs/rbac/<name>`.
pub fn rbac_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs/rbac")
        .join(name)
}

/// The objects of `docs/rbac/<name>`, as JSON.
pub fn rbac_objects(name: &str) -> Vec<Value> {
    let path = rbac_path(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{} is unreadable: {e}", path.display()));
    serde_saphyr::from_multiple::<Value>(&text)
        .unwrap_or_else(|e| panic!("{} is not YAML: {e}", path.display()))
        .into_iter()
        .filter(|o| !o.is_null())
        .collect()
}

/// `docs/rbac/clusterrole.yaml`'s ClusterRole.
pub fn cluster_role() -> Value {
    let objects = rbac_objects("clusterrole.yaml");
    assert_eq!(objects.len(), 1, "clusterrole.yaml holds one object");
    objects[0].clone()
}

/// `docs/rbac/in-cluster.yaml` for the ServiceAccount `account` in `namespace`, its binding
/// named `binding` and bound to `role` (the file's own role, or a variant of it).
pub fn in_cluster_for(namespace: &str, account: &str, binding: &str, role: &str) -> Vec<Value> {
    let mut objects = rbac_objects("in-cluster.yaml");
    assert_eq!(
        objects.len(),
        2,
        "in-cluster.yaml: a ServiceAccount and its binding"
    );
    for object in &mut objects {
        match object["kind"].as_str() {
            Some("ServiceAccount") => {
                object["metadata"]["name"] = json!(account);
                object["metadata"]["namespace"] = json!(namespace);
            }
            Some("ClusterRoleBinding") => {
                object["metadata"]["name"] = json!(binding);
                object["roleRef"]["name"] = json!(role);
                object["subjects"] =
                    json!([{"kind": "ServiceAccount", "name": account, "namespace": namespace}]);
            }
            other => panic!("in-cluster.yaml has an unexpected {other:?}"),
        }
    }
    objects
}

/// The ClusterRole renamed `name`, with `verb` taken off the rule for `resource` (a resource
/// as the rule writes it, e.g. `pods/exec`): the role with one permission removed.
pub fn role_without(name: &str, verb: &str, resource: &str) -> Value {
    let mut role = cluster_role();
    role["metadata"]["name"] = json!(name);
    let mut removed = false;
    for rule in role["rules"].as_array_mut().unwrap() {
        if rule["resources"] == json!([resource]) {
            let verbs = rule["verbs"].as_array_mut().unwrap();
            let before = verbs.len();
            verbs.retain(|v| v != verb);
            removed = verbs.len() < before;
        }
    }
    assert!(removed, "the role has {verb} {resource}");
    role
}

/// The API path an object is created at.
pub fn collection_path(object: &Value) -> String {
    let kind = object["kind"].as_str().unwrap_or_default();
    let namespace = object["metadata"]["namespace"].as_str().unwrap_or_default();
    match kind {
        "ClusterRole" => "/apis/rbac.authorization.k8s.io/v1/clusterroles".into(),
        "ClusterRoleBinding" => "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings".into(),
        "ServiceAccount" => format!("/api/v1/namespaces/{namespace}/serviceaccounts"),
        other => panic!("no path for {other}"),
    }
}

/// A kubeconfig for a bearer `token` on the cluster of `admin_kubeconfig` (its server and CA).
pub fn token_kubeconfig(admin_kubeconfig: &str, user: &str, token: &str) -> String {
    let line = |key: &str| {
        admin_kubeconfig
            .lines()
            .find_map(|l| l.trim().strip_prefix(key).map(str::trim))
            .unwrap_or_else(|| panic!("the admin kubeconfig has {key}"))
            .to_string()
    };
    let server = line("server:");
    let ca = line("certificate-authority-data:");
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: rbac-test\n  cluster:\n    server: {server}\n    certificate-authority-data: {ca}\nusers:\n- name: {user}\n  user:\n    token: {token}\ncontexts:\n- name: {user}@rbac-test\n  context:\n    cluster: rbac-test\n    user: {user}\ncurrent-context: {user}@rbac-test\n"
    )
}
