//! What the tests share: kube-rs clients from kubeconfig YAML, raw requests that keep the HTTP
//! status and body, and bounded waits (for a condition, never a fixed sleep).

use std::future::Future;
use std::time::Duration;

use http_body_util::BodyExt;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use sandbox_core::poll::poll;
use serde_json::Value;

/// Waits longer than any controller here needs (the garbage collector and the namespace
/// controller act within seconds); only a bug runs into it.
pub const WAIT: Duration = Duration::from_secs(120);

pub async fn client(kubeconfig_yaml: &str) -> Client {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let kc = Kubeconfig::from_yaml(kubeconfig_yaml).expect("kubeconfig parses");
    let config = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .expect("kubeconfig loads");
    Client::try_from(config).expect("client")
}

/// One request as sent; the answer's HTTP status and JSON body (`Null` if it is not JSON).
pub async fn raw(
    client: &Client,
    method: &str,
    path: &str,
    body: Option<&Value>,
    content_type: &str,
) -> (u16, Value) {
    let bytes = body
        .map(|b| serde_json::to_vec(b).unwrap())
        .unwrap_or_default();
    let request = http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", content_type)
        .header("accept", "application/json")
        .body(kube::client::Body::from(bytes))
        .unwrap();
    let response = client.send(request).await.expect("the server answers");
    let status = response.status().as_u16();
    let collected = response.into_body().collect().await.expect("a whole body");
    let body = serde_json::from_slice(&collected.to_bytes()).unwrap_or(Value::Null);
    (status, body)
}

pub async fn get(client: &Client, path: &str) -> (u16, Value) {
    raw(client, "GET", path, None, "application/json").await
}

pub async fn post(client: &Client, path: &str, body: &Value) -> (u16, Value) {
    raw(client, "POST", path, Some(body), "application/json").await
}

pub async fn delete(client: &Client, path: &str) -> (u16, Value) {
    raw(client, "DELETE", path, None, "application/json").await
}

pub async fn merge_patch(client: &Client, path: &str, body: &Value) -> (u16, Value) {
    raw(
        client,
        "PATCH",
        path,
        Some(body),
        "application/merge-patch+json",
    )
    .await
}

/// Polls `probe` every 100 ms (each check is a request to the server) until it yields `Some`,
/// for at most [`WAIT`].
pub async fn until<T, F, Fut>(what: &str, probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    poll(what, WAIT)
        .every(Duration::from_millis(100))
        .until_async(probe)
        .await
}

/// Waits until `GET path` answers 404.
pub async fn until_gone(client: &Client, path: &str) {
    until(&format!("{path} to be deleted"), || async {
        (get(client, path).await.0 == 404).then_some(())
    })
    .await;
}

/// The `items` of a list answer.
pub fn items(list: &Value) -> Vec<Value> {
    list["items"].as_array().cloned().unwrap_or_default()
}

/// The names of the items whose ownerReferences name `uid`.
pub fn owned_by(list: &Value, uid: &str) -> Vec<String> {
    items(list)
        .iter()
        .filter(|item| {
            item["metadata"]["ownerReferences"]
                .as_array()
                .is_some_and(|refs| refs.iter().any(|r| r["uid"] == uid))
        })
        .map(|item| item["metadata"]["name"].as_str().unwrap_or("").to_string())
        .collect()
}

/// A short random suffix, so tests sharing a control plane never share names.
pub fn unique(prefix: &str) -> String {
    let mut bytes = [0u8; 4];
    getrandom::fill(&mut bytes).unwrap();
    format!("{prefix}-{}", u32::from_le_bytes(bytes) % 1_000_000)
}
