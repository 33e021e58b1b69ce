//! REST semantics: discovery, auth, Status errors, selectors, patches, dry runs, deletes.

use serde_json::{Value, json};

use emulator::kubernetes::DenyRule;

use crate::common::{Http, PODS, pod, start};

#[tokio::test]
async fn discovery_serves_every_group_and_the_configured_sandbox_versions() {
    let (emu, http) = start(|o| o.sandbox_versions = vec!["v1beta1".into()]).await;
    let apis = http.get("/apis").await.json();
    let groups: Vec<&str> = apis["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap())
        .collect();
    for g in [
        "batch",
        "networking.k8s.io",
        "rbac.authorization.k8s.io",
        "cilium.io",
        "agents.x-k8s.io",
    ] {
        assert!(groups.contains(&g), "{g} in {groups:?}");
    }
    let sandbox = apis["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "agents.x-k8s.io")
        .unwrap();
    assert_eq!(
        sandbox["versions"],
        json!([{ "groupVersion": "agents.x-k8s.io/v1beta1", "version": "v1beta1" }])
    );
    assert_eq!(
        http.get("/apis/agents.x-k8s.io/v1alpha1/namespaces/default/sandboxes")
            .await
            .status,
        404
    );
    let core = http.get("/api/v1").await.json();
    assert!(
        core["resources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["name"] == "pods/exec")
    );
    assert_eq!(http.get("/api").await.json()["versions"], json!(["v1"]));
    assert_eq!(http.get("/version").await.json()["major"], "1");
    let (emu2, none) = start(|o| o.sandbox_versions = vec![]).await;
    let apis = none.get("/apis").await.json();
    assert!(
        !apis["groups"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["name"] == "agents.x-k8s.io")
    );
    emu2.shutdown().await;
    emu.shutdown().await;
}

#[tokio::test]
async fn bad_tokens_get_401_and_forbidden_requests_403() {
    let (emu, http) = start(|_| {}).await;
    let r = http.call_as("GET", PODS, None, "", Some("")).await;
    assert_eq!(
        (r.status, r.json()["reason"].clone()),
        (401, json!("Unauthorized"))
    );
    let r = http.call_as("GET", PODS, None, "", Some("wrong")).await;
    assert_eq!(r.status, 401);
    let r = http
        .call_as("GET", &format!("{PODS}/x"), None, "", Some("nobody"))
        .await;
    assert_eq!(r.status, 403);
    assert_eq!(
        r.json()["message"],
        "pods \"x\" is forbidden: User \"system:serviceaccount:paperclip:paperclip-plugin\" cannot get resource \"pods\" in API group \"\" in the namespace \"default\""
    );
    emu.deny(DenyRule {
        verb: Some("get".into()),
        group: None,
        resource: "pods".into(),
        namespace: None,
        name: Some("secret-pod".into()),
    });
    let r = http.get(&format!("{PODS}/secret-pod")).await;
    assert_eq!(
        (r.status, r.json()["reason"].clone()),
        (403, json!("Forbidden"))
    );
    assert_eq!(http.get(&format!("{PODS}/other")).await.status, 404);
    // Unauthorized requests are logged as such.
    assert!(
        emu.request_log()
            .iter()
            .any(|r| !r.authorized && r.status == Some(401))
    );
    emu.shutdown().await;
}

#[tokio::test]
async fn status_errors_carry_reason_code_and_details() {
    let (emu, http) = start(|_| {}).await;
    let r = http.get(&format!("{PODS}/missing")).await;
    assert_eq!(r.status, 404);
    assert_eq!(
        r.json(),
        json!({ "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "pods \"missing\" not found", "reason": "NotFound",
            "details": { "name": "missing", "kind": "pods" }, "code": 404 })
    );
    let r = http
        .get("/apis/batch/v1/namespaces/default/jobs/j")
        .await
        .json();
    assert_eq!(
        (r["message"].as_str().unwrap(), &r["details"]["group"]),
        ("jobs.batch \"j\" not found", &json!("batch"))
    );

    http.create(PODS, pod("a", &["sleep", "9"])).await;
    let r = http.post(PODS, pod("a", &["sleep", "9"])).await;
    assert_eq!(
        (r.status, r.json()["reason"].clone()),
        (409, json!("AlreadyExists"))
    );
    assert_eq!(r.json()["message"], "pods \"a\" already exists");

    // A namespace must exist before anything is created in it.
    let r = http
        .post(
            "/api/v1/namespaces/nowhere/secrets",
            json!({ "metadata": { "name": "s" } }),
        )
        .await;
    assert_eq!(
        (r.status, r.json()["message"].clone()),
        (404, json!("namespaces \"nowhere\" not found"))
    );

    // 422 with field causes.
    let r = http
        .post(
            "/apis/batch/v1/namespaces/default/jobs",
            json!({ "metadata": { "name": "j" }, "spec": { "template": { "spec": {
            "containers": [{ "name": "c", "image": "x" }] } } } }),
        )
        .await;
    assert_eq!(r.status, 422);
    let body = r.json();
    assert_eq!(body["reason"], "Invalid");
    assert_eq!(
        body["details"]["causes"][0]["field"],
        "spec.template.spec.restartPolicy"
    );
    assert_eq!(body["details"]["causes"][0]["reason"], "FieldValueRequired");

    // Body/URL disagreements are 400s.
    let mut other_ns = pod("b", &["true"]);
    other_ns["metadata"]["namespace"] = json!("kube-system");
    assert_eq!(http.post(PODS, other_ns).await.status, 400);
    let r = http
        .call_as("POST", PODS, None, "application/json", None)
        .await;
    assert_eq!(r.status, 400);
    // Strategic merge patches are refused for custom resources (415), as by a real server.
    http.create(
        "/apis/cilium.io/v2/namespaces/default/ciliumnetworkpolicies",
        json!({
        "metadata": { "name": "fqdn" }, "spec": { "endpointSelector": {} } }),
    )
    .await;
    let r = http
        .call_as(
            "PATCH",
            "/apis/cilium.io/v2/namespaces/default/ciliumnetworkpolicies/fqdn",
            Some(json!({ "metadata": { "labels": { "a": "b" } } })),
            "application/strategic-merge-patch+json",
            None,
        )
        .await;
    assert_eq!(
        (r.status, r.json()["reason"].clone()),
        (415, json!("UnsupportedMediaType"))
    );
    // Unknown paths.
    assert_eq!(http.get("/apis/nope.io/v1/things").await.status, 404);
    emu.shutdown().await;
}

#[tokio::test]
async fn writes_keep_versions_generations_and_preconditions() {
    let (emu, http) = start(|_| {}).await;
    let secrets = "/api/v1/namespaces/default/secrets";
    let s = http
        .create(
            secrets,
            json!({ "metadata": { "name": "s", "labels": { "a": "1" } },
        "stringData": { "K": "v" } }),
        )
        .await;
    assert_eq!(s["data"]["K"], "dg==");
    assert!(s.get("stringData").is_none());
    assert_eq!(s["type"], "Opaque");
    let rv1 = s["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();

    // PUT with the current resourceVersion works once; the old one then conflicts.
    let mut next = s.clone();
    next["data"]["K2"] = json!("dzI=");
    let r = http
        .call("PUT", &format!("{secrets}/s"), Some(next.clone()))
        .await;
    assert_eq!(r.status, 200);
    assert_ne!(r.json()["metadata"]["resourceVersion"], json!(rv1));
    let r = http.call("PUT", &format!("{secrets}/s"), Some(next)).await;
    assert_eq!(
        (r.status, r.json()["reason"].clone()),
        (409, json!("Conflict"))
    );
    assert!(
        r.json()["message"]
            .as_str()
            .unwrap()
            .contains("the object has been modified")
    );

    // Patches: merge, JSON patch, and a no-op that keeps the resourceVersion.
    let p = http
        .merge_patch(
            &format!("{secrets}/s"),
            json!({ "metadata": { "labels": { "b": "2" } } }),
        )
        .await
        .json();
    assert_eq!(p["metadata"]["labels"], json!({ "a": "1", "b": "2" }));
    let rv = p["metadata"]["resourceVersion"].clone();
    let same = http
        .merge_patch(
            &format!("{secrets}/s"),
            json!({ "metadata": { "labels": { "b": "2" } } }),
        )
        .await
        .json();
    assert_eq!(same["metadata"]["resourceVersion"], rv);
    let j = http
        .call_as(
            "PATCH",
            &format!("{secrets}/s"),
            Some(json!([{ "op": "remove", "path": "/metadata/labels/a" }])),
            "application/json-patch+json",
            None,
        )
        .await
        .json();
    assert_eq!(j["metadata"]["labels"], json!({ "b": "2" }));

    // Spec changes bump the generation, status changes do not; status only via /status.
    let np = "/apis/networking.k8s.io/v1/namespaces/default/networkpolicies";
    let n = http
        .create(
            np,
            json!({ "metadata": { "name": "deny" }, "spec": { "podSelector": {} } }),
        )
        .await;
    assert_eq!(n["metadata"]["generation"], 1);
    let n2 = http
        .merge_patch(
            &format!("{np}/deny"),
            json!({ "spec": { "policyTypes": ["Egress"] } }),
        )
        .await
        .json();
    assert_eq!(n2["metadata"]["generation"], 2);
    let sb = "/apis/agents.x-k8s.io/v1alpha1/namespaces/default/sandboxes";
    let created = http.create(sb, json!({ "metadata": { "name": "x" }, "status": { "phase": "Ready" },
        "spec": { "podTemplate": { "spec": { "containers": [{ "name": "agent", "image": "i" }] } } } })).await;
    assert_ne!(
        created["status"]["phase"], "Ready",
        "status is ignored on create"
    );

    // Delete preconditions and dry runs.
    let r = http
        .call(
            "DELETE",
            &format!("{secrets}/s"),
            Some(json!({ "preconditions": { "uid": "nope" } })),
        )
        .await;
    assert_eq!(r.status, 409);
    let r = http
        .call("DELETE", &format!("{secrets}/s?dryRun=All"), None)
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(http.get(&format!("{secrets}/s")).await.status, 200);
    // Deleted at once: a `Status` naming it, as the real API server answers.
    let r = http.call("DELETE", &format!("{secrets}/s"), None).await;
    assert_eq!(
        (
            r.status,
            r.json()["kind"].clone(),
            r.json()["details"]["name"].clone()
        ),
        (200, json!("Status"), json!("s"))
    );
    assert_eq!(http.get(&format!("{secrets}/s")).await.status, 404);
    emu.shutdown().await;
}

/// The names of the items of a list, in order.
fn names_of(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap().to_string())
        .collect()
}

/// The names of the pods a list of `PODS` with `query` returns, in order.
async fn pod_names(http: &Http, query: &str) -> Vec<String> {
    names_of(&http.get(&format!("{PODS}{query}")).await.json())
}

#[tokio::test]
async fn lists_filter_by_labels_and_fields_and_paginate() {
    let (emu, http) = start(|_| {}).await;
    for (name, tier) in [("a", "web"), ("b", "db"), ("c", "web")] {
        let mut p = pod(name, &["sleep", "30"]);
        p["metadata"]["labels"]["tier"] = json!(tier);
        http.create(PODS, p).await;
    }
    assert_eq!(
        pod_names(&http, "?labelSelector=tier%3Dweb").await,
        ["a", "c"]
    );
    assert_eq!(
        pod_names(&http, "?labelSelector=tier%20notin%20(web)").await,
        ["b"]
    );
    assert_eq!(
        pod_names(&http, "?fieldSelector=metadata.name%21%3Da").await,
        ["b", "c"]
    );
    assert_eq!(
        http.get(&format!("{PODS}?labelSelector=a%20in%20("))
            .await
            .status,
        400
    );
    let page = http.get(&format!("{PODS}?limit=2")).await.json();
    assert_eq!(names_of(&page), ["a", "b"]);
    assert_eq!(page["metadata"]["remainingItemCount"], 1);
    let token = page["metadata"]["continue"].as_str().unwrap();
    assert_eq!(
        pod_names(&http, &format!("?limit=2&continue={token}")).await,
        ["c"]
    );
    // All namespaces.
    assert_eq!(
        http.get("/api/v1/pods").await.json()["items"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    // Counts per namespace for leak assertions.
    assert_eq!(emu.counts().count("default", "pods"), 3);
    let r = http
        .call("DELETE", &format!("{PODS}?labelSelector=tier%3Dweb"), None)
        .await;
    assert_eq!(r.json()["items"].as_array().unwrap().len(), 2);
    assert_eq!(emu.counts().count("default", "pods"), 1);
    emu.shutdown().await;
}
