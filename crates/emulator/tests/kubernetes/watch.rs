//! Watch streams: initial state, resuming from a resourceVersion, 410 Expired, bookmarks,
//! streaming lists, selector transitions and timeouts.

use serde_json::{Value, json};

use crate::common::start;

const CM: &str = "/api/v1/namespaces/default/configmaps";

fn cm(name: &str, labels: serde_json::Value) -> serde_json::Value {
    json!({ "metadata": { "name": name, "labels": labels }, "data": { "k": "v" } })
}

#[tokio::test]
async fn fresh_watches_start_with_the_current_state_then_follow_changes() {
    let (emu, http) = start(|_| {}).await;
    http.create(CM, cm("one", json!({ "w": "x" }))).await;
    let mut w = http
        .watch(&format!("{CM}?watch=true&labelSelector=w%3Dx"))
        .await;
    let ev = w.next_change().await.unwrap();
    assert_eq!(type_and_name(&ev), ("ADDED", "one"));
    assert_eq!(ev["object"]["kind"], "ConfigMap");
    http.create(CM, cm("two", json!({ "w": "x" }))).await;
    http.create(CM, cm("other", json!({ "w": "y" }))).await;
    let ev = w.next_change().await.unwrap();
    assert_eq!(type_and_name(&ev), ("ADDED", "two"));
    // Leaving the selector is a DELETED for this watch; entering it an ADDED.
    http.merge_patch(
        &format!("{CM}/two"),
        json!({ "metadata": { "labels": { "w": "z" } } }),
    )
    .await;
    let ev = w.next_change().await.unwrap();
    assert_eq!(type_and_name(&ev), ("DELETED", "two"));
    http.merge_patch(
        &format!("{CM}/other"),
        json!({ "metadata": { "labels": { "w": "x" } } }),
    )
    .await;
    let ev = w.next_change().await.unwrap();
    assert_eq!(type_and_name(&ev), ("ADDED", "other"));
    http.call("DELETE", &format!("{CM}/one"), None).await;
    let ev = w.next_change().await.unwrap();
    assert_eq!(type_and_name(&ev), ("DELETED", "one"));
    emu.shutdown().await;
}

#[tokio::test]
async fn watches_resume_from_a_resource_version_or_report_410() {
    let (emu, http) = start(|o| o.watch_history = 16).await;
    let first = http.create(CM, cm("a", json!({}))).await;
    let rv = first["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    http.create(CM, cm("b", json!({}))).await;
    http.call("DELETE", &format!("{CM}/a"), None).await;
    let mut w = http
        .watch(&format!("{CM}?watch=1&resourceVersion={rv}"))
        .await;
    let kinds: Vec<String> = [
        w.next_change().await.unwrap(),
        w.next_change().await.unwrap(),
    ]
    .iter()
    .map(|e| {
        format!(
            "{}:{}",
            e["type"].as_str().unwrap(),
            e["object"]["metadata"]["name"].as_str().unwrap()
        )
    })
    .collect();
    assert_eq!(kinds, ["ADDED:b", "DELETED:a"]);
    drop(w);
    for i in 0..20 {
        http.create(CM, cm(&format!("n{i}"), json!({}))).await;
    }
    let mut w = http
        .watch(&format!("{CM}?watch=true&resourceVersion={rv}"))
        .await;
    let ev = w.next().await.unwrap();
    assert_eq!(ev["type"], "ERROR");
    assert_eq!(
        (
            ev["object"]["code"].as_i64(),
            ev["object"]["reason"].as_str()
        ),
        (Some(410), Some("Expired"))
    );
    assert!(w.next().await.is_none(), "the stream ends after the error");
    emu.shutdown().await;
}

#[tokio::test]
async fn bookmarks_streaming_lists_and_timeouts() {
    let (emu, http) = start(|o| o.bookmark_interval = std::time::Duration::from_millis(10)).await;
    http.create(CM, cm("a", json!({}))).await;
    let mut w = http
        .watch(&format!("{CM}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"))
        .await;
    assert_eq!(w.next().await.unwrap()["type"], "ADDED");
    let end = w.next().await.unwrap();
    assert_eq!(end["type"], "BOOKMARK");
    assert_eq!(
        end["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
    let periodic = w.next().await.unwrap();
    assert_eq!(periodic["type"], "BOOKMARK");
    assert!(
        periodic["object"]["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .parse::<u64>()
            .is_ok()
    );
    assert_eq!(periodic["object"]["kind"], "ConfigMap");
    drop(w);
    let mut w = http
        .watch(&format!(
            "{CM}?watch=true&timeoutSeconds=1&resourceVersion=0"
        ))
        .await;
    assert_eq!(w.next().await.unwrap()["type"], "ADDED");
    assert!(w.next().await.is_none(), "ends after timeoutSeconds");
    emu.shutdown().await;
}

/// An event's type and object name, for compact assertions.
fn type_and_name(ev: &Value) -> (&str, &str) {
    let name = ev["object"]["metadata"]["name"].as_str();
    (ev["type"].as_str().unwrap_or(""), name.unwrap_or(""))
}
