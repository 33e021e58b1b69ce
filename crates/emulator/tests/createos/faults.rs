//! Fault injection, the request log and the control API.

use std::time::{Duration, Instant};

use emulator::createos::FaultRule;
use serde_json::{Value, json};

use crate::common::{Http, Line, eventually, no_live_processes, start};

fn rule(v: Value) -> FaultRule {
    serde_json::from_value(v).expect("valid fault rule")
}

async fn connect_to_finished_process(http: &Http, id: &str) -> String {
    // Three lines, so streams have several data frames before the exit frame.
    let r = http
        .call("POST", &format!("/v1/sandboxes/{id}/processes"),
            Some(json!({ "cmd": "/bin/bash", "args": ["-c", "echo a; sleep 0.01; echo b; sleep 0.01; echo c"] })))
        .await;
    let pid = r.data()["process_id"].as_str().unwrap().to_string();
    let base = format!("/v1/sandboxes/{id}/processes/{pid}");
    http.call("GET", &format!("{base}/wait?timeout_ms=5000"), None)
        .await
        .data();
    format!("{base}/connect")
}

#[tokio::test]
async fn fails_the_nth_matching_request_with_a_status() {
    let (emu, http) = start(|_| {}).await;
    let id = http.sandbox().await;
    emu.clear_request_log();
    let fid = emu.add_fault(rule(json!({
        "method": "GET", "path": "/v1/sandboxes/*", "nth": 2, "times": 2,
        "action": { "kind": "status", "status": 503 }
    })));
    let path = format!("/v1/sandboxes/{id}");
    let statuses: Vec<u16> = {
        let mut v = Vec::new();
        for _ in 0..4 {
            v.push(http.code("GET", &path, None).await);
        }
        v
    };
    assert_eq!(statuses, vec![200, 503, 503, 200]);
    let log = emu.request_log();
    let gets: Vec<_> = log.iter().filter(|r| r.method == "GET").collect();
    assert_eq!(gets[1].faults, vec![fid]);
    assert_eq!(gets[1].status, Some(503));
    assert_eq!(emu.faults()[0].fired, 2);
    assert_eq!(emu.faults()[0].matched, 4);
}

#[tokio::test]
async fn after_faults_apply_the_request_then_break_the_reply() {
    let (emu, http) = start(|_| {}).await;
    let id = http.sandbox().await;
    emu.add_fault(rule(json!({
        "method": "POST", "path": "/v1/sandboxes/*/processes",
        "action": { "kind": "drop", "after": true }
    })));
    let body = json!({ "cmd": "/bin/sleep", "args": ["1000"] })
        .to_string()
        .into_bytes();
    let err = http
        .send(
            "POST",
            &format!("/v1/sandboxes/{id}/processes"),
            Some(body),
            None,
        )
        .await;
    assert!(err.is_err(), "connection dropped without a response");
    // ...but the process was created, the ambiguity the provider must handle.
    let list = http
        .call("GET", &format!("/v1/sandboxes/{id}/processes"), None)
        .await
        .data();
    assert_eq!(list["processes"].as_array().unwrap().len(), 1);

    emu.add_fault(rule(json!({
        "method": "POST", "path": "/v1/sandboxes", "action": { "kind": "status", "status": 502, "after": true }
    })));
    assert_eq!(
        http.code(
            "POST",
            "/v1/sandboxes",
            Some(json!({ "shape": "s-1vcpu-1gb" }))
        )
        .await,
        502
    );
    assert_eq!(emu.counts().sandboxes, 2);
}

#[tokio::test]
async fn malformed_unsuccessful_invalid_redirect_delay_and_drop() {
    let (emu, http) = start(|_| {}).await;
    for (kind, expect) in [
        ("malformedJson", None),
        (
            "unsuccessful",
            Some(json!({ "status": "fail", "data": { "message": "emulator fault" } })),
        ),
        (
            "invalidData",
            Some(json!({ "status": "success", "data": [] })),
        ),
    ] {
        emu.clear_faults();
        emu.add_fault(rule(
            json!({ "path": "/v1/rootfs", "action": { "kind": kind } }),
        ));
        let r = http.call("GET", "/v1/rootfs", None).await;
        assert_eq!(r.status, 200);
        match expect {
            Some(v) => assert_eq!(r.json(), v),
            None => assert!(serde_json::from_slice::<Value>(&r.body).is_err()),
        }
    }
    emu.clear_faults();
    emu.add_fault(rule(json!({ "path": "/v1/rootfs", "action": { "kind": "redirect", "status": 307, "location": "http://127.0.0.1:9/" } })));
    let r = http.call("GET", "/v1/rootfs", None).await;
    assert_eq!(r.status, 307);
    assert_eq!(r.headers["location"], "http://127.0.0.1:9/");

    emu.clear_faults();
    emu.add_fault(rule(
        json!({ "path": "/v1/rootfs", "action": { "kind": "delay", "ms": 80 } }),
    ));
    let t = Instant::now();
    assert_eq!(http.code("GET", "/v1/rootfs", None).await, 200);
    assert!(t.elapsed() >= Duration::from_millis(80));

    emu.clear_faults();
    emu.add_fault(rule(
        json!({ "path": "/v1/rootfs", "action": { "kind": "drop" } }),
    ));
    assert!(http.send("GET", "/v1/rootfs", None, None).await.is_err());
    assert_eq!(
        http.code("GET", "/v1/rootfs", None).await,
        200,
        "only the first request"
    );
}

#[tokio::test]
async fn stream_faults_cut_inject_and_gap() {
    let (emu, http) = start(|_| {}).await;
    let id = http.sandbox().await;
    let connect = connect_to_finished_process(&http, &id).await;
    let url = format!("{connect}?after=0");
    let fault = |action: Value| {
        emu.clear_faults();
        emu.add_fault(rule(json!({ "method": "GET", "path": "/v1/sandboxes/*/processes/*/connect", "action": action })));
    };

    fault(json!({ "kind": "cutStream", "afterFrames": 2 }));
    let (_, mut s) = http.stream("GET", &url, None).await;
    let frames = s.collect().await;
    assert_eq!(frames.len(), 2);
    assert!(frames.iter().all(|f| f["type"] == "data"));

    fault(json!({ "kind": "cutStream", "afterFrames": 1, "abort": true }));
    let (_, mut s) = http.stream("GET", &url, None).await;
    assert!(matches!(s.next().await, Line::Frame(_)));
    assert!(matches!(s.next().await, Line::Broken));

    fault(json!({ "kind": "cutStream", "afterBytes": 10 }));
    let (_, mut s) = http.stream("GET", &url, None).await;
    assert_eq!(s.next_raw().await.unwrap(), br#"{"type":"d"#.to_vec());
    assert_eq!(s.next_raw().await, Err(true));

    fault(json!({ "kind": "unknownFrame", "afterFrames": 1 }));
    let (_, mut s) = http.stream("GET", &url, None).await;
    let frames = s.collect().await;
    assert_eq!(frames[1]["type"], "emulator_unknown_event");
    assert_eq!(frames.last().unwrap()["type"], "exit");

    fault(json!({ "kind": "sequenceGap" }));
    let (_, mut s) = http.stream("GET", &url, None).await;
    let seqs: Vec<u64> = s
        .collect()
        .await
        .iter()
        .filter_map(|f| f["seq"].as_u64())
        .collect();
    assert_eq!(seqs.first(), Some(&2));

    fault(json!({ "kind": "evicted", "inStream": true, "afterFrames": 1 }));
    let (_, mut s) = http.stream("GET", &url, None).await;
    let frames = s.collect().await;
    assert_eq!(frames.len(), 2);
    assert_eq!(
        frames[1],
        json!({ "type": "error", "error": "output_offset_expired" })
    );

    fault(json!({ "kind": "evicted" }));
    assert_eq!(http.code("GET", &url, None).await, 410);

    fault(json!({ "kind": "oversizedFrame", "afterFrames": 0 }));
    let (_, mut s) = http.stream("GET", &url, None).await;
    assert!(s.next_raw().await.unwrap().len() > 1_048_576);

    fault(json!({ "kind": "frame", "afterFrames": 0, "line": "{not json", "end": true }));
    let (_, mut s) = http.stream("GET", &url, None).await;
    assert_eq!(s.next_raw().await.unwrap(), b"{not json".to_vec());
    assert_eq!(s.next_raw().await, Err(true));
}

#[tokio::test]
async fn stream_faults_apply_to_streaming_exec() {
    let (emu, http) = start(|_| {}).await;
    let id = http.sandbox().await;
    emu.add_fault(rule(json!({
        "method": "POST", "path": "/v1/sandboxes/*/exec", "query": "stream=true",
        "action": { "kind": "errorFrame", "afterFrames": 1, "error": "boom" }
    })));
    let body = json!({ "cmd": "/bin/bash", "args": ["-c", "echo hi"], "stream": true });
    let (_, mut s) = http.exec_stream(&id, body).await;
    let frames = s.collect().await;
    assert_eq!(
        frames,
        vec![
            json!({ "stdout": "hi\n" }),
            json!({ "type": "error", "error": "boom" })
        ]
    );
    // The one-shot exec (no stream=true query) is not matched.
    assert_eq!(http.bash(&id, "echo ok").await["stdout"], "ok\n");
}

#[tokio::test]
async fn under_keep_running_a_closed_exec_stream_ends_nothing() {
    let (emu, http) = start(|_| {}).await;
    let id = http.sandbox().await;
    emu.add_fault(rule(json!({
        "method": "POST", "path": "/v1/sandboxes/*/exec", "query": "stream=true",
        "action": { "kind": "keepRunning" }
    })));
    // Once its reader is gone, it prints a megabyte (more than a pipe holds: its output is
    // still read) and then leaves a file.
    let script = "echo started; until [ -e /tmp/go ]; do sleep 0.01; done; \
                  head -c 1000000 /dev/zero; echo finished > /paperclip-workspace/finished";
    let body = json!({ "cmd": "/bin/bash", "args": ["-c", script], "stream": true });
    let (_, mut frames) = http.exec_stream(&id, body).await;
    assert!(matches!(frames.next().await, Line::Frame(f) if f == json!({ "stdout": "started\n" })));
    drop(frames);
    assert_eq!(http.bash(&id, "touch /tmp/go").await["exit_code"], 0);
    let finished = eventually(Duration::from_secs(10), || async {
        http.bash(&id, "cat /paperclip-workspace/finished 2>/dev/null")
            .await["stdout"]
            == "finished\n"
    })
    .await;
    assert!(finished, "the command was ended with its stream");
    no_live_processes(&emu).await;
    assert_eq!(emu.faults()[0].fired, 1);
}

#[tokio::test]
async fn request_log_records_bodies_queries_and_timing() {
    let (emu, http) = start(|_| {}).await;
    let id = http.sandbox().await;
    emu.clear_request_log();
    http.raw(
        "PUT",
        &format!("/v1/sandboxes/{id}/files?path=%2Ftmp%2Fx"),
        Some(b"abc".to_vec()),
    )
    .await;
    http.exec(&id, json!({ "cmd": "/bin/true" })).await;
    let log = emu.request_log();
    assert_eq!(log.len(), 2);
    assert_eq!(log[0].method, "PUT");
    assert_eq!(log[0].path, format!("/v1/sandboxes/{id}/files"));
    assert_eq!(log[0].query.as_deref(), Some("path=%2Ftmp%2Fx"));
    assert_eq!(log[0].body_len, 3);
    assert_eq!(
        log[0].body_sha256.as_deref(),
        Some("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    );
    assert_eq!(log[1].body_json, Some(json!({ "cmd": "/bin/true" })));
    assert!(log[1].at_ms >= log[0].at_ms);
    assert!(log.iter().all(|r| r.authorized && r.status == Some(200)));
}

#[tokio::test]
async fn control_api_over_http() {
    let (_emu, http) = start(|_| {}).await;
    let id = http.sandbox().await;
    let control = |method: &'static str, path: &'static str, body: Option<Value>| {
        let http = &http;
        async move { http.call(method, path, body).await.json() }
    };
    assert_eq!(
        control("GET", "/_emulator/health", None).await,
        json!({ "ok": true })
    );
    assert_eq!(
        control("GET", "/_emulator/counts", None).await,
        json!({ "sandboxes": 1, "liveProcesses": 0, "managedProcesses": 0 })
    );
    let added = control(
        "POST",
        "/_emulator/faults",
        Some(json!({
            "method": "GET", "path": "/v1/rootfs", "action": { "kind": "status", "status": 500 }
        })),
    )
    .await;
    let r = http.call("GET", "/v1/rootfs", None).await;
    assert_eq!(r.status, 500);
    // The vendor's ErrorEnvelope: `code` is a number.
    assert_eq!(
        r.json(),
        json!({ "status": "error", "message": "emulator fault", "code": 500 })
    );
    let faults = control("GET", "/_emulator/faults", None).await;
    assert_eq!(faults["faults"][0]["id"], added["id"]);
    assert_eq!(faults["faults"][0]["fired"], 1);
    let requests = control("GET", "/_emulator/requests", None).await;
    let last = requests["requests"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["path"], "/v1/rootfs");
    assert_eq!(last["status"], 500);
    let since = last["seq"].as_u64().unwrap();
    assert_eq!(
        http.call("GET", &format!("/_emulator/requests?since={since}"), None)
            .await
            .json()["requests"],
        json!([])
    );

    let r = http
        .call(
            "POST",
            &format!("/_emulator/sandboxes/{id}/status"),
            Some(json!({ "status": "paused" })),
        )
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(http.status(&id).await, "paused");
    let s = control(
        "PATCH",
        "/_emulator/settings",
        Some(json!({ "transitionDelayMs": 7, "heartbeatMs": 30 })),
    )
    .await;
    assert_eq!(s, json!({ "transitionDelayMs": 7, "heartbeatMs": 30 }));
    let types = control("GET", "/_emulator/request-types", None).await;
    assert_eq!(types["ExecRequest"], json!(["cmd", "args", "stream"]));
    assert_eq!(types["SetEgressRequest"], json!(["egress"]));
    let listed = control("GET", "/_emulator/sandboxes", None).await;
    assert_eq!(listed["sandboxes"][0]["id"], id.as_str());

    control("POST", "/_emulator/reset", None).await;
    assert_eq!(
        control("GET", "/_emulator/counts", None).await["sandboxes"],
        0
    );
    assert_eq!(
        control("GET", "/_emulator/faults", None).await,
        json!({ "faults": [] })
    );
    assert_eq!(
        control("GET", "/_emulator/requests", None).await,
        json!({ "requests": [] })
    );
}
