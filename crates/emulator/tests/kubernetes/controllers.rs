//! Controllers: Sandbox plans and status shapes, Jobs (exit codes, retries, deadlines, TTL),
//! pod deadlines, garbage collection and namespace termination.

use std::time::Duration;

use emulator::kubernetes::SandboxPlan;
use serde_json::{Value, json};

use crate::common::{Http, PODS, eventually, pod, start, wait_event, wait_gone};

const SB: &str = "/apis/agents.x-k8s.io/v1alpha1/namespaces/default/sandboxes";
const JOBS: &str = "/apis/batch/v1/namespaces/default/jobs";

fn sandbox(name: &str) -> Value {
    json!({ "apiVersion": "agents.x-k8s.io/v1alpha1", "kind": "Sandbox", "metadata": { "name": name },
        "spec": { "podTemplate": { "spec": { "containers": [{ "name": "agent", "image": "i",
            "command": ["/usr/bin/tini", "--", "sleep", "infinity"] }] } } } })
}

fn ready(ev: &Value) -> bool {
    ev["object"]["status"]["conditions"]
        .as_array()
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
}

fn job(name: &str, script: &str, extra: Value) -> Value {
    let mut spec = json!({ "backoffLimit": 0, "template": { "spec": { "restartPolicy": "Never",
        "containers": [{ "name": "agent", "image": "i", "command": ["sh", "-c", script] }] } } });
    if let Value::Object(m) = extra {
        for (k, v) in m {
            spec[k] = v;
        }
    }
    json!({ "metadata": { "name": name }, "spec": spec })
}

fn finished(ev: &Value) -> bool {
    ev["object"]["status"]["conditions"]
        .as_array()
        .is_some_and(|cs| {
            cs.iter().any(|c| {
                (c["type"] == "Complete" || c["type"] == "Failed") && c["status"] == "True"
            })
        })
}

async fn job_pods(http: &Http, job: &str) -> Vec<Value> {
    http.get(&format!("{PODS}?labelSelector=job-name%3D{job}"))
        .await
        .json()["items"]
        .as_array()
        .unwrap()
        .clone()
}

#[tokio::test]
async fn sandboxes_follow_their_plan() {
    let (emu, http) = start(|o| {
        o.sandbox_pod_name = true;
        o.sandbox_phase = false;
    })
    .await;
    emu.set_default_sandbox_plan(SandboxPlan::Never);
    http.create(SB, sandbox("held")).await;
    let pending = wait_event(&http, PODS, "held", |ev| {
        ev["object"]["status"]["containerStatuses"][0]["state"]["waiting"]["reason"]
            == "ContainerCreating"
    })
    .await;
    assert_eq!(pending["object"]["status"]["phase"], "Pending");
    let sb = http.get(&format!("{SB}/held")).await.json();
    assert_eq!(sb["status"]["conditions"][0]["status"], "False");
    assert!(
        sb["status"].get("phase").is_none(),
        "v1beta1-style status has no phase"
    );

    // Releasing the hold lets it become Ready, with podName.
    assert!(emu.set_sandbox_plan("default", "held", SandboxPlan::Ready));
    let ev = wait_event(&http, SB, "held", ready).await;
    assert_eq!(ev["object"]["status"]["podName"], "held");
    assert_eq!(
        ev["object"]["status"]["conditions"][0]["observedGeneration"],
        1
    );

    // Terminating on request: phase-less status still says so through Ready=False and a deletionTimestamp.
    assert!(emu.set_sandbox_plan("default", "held", SandboxPlan::Terminating));
    let sb = http.get(&format!("{SB}/held")).await.json();
    assert!(sb["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(
        sb["status"]["conditions"][0]["reason"],
        "SandboxTerminating"
    );
    // Deleting it still works and takes the pod along.
    http.call("DELETE", &format!("{SB}/held"), None).await;
    wait_gone(&http, PODS, "held").await;

    // Failed by default plan, after the ready delay.
    emu.set_default_sandbox_plan(SandboxPlan::Failed {
        reason: "ImagePullBackOff".into(),
        message: "no image".into(),
    });
    http.create(SB, sandbox("doomed")).await;
    let ev = wait_event(&http, SB, "doomed", |ev| {
        ev["object"]["status"]["conditions"]
            .as_array()
            .is_some_and(|cs| cs.iter().any(|c| c["type"] == "Failed"))
    })
    .await;
    let failed = ev["object"]["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Failed")
        .unwrap()
        .clone();
    assert_eq!(
        (failed["reason"].as_str(), failed["message"].as_str()),
        (Some("ImagePullBackOff"), Some("no image"))
    );
    emu.shutdown().await;
}

#[tokio::test]
async fn sandbox_pods_can_be_suffixed_and_found_by_label() {
    let (emu, http) = start(|o| o.sandbox_pod_suffix = true).await;
    http.create(SB, sandbox("sfx")).await;
    let ev = wait_event(&http, SB, "sfx", ready).await;
    assert_eq!(ev["object"]["status"]["phase"], "Ready");
    let pods = http
        .get(&format!(
            "{PODS}?labelSelector=agents.x-k8s.io%2Fsandbox-name%3Dsfx"
        ))
        .await
        .json();
    let name = pods["items"][0]["metadata"]["name"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(name.starts_with("sfx-") && name.len() == 9, "{name}");
    assert_eq!(
        pods["items"][0]["metadata"]["ownerReferences"][0]["kind"],
        "Sandbox"
    );
    // A pod deleted under a live Sandbox is replaced.
    http.call("DELETE", &format!("{PODS}/{name}"), None).await;
    let replacement = eventually(10, || async {
        let items = http
            .get(&format!(
                "{PODS}?labelSelector=agents.x-k8s.io%2Fsandbox-name%3Dsfx"
            ))
            .await
            .json()["items"]
            .clone();
        items
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["metadata"]["name"] != name.as_str())
            .cloned()
    })
    .await;
    assert!(
        replacement["metadata"]["name"]
            .as_str()
            .unwrap()
            .starts_with("sfx-")
    );
    emu.shutdown().await;
}

#[tokio::test]
async fn jobs_retry_within_backoff_limit_and_honour_deadlines_and_ttl() {
    let (emu, http) = start(|_| {}).await;
    http.create(
        JOBS,
        job("flaky", "echo try; exit 2", json!({ "backoffLimit": 2 })),
    )
    .await;
    let ev = wait_event(&http, JOBS, "flaky", finished).await;
    assert_eq!(ev["object"]["status"]["failed"], 3);
    assert_eq!(job_pods(&http, "flaky").await.len(), 3);

    // activeDeadlineSeconds: 3 API seconds (60 ms here) against a command that sleeps.
    http.create(
        JOBS,
        job("slow", "sleep 30", json!({ "activeDeadlineSeconds": 3 })),
    )
    .await;
    let ev = wait_event(&http, JOBS, "slow", finished).await;
    let conds = ev["object"]["status"]["conditions"].as_array().unwrap();
    let failed = conds.iter().find(|c| c["type"] == "Failed").unwrap();
    assert_eq!(failed["reason"], "DeadlineExceeded");
    eventually(10, || async {
        job_pods(&http, "slow").await.is_empty().then_some(())
    })
    .await;

    // ttlSecondsAfterFinished deletes the finished Job and (background) its pods.
    http.create(
        JOBS,
        job("short", "true", json!({ "ttlSecondsAfterFinished": 1 })),
    )
    .await;
    wait_gone(&http, JOBS, "short").await;
    eventually(10, || async {
        job_pods(&http, "short").await.is_empty().then_some(())
    })
    .await;
    emu.shutdown().await;
}

#[tokio::test]
async fn deleting_a_job_orphans_its_pods_unless_told_otherwise() {
    let (emu, http) = start(|_| {}).await;
    http.create(JOBS, job("orphaner", "true", json!({}))).await;
    wait_event(&http, JOBS, "orphaner", finished).await;
    http.call("DELETE", &format!("{JOBS}/orphaner"), None).await;
    wait_gone(&http, JOBS, "orphaner").await;
    let pods = job_pods(&http, "orphaner").await;
    assert_eq!(pods.len(), 1);
    assert_eq!(pods[0]["metadata"]["ownerReferences"], json!([]));

    http.create(JOBS, job("bg", "true", json!({}))).await;
    wait_event(&http, JOBS, "bg", finished).await;
    http.call(
        "DELETE",
        &format!("{JOBS}/bg"),
        Some(json!({ "propagationPolicy": "Background" })),
    )
    .await;
    eventually(10, || async {
        job_pods(&http, "bg").await.is_empty().then_some(())
    })
    .await;
    emu.shutdown().await;
}

#[tokio::test]
async fn pod_deadlines_kill_processes_and_owners_collect_dependents() {
    let (emu, http) = start(|_| {}).await;
    let mut p = pod("dl", &["sleep", "30"]);
    p["spec"]["activeDeadlineSeconds"] = json!(2);
    http.create(PODS, p).await;
    let ev = wait_event(&http, PODS, "dl", |ev| {
        ev["object"]["status"]["phase"] == "Failed"
    })
    .await;
    assert_eq!(ev["object"]["status"]["reason"], "DeadlineExceeded");
    eventually(10, || async {
        (emu.counts().live_processes == 0).then_some(())
    })
    .await;

    // A Secret owned by a Sandbox goes with it (background GC through ownerReferences).
    let sb = http.create(SB, sandbox("owner")).await;
    let uid = sb["metadata"]["uid"].as_str().unwrap();
    http.create("/api/v1/namespaces/default/secrets", json!({ "metadata": { "name": "owned",
        "ownerReferences": [{ "apiVersion": "agents.x-k8s.io/v1alpha1", "kind": "Sandbox", "name": "owner", "uid": uid }] } })).await;
    http.call("DELETE", &format!("{SB}/owner"), None).await;
    wait_gone(&http, "/api/v1/namespaces/default/secrets", "owned").await;
    wait_gone(&http, PODS, "owner").await;
    emu.shutdown().await;
}

#[tokio::test]
async fn terminating_pods_and_namespaces() {
    let (emu, http) = start(|o| o.pod_termination_delay = Duration::from_millis(300)).await;
    http.create(
        "/api/v1/namespaces",
        json!({ "metadata": { "name": "gone" } }),
    )
    .await;
    let pods = "/api/v1/namespaces/gone/pods";
    http.create(pods, pod("t", &["sleep", "30"])).await;
    wait_event(&http, pods, "t", |ev| {
        ev["object"]["status"]["phase"] == "Running"
    })
    .await;
    let r = http.call("DELETE", &format!("{pods}/t"), None).await.json();
    assert!(
        r["metadata"]["deletionTimestamp"].is_string(),
        "graceful: still there, Terminating"
    );
    assert_eq!(http.get(&format!("{pods}/t")).await.status, 200);
    let ns = http
        .call("DELETE", "/api/v1/namespaces/gone", None)
        .await
        .json();
    assert_eq!(ns["status"]["phase"], "Terminating");
    let r = http
        .post(
            "/api/v1/namespaces/gone/secrets",
            json!({ "metadata": { "name": "late" } }),
        )
        .await;
    assert_eq!(r.status, 403);
    assert!(
        r.json()["message"]
            .as_str()
            .unwrap()
            .contains("because it is being terminated")
    );
    wait_gone(&http, "/api/v1/namespaces", "gone").await;
    assert_eq!(http.get(&format!("{pods}/t")).await.status, 404);
    eventually(10, || async {
        (emu.counts().pod_runtimes == 0).then_some(())
    })
    .await;
    emu.shutdown().await;
}

#[tokio::test]
async fn an_object_created_after_all_its_owners_are_gone_is_collected() {
    let (emu, http) = start(|_| {}).await;
    let owned_by = |name: &str, owner: &str, uid: &Value| {
        let mut p = pod(name, &["sleep", "30"]);
        p["metadata"]["ownerReferences"] = json!([{ "apiVersion": "agents.x-k8s.io/v1alpha1",
            "kind": "Sandbox", "name": owner, "uid": uid }]);
        p
    };
    let absent = json!("00000000-0000-4000-8000-000000000000");
    // Its one owner never existed (or was deleted before it was made): collected, as the real
    // garbage collector does with a dependent none of whose owners exists.
    http.create(PODS, owned_by("late", "gone", &absent)).await;
    wait_gone(&http, PODS, "late").await;
    // One whose owner exists stays: once a later orphan is collected (events are handled in
    // order), the first pod's creation has been seen too.
    let owner = http.create(SB, sandbox("owner")).await;
    http.create(PODS, owned_by("kept", "owner", &owner["metadata"]["uid"]))
        .await;
    http.create(PODS, owned_by("later", "gone", &absent)).await;
    wait_gone(&http, PODS, "later").await;
    assert_eq!(http.get(&format!("{PODS}/kept")).await.status, 200);
    emu.shutdown().await;
}

/// An RFC 3339 time `ms` from now.
fn in_ms(ms: i64) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    js_compat::date::to_iso_string((now + ms) as f64).unwrap()
}

fn ending(name: &str, at: &str, policy: &str) -> Value {
    let mut sb = sandbox(name);
    sb["spec"]["shutdownTime"] = json!(at);
    sb["spec"]["shutdownPolicy"] = json!(policy);
    sb
}

/// `wait_gone` within a bound.
async fn gone_within(http: &Http, collection: &str, name: &str, secs: u64) {
    tokio::time::timeout(Duration::from_secs(secs), wait_gone(http, collection, name))
        .await
        .unwrap_or_else(|_| panic!("{collection}/{name} still there after {secs}s"));
}

/// agent-sandbox's lifecycle: at `spec.shutdownTime` a `Delete` Sandbox goes with its pod and,
/// through the garbage collector, what it owns; one whose time was moved forward stays; a
/// `Retain` one keeps the Sandbox, marked expired, without its pod.
#[tokio::test]
async fn sandboxes_end_at_their_shutdown_time_by_their_policy() {
    let (emu, http) = start(|_| {}).await;
    let doomed = http
        .create(SB, ending("doomed", &in_ms(1_500), "Delete"))
        .await;
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "doomed-env",
        "ownerReferences": [{"apiVersion": "agents.x-k8s.io/v1alpha1", "kind": "Sandbox",
            "name": "doomed", "uid": doomed["metadata"]["uid"], "controller": true,
            "blockOwnerDeletion": true}]}, "stringData": {"K": "v"}});
    http.create("/api/v1/namespaces/default/secrets", secret)
        .await;
    let moved = http
        .create(SB, ending("moved", &in_ms(1_500), "Delete"))
        .await;
    assert_eq!(moved["spec"]["shutdownPolicy"], "Delete");
    wait_event(&http, PODS, "moved", |ev| {
        ev["object"]["status"]["phase"] == "Running"
    })
    .await;
    let patched = http
        .merge_patch(
            &format!("{SB}/moved"),
            json!({"spec": {"shutdownTime": in_ms(600_000)}}),
        )
        .await;
    assert_eq!(patched.status, 200, "{}", patched.text());
    // A marker ending after the first two: once it is gone, their time has passed too.
    http.create(SB, ending("marker", &in_ms(2_500), "Delete"))
        .await;
    http.create(SB, ending("kept", &in_ms(-1_000), "Retain"))
        .await;

    gone_within(&http, SB, "doomed", 20).await;
    gone_within(&http, PODS, "doomed", 20).await;
    gone_within(
        &http,
        "/api/v1/namespaces/default/secrets",
        "doomed-env",
        20,
    )
    .await;
    gone_within(&http, SB, "marker", 20).await;
    assert_eq!(http.get(&format!("{SB}/moved")).await.status, 200);
    assert_eq!(http.get(&format!("{PODS}/moved")).await.status, 200);
    let kept = eventually(20, || async {
        let sb = http.get(&format!("{SB}/kept")).await.json();
        (sb["status"]["conditions"][0]["reason"] == "SandboxExpired").then_some(sb)
    })
    .await;
    assert_eq!(kept["status"]["conditions"][0]["status"], "False");
    assert_eq!(http.get(&format!("{PODS}/kept")).await.status, 404);
    emu.shutdown().await;
}

/// The CRD's schema: `shutdownTime` is a date-time, `shutdownPolicy` Delete or Retain.
#[tokio::test]
async fn sandbox_lifecycle_fields_are_validated() {
    let (emu, http) = start(|_| {}).await;
    let bad_time = http.post(SB, ending("t", "tomorrow", "Delete")).await;
    assert_eq!(bad_time.status, 422, "{}", bad_time.text());
    assert!(
        bad_time.text().contains("spec.shutdownTime"),
        "{}",
        bad_time.text()
    );
    let bad_policy = http.post(SB, ending("p", &in_ms(60_000), "Later")).await;
    assert_eq!(bad_policy.status, 422, "{}", bad_policy.text());
    assert!(
        bad_policy
            .text()
            .contains("supported values: \\\"Delete\\\", \\\"Retain\\\""),
        "{}",
        bad_policy.text()
    );
    emu.shutdown().await;
}
