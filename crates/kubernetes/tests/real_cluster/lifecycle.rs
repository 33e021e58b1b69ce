//! Lifecycles on the real node: what a real kubelet, container runtime and agent-sandbox
//! controller do with the objects the provider makes, and the real exec protocol.

use kube::Client;
use kubernetes::KubernetesProvider;
use sandbox_core::NullSink;
use serde_json::{Value, json};

use crate::node::node;
use crate::support::{client, get, items, owned_by, unique, until, until_gone};

const COMPANY: &str = "company-real-node";

fn lease_ref(lease: &Value) -> Value {
    json!({"providerLeaseId": lease["providerLeaseId"], "metadata": lease["metadata"]})
}

fn lease_params(config: &Value, lease: &Value) -> Value {
    json!({"config": config, "companyId": COMPANY,
        "providerLeaseId": lease["providerLeaseId"], "leaseMetadata": lease["metadata"]})
}

fn condition<'a>(object: &'a Value, kind: &str) -> Option<&'a Value> {
    object["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)
}

/// The names of the items of `GET path`.
async fn names(admin: &Client, path: &str) -> Vec<String> {
    let (status, body) = get(admin, path).await;
    assert_eq!(status, 200, "GET {path}: {body}");
    items(&body)
        .iter()
        .map(|item| item["metadata"]["name"].as_str().unwrap_or("").to_string())
        .collect()
}

/// probe → acquire (a Sandbox the real controller turns into a running pod, the API version
/// found by discovery) → execute with stdin → release and destroy → nothing of the lease left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sandbox_cr_smoke_lifecycle() {
    let node = node().await;
    let admin = client(&node.kubeconfig).await;
    let slug = unique("smoke");
    let config = node.provider_config(&slug, "sandbox-cr", json!({}));
    let provider = KubernetesProvider::new();
    let sink = NullSink;

    let probe = provider
        .probe(&json!({"config": config, "companyId": COMPANY}), &sink)
        .await
        .unwrap();
    assert_eq!(probe["ok"], true, "{probe}");

    let lease = provider
        .acquire_lease(
            &json!({"config": config, "companyId": COMPANY, "runId": "real-node-smoke"}),
            &sink,
        )
        .await
        .unwrap_or_else(|e| panic!("acquire refused: {}", e.message));
    // agent-sandbox v1.0.1 serves v1beta1 only: discovery must pick it.
    assert_eq!(lease["metadata"]["sandboxApiVersion"], "v1beta1", "{lease}");
    let ns = lease["metadata"]["namespace"].as_str().unwrap().to_string();
    let name = lease["providerLeaseId"].as_str().unwrap().to_string();
    let sandboxes = format!("/apis/agents.x-k8s.io/v1beta1/namespaces/{ns}/sandboxes");
    let sandbox_path = format!("{sandboxes}/{name}");

    // The real controller reconciled the Sandbox: Ready, with a pod the kubelet runs.
    let sandbox = until("the Sandbox to be Ready", || async {
        let (status, sandbox) = get(&admin, &sandbox_path).await;
        assert_eq!(status, 200, "{sandbox}");
        (condition(&sandbox, "Ready").is_some_and(|c| c["status"] == "True")).then_some(sandbox)
    })
    .await;
    let uid = sandbox["metadata"]["uid"].as_str().unwrap().to_string();
    let (_, pods) = get(&admin, &format!("/api/v1/namespaces/{ns}/pods")).await;
    let pod = items(&pods)
        .into_iter()
        .find(|pod| owned_by(&json!({"items": [pod]}), &uid).len() == 1)
        .unwrap_or_else(|| panic!("no pod owned by the Sandbox: {pods}"));
    assert_eq!(pod["status"]["phase"], "Running", "{pod}");
    if let Some(node_name) = &node.node_name {
        assert_eq!(pod["spec"]["nodeName"], node_name.as_str());
    }
    assert_eq!(
        pod["spec"]["containers"][0]["image"],
        node.agent_image.as_str()
    );

    let result = provider
        .execute(
            &json!({"config": config, "companyId": COMPANY, "lease": lease_ref(&lease),
                "command": "sh", "args": ["-c", "cat; echo done >&2"], "stdin": "hello\n",
                "timeoutMs": 60000}),
            &sink,
        )
        .await
        .unwrap_or_else(|e| panic!("execute refused: {}", e.message));
    assert_eq!(result["exitCode"], 0, "{result}");
    assert_eq!(result["timedOut"], false, "{result}");
    assert_eq!(result["stdout"], "hello\n", "{result}");
    assert_eq!(result["stderr"], "done\n", "{result}");

    let params = lease_params(&config, &lease);
    assert_eq!(provider.release_lease(&params, &sink).await.unwrap(), None);
    assert_eq!(provider.destroy_lease(&params, &sink).await.unwrap(), None);

    // Nothing the lease made is left: the Sandbox, its pod, its Secret, its egress policies.
    until_gone(&admin, &sandbox_path).await;
    for list in [
        format!("/api/v1/namespaces/{ns}/pods"),
        format!("/api/v1/namespaces/{ns}/secrets"),
        format!("/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies"),
    ] {
        until(&format!("{list} to hold nothing of the lease"), || async {
            let (status, body) = get(&admin, &list).await;
            assert_eq!(status, 200, "{body}");
            let left: Vec<String> = items(&body)
                .iter()
                .map(|item| item["metadata"]["name"].as_str().unwrap_or("").to_string())
                .filter(|n| n.starts_with(&name))
                .collect();
            (owned_by(&body, &uid).is_empty() && left.is_empty()).then_some(())
        })
        .await;
    }
    assert_eq!(names(&admin, &sandboxes).await, Vec::<String>::new());
    assert_eq!(
        names(&admin, &format!("/api/v1/namespaces/{ns}/pods")).await,
        Vec::<String>::new(),
        "no pod is left in the tenant namespace"
    );
}
