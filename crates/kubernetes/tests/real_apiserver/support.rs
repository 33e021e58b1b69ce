//! What the tests share: kube-rs clients from kubeconfig YAML, raw requests that keep the HTTP
//! status and body, bounded waits (for a condition, never a fixed sleep), and the comparison of
//! the emulator with a real server against the differences its README lists. The real-node
//! tests (`tests/real_cluster`, `tests/real_cluster_exec_timeout.rs`) include this file too.

use std::collections::BTreeMap;
use std::future::Future;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::Duration;

use http_body_util::BodyExt;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use sandbox_core::poll::poll;
use serde_json::Value;

/// The repository's root (the scripts, the emulator's README).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Starts a server script's `up` (`command` as the caller made it, with stdin kept open: the
/// script holds its server up until stdin closes) and reads the JSON line the script prints
/// once the server is ready; `what` names the script in a failure, whose reason the script
/// writes to stderr (the test's).
pub fn start_up(command: &mut Command, what: &str) -> (Child, ChildStdin, Value) {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|error| panic!("bash cannot run {what}: {error}"));
    let stdin = child.stdin.take().unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap_or_else(|error| panic!("{what} stdout: {error}"));
    match serde_json::from_str(&line) {
        Ok(ready) => (child, stdin, ready),
        Err(_) => {
            let status = child.wait().ok();
            panic!("{what} did not start (exit {status:?}); its reason is on stderr above")
        }
    }
}

/// The observations the emulator's README lists under `heading` (the first code span of each
/// table row): the differences from the real server that are known and kept.
pub fn documented_differences(heading: &str) -> Vec<String> {
    let readme = std::fs::read_to_string(repo_root().join("crates/emulator/README.md"))
        .expect("crates/emulator/README.md");
    let section = readme
        .split(heading)
        .nth(1)
        .unwrap_or_else(|| panic!("the README has the section {heading:?}"));
    let section = section.split("\n## ").next().unwrap();
    section
        .lines()
        .filter(|l| l.starts_with("| `"))
        .filter_map(|l| l.split('`').nth(1).map(str::to_string))
        .collect()
}

/// Compares what the real server and the emulator showed, observation by observation, and fails
/// on a difference that `documented` does not list and on a listed one that no longer differs.
pub fn assert_only_documented_differences(
    real_observed: &BTreeMap<String, Value>,
    emu_observed: &BTreeMap<String, Value>,
    documented: &[String],
) {
    let mut undocumented = Vec::new();
    let mut differing = Vec::new();
    for (key, real_value) in real_observed {
        let emu_value = emu_observed.get(key).unwrap_or(&Value::Null);
        if real_value != emu_value {
            differing.push(key.clone());
            if !documented.contains(key) {
                undocumented.push(format!(
                    "{key}:\n    real:     {real_value}\n    emulator: {emu_value}"
                ));
            }
        }
    }
    let stale: Vec<&String> = documented
        .iter()
        .filter(|d| !differing.contains(d))
        .collect();
    assert!(
        undocumented.is_empty() && stale.is_empty(),
        "differences not in crates/emulator/README.md:\n{}\nlisted there but no longer different: {stale:?}",
        undocumented.join("\n")
    );
}

/// `s` percent-encoded for a query parameter (unreserved characters kept).
pub fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'.' | b'_' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

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
