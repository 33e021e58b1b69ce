//! Issue #37 on the real node: image references the kubelet can use. `imageRegistry` written
//! with a scheme and without one gives the same reference, which names the node's agent image
//! (imported into containerd under the rewritten name by `scripts/real-cluster/images.sh`,
//! never pulled) and runs; `runtimeImages` runs an adapter outside the built-ins; an invalid
//! reference is refused by acquire before the cluster is touched.

use std::time::{Duration, Instant};

use kubernetes::KubernetesConfig;
use kubernetes::builders::configured_runtime_images;
use sandbox_core::NullSink;
use serde_json::{Value, json};

use crate::harness::{COMPANY, RealLease};
use crate::node::{Node, node};
use crate::support::{client, get, items, unique};

/// The host's RPC timeout is 30 s; acquire must answer within 25 s.
const ACQUIRE_BOUND: Duration = Duration::from_secs(25);

/// The node's registry for the agent image, or the reason these tests cannot run.
fn agent_registry(node: &Node) -> (&str, &str) {
    match (&node.agent_registry, &node.agent_registry_image) {
        (Some(registry), Some(image)) => (registry, image),
        _ => panic!(
            "the image-registry tests need the real node's agent image under its registry name \
             (scripts/real-cluster/images.sh); PAPERCLIP_K8S_TEST_KUBECONFIG's cluster has none"
        ),
    }
}

/// The lease's pod, read from the cluster: its agent container's image and whether it is ready.
async fn pod_image(lease: &RealLease) -> (String, bool) {
    let path = format!("/api/v1/namespaces/{}/pods", lease.namespace);
    let (status, body) = get(&lease.admin, &path).await;
    assert_eq!(status, 200, "GET {path}: {body}");
    let pods = items(&body);
    let pod = pods
        .iter()
        .find(|pod| {
            pod["metadata"]["name"]
                .as_str()
                .is_some_and(|name| name.starts_with(&lease.name))
        })
        .unwrap_or_else(|| panic!("no pod of {} in {body}", lease.name));
    let image = pod["spec"]["containers"][0]["image"]
        .as_str()
        .expect("an image")
        .to_string();
    let ready = pod["status"]["containerStatuses"][0]["ready"] == true;
    (image, ready)
}

/// `imageRegistry: https://<registry>` and `imageRegistry: <registry>` both give the reference
/// that names the node's image; the pod runs it (an exec answers), and nothing is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn image_registry_with_and_without_a_scheme_runs_the_local_image() {
    let node = node().await;
    let (registry, image) = agent_registry(node);
    for written in [format!("https://{registry}"), registry.to_string()] {
        // `adapters: []` leaves the built-in table in force, so the claude_local image is the
        // one `imageRegistry` moves.
        let extra = json!({"adapters": [], "imageRegistry": written});
        let config = node.provider_config("img", "sandbox-cr", extra.clone());
        let parsed = KubernetesConfig::parse(&config).expect("a valid config");
        assert_eq!(
            configured_runtime_images(&parsed)[0],
            ("claude_local".to_string(), image.to_string()),
            "the built-in claude_local tag must be the one images.sh imports the agent under"
        );

        let started = Instant::now();
        let lease = RealLease::acquire("img-registry", "sandbox-cr", extra).await;
        assert!(started.elapsed() < ACQUIRE_BOUND, "{:?}", started.elapsed());
        assert_eq!(lease.sh("echo running").await, "running\n", "{written}");
        let (pod_image, ready) = pod_image(&lease).await;
        assert_eq!(pod_image, image, "{written}");
        assert!(ready, "{written}: the agent container is ready");
        lease.destroy_and_check_gone().await;
    }
}

/// An adapter outside the six built-ins, named with the node's image in `runtimeImages`: the
/// config validates, the lease runs that image, and its probe command `sh -c true` answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runtime_images_run_an_adapter_outside_the_built_ins() {
    let node = node().await;
    let extra = json!({"adapters": [], "adapterType": "paperclip_test_local",
        "runtimeImages": {"paperclip_test_local": node.agent_image},
        // imageRegistry leaves runtimeImages' reference alone.
        "imageRegistry": "https://registry.example.invalid/elsewhere"});
    let lease = RealLease::acquire("img-runtime", "sandbox-cr", extra).await;
    let result = lease
        .execute(json!({"command": "sh", "args": ["-c", "true"]}), &NullSink)
        .await;
    assert_eq!(result["exitCode"], 0, "{result}");
    assert_eq!(pod_image(&lease).await.0, node.agent_image);
    lease.destroy_and_check_gone().await;
}

/// A reference with a scheme in `runtimeImages` fails acquire at once with the message naming
/// the adapter and the reference, and the tenant namespace is never created.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_runtime_image_fails_before_the_cluster_is_touched() {
    let node = node().await;
    let admin = client(&node.kubeconfig).await;
    let slug = unique("img-invalid");
    let reference = format!("https://{}", node.agent_image);
    let config = node.provider_config(
        &slug,
        "sandbox-cr",
        json!({"adapters": [], "runtimeImages": {"claude_local": reference}}),
    );
    let provider = kubernetes::KubernetesProvider::new();
    let started = Instant::now();
    let err = provider
        .acquire_lease(
            &json!({"config": config, "companyId": COMPANY, "runId": "run-img-invalid"}),
            &NullSink,
        )
        .await
        .unwrap_err();
    assert!(started.elapsed() < ACQUIRE_BOUND, "{:?}", started.elapsed());
    assert_eq!(
        err.message,
        format!(
            "Kubernetes runtime image for adapter \"claude_local\" is not a valid image reference: \"{reference}\" (it starts with a URL scheme; an image reference has none (write host/path:tag)); set a valid reference (host/path:tag or host/path@sha256:…) for it in runtimeImages."
        )
    );
    let namespace = format!("paperclip-{slug}");
    let (status, body): (u16, Value) =
        get(&admin, &format!("/api/v1/namespaces/{namespace}")).await;
    assert_eq!(status, 404, "the tenant namespace must not exist: {body}");
}
