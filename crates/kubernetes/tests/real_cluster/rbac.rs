//! The provider on the real node with the credentials an operator gives it by following the
//! guide: a ServiceAccount bound to exactly `docs/rbac/*.yaml` (the files as they are, only the
//! subject changed), its token from the TokenRequest API in a kubeconfig. A whole lifecycle
//! passes on both backends; with one permission taken off the role, the probe names it and says
//! `ok: false` (and the acquire it warned about fails on it). Every hook the host calls with its
//! default 30 s RPC timeout is asserted to answer before that.

use std::future::Future;
use std::time::{Duration, Instant};

use kube::Client;
use kubernetes::KubernetesProvider;
use kubernetes::cluster::permissions::needed;
use kubernetes::cluster::rbac_yaml::CLUSTER_ROLE;
use kubernetes::config::{Backend, EgressMode};
use sandbox_core::NullSink;
use serde_json::{Value, json};

use crate::harness::{COMPANY, RealLease};
use crate::node::node;
use crate::rbac_apply::{apply, bound_service_account, remove};
use crate::rbac_support::{cluster_role, role_without};
use crate::support::{client, delete, get, items, post, unique, until, until_gone};

/// The host's default RPC timeout: probe, acquire, release and destroy must answer before it.
const HOST_BOUND: Duration = Duration::from_secs(30);

/// `work`'s output, asserted to have come before the host's bound.
async fn within_host_bound<T>(what: &str, work: impl Future<Output = T>) -> T {
    let started = Instant::now();
    let out = work.await;
    let took = started.elapsed();
    assert!(
        took < HOST_BOUND,
        "{what} took {took:?}, past the host's 30 s"
    );
    out
}

/// Waits until the authorizer grants `kubeconfig`'s user `get namespaces` (a new binding reaches
/// the RBAC authorizer's cache within moments, not at once).
async fn until_bound(kubeconfig: &str) {
    let as_account = client(kubeconfig).await;
    until("the ClusterRoleBinding to take effect", || {
        let as_account = as_account.clone();
        async move {
            let review = json!({"apiVersion": "authorization.k8s.io/v1",
                "kind": "SelfSubjectAccessReview",
                "spec": {"resourceAttributes": {"verb": "get", "resource": "namespaces"}}});
            let (status, answer) = post(
                &as_account,
                "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                &review,
            )
            .await;
            (status == 201 && answer["status"]["allowed"] == true).then_some(())
        }
    })
    .await;
}

/// A ServiceAccount bound to `role` by `docs/rbac/in-cluster.yaml`: its kubeconfig, the
/// objects to remove, and the namespace it lives in (to delete).
async fn account(
    admin: &Client,
    admin_kubeconfig: &str,
    role: &str,
) -> (String, Vec<Value>, String) {
    let namespace = unique("rbac-accounts");
    let (kubeconfig, objects) = bound_service_account(
        admin,
        admin_kubeconfig,
        &namespace,
        "paperclip-server",
        role,
    )
    .await;
    until_bound(&kubeconfig).await;
    (kubeconfig, objects, namespace)
}

async fn delete_namespace(admin: &Client, namespace: &str) {
    let path = format!("/api/v1/namespaces/{namespace}");
    let (status, body) = delete(admin, &path).await;
    assert!(status == 200 || status == 404, "DELETE {path}: {body}");
    until_gone(admin, &path).await;
}

async fn probe(provider: &KubernetesProvider, config: &Value) -> Value {
    within_host_bound(
        "probe",
        provider.probe(&json!({"config": config, "companyId": COMPANY}), &NullSink),
    )
    .await
    .expect("the probe never throws for cluster errors")
}

/// probe → acquire → execute → (sandbox-cr) sync in and out → release → destroy, all with the
/// ServiceAccount's credentials (`config`), checked by the admin to leave nothing.
async fn lifecycle(backend: &'static str, account_kubeconfig: &str) {
    let lease = within_host_bound(
        "acquire",
        RealLease::acquire(
            &format!("rbac-{backend}"),
            backend,
            json!({"kubeconfig": account_kubeconfig}),
        ),
    )
    .await;
    assert_eq!(
        lease.config["kubeconfig"], account_kubeconfig,
        "the account's credentials"
    );
    let probed = probe(&lease.provider, &lease.config).await;
    assert_eq!(probed["ok"], true, "{}", probed["summary"]);
    let count = needed(
        if backend == "job" {
            Backend::Job
        } else {
            Backend::SandboxCr
        },
        EgressMode::Standard,
    )
    .len();
    assert!(
        probed["summary"].as_str().unwrap().contains(&format!(
            "\nPermissions: all {count} the config needs are granted.\n"
        )),
        "{}",
        probed["summary"]
    );
    if backend == "job" {
        let result = lease.execute(json!({}), &NullSink).await;
        assert_eq!(result["exitCode"], 0, "{result}");
    } else {
        assert_eq!(lease.sh("echo in the pod").await, "in the pod\n");
        sync_round_trip(&lease).await;
    }
    let released = within_host_bound(
        "release",
        lease
            .provider
            .release_lease(&lease.lease_params(), &NullSink),
    )
    .await;
    assert_eq!(released.map_err(|e| e.message), Ok(None));
    let destroyed = within_host_bound(
        "destroy",
        lease
            .provider
            .destroy_lease(&lease.lease_params(), &NullSink),
    )
    .await;
    assert_eq!(destroyed.map_err(|e| e.message), Ok(None));
    lease.check_gone().await;
    delete_namespace(&lease.admin, &lease.namespace).await;
}

/// A file synced in, changed in the pod, and synced back out.
async fn sync_round_trip(lease: &RealLease) {
    let host = tempfile::tempdir().unwrap();
    let file = host.path().join("in.txt");
    std::fs::write(&file, "from the host\n").unwrap();
    let params = |operations: Value| {
        json!({"config": lease.config, "companyId": COMPANY, "lease": lease.lease,
            "operations": operations})
    };
    lease
        .provider
        .sync_in(
            &params(json!([{"operationId": "in", "files": [{"kind": "file",
                "sourcePath": file, "targetPath": "/workspace/rbac/in.txt"}]}])),
            &NullSink,
        )
        .await
        .unwrap_or_else(|e| panic!("syncIn refused: {}", e.message));
    lease
        .sh("sed 's/host/pod/' /workspace/rbac/in.txt > /workspace/rbac/out.txt")
        .await;
    let back = host.path().join("out.txt");
    lease
        .provider
        .sync_out(
            &params(json!([{"operationId": "out", "files": [{"kind": "file",
                "sourcePath": "/workspace/rbac/out.txt", "targetPath": back}]}])),
            &NullSink,
        )
        .await
        .unwrap_or_else(|e| panic!("syncOut refused: {}", e.message));
    assert_eq!(std::fs::read_to_string(&back).unwrap(), "from the pod\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_whole_lifecycle_with_exactly_the_generated_rbac_on_both_backends() {
    let node = node().await;
    let admin = client(&node.kubeconfig).await;
    apply(&admin, &[cluster_role()]).await;
    let (kubeconfig, objects, namespace) = account(&admin, &node.kubeconfig, CLUSTER_ROLE).await;
    lifecycle("sandbox-cr", &kubeconfig).await;
    lifecycle("job", &kubeconfig).await;
    remove(&admin, &objects).await;
    delete_namespace(&admin, &namespace).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_one_permission_removed_the_probe_names_it() {
    let node = node().await;
    let admin = client(&node.kubeconfig).await;
    let role = unique("paperclip-sandbox-provider-without-secrets");
    apply(&admin, &[role_without(&role, "create", "secrets")]).await;
    let (kubeconfig, objects, namespace) = account(&admin, &node.kubeconfig, &role).await;
    let slug = unique("rbac-reduced");
    let config = node.provider_config(&slug, "sandbox-cr", json!({"kubeconfig": kubeconfig}));
    let provider = KubernetesProvider::new();
    let probed = probe(&provider, &config).await;
    assert_eq!(probed["ok"], false, "{probed}");
    let summary = probed["summary"].as_str().unwrap();
    let tenant = format!("paperclip-{slug}");
    let total = probed["metadata"]["checks"].as_array().unwrap().len();
    assert!(
        summary.starts_with(&format!(
            "Kubernetes cluster reachable, but 1 of {total} checks failed. Tenant namespace: {tenant}.\n"
        )),
        "{summary}"
    );
    assert!(
        summary.contains(&format!("\nPermission missing: create secrets in namespace {tenant}, to each run's Secret with the adapter's keys (pc-<run>-env), deleted with the lease.\n")),
        "{summary}"
    );
    let missing: Vec<&Value> = probed["metadata"]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["ok"] == false)
        .collect();
    assert_eq!(
        missing,
        [&json!({"check": "permission", "ok": false,
            "message": format!("Permission missing: create secrets in namespace {tenant}, to each run's Secret with the adapter's keys (pc-<run>-env), deleted with the lease."),
            "verb": "create", "group": "", "resource": "secrets", "allowed": false,
            "namespace": tenant})]
    );
    // What the probe warned of: an acquire with these credentials fails on it, and cleans up.
    let err = within_host_bound(
        "acquire",
        provider.acquire_lease(
            &json!({"config": config, "companyId": COMPANY, "runId": "rbac-reduced"}),
            &NullSink,
        ),
    )
    .await
    .unwrap_err();
    assert_eq!(err.code, Some(403), "{}", err.message);
    assert!(
        err.message.contains("cannot create resource \"secrets\""),
        "{}",
        err.message
    );
    let sandboxes = format!("/apis/agents.x-k8s.io/v1beta1/namespaces/{tenant}/sandboxes");
    until("the failed acquire's Sandbox to be gone", || async {
        let (status, list) = get(&admin, &sandboxes).await;
        assert_eq!(status, 200, "{list}");
        items(&list).is_empty().then_some(())
    })
    .await;
    remove(&admin, &objects).await;
    let (status, body) = delete(
        &admin,
        &format!("/apis/rbac.authorization.k8s.io/v1/clusterroles/{role}"),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    delete_namespace(&admin, &namespace).await;
    delete_namespace(&admin, &tenant).await;
}
