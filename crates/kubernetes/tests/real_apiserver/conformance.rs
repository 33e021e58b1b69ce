//! The emulator held to the real API server: the same requests go to both (the agent-sandbox
//! v0.4.x control plane, and an emulator serving `agents.x-k8s.io/v1alpha1`), and their answers
//! are compared: status codes, `Status` reasons and messages, and the object fields the
//! provider reads.
//!
//! Every difference must be listed, with its reason, in the table "Known differences from the
//! real API server" of `crates/emulator/README.md`; the test fails on a difference that is not
//! listed there, and on a listed one that no longer occurs, so the list stays true.

use std::collections::BTreeMap;
use std::time::Duration;

use emulator::kubernetes::{KubeEmulatorOptions, KubernetesEmulator, SandboxPlan};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{WatchEvent, WatchParams};
use kube::{Api, Client};
use serde_json::{Value, json};

use crate::control_plane::{Shape, control_plane};
use crate::support::{
    assert_only_documented_differences, client, delete, documented_differences, get, merge_patch,
    post, raw, unique, until_gone, urlencode,
};

const LIMITED_USER: &str = "paperclip-limited";

/// One server under test.
struct Target {
    admin: Client,
    limited: Client,
    unauthenticated: Client,
}

/// What one step observed: a value per compared field (JSON pointer into the answer).
type Observations = BTreeMap<String, Value>;

/// The `Status` fields compared for every error.
const STATUS_FIELDS: [&str; 7] = [
    "/kind",
    "/status",
    "/code",
    "/reason",
    "/message",
    "/details/name",
    "/details/kind",
];

fn record(out: &mut Observations, step: &str, status: u16, body: &Value, fields: &[&str]) {
    out.insert(format!("{step} HTTP status"), json!(status));
    for field in fields {
        out.insert(
            format!("{step} {field}"),
            body.pointer(field).cloned().unwrap_or(Value::Null),
        );
    }
}

fn minimal_sandbox(name: &str) -> Value {
    json!({"apiVersion": "agents.x-k8s.io/v1alpha1", "kind": "Sandbox",
        "metadata": {"name": name, "labels": {"app": "conformance"}},
        "spec": {"podTemplate": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}})
}

fn secret(name: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": name, "labels": labels}, "stringData": {"k": "v"}})
}

/// The requests, in order, against one server; `ns` does not exist yet.
async fn observe(target: &Target, ns: &str) -> Observations {
    let mut out = Observations::new();
    let c = &target.admin;
    let api = |path: &str| format!("/api/v1/namespaces/{ns}/{path}");
    let sandboxes = format!("/apis/agents.x-k8s.io/v1alpha1/namespaces/{ns}/sandboxes");

    // Namespace creation, and what the provider reads of it.
    let (status, body) = post(c, "/api/v1/namespaces", &json!({"metadata": {"name": ns}})).await;
    record(
        &mut out,
        "create namespace",
        status,
        &body,
        &["/kind", "/metadata/name", "/status/phase"],
    );

    // Create, conflict, not found, invalid.
    let (status, body) = post(
        c,
        &api("secrets"),
        &secret("s1", json!({"app": "a", "tier": "x"})),
    )
    .await;
    record(
        &mut out,
        "create secret",
        status,
        &body,
        &[
            "/kind",
            "/apiVersion",
            "/metadata/name",
            "/metadata/namespace",
            "/metadata/labels",
            "/type",
            "/data",
            "/stringData",
        ],
    );
    out.insert(
        "create secret has uid".into(),
        json!(body["metadata"]["uid"].is_string()),
    );
    out.insert(
        "create secret has resourceVersion".into(),
        json!(body["metadata"]["resourceVersion"].is_string()),
    );
    let (status, body) = post(c, &api("secrets"), &secret("s1", json!({}))).await;
    record(
        &mut out,
        "create existing secret",
        status,
        &body,
        &STATUS_FIELDS,
    );
    let (status, body) = get(c, &api("secrets/missing")).await;
    record(
        &mut out,
        "get missing secret",
        status,
        &body,
        &STATUS_FIELDS,
    );
    let (status, body) = delete(c, &api("secrets/missing")).await;
    record(
        &mut out,
        "delete missing secret",
        status,
        &body,
        &STATUS_FIELDS,
    );
    let (status, body) = post(c, &api("secrets"), &secret("Bad_Name", json!({}))).await;
    record(
        &mut out,
        "create invalid secret",
        status,
        &body,
        &STATUS_FIELDS,
    );

    // Lists with selectors.
    post(
        c,
        &api("secrets"),
        &secret("s2", json!({"app": "a", "tier": "y"})),
    )
    .await;
    for selector in [
        "app=a",
        "app=a,tier=x",
        "tier in (x,y)",
        "tier!=x,app",
        "!tier",
        "job-name=nope",
    ] {
        let path = format!("{}?labelSelector={}", api("secrets"), urlencode(selector));
        let (status, body) = get(c, &path).await;
        let mut names: Vec<Value> = crate::support::items(&body)
            .iter()
            .map(|s| s["metadata"]["name"].clone())
            .collect();
        names.sort_by_key(|n| n.to_string());
        out.insert(
            format!("list secrets {selector:?} HTTP status"),
            json!(status),
        );
        out.insert(format!("list secrets {selector:?} names"), json!(names));
        out.insert(
            format!("list secrets {selector:?} kind"),
            body["kind"].clone(),
        );
    }
    post(c, &api("secrets"), &secret("s3", json!({}))).await;
    let (status, body) = delete(c, &api("secrets/s3")).await;
    record(
        &mut out,
        "delete secret",
        status,
        &body,
        &["/kind", "/status", "/details/name", "/details/kind"],
    );
    let (status, body) = get(c, &format!("{}?labelSelector=job-name%3Dnope", api("pods"))).await;
    record(
        &mut out,
        "list pods by job-name",
        status,
        &body,
        &["/kind", "/apiVersion", "/items"],
    );

    // A watch from a resourceVersion replays what happened after it.
    let (_, list) = get(
        c,
        &format!("{}?labelSelector=watched%3Dyes", api("secrets")),
    )
    .await;
    let rv = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    post(c, &api("secrets"), &secret("w1", json!({"watched": "yes"}))).await;
    merge_patch(
        c,
        &api("secrets/w1"),
        &json!({"metadata": {"labels": {"step": "2"}}}),
    )
    .await;
    delete(c, &api("secrets/w1")).await;
    let secrets: Api<Secret> = Api::namespaced(c.clone(), ns);
    let params = WatchParams::default().labels("watched=yes").timeout(10);
    let mut stream = secrets.watch(&params, &rv).await.expect("watch").boxed();
    let mut events = Vec::new();
    while events.len() < 3 {
        let Ok(Some(event)) = tokio::time::timeout(Duration::from_secs(15), stream.next()).await
        else {
            break;
        };
        match event.expect("a watch event") {
            WatchEvent::Added(s) => events.push(format!("ADDED {:?}", s.metadata.labels)),
            WatchEvent::Modified(s) => events.push(format!("MODIFIED {:?}", s.metadata.labels)),
            WatchEvent::Deleted(s) => events.push(format!("DELETED {:?}", s.metadata.labels)),
            WatchEvent::Bookmark(_) => {}
            WatchEvent::Error(e) => events.push(format!("ERROR {}", e.code)),
        }
    }
    out.insert("watch from resourceVersion".into(), json!(events));

    // Custom resources: create, a status write, the main resource ignoring status.
    let (status, body) = post(c, &sandboxes, &minimal_sandbox("sb1")).await;
    record(
        &mut out,
        "create sandbox",
        status,
        &body,
        &[
            "/apiVersion",
            "/kind",
            "/metadata/name",
            "/metadata/generation",
            "/spec/podTemplate",
        ],
    );
    let sb_uid = body["metadata"]["uid"].as_str().unwrap_or("").to_string();
    let condition = json!({"type": "Ready", "status": "True", "reason": "DependenciesReady",
        "message": "ready", "lastTransitionTime": "2026-01-01T00:00:00Z"});
    let (status, body) = merge_patch(
        c,
        &format!("{sandboxes}/sb1/status"),
        &json!({"status": {"conditions": [condition], "replicas": 1}}),
    )
    .await;
    record(
        &mut out,
        "patch sandbox status",
        status,
        &body,
        &[
            "/status/conditions/0/type",
            "/status/conditions/0/status",
            "/status/replicas",
            "/metadata/generation",
        ],
    );
    let (status, body) = merge_patch(
        c,
        &format!("{sandboxes}/sb1/status"),
        &json!({"status": {"conditions": [{"type": "Ready"}], "replicas": 1}}),
    )
    .await;
    record(
        &mut out,
        "patch invalid sandbox status",
        status,
        &body,
        &["/code", "/reason", "/status"],
    );
    let (status, body) = merge_patch(
        c,
        &format!("{sandboxes}/sb1"),
        &json!({"metadata": {"labels": {"edited": "yes"}}, "spec": {"replicas": 0}}),
    )
    .await;
    record(
        &mut out,
        "patch sandbox spec",
        status,
        &body,
        &["/metadata/labels", "/metadata/generation", "/spec/replicas"],
    );
    let (status, body) = post(
        c,
        &sandboxes,
        &json!({"apiVersion": "agents.x-k8s.io/v1alpha1",
        "kind": "Sandbox", "metadata": {"name": "sb-invalid"}, "spec": {}}),
    )
    .await;
    record(
        &mut out,
        "create sandbox without podTemplate",
        status,
        &body,
        &["/code", "/reason", "/status"],
    );
    let (status, _) = get(
        c,
        &format!("/apis/agents.x-k8s.io/v1beta1/namespaces/{ns}/sandboxes/sb1"),
    )
    .await;
    out.insert(
        "get sandbox at an unserved version HTTP status".into(),
        json!(status),
    );

    // Deletion with propagation: the dependents go too.
    let owned = |name: &str| {
        let mut s = secret(name, json!({}));
        s["metadata"]["ownerReferences"] = json!([{"apiVersion": "agents.x-k8s.io/v1alpha1",
            "kind": "Sandbox", "name": "sb1", "uid": sb_uid, "controller": true, "blockOwnerDeletion": true}]);
        s
    };
    post(c, &api("secrets"), &owned("owned-1")).await;
    let (status, body) = raw(
        c,
        "DELETE",
        &format!("{sandboxes}/sb1"),
        Some(&json!({"propagationPolicy": "Foreground"})),
        "application/json",
    )
    .await;
    record(
        &mut out,
        "delete sandbox in the foreground",
        status,
        &body,
        &["/kind", "/metadata/finalizers"],
    );
    out.insert(
        "delete sandbox in the foreground has deletionTimestamp".into(),
        json!(body["metadata"]["deletionTimestamp"].is_string()),
    );
    until_gone(c, &api("secrets/owned-1")).await;
    until_gone(c, &format!("{sandboxes}/sb1")).await;
    out.insert("foreground deletion completes".into(), json!(true));

    let (_, body) = post(c, &sandboxes, &minimal_sandbox("sb2")).await;
    let uid2 = body["metadata"]["uid"].clone();
    let mut dependent = secret("owned-2", json!({}));
    dependent["metadata"]["ownerReferences"] = json!([{"apiVersion": "agents.x-k8s.io/v1alpha1",
        "kind": "Sandbox", "name": "sb2", "uid": uid2}]);
    post(c, &api("secrets"), &dependent).await;
    let (status, body) = raw(
        c,
        "DELETE",
        &format!("{sandboxes}/sb2"),
        Some(&json!({"propagationPolicy": "Background"})),
        "application/json",
    )
    .await;
    record(
        &mut out,
        "delete sandbox in the background",
        status,
        &body,
        &["/kind", "/status"],
    );
    until_gone(c, &api("secrets/owned-2")).await;
    out.insert("background deletion completes".into(), json!(true));

    // Authentication and authorization.
    let (status, body) = get(&target.limited, &api("secrets")).await;
    record(
        &mut out,
        "list secrets without RBAC",
        status,
        &body,
        &STATUS_FIELDS,
    );
    let (status, body) = get(&target.limited, "/apis").await;
    record(
        &mut out,
        "discovery without RBAC",
        status,
        &body,
        &["/kind"],
    );
    // Access reviews (the probe's): every authenticated user may ask; the answer is the
    // authorizer's verdict for the caller.
    let review = |attributes: Value| {
        json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "spec": attributes})
    };
    let reviews = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
    let exec = review(json!({"resourceAttributes": {"verb": "create", "group": "",
        "resource": "pods", "subresource": "exec", "namespace": ns}}));
    let discovery = review(json!({"nonResourceAttributes": {"path": "/apis", "verb": "get"}}));
    for (step, client, body) in [
        ("access review by an admin", c, &exec),
        ("access review without RBAC", &target.limited, &exec),
        (
            "discovery access review without RBAC",
            &target.limited,
            &discovery,
        ),
    ] {
        let (status, answer) = post(client, reviews, body).await;
        record(
            &mut out,
            step,
            status,
            &answer,
            &["/kind", "/status/allowed", "/spec"],
        );
    }
    let (status, body) = get(&target.unauthenticated, &api("secrets")).await;
    record(
        &mut out,
        "list secrets with a bad token",
        status,
        &body,
        &STATUS_FIELDS,
    );
    let (status, body) = raw(
        c,
        "PATCH",
        &api("secrets/s1"),
        Some(&json!({})),
        "text/plain",
    )
    .await;
    record(
        &mut out,
        "patch with an unsupported content type",
        status,
        &body,
        &["/code", "/reason"],
    );

    // Namespace deletion: Terminating at once, then gone.
    let (status, body) = delete(c, &format!("/api/v1/namespaces/{ns}")).await;
    record(
        &mut out,
        "delete namespace",
        status,
        &body,
        &["/kind", "/status/phase"],
    );
    until_gone(c, &format!("/api/v1/namespaces/{ns}")).await;
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_emulator_answers_as_the_real_api_server() {
    let plane = control_plane(Shape::V04).await;
    let ns = unique("conformance");

    let real = Target {
        admin: client(&plane.kubeconfig).await,
        limited: client(&plane.limited_kubeconfig).await,
        unauthenticated: client(
            &plane
                .kubeconfig
                .replace(token_of(&plane.kubeconfig), "not-a-token"),
        )
        .await,
    };
    let real_observed = observe(&real, &ns).await;

    let limited_token = "limited-token-for-conformance";
    let mut opts = KubeEmulatorOptions::for_tests();
    opts.sandbox_versions = vec!["v1alpha1".into()];
    opts.sandbox_phase = false;
    opts.forbidden_tokens = vec![limited_token.into()];
    opts.user = LIMITED_USER.into();
    opts.run_pod_commands = false;
    let emu = KubernetesEmulator::start(opts)
        .await
        .expect("emulator starts");
    // The emulator's Sandbox controller stays out of the way: no pod, no status of its own.
    emu.set_default_sandbox_plan(SandboxPlan::Never);
    let kubeconfig = emu.kubeconfig_yaml().to_string();
    let emulated = Target {
        admin: client(&kubeconfig).await,
        limited: client(&kubeconfig.replace(emu.token(), limited_token)).await,
        unauthenticated: client(&kubeconfig.replace(emu.token(), "not-a-token")).await,
    };
    let emu_observed = observe(&emulated, &ns).await;
    emu.shutdown().await;

    assert_only_documented_differences(
        &real_observed,
        &emu_observed,
        &documented_differences("## Known differences from the real API server"),
    );
}

/// The bearer token of a kubeconfig written by control-plane.sh.
fn token_of(kubeconfig: &str) -> &str {
    kubeconfig
        .lines()
        .find_map(|l| l.trim().strip_prefix("token: "))
        .expect("a token in the kubeconfig")
}
