//! Interactive setup and template hooks against the emulator: start, get, capture, cancel,
//! delete, their call sequences and every error string they can produce.

mod common;

use common::*;
use createos::messages;
use emulator::createos::Status;
use serde_json::{Value, json};

const SNAPSHOT_ONLY: &str = "CreateOS can start from snapshot templates only, not image.";

fn text(value: &Value) -> String {
    serde_json::to_string(value).unwrap()
}

fn id_of(session: &Value) -> String {
    session["providerLeaseId"].as_str().unwrap().to_owned()
}

/// Params of get/capture/cancel for a started session.
fn setup_params(h: &Harness, session: &Value, extra: Value) -> Value {
    let mut params = h.params(json!({
        "providerLeaseId": session["providerLeaseId"],
        "setupMetadata": session["metadata"],
    }));
    merge(&mut params, extra);
    params
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn starts_gets_captures_and_forks_a_setup_sandbox() {
    let h = Harness::start().await;
    let start = h.params(json!({ "expiresAt": "2030-01-01T00:00:00.000Z" }));
    let session = h
        .provider
        .start_interactive_setup(&start, &*h.sink)
        .await
        .unwrap();
    let id = id_of(&session);
    let marker = session["metadata"]["setupMarker"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        text(&session),
        text(&json!({
            "providerLeaseId": id,
            "status": "waiting_for_user",
            "expiresAt": "2030-01-01T00:00:00.000Z",
            "connectionSummary": {
                "type": "createos_cli", "hostRedacted": true, "portRedacted": true,
                "commandRedacted": false, "expiresAt": "2030-01-01T00:00:00.000Z",
                "metadata": { "provider": "createos" },
            },
            "connectionPayload": {
                "type": "createos_cli", "command": format!("createos sandbox shell {id}"),
                "expiresAt": "2030-01-01T00:00:00.000Z", "metadata": { "provider": "createos" },
            },
            "metadata": {
                "provider": "createos", "apiUrl": h.emu.base_url(), "companyId": COMPANY,
                "environmentId": ENVIRONMENT, "sandboxId": id, "setupMarker": marker,
                "expiresAt": "2030-01-01T00:00:00.000Z", "sourceTemplateRefRedacted": false,
            },
        }))
    );
    let calls = h.calls();
    assert_route(
        &calls,
        &[
            ("GET", "/rootfs"),
            ("POST", "/sandboxes"),
            ("PATCH", &format!("/sandboxes/{id}")),
            ("GET", &format!("/sandboxes/{id}")),
            ("POST", &format!("/sandboxes/{id}/exec")),
            (
                "PUT",
                &format!(
                    "/sandboxes/{id}/files?path=%2Fpaperclip-workspace%2F.paperclip-runtime%2F.paperclip-createos-lease"
                ),
            ),
        ],
    );
    // No auto-pause field at creation; auto-pause explicitly disabled.
    let create = calls[1].body.as_ref().unwrap();
    assert!(create.get("auto_pause_after_seconds").is_none(), "{create}");
    assert_eq!(create["ingress_enabled"], json!(false));
    assert_eq!(calls[2].body, Some(json!({ "disable_auto_pause": true })));

    // Get: the connection payload only on request; a paused sandbox is resumed.
    h.emu.force_status(&id, Status::Paused);
    h.clear_log();
    let got = h
        .provider
        .get_interactive_setup(&setup_params(&h, &session, json!({})), &*h.sink)
        .await
        .unwrap();
    assert_eq!(got["status"], json!("waiting_for_user"));
    assert_eq!(got["connectionPayload"], Value::Null);
    assert_eq!(got["connectionSummary"]["commandRedacted"], json!(true));
    assert_eq!(got["expiresAt"], json!("2030-01-01T00:00:00.000Z"));
    assert_eq!(text(&got["metadata"]), text(&session["metadata"]));
    assert_route(
        &h.calls(),
        &[
            ("GET", &format!("/sandboxes/{id}")),
            ("GET", &format!("/sandboxes/{id}")),
            ("POST", &format!("/sandboxes/{id}/resume")),
            ("GET", &format!("/sandboxes/{id}")),
        ],
    );
    let got = h
        .provider
        .get_interactive_setup(
            &setup_params(&h, &session, json!({ "includeConnectionPayload": true })),
            &*h.sink,
        )
        .await
        .unwrap();
    assert_eq!(
        got["connectionPayload"]["command"],
        json!(format!("createos sandbox shell {id}"))
    );

    // Capture: marker verified, sandbox paused; it is the template.
    h.clear_log();
    let captured = h
        .provider
        .capture_template(
            &setup_params(
                &h,
                &session,
                json!({ "previousTemplateRef": "sb_old", "timeoutMs": 30_000 }),
            ),
            &*h.sink,
        )
        .await
        .unwrap();
    assert_eq!(captured["templateRef"], json!(id));
    assert_eq!(captured["templateKind"], json!("snapshot"));
    let meta = &captured["metadata"];
    let keys: Vec<&String> = meta.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "provider",
            "capturedAt",
            "sourceTemplateRefRedacted",
            "previousTemplateRefRedacted"
        ]
    );
    assert_eq!(meta["sourceTemplateRefRedacted"], json!(false));
    assert_eq!(meta["previousTemplateRefRedacted"], json!(true));
    let at = meta["capturedAt"].as_str().unwrap();
    assert_eq!(at.len(), 24, "{at}");
    assert!(at.ends_with('Z') && at.as_bytes()[10] == b'T', "{at}");
    let calls = h.calls();
    assert_route(
        &calls,
        &[
            ("GET", &format!("/sandboxes/{id}")),
            ("POST", &format!("/sandboxes/{id}/exec")),
            ("GET", &format!("/sandboxes/{id}")),
            ("POST", &format!("/sandboxes/{id}/pause")),
            ("GET", &format!("/sandboxes/{id}")),
        ],
    );
    assert_eq!(
        calls[1].body,
        Some(
            json!({ "cmd": "/bin/cat", "args": ["/paperclip-workspace/.paperclip-runtime/.paperclip-createos-lease"] })
        )
    );

    // Leases fork from it.
    let lease = h.acquire(&h.run_params(json!({ "snapshot": id }))).await;
    assert_ne!(lease["providerLeaseId"], json!(id));
    // So does a new setup session editing the template.
    h.clear_log();
    let edit = h
        .provider
        .start_interactive_setup(
            &h.params(json!({ "sourceTemplateRef": id, "sourceTemplateKind": "snapshot" })),
            &*h.sink,
        )
        .await
        .unwrap();
    let edit_id = id_of(&edit);
    assert_eq!(edit["metadata"]["sourceTemplateRefRedacted"], json!(true));
    assert_eq!(edit["expiresAt"], Value::Null);
    assert_route(
        &h.calls(),
        &[
            ("GET", &format!("/sandboxes/{id}")),
            ("POST", &format!("/sandboxes/{id}/fork")),
            ("GET", &format!("/sandboxes/{edit_id}")),
            ("PATCH", &format!("/sandboxes/{edit_id}")),
            ("PATCH", &format!("/sandboxes/{edit_id}")),
            ("GET", &format!("/sandboxes/{edit_id}")),
            ("POST", &format!("/sandboxes/{edit_id}/exec")),
            (
                "PUT",
                &format!(
                    "/sandboxes/{edit_id}/files?path=%2Fpaperclip-workspace%2F.paperclip-runtime%2F.paperclip-createos-lease"
                ),
            ),
        ],
    );

    // Cancel the edit (a timeout reason), then delete the template.
    let cancelled = h
        .provider
        .cancel_interactive_setup(
            &setup_params(&h, &edit, json!({ "reason": "timed_out" })),
            &*h.sink,
        )
        .await
        .unwrap();
    assert_eq!(
        cancelled,
        json!({ "status": "timed_out", "metadata": { "provider": "createos", "reason": "timed_out" } })
    );
    let deleted = h
        .provider
        .delete_template(
            &h.params(json!({ "templateRef": id, "reason": "replaced" })),
            &*h.sink,
        )
        .await
        .unwrap();
    assert_eq!(
        text(&deleted),
        text(
            &json!({ "deleted": true, "metadata": { "provider": "createos", "templateKind": "snapshot", "templateRefRedacted": true, "reason": "replaced" } })
        )
    );
    // Deleting again is still success (404).
    h.provider
        .delete_template(
            &h.params(json!({ "templateRef": id, "templateKind": null })),
            &*h.sink,
        )
        .await
        .unwrap();
    h.destroy(&lease).await;
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reports_missing_setups_and_refuses_foreign_or_invalid_requests() {
    let h = Harness::start().await;
    // Without an id: missing, no request.
    let missing = h
        .provider
        .get_interactive_setup(&h.params(json!({ "providerLeaseId": null })), &*h.sink)
        .await
        .unwrap();
    assert_eq!(
        text(&missing),
        text(
            &json!({ "providerLeaseId": null, "status": "missing", "connectionSummary": null, "connectionPayload": null, "metadata": { "provider": "createos", "missing": true } })
        )
    );
    assert_eq!(
        h.provider
            .cancel_interactive_setup(&h.params(json!({})), &*h.sink)
            .await
            .unwrap(),
        json!({ "status": "missing", "metadata": { "provider": "createos", "missing": true, "reason": null } })
    );
    assert_eq!(
        message(
            h.provider
                .capture_template(&h.params(json!({})), &*h.sink)
                .await
        ),
        messages::CAPTURE_WITHOUT_LEASE
    );
    assert_eq!(
        message(
            h.provider
                .start_interactive_setup(
                    &h.params(
                        json!({ "sourceTemplateRef": "sb_x", "sourceTemplateKind": "image" })
                    ),
                    &*h.sink
                )
                .await
        ),
        SNAPSHOT_ONLY
    );
    assert_eq!(
        message(
            h.provider
                .delete_template(
                    &h.params(json!({ "templateRef": "sb_x", "templateKind": "image" })),
                    &*h.sink
                )
                .await
        ),
        "CreateOS can delete snapshot templates only, not image."
    );
    assert_eq!(
        message(
            h.provider
                .delete_template(&h.params(json!({ "templateRef": "../x" })), &*h.sink)
                .await
        ),
        messages::INVALID_RESOURCE_ID
    );
    assert!(h.calls().is_empty(), "{}", show(&h.calls()));

    let session = h
        .provider
        .start_interactive_setup(&h.params(json!({})), &*h.sink)
        .await
        .unwrap();
    let id = id_of(&session);
    // Another company, another sandbox id, or a bad marker: not ours, no request.
    h.clear_log();
    let mut foreign = setup_params(&h, &session, json!({}));
    foreign["companyId"] = json!("co_other");
    let mut swapped = setup_params(&h, &session, json!({}));
    swapped["providerLeaseId"] = json!("sb_other");
    let mut bad_marker = setup_params(&h, &session, json!({}));
    bad_marker["setupMetadata"]["setupMarker"] = json!("not-a-marker");
    for params in [&foreign, &swapped, &bad_marker] {
        assert_eq!(
            message(h.provider.get_interactive_setup(params, &*h.sink).await),
            messages::SETUP_NOT_OURS
        );
        assert_eq!(
            message(h.provider.capture_template(params, &*h.sink).await),
            messages::SETUP_NOT_OURS
        );
        assert_eq!(
            message(h.provider.cancel_interactive_setup(params, &*h.sink).await),
            messages::SETUP_NOT_OURS
        );
    }
    // Capture timeouts are checked before any request.
    for timeout in [json!(0), json!(1.5), json!(86_400_001), json!("500")] {
        assert_eq!(
            message(
                h.provider
                    .capture_template(
                        &setup_params(&h, &session, json!({ "timeoutMs": timeout })),
                        &*h.sink
                    )
                    .await
            ),
            messages::INVALID_CAPTURE_TIMEOUT
        );
    }
    assert!(h.calls().is_empty(), "{}", show(&h.calls()));

    // A marker that does not match the sandbox's: identity unverified, nothing paused.
    let mut other_marker = setup_params(&h, &session, json!({}));
    other_marker["setupMetadata"]["setupMarker"] = json!("00000000-0000-4000-8000-000000000000");
    assert_eq!(
        message(h.provider.capture_template(&other_marker, &*h.sink).await),
        messages::SETUP_IDENTITY_UNVERIFIED
    );
    assert!(!h.calls().iter().any(|c| c.path.ends_with("/pause")));

    // Cancel deletes; afterwards get and cancel report missing.
    let cancelled = h
        .provider
        .cancel_interactive_setup(
            &setup_params(&h, &session, json!({ "reason": "user" })),
            &*h.sink,
        )
        .await
        .unwrap();
    assert_eq!(
        cancelled,
        json!({ "status": "cancelled", "metadata": { "provider": "createos", "reason": "user" } })
    );
    assert_eq!(
        h.provider
            .get_interactive_setup(&setup_params(&h, &session, json!({})), &*h.sink)
            .await
            .unwrap()["status"],
        json!("missing")
    );
    // The service keeps a destroyed sandbox's row (status `destroyed`), so a second cancel finds
    // it and deletes it again (a no-op), as the original did: only a 404 is `missing`.
    assert_eq!(
        h.provider
            .cancel_interactive_setup(&setup_params(&h, &session, json!({})), &*h.sink)
            .await
            .unwrap(),
        json!({ "status": "cancelled", "metadata": { "provider": "createos", "reason": null } })
    );
    h.fault(json!({ "method": "GET", "path": "/v1/sandboxes/*", "action": { "kind": "status", "status": 404 } }));
    assert_eq!(
        h.provider
            .cancel_interactive_setup(&setup_params(&h, &session, json!({})), &*h.sink)
            .await
            .unwrap(),
        json!({ "status": "missing", "metadata": { "provider": "createos", "missing": true, "reason": null } })
    );
    h.emu.clear_faults();
    assert_eq!(h.emu.counts().sandboxes, 0, "{id}");
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cleans_up_a_failed_setup_and_never_hides_a_failed_delete() {
    let h = Harness::start().await;
    // Preparation fails, the delete works: the preparation error, nothing left.
    h.fault(json!({ "method": "POST", "path": "/v1/sandboxes/*/exec", "action": { "kind": "status", "status": 502 } }));
    assert_eq!(
        message(
            h.provider
                .start_interactive_setup(&h.params(json!({})), &*h.sink)
                .await
        ),
        "CreateOS request failed (HTTP 502) during workspace command."
    );
    assert_eq!(h.emu.counts().sandboxes, 0);
    // Preparation and delete both fail: the sandbox is named.
    h.clear_log();
    h.fault(json!({ "method": "POST", "path": "/v1/sandboxes/*/exec", "action": { "kind": "status", "status": 502 } }));
    h.fault(json!({ "method": "DELETE", "path": "/v1/sandboxes/*", "action": { "kind": "status", "status": 500 } }));
    let error = message(
        h.provider
            .start_interactive_setup(&h.params(json!({})), &*h.sink)
            .await,
    );
    let patch = h.calls().into_iter().find(|c| c.method == "PATCH").unwrap();
    let id = patch.path.strip_prefix("/sandboxes/").unwrap().to_owned();
    assert_eq!(
        error,
        format!("CreateOS interactive setup failed and cleanup is unconfirmed for sandbox {id}.")
    );
    // A get that fails otherwise than 404 is reported, not "missing".
    let session = h
        .provider
        .start_interactive_setup(&h.params(json!({})), &*h.sink)
        .await
        .unwrap();
    h.fault(json!({ "method": "GET", "path": "/v1/sandboxes/*", "action": { "kind": "status", "status": 503 } }));
    assert_eq!(
        message(
            h.provider
                .get_interactive_setup(&setup_params(&h, &session, json!({})), &*h.sink)
                .await
        ),
        "CreateOS request failed (HTTP 503) during sandbox lifecycle."
    );
    // A failed sandbox is missing.
    h.emu.force_status(&id_of(&session), Status::Failed);
    assert_eq!(
        h.provider
            .get_interactive_setup(&setup_params(&h, &session, json!({})), &*h.sink)
            .await
            .unwrap()["status"],
        json!("missing")
    );
    // Clean up the two sandboxes left behind.
    for sandbox in [id, id_of(&session)] {
        h.provider
            .delete_template(&h.params(json!({ "templateRef": sandbox })), &*h.sink)
            .await
            .unwrap();
    }
    h.finish().await;
}
