//! Faults (status, delay, drop, cut watch, cut exec) and the control API.

use std::time::{Duration, Instant};

use emulator::kubernetes::FaultRule;
use serde_json::{Value, json};

use crate::common::{PODS, eventually, running_pod, start};

fn rule(v: Value) -> FaultRule {
    serde_json::from_value(v).expect("fault rule")
}

#[tokio::test]
async fn nth_request_faults_and_after_faults() {
    let (emu, http) = start(|_| {}).await;
    let id = emu.add_fault(rule(
        json!({ "method": "GET", "path": "/api/v1/namespaces/*/pods/*", "nth": 2,
        "action": { "kind": "status", "code": 503 } }),
    ));
    assert_eq!(http.get(&format!("{PODS}/a")).await.status, 404);
    let r = http.get(&format!("{PODS}/a")).await;
    assert_eq!(
        (
            r.status,
            r.json()["reason"].clone(),
            r.json()["kind"].clone()
        ),
        (503, json!("ServiceUnavailable"), json!("Status"))
    );
    assert_eq!(http.get(&format!("{PODS}/a")).await.status, 404);
    assert_eq!(emu.faults()[0].fired, 1);
    assert!(emu.request_log().iter().any(|r| r.faults == vec![id]));

    // after: the create happens, the client hears a 500.
    emu.add_fault(rule(json!({ "method": "POST", "path": PODS, "action": { "kind": "status", "code": 500, "after": true } })));
    let r = http
        .post(PODS, crate::common::pod("made", &["sleep", "9"]))
        .await;
    assert_eq!(r.status, 500);
    assert_eq!(http.get(&format!("{PODS}/made")).await.status, 200);

    // drop: no response at all.
    emu.add_fault(rule(
        json!({ "path": "/api/v1/namespaces/default/secrets", "action": { "kind": "drop" } }),
    ));
    assert!(
        http.send("GET", "/api/v1/namespaces/default/secrets", None, "", None)
            .await
            .is_err()
    );

    // delay.
    emu.add_fault(rule(
        json!({ "path": "/version", "action": { "kind": "delay", "ms": 150 } }),
    ));
    let t = Instant::now();
    assert_eq!(http.get("/version").await.status, 200);
    assert!(t.elapsed() >= Duration::from_millis(150));
    emu.shutdown().await;
}

#[tokio::test]
async fn watches_and_execs_can_be_cut_mid_stream() {
    let (emu, http) = start(|_| {}).await;
    running_pod(&http, "w", &["sleep", "600"]).await;
    emu.add_fault(rule(json!({ "path": PODS, "query": "watch=true", "action": { "kind": "cutWatch", "afterEvents": 1 } })));
    let mut w = http.watch(&format!("{PODS}?watch=true")).await;
    assert_eq!(w.next().await.unwrap()["type"], "ADDED");
    assert!(w.next().await.is_none());
    emu.add_fault(rule(json!({ "path": PODS, "query": "watch=true", "action": { "kind": "expireWatch", "afterEvents": 0 } })));
    let mut w = http.watch(&format!("{PODS}?watch=true")).await;
    let first = w.next().await.unwrap();
    let ev = if first["type"] == "ADDED" {
        w.next().await.unwrap()
    } else {
        first
    };
    assert_eq!(ev["object"]["code"], 410);

    emu.add_fault(rule(json!({ "path": "/api/v1/namespaces/*/pods/*/exec",
        "action": { "kind": "cutExec", "afterFrames": 1, "abort": true } })));
    let path = format!(
        "{PODS}/w/exec?container=agent&stdout=true&command=sh&command=-c&command=echo+one%3B+sleep+0.2%3B+echo+two%3B+sleep+30"
    );
    let mut ex = http.exec(&path, "v5.channel.k8s.io").await.unwrap();
    let out = ex.collect().await;
    assert_eq!(out.stdout, b"one\n");
    assert!(out.status.is_none(), "no status frame after a cut");
    assert!(!out.closed_cleanly);
    // The command was killed with the stream; only the pod's own process is left.
    eventually(10, || async {
        (emu.counts().live_processes == 1).then_some(())
    })
    .await;

    // An upload cut in the middle: once 3 stdin bytes have come, the session ends with a close
    // frame and no status; the command has what came before the cut.
    emu.add_fault(rule(json!({ "path": "/api/v1/namespaces/*/pods/*/exec",
        "action": { "kind": "cutExec", "afterStdinBytes": 3 } })));
    let path = format!(
        "{PODS}/w/exec?container=agent&stdin=true&stdout=true&command=sh&command=-c&command=cat+%3E+%2Ftmp%2Fgot"
    );
    let mut ex = http.exec(&path, "v5.channel.k8s.io").await.unwrap();
    ex.send(0, b"ab").await;
    ex.send(0, b"cd").await;
    let out = ex.collect().await;
    assert!(out.status.is_none(), "no status frame after a cut");
    assert!(out.closed_cleanly);
    assert_eq!(emu.faults().last().unwrap().fired, 1);
    emu.shutdown().await;
}

#[tokio::test]
async fn the_control_api_drives_faults_settings_counts_and_reset() {
    let (emu, http) = start(|_| {}).await;
    let ctl = |p: &str| format!("/_emulator{p}");
    assert_eq!(
        http.call_as("GET", &ctl("/health"), None, "", Some(""))
            .await
            .json()["ok"],
        true
    );
    let r = http
        .post(
            &ctl("/faults"),
            json!({ "path": "/version", "action": { "kind": "status", "code": 429 } }),
        )
        .await;
    let id = r.json()["id"].as_u64().unwrap();
    assert_eq!(http.get("/version").await.status, 429);
    assert_eq!(
        http.get(&ctl("/faults")).await.json()["faults"][0]["fired"],
        1
    );
    assert_eq!(
        http.call("DELETE", &ctl(&format!("/faults/{id}")), None)
            .await
            .status,
        200
    );
    let s = http
        .call(
            "PATCH",
            &ctl("/settings"),
            Some(json!({ "podReadyDelayMs": 1, "sandboxPlan": { "state": "never" } })),
        )
        .await
        .json();
    assert_eq!(
        (
            s["podReadyDelayMs"].as_u64(),
            s["sandboxPlan"]["state"].as_str()
        ),
        (Some(1), Some("never"))
    );
    http.create(
        "/api/v1/namespaces/default/secrets",
        json!({ "metadata": { "name": "s" } }),
    )
    .await;
    let counts = http.get(&ctl("/counts")).await.json();
    assert_eq!(counts["namespaces"]["default"]["secrets"], 1);
    let reqs = http.get(&ctl("/requests")).await.json();
    let create = reqs["requests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["verb"] == "create")
        .unwrap()
        .clone();
    assert_eq!(
        (
            create["resource"].as_str(),
            create["namespace"].as_str(),
            create["status"].as_u64()
        ),
        (Some("secrets"), Some("default"), Some(201))
    );
    assert_eq!(create["bodyJson"]["metadata"]["name"], "s");
    let info = http.get(&ctl("/info")).await.json();
    assert_eq!(info["token"], "test-token");
    assert!(
        info["kubeconfig"]
            .as_str()
            .unwrap()
            .contains("server: http://127.0.0.1:")
    );
    http.post(&ctl("/reset"), json!({})).await;
    assert_eq!(emu.counts().count("default", "secrets"), 0);
    assert_eq!(
        emu.counts().total("namespaces"),
        2,
        "start-up namespaces come back"
    );
    assert!(emu.request_log().is_empty());
    emu.shutdown().await;
}
