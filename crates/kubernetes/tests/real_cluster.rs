//! The sandbox-cr lifecycle against a real cluster, when one is offered:
//!
//! ```sh
//! PAPERCLIP_K8S_TEST_KUBECONFIG=$HOME/.kube/kind-config \
//! PAPERCLIP_K8S_TEST_IMAGE=ghcr.io/example/agent-image:tag \
//!   cargo test -p kubernetes --features real-cluster --test real_cluster -- --nocapture
//! ```
//!
//! The cluster needs the kubernetes-sigs/agent-sandbox controller (`agents.x-k8s.io/v1alpha1`)
//! and the credential the permissions for every API call the provider makes. `PAPERCLIP_K8S_TEST_IMAGE` (optional) replaces
//! the adapter image: it must have `/usr/bin/tini` and `/bin/sh`.
//!
//! Why a feature: this is the one test that runs a command in a pod a real kubelet started, and
//! no machine that runs `npm test` has such a cluster (the real control plane of
//! `tests/real_apiserver` has no kubelet). A test that cannot run must fail with the reason,
//! never skip or pass; so it is no target of `cargo test --workspace` at all (the `real-cluster`
//! feature is its `required-features`), and when it is asked for by name it fails, naming the
//! variable, if `PAPERCLIP_K8S_TEST_KUBECONFIG` is not set.

use kubernetes::KubernetesProvider;
use sandbox_core::NullSink;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sandbox_cr_lifecycle_on_a_real_cluster() {
    let path = std::env::var("PAPERCLIP_K8S_TEST_KUBECONFIG").expect(
        "cannot run: set PAPERCLIP_K8S_TEST_KUBECONFIG to the kubeconfig of a cluster with the \
         agent-sandbox controller (see this file's doc comment)",
    );
    let kubeconfig = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("cannot run: the kubeconfig {path} is unreadable: {error}"));
    let mut config = json!({"kubeconfig": kubeconfig, "companySlug": "native-test"});
    if let Ok(image) = std::env::var("PAPERCLIP_K8S_TEST_IMAGE") {
        config["adapters"] = json!([{"adapterType": "claude_local", "runtimeImage": image}]);
    }
    let provider = KubernetesProvider::new();
    let sink = NullSink;
    let probe = provider
        .probe(&json!({"config": config, "companyId": "c"}), &sink)
        .await
        .unwrap();
    assert_eq!(probe["ok"], true, "{probe}");
    let lease = provider
        .acquire_lease(
            &json!({"config": config, "companyId": "c", "runId": "native-real-cluster"}),
            &sink,
        )
        .await
        .unwrap();
    let lease_ref =
        json!({"providerLeaseId": lease["providerLeaseId"], "metadata": lease["metadata"]});
    let result = provider
        .execute(
            &json!({"config": config, "companyId": "c", "lease": lease_ref,
                "command": "sh", "args": ["-c", "cat; echo done >&2"], "stdin": "hello\n",
                "timeoutMs": 300000}),
            &sink,
        )
        .await
        .unwrap();
    let release = json!({"config": config, "companyId": "c",
        "providerLeaseId": lease["providerLeaseId"], "leaseMetadata": lease["metadata"]});
    provider.destroy_lease(&release, &sink).await.unwrap();
    assert_eq!(result["exitCode"], 0, "{result}");
    assert_eq!(result["stdout"], "hello\n");
    assert_eq!(result["stderr"], "done\n");
}
