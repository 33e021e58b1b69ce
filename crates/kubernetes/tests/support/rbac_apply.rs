//! Applying the operator's RBAC (`support/rbac.rs`) to a real API server with the admin client,
//! and the credentials of a ServiceAccount bound by it: its token from the TokenRequest API, in
//! a kubeconfig. For the real control plane's tests and the real node's (both include
//! `real_apiserver/support.rs` as `crate::support`).

use kube::Client;
use serde_json::{Value, json};

use crate::rbac_support::{collection_path, in_cluster_for, token_kubeconfig};
use crate::support::{delete, post};

/// Creates each object; one that already exists (the shared ClusterRole) is left as it is.
pub async fn apply(admin: &Client, objects: &[Value]) {
    for object in objects {
        let path = collection_path(object);
        let (status, body) = post(admin, &path, object).await;
        assert!(
            status == 201 || status == 409,
            "POST {path} answered {status}: {body}"
        );
    }
}

/// Deletes what [`apply`] made (not the ClusterRole of the file, which other tests share).
pub async fn remove(admin: &Client, objects: &[Value]) {
    for object in objects {
        let name = object["metadata"]["name"].as_str().unwrap();
        let path = format!("{}/{name}", collection_path(object));
        let (status, body) = delete(admin, &path).await;
        assert!(
            status == 200 || status == 202 || status == 404,
            "DELETE {path} answered {status}: {body}"
        );
    }
}

/// A ServiceAccount `account` in `namespace` (created first, with the namespace) bound to
/// `role` by `docs/rbac/in-cluster.yaml`, and a kubeconfig with a token for it. Returns the
/// kubeconfig and the objects to remove afterwards.
pub async fn bound_service_account(
    admin: &Client,
    admin_kubeconfig: &str,
    namespace: &str,
    account: &str,
    role: &str,
) -> (String, Vec<Value>) {
    let (status, body) = post(
        admin,
        "/api/v1/namespaces",
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}),
    )
    .await;
    assert!(
        status == 201 || status == 409,
        "namespace {namespace}: {body}"
    );
    // The binding is cluster-scoped: named after the account's namespace too, so that tests
    // running at once never share one.
    let objects = in_cluster_for(namespace, account, &format!("{namespace}-{account}"), role);
    apply(admin, &objects).await;
    let token_path = format!("/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token");
    let request = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
        "spec": {"expirationSeconds": 3600}});
    let (status, answer) = post(admin, &token_path, &request).await;
    assert_eq!(status, 201, "TokenRequest: {answer}");
    let token = answer["status"]["token"].as_str().expect("a token");
    (token_kubeconfig(admin_kubeconfig, account, token), objects)
}
