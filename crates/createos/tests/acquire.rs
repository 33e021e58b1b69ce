//! onEnvironmentAcquireLease (and the client rules it exercises) against the emulator.

mod common;

use std::time::Duration;

use common::*;
use createos::HostApiKey;
use emulator::createos::Status;
use sandbox_core::poll::poll;
use serde_json::{Value, json};

const MARKER_PATH: &str = "%2Fpaperclip-workspace%2F.paperclip-runtime%2F.paperclip-createos-lease";

fn id_of(lease: &Value) -> String {
    lease["providerLeaseId"]
        .as_str()
        .expect("a lease id")
        .to_owned()
}

fn text(value: &Option<Value>) -> String {
    serde_json::to_string(value.as_ref().expect("a JSON body")).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acquires_with_the_exact_call_sequence_and_metadata() {
    let h = Harness::start().await;
    let lease = h
        .acquire(&h.run_params(json!({ "reuseLease": true })))
        .await;
    let id = id_of(&lease);
    let calls = h.calls();
    assert_route(
        &calls,
        &[
            ("GET", "/rootfs"),
            ("POST", "/sandboxes"),
            ("GET", &format!("/sandboxes/{id}")),
            ("POST", &format!("/sandboxes/{id}/exec")),
            ("PUT", &format!("/sandboxes/{id}/files?path={MARKER_PATH}")),
        ],
    );
    assert_eq!(
        text(&without_ownership_name(&calls[1].body)),
        format!(
            r#"{{"shape":"{SHAPE}","rootfs":"devbox:1","auto_pause_after_seconds":600,"ingress_enabled":false}}"#
        )
    );
    assert_eq!(
        text(&calls[3].body),
        r#"{"cmd":"/bin/bash","args":["-lc","mkdir -p -- '/paperclip-workspace'"]}"#
    );
    let marker = lease["metadata"]["marker"].as_str().unwrap().to_owned();
    let records = h.records();
    assert_eq!(
        records[4].body_len, 36,
        "the marker upload is the bare UUID"
    );
    let root = h.emu.sandbox_root(&id).unwrap();
    let written = std::fs::read_to_string(
        root.join("paperclip-workspace/.paperclip-runtime/.paperclip-createos-lease"),
    )
    .unwrap();
    assert_eq!(written, marker);
    let expected = json!({
        "providerLeaseId": id,
        "metadata": {
            "provider": "createos",
            "apiUrl": h.emu.base_url(),
            "companyId": COMPANY,
            "environmentId": ENVIRONMENT,
            "remoteCwd": "/paperclip-workspace",
            "shellCommand": "bash",
            "marker": marker,
            "shape": SHAPE,
            "snapshot": null,
            "rootfs": "devbox:1",
            "requestedRootfs": null,
            "adapterType": null,
            "region": null,
            "baseEgressAllowlist": [],
            "effectiveEgressAllowlist": [],
            "reuseLease": true,
            "autoPauseAfterSeconds": 600,
        }
    });
    assert_eq!(
        serde_json::to_string(&lease).unwrap(),
        serde_json::to_string(&expected).unwrap()
    );
    assert!(
        marker.len() == 36
            && marker
                .chars()
                .all(|c| c == '-' || c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
    );
    h.destroy(&lease).await;
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn selects_an_adapter_image_and_merges_environment_and_task_egress() {
    let h = Harness::start().await;
    let params = h.params_with(
        json!({
            "reuseLease": true,
            "rootfsByAdapter": { "claude_local": "debian:12" },
            "egressAllowlist": ["github.com", "*"],
            "region": "eu-1",
        }),
        json!({
            "runId": "run_1",
            "executionWorkspaceId": "ew_1",
            "adapterType": "claude_local",
            "executionWorkspaceSettings": {
                "networkEgress": { "allowFqdns": [" pypi.org ", "github.com"], "allowCidrs": ["10.0.0.0/8"] }
            },
        }),
    );
    let lease = h.acquire(&params).await;
    let calls = h.calls();
    assert_eq!(
        calls[0].method,
        "POST",
        "no catalog lookup when the adapter names an image:\n{}",
        show(&calls)
    );
    assert_eq!(
        text(&without_ownership_name(&calls[0].body)),
        format!(
            r#"{{"shape":"{SHAPE}","rootfs":"debian:12","region":"eu-1","egress":["github.com","pypi.org","10.0.0.0/8"],"auto_pause_after_seconds":600,"ingress_enabled":false}}"#
        )
    );
    let md = &lease["metadata"];
    assert_eq!(md["rootfs"], json!("debian:12"));
    assert_eq!(md["requestedRootfs"], json!("debian:12"));
    assert_eq!(md["adapterType"], json!("claude_local"));
    assert_eq!(md["region"], json!("eu-1"));
    assert_eq!(md["baseEgressAllowlist"], json!(["github.com", "*"]));
    assert_eq!(
        md["effectiveEgressAllowlist"],
        json!(["github.com", "pypi.org", "10.0.0.0/8"])
    );
    h.destroy(&lease).await;
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn omits_native_auto_pause_for_disposable_leases_and_destroys_them_on_release() {
    let h = Harness::start().await;
    // Reuse is on, but a lease without issue or workspace (login, probe) is disposable.
    let params = h.params_with(json!({ "reuseLease": true }), json!({ "runId": "login" }));
    let lease = h.acquire(&params).await;
    let calls = h.calls();
    assert_eq!(
        text(&without_ownership_name(&calls[1].body)),
        format!(r#"{{"shape":"{SHAPE}","rootfs":"devbox:1","ingress_enabled":false}}"#)
    );
    assert_eq!(lease["metadata"]["autoPauseAfterSeconds"], Value::Null);
    h.clear_log();
    let release = h
        .provider
        .release_lease(
            &h.lease_params(json!({ "reuseLease": true }), &lease),
            &*h.sink,
        )
        .await;
    assert_eq!(release, Ok(None));
    assert_route(
        &h.calls(),
        &[("DELETE", &format!("/sandboxes/{}", id_of(&lease)))],
    );
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rejects_guaranteed_expiry_before_provisioning() {
    let h = Harness::start().await;
    let params = h.run_params(json!({}));
    let mut params = params;
    params["requestedExpiresAt"] = json!("2030-01-01T00:00:00.000Z");
    let result = h.provider.acquire_lease(&params, &*h.sink).await;
    assert_eq!(
        message(result),
        "CreateOS does not yet support leases with a guaranteed expiration deadline."
    );
    assert!(h.calls().is_empty());
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_rules_apply_before_any_request() {
    let h = Harness::start().await;
    let custom = h.params_with(json!({ "apiKey": null }), json!({ "runId": "r" }));
    assert_eq!(
        message(h.provider.acquire_lease(&custom, &*h.sink).await),
        "Custom CreateOS API endpoints require an explicit environment API key; the host fallback is only available for https://api.sb.createos.sh."
    );
    // The official endpoint may use the host key, but there is none here.
    let official = h.params_with(
        json!({ "apiUrl": "https://api.sb.createos.sh", "apiKey": null }),
        json!({ "runId": "r" }),
    );
    assert_eq!(
        message(h.provider.acquire_lease(&official, &*h.sink).await),
        "CreateOS requires an API key in the environment config or CREATEOS_API_KEY."
    );
    let broken = createos::CreateOsProvider::with_options(createos::ProviderOptions {
        host_api_key: HostApiKey::Fixed(Some("line\nbreak".into())),
        ..Default::default()
    });
    assert_eq!(
        message(broken.acquire_lease(&official, &*h.sink).await),
        "CreateOS requires an API key in the environment config or CREATEOS_API_KEY."
    );
    assert!(h.calls().is_empty());
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forks_a_paused_template_and_patches_auto_pause() {
    let h = Harness::start().await;
    let template = h.acquire(&h.params(json!({ "runId": "setup" }))).await;
    let template_id = id_of(&template);
    assert!(h.emu.force_status(&template_id, Status::Paused));
    h.clear_log();

    let lease = h
        .acquire(&h.run_params(json!({ "reuseLease": true, "snapshot": template_id })))
        .await;
    let id = id_of(&lease);
    let calls = h.calls();
    assert_route(
        &calls,
        &[
            ("GET", &format!("/sandboxes/{template_id}")),
            ("POST", &format!("/sandboxes/{template_id}/fork")),
            ("GET", &format!("/sandboxes/{id}")),
            ("PATCH", &format!("/sandboxes/{id}")),
            ("GET", &format!("/sandboxes/{id}")),
            ("POST", &format!("/sandboxes/{id}/exec")),
            ("PUT", &format!("/sandboxes/{id}/files?path={MARKER_PATH}")),
        ],
    );
    // An empty egress list is sent as the explicit allow-all, or the fork would inherit.
    assert_eq!(
        text(&calls[1].body),
        r#"{"start_paused":false,"egress":["*"],"ingress_enabled":false}"#
    );
    assert_eq!(text(&calls[3].body), r#"{"auto_pause_after_seconds":600}"#);
    assert_eq!(lease["metadata"]["snapshot"], json!(template_id));
    assert_eq!(lease["metadata"]["rootfs"], Value::Null);

    // A disposable fork disables auto-pause explicitly (create would just omit it).
    h.clear_log();
    let disposable = h
        .acquire(&h.params_with(json!({ "snapshot": template_id }), json!({ "runId": "r" })))
        .await;
    let calls = h.calls();
    assert_eq!(
        text(&calls[3].body),
        r#"{"disable_auto_pause":true}"#,
        "{}",
        show(&calls)
    );

    h.destroy(&disposable).await;
    h.destroy(&lease).await;
    h.destroy(&template).await;
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refuses_to_fork_a_template_that_is_not_paused() {
    let h = Harness::start().await;
    let template = h.acquire(&h.params(json!({ "runId": "setup" }))).await;
    let template_id = id_of(&template);
    h.clear_log();
    let result = h
        .provider
        .acquire_lease(&h.run_params(json!({ "snapshot": template_id })), &*h.sink)
        .await;
    assert_eq!(
        message(result),
        "CreateOS template sandbox must be paused before it can be forked."
    );
    assert_route(&h.calls(), &[("GET", &format!("/sandboxes/{template_id}"))]);
    h.destroy(&template).await;
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_fork_conflicts_then_reports_the_41st() {
    let h = Harness::start().await;
    let template = h.acquire(&h.params(json!({ "runId": "setup" }))).await;
    let template_id = id_of(&template);
    assert!(h.emu.force_status(&template_id, Status::Paused));
    let fork_path = format!("/sandboxes/{template_id}/fork");

    // Two conflicts (the template is still being made durable), then the fork goes through.
    h.clear_log();
    h.fault(json!({ "method": "POST", "path": "/v1/sandboxes/*/fork", "times": 2, "action": { "kind": "status", "status": 409 } }));
    let lease = h
        .acquire(&h.run_params(json!({ "snapshot": template_id })))
        .await;
    let forks = h
        .calls()
        .iter()
        .filter(|c| c.is("POST", &fork_path))
        .count();
    assert_eq!(forks, 3);
    h.destroy(&lease).await;

    // Conflicts forever: 1 + 40 retries, then the conflict is the error.
    h.emu.clear_faults();
    h.clear_log();
    h.fault(json!({ "method": "POST", "path": "/v1/sandboxes/*/fork", "times": 0, "action": { "kind": "status", "status": 409 } }));
    let result = h
        .provider
        .acquire_lease(&h.run_params(json!({ "snapshot": template_id })), &*h.sink)
        .await;
    assert_eq!(
        message(result),
        "CreateOS request failed (HTTP 409) during sandbox lifecycle."
    );
    let forks = h
        .calls()
        .iter()
        .filter(|c| c.is("POST", &fork_path))
        .count();
    assert_eq!(forks, 41);
    h.emu.clear_faults();
    h.destroy(&template).await;
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deletes_a_fork_whose_setup_failed_and_reports_unconfirmed_cleanup() {
    let h = Harness::start().await;
    let template = h.acquire(&h.params(json!({ "runId": "setup" }))).await;
    let template_id = id_of(&template);
    assert!(h.emu.force_status(&template_id, Status::Paused));

    // Setup fails, the fork is deleted, the setup error is reported.
    h.clear_log();
    h.fault(json!({ "method": "PATCH", "path": "/v1/sandboxes/*", "action": { "kind": "status", "status": 500 } }));
    let result = h
        .provider
        .acquire_lease(&h.run_params(json!({ "snapshot": template_id })), &*h.sink)
        .await;
    assert_eq!(
        message(result),
        "CreateOS request failed (HTTP 500) during sandbox lifecycle."
    );
    let calls = h.calls();
    let fork_id = calls[2].path.trim_start_matches("/sandboxes/").to_owned();
    assert_eq!(
        calls.last().unwrap(),
        &Call {
            method: "DELETE".into(),
            path: format!("/sandboxes/{fork_id}"),
            body: None
        },
        "{}",
        show(&calls)
    );
    assert_eq!(h.emu.counts().sandboxes, 1, "only the template is left");

    // Setup fails and so does the delete: the fork is named so it can be cleaned up.
    h.emu.clear_faults();
    h.clear_log();
    h.fault(json!({ "method": "PATCH", "path": "/v1/sandboxes/*", "action": { "kind": "status", "status": 500 } }));
    h.fault(json!({ "method": "DELETE", "path": "/v1/sandboxes/*", "action": { "kind": "status", "status": 503 } }));
    let result = h
        .provider
        .acquire_lease(&h.run_params(json!({ "snapshot": template_id })), &*h.sink)
        .await;
    let fork_id = h.calls()[2]
        .path
        .trim_start_matches("/sandboxes/")
        .to_owned();
    assert_eq!(
        message(result),
        format!("CreateOS fork setup failed and cleanup is unconfirmed for sandbox {fork_id}.")
    );
    h.emu.clear_faults();
    assert_eq!(h.emu.counts().sandboxes, 2, "the fork is still there");
    h.destroy(&json!({ "providerLeaseId": fork_id, "metadata": template["metadata"] }))
        .await;
    h.destroy(&template).await;
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deletes_a_half_made_sandbox_and_never_hides_a_failed_delete() {
    let h = Harness::start().await;
    // The image has no Bash: mkdir fails.
    h.fault(json!({
        "method": "POST", "path": "/v1/sandboxes/*/exec",
        "action": { "kind": "status", "status": 200, "body": { "status": "success", "data": { "result": { "exit_code": 127, "stdout": "", "stderr": "" } } } }
    }));
    let result = h
        .provider
        .acquire_lease(&h.run_params(json!({})), &*h.sink)
        .await;
    assert_eq!(
        message(result),
        "CreateOS workspace preparation failed; the image must provide Bash."
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
            ("DELETE", &format!("/sandboxes/{id}")),
        ],
    );
    assert_eq!(h.emu.counts().sandboxes, 0);

    // The marker upload fails: its own error is reported after the delete.
    h.emu.clear_faults();
    h.clear_log();
    h.fault(json!({ "method": "PUT", "path": "/v1/sandboxes/*/files", "action": { "kind": "status", "status": 507 } }));
    let result = h
        .provider
        .acquire_lease(&h.run_params(json!({})), &*h.sink)
        .await;
    assert_eq!(
        message(result),
        "CreateOS request failed (HTTP 507) during file transfer."
    );
    assert_eq!(h.calls().last().unwrap().method, "DELETE");
    assert_eq!(h.emu.counts().sandboxes, 0);

    // ... and when the delete fails too, the sandbox is named.
    h.emu.clear_faults();
    h.clear_log();
    h.fault(json!({ "method": "PUT", "path": "/v1/sandboxes/*/files", "action": { "kind": "status", "status": 500 } }));
    h.fault(json!({ "method": "DELETE", "path": "/v1/sandboxes/*", "action": { "kind": "drop" } }));
    let result = h
        .provider
        .acquire_lease(&h.run_params(json!({})), &*h.sink)
        .await;
    let id = h.calls()[2]
        .path
        .trim_start_matches("/sandboxes/")
        .to_owned();
    assert_eq!(
        message(result),
        format!("CreateOS setup failed and cleanup is unconfirmed for sandbox {id}.")
    );
    h.emu.clear_faults();
    assert_eq!(h.emu.counts().sandboxes, 1);
    h.destroy(&json!({ "providerLeaseId": id, "metadata": { "provider": "createos", "apiUrl": h.emu.base_url(), "companyId": COMPANY, "environmentId": ENVIRONMENT } })).await;
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reports_a_sandbox_that_cannot_reach_running() {
    let h = Harness::start().await;
    // Hold the first status read long enough to fail the sandbox underneath it.
    h.fault(json!({ "method": "GET", "path": "/v1/sandboxes/*", "action": { "kind": "delay", "ms": 1500 } }));
    let params = h.run_params(json!({}));
    let acquire = h.provider.acquire_lease(&params, &*h.sink);
    let fail_it = async {
        let id = poll("the first status read", Duration::from_secs(20))
            .until(|| {
                h.calls()
                    .into_iter()
                    .find(|c| c.method == "GET" && c.path.starts_with("/sandboxes/"))
                    .map(|get| get.path.trim_start_matches("/sandboxes/").to_owned())
            })
            .await;
        assert!(h.emu.force_status(&id, Status::Failed));
    };
    let (result, ()) = tokio::join!(acquire, fail_it);
    assert_eq!(
        message(result),
        "CreateOS sandbox did not reach running; provider state is failed."
    );
    assert_eq!(h.calls().last().unwrap().method, "DELETE");
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validates_what_the_service_returns() {
    let h = Harness::start().await;
    let cases: Vec<(Value, &str)> = vec![
        (
            json!({ "method": "GET", "path": "/v1/rootfs", "action": { "kind": "status", "status": 200, "body": { "status": "success", "data": { "default": " \n " } } } }),
            "CreateOS rootfs catalog did not provide a valid default.",
        ),
        (
            json!({ "method": "POST", "path": "/v1/sandboxes", "action": { "kind": "status", "status": 201, "body": { "status": "success", "data": { "id": "sb bad" } } } }),
            "CreateOS returned an invalid resource ID.",
        ),
        (
            json!({ "method": "GET", "path": "/v1/sandboxes/*", "action": { "kind": "status", "status": 200, "body": { "status": "success", "data": { "id": "sb_other", "status": "running" } } } }),
            "CreateOS sandbox identity or state is invalid.",
        ),
        (
            json!({ "method": "GET", "path": "/v1/rootfs", "action": { "kind": "malformedJson" } }),
            "CreateOS returned invalid JSON.",
        ),
        (
            json!({ "method": "GET", "path": "/v1/rootfs", "action": { "kind": "unsuccessful" } }),
            "CreateOS returned an unsuccessful response.",
        ),
        (
            json!({ "method": "GET", "path": "/v1/rootfs", "action": { "kind": "invalidData" } }),
            "CreateOS returned an invalid response.",
        ),
        (
            json!({ "method": "GET", "path": "/v1/rootfs", "action": { "kind": "redirect", "status": 307 } }),
            "CreateOS connection failed.",
        ),
        (
            json!({ "method": "GET", "path": "/v1/rootfs", "action": { "kind": "drop" } }),
            "CreateOS connection failed.",
        ),
        (
            // Provider bodies never reach a message, even when they echo the key.
            json!({ "method": "GET", "path": "/v1/rootfs", "action": { "kind": "status", "status": 503, "body": { "status": "fail", "data": format!("private provider diagnostics {CANARY}") } } }),
            "CreateOS request failed (HTTP 503) during sandbox lifecycle.",
        ),
        (
            // Not a redirect status: an ordinary failure.
            json!({ "method": "GET", "path": "/v1/rootfs", "action": { "kind": "status", "status": 300 } }),
            "CreateOS request failed (HTTP 300) during sandbox lifecycle.",
        ),
    ];
    for (fault, expected) in cases {
        h.emu.clear_faults();
        h.fault(fault.clone());
        let result = h
            .provider
            .acquire_lease(&h.run_params(json!({})), &*h.sink)
            .await;
        assert_eq!(message(result), expected, "fault {fault}");
        assert_eq!(h.emu.counts().sandboxes, 0, "fault {fault}");
    }
    h.emu.clear_faults();
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_has_its_own_deadline_and_unreachable_servers_fail_to_connect() {
    let h = Harness::start().await;
    h.fault(
        json!({ "method": "GET", "path": "/v1/rootfs", "action": { "kind": "delay", "ms": 5000 } }),
    );
    let result = h
        .provider
        .acquire_lease(&h.run_params(json!({ "timeoutMs": 200 })), &*h.sink)
        .await;
    assert_eq!(message(result), "The operation was aborted due to timeout");
    h.emu.clear_faults();

    // Nothing listens on port 1.
    let result = h
        .provider
        .acquire_lease(
            &h.run_params(json!({ "apiUrl": "http://127.0.0.1:1" })),
            &*h.sink,
        )
        .await;
    assert_eq!(message(result), "CreateOS connection failed.");
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validates_task_egress_grants_after_the_catalog_lookup() {
    let h = Harness::start().await;
    let cases = [
        (
            json!({ "networkEgress": ["a.test"] }),
            "networkEgress must be an object.",
        ),
        (
            json!({ "networkEgress": { "allowFqdns": ["ok.test", " "] } }),
            "networkEgress allowlists must contain non-empty strings.",
        ),
        (
            json!({ "networkEgress": { "allowCidrs": "10.0.0.0/8" } }),
            "networkEgress allowlists must contain non-empty strings.",
        ),
    ];
    for (settings, expected) in cases {
        h.clear_log();
        let mut params = h.run_params(json!({}));
        params["executionWorkspaceSettings"] = settings;
        assert_eq!(
            message(h.provider.acquire_lease(&params, &*h.sink).await),
            expected
        );
        // The original resolved the image first, so the catalog was already asked.
        assert_route(&h.calls(), &[("GET", "/rootfs")]);
    }
    // Config errors surface before anything is sent.
    h.clear_log();
    let params = h.params_with(json!({ "shape": null }), json!({ "runId": "r" }));
    assert_eq!(
        message(h.provider.acquire_lease(&params, &*h.sink).await),
        "CreateOS requires a shape from its shape catalog."
    );
    assert!(h.calls().is_empty());
    h.finish().await;
}
