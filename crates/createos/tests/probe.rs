//! onEnvironmentProbe against the emulator.

mod common;

use common::*;
use sandbox_core::LogLevel;
use serde_json::{Value, json};

fn probe_params(h: &Harness, config: Value) -> Value {
    h.params_with(config, json!({}))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probes_actual_process_execution_and_always_deletes_the_sandbox() {
    let h = Harness::start().await;
    let result = h
        .provider
        .probe(&probe_params(&h, json!({ "reuseLease": true })), &*h.sink)
        .await;
    assert_eq!(
        serde_json::to_string(&result.unwrap()).unwrap(),
        r#"{"ok":true,"summary":"CreateOS sandbox creation and command execution succeeded."}"#
    );
    let calls = h.calls();
    let id = calls[2].path.trim_start_matches("/sandboxes/").to_owned();
    assert_route(
        &calls,
        &[
            ("GET", "/rootfs"),
            ("POST", "/sandboxes"),
            ("GET", &format!("/sandboxes/{id}")),
            ("POST", &format!("/sandboxes/{id}/exec")),
            (
                "PUT",
                &format!(
                    "/sandboxes/{id}/files?path=%2Fpaperclip-workspace%2F.paperclip-runtime%2F.paperclip-createos-lease"
                ),
            ),
            ("POST", &format!("/sandboxes/{id}/exec?stream=true")),
            ("DELETE", &format!("/sandboxes/{id}")),
        ],
    );
    // A probe lease is disposable even with reuse on.
    assert_eq!(
        without_ownership_name(&calls[1].body),
        Some(json!({ "shape": SHAPE, "rootfs": "devbox:1", "ingress_enabled": false }))
    );
    assert_eq!(
        serde_json::to_string(calls[5].body.as_ref().unwrap()).unwrap(),
        r#"{"cmd":"/bin/bash","args":["-lc","cd -- '/paperclip-workspace' || exit\nexec env  '/bin/echo' 'paperclip-createos-ready'"],"stream":true}"#
    );
    assert!(
        !h.provider.state().is_cached(&id),
        "probe leases are not cached"
    );
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reports_failures_as_summaries_and_still_deletes() {
    let h = Harness::start().await;
    // The command runs but does not print the token.
    h.fault(json!({ "method": "POST", "path": "/v1/sandboxes/*/exec", "query": "stream=true",
        "action": { "kind": "frame", "afterFrames": 0, "line": "{\"exit_code\":0}", "end": true } }));
    let result = h
        .provider
        .probe(&probe_params(&h, json!({})), &*h.sink)
        .await
        .unwrap();
    assert_eq!(
        result,
        json!({ "ok": false, "summary": "CreateOS command probe failed." })
    );
    assert_eq!(h.calls().last().unwrap().method, "DELETE");
    assert_eq!(h.emu.counts().sandboxes, 0);

    // Nothing was created: nothing to delete.
    h.emu.clear_faults();
    h.clear_log();
    h.fault(json!({ "method": "GET", "path": "/v1/rootfs", "action": { "kind": "status", "status": 503 } }));
    let result = h
        .provider
        .probe(&probe_params(&h, json!({})), &*h.sink)
        .await
        .unwrap();
    assert_eq!(
        result,
        json!({ "ok": false, "summary": "CreateOS request failed (HTTP 503) during sandbox lifecycle." })
    );
    assert_route(&h.calls(), &[("GET", "/rootfs")]);

    // Config and key problems are summaries too.
    h.emu.clear_faults();
    let result = h
        .provider
        .probe(&probe_params(&h, json!({ "apiKey": null })), &*h.sink)
        .await
        .unwrap();
    assert_eq!(
        result["summary"],
        json!(
            "Custom CreateOS API endpoints require an explicit environment API key; the host fallback is only available for https://api.sb.createos.sh."
        )
    );
    let result = h
        .provider
        .probe(&probe_params(&h, json!({ "apiUrl": null })), &*h.sink)
        .await
        .unwrap();
    assert_eq!(
        result,
        json!({ "ok": false, "summary": "CreateOS requires an API URL." })
    );
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_final_delete_rejects_with_its_own_error_and_logs_the_sandbox() {
    let h = Harness::start().await;
    h.fault(json!({ "method": "DELETE", "path": "/v1/sandboxes/*", "action": { "kind": "status", "status": 500 } }));
    let result = h
        .provider
        .probe(&probe_params(&h, json!({})), &*h.sink)
        .await;
    h.emu.clear_faults();
    let calls = h.calls();
    let id = calls[2].path.trim_start_matches("/sandboxes/").to_owned();
    assert_eq!(calls.last().unwrap().path, format!("/sandboxes/{id}"));
    // The original's rejection: the delete's own error.
    assert_eq!(
        message(result),
        "CreateOS request failed (HTTP 500) during sandbox lifecycle."
    );
    // The worker log names what was left, for whoever deletes it.
    let warning = createos::messages::probe_sandbox_not_deleted(&id);
    assert!(h.sink.has_logged(LogLevel::Warn, &warning), "{warning}");
    assert_eq!(
        error_catalog::explain(&warning).map(|e| e.code),
        Some("CREATEOS_PROBE_SANDBOX_NOT_DELETED")
    );
    h.destroy(&json!({ "providerLeaseId": id, "metadata": { "provider": "createos", "apiUrl": h.emu.base_url(), "companyId": COMPANY, "environmentId": ENVIRONMENT } })).await;
    h.finish().await;
}
