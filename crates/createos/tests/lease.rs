//! onEnvironmentResumeLease, onEnvironmentReleaseLease / onEnvironmentDestroyLease and
//! onEnvironmentRealizeWorkspace against the emulator.

mod common;

use std::time::Duration;

use common::*;
use createos::Pacer;
use emulator::createos::Status;
use serde_json::{Value, json};

const MARKER: &str = "/paperclip-workspace/.paperclip-runtime/.paperclip-createos-lease";

fn id_of(lease: &Value) -> String {
    lease["providerLeaseId"]
        .as_str()
        .expect("a lease id")
        .to_owned()
}

fn expired() -> Value {
    json!({ "providerLeaseId": null, "metadata": { "expired": true } })
}

/// A reusable lease (reuse on, issue and workspace present), kept warm by its release.
async fn warm_lease(h: &Harness, config: Value) -> Value {
    let mut config_with_reuse = json!({ "reuseLease": true });
    merge(&mut config_with_reuse, config);
    let lease = h.acquire(&h.run_params(config_with_reuse.clone())).await;
    h.clear_log();
    let released = h
        .provider
        .release_lease(&h.lease_params(config_with_reuse, &lease), &*h.sink)
        .await;
    assert_eq!(released, Ok(None));
    assert!(
        h.calls().is_empty(),
        "keeping a lease warm sends nothing:\n{}",
        show(&h.calls())
    );
    lease
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keeps_a_lease_warm_resumes_it_after_provider_pause_and_destroys_it() {
    let h = Harness::start().await;
    let reuse = json!({ "reuseLease": true });
    let lease = warm_lease(&h, json!({})).await;
    let id = id_of(&lease);
    assert_eq!(h.emu.counts().sandboxes, 1);

    // The service auto-paused it meanwhile.
    assert!(h.emu.force_status(&id, Status::Paused));
    let resumed = h
        .provider
        .resume_lease(&h.lease_params(reuse.clone(), &lease), &*h.sink)
        .await
        .unwrap();
    let calls = h.calls();
    assert_route(
        &calls,
        &[
            ("GET", &format!("/sandboxes/{id}")),
            ("PUT", &format!("/sandboxes/{id}/egress")),
            ("GET", &format!("/sandboxes/{id}")),
            ("POST", &format!("/sandboxes/{id}/resume")),
            ("GET", &format!("/sandboxes/{id}")),
            ("POST", &format!("/sandboxes/{id}/exec")),
        ],
    );
    assert_eq!(calls[1].body, Some(json!({ "egress": [] })));
    assert_eq!(calls[3].body, None, "resume has no body");
    assert_eq!(
        calls[5].body,
        Some(json!({ "cmd": "/bin/cat", "args": [MARKER] }))
    );
    let mut expected = lease["metadata"].clone();
    expected["resumedLease"] = json!(true);
    assert_eq!(
        resumed,
        json!({ "providerLeaseId": id, "metadata": expected })
    );

    // The resumed lease runs commands.
    let out = h
        .provider
        .execute(
            &h.exec_params_with(
                reuse.clone(),
                &resumed,
                "pwd",
                &[],
                json!({ "cwd": "/paperclip-workspace" }),
            ),
            &*h.sink,
        )
        .await
        .unwrap();
    assert_eq!(out["stdout"], json!("/paperclip-workspace\n"));

    h.clear_log();
    let destroyed = h
        .provider
        .destroy_lease(&h.lease_params(reuse, &resumed), &*h.sink)
        .await;
    assert_eq!(destroyed, Ok(None));
    assert_route(&h.calls(), &[("DELETE", &format!("/sandboxes/{id}"))]);
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn does_not_post_resume_when_already_running() {
    let h = Harness::start().await;
    let lease = warm_lease(&h, json!({ "egressAllowlist": ["github.com"] })).await;
    let id = id_of(&lease);
    let params = h.lease_params(
        json!({ "reuseLease": true, "egressAllowlist": ["github.com"] }),
        &lease,
    );
    let resumed = h.provider.resume_lease(&params, &*h.sink).await.unwrap();
    assert_eq!(resumed["providerLeaseId"], json!(id));
    let calls = h.calls();
    assert_route(
        &calls,
        &[
            ("GET", &format!("/sandboxes/{id}")),
            ("PUT", &format!("/sandboxes/{id}/egress")),
            ("GET", &format!("/sandboxes/{id}")),
            ("POST", &format!("/sandboxes/{id}/exec")),
        ],
    );
    assert_eq!(calls[1].body, Some(json!({ "egress": ["github.com"] })));
    h.destroy(&resumed).await;
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waits_for_asynchronous_transitions_rather_than_treating_202_as_completion() {
    let h = Harness::with(Pacer::new(Duration::ZERO), Duration::from_millis(600)).await;
    let lease = warm_lease(&h, json!({})).await;
    let id = id_of(&lease);
    assert!(h.emu.force_status(&id, Status::Paused));
    // The first resume request meets a concurrent transition (409) and is asked again.
    h.fault(json!({ "method": "POST", "path": "/v1/sandboxes/*/resume", "action": { "kind": "status", "status": 409 } }));
    let resumed = h
        .provider
        .resume_lease(
            &h.lease_params(json!({ "reuseLease": true }), &lease),
            &*h.sink,
        )
        .await
        .unwrap();
    assert_eq!(resumed["metadata"]["resumedLease"], json!(true));
    let calls = h.calls();
    let resumes: Vec<usize> = calls
        .iter()
        .enumerate()
        .filter(|(_, c)| c.path.ends_with("/resume"))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(
        resumes.len(),
        2,
        "one refused, one accepted:\n{}",
        show(&calls)
    );
    let records = h.records();
    assert_eq!(records[resumes[0]].status, Some(409));
    assert_eq!(records[resumes[1]].status, Some(202));
    // After the accepted request: status reads only (resuming...), then running, then the check.
    let after = &calls[resumes[1] + 1..];
    assert!(after.len() >= 3, "{}", show(&calls));
    assert!(
        after[..after.len() - 1]
            .iter()
            .all(|c| c.is("GET", &format!("/sandboxes/{id}"))),
        "{}",
        show(&calls)
    );
    assert!(
        after
            .last()
            .unwrap()
            .is("POST", &format!("/sandboxes/{id}/exec"))
    );
    h.destroy(&resumed).await;
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expires_leases_made_under_another_configuration_before_any_request() {
    let h = Harness::start().await;
    let base = json!({ "reuseLease": true, "rootfsByAdapter": { "codex_local": "debian:12" }, "egressAllowlist": ["a.test"] });
    let mut params = h.params_with(
        base.clone(),
        json!({ "runId": "r", "issueId": "i", "adapterType": "codex_local" }),
    );
    let lease = h.acquire(&params).await;
    params = h.lease_params(base.clone(), &lease);
    h.clear_log();
    let changes = [
        json!({ "shape": "s-2vcpu-4gb" }),
        json!({ "snapshot": "sb_template" }),
        json!({ "rootfsByAdapter": { "codex_local": "ubuntu:24.04" } }),
        json!({ "region": "us-2" }),
        json!({ "autoPauseAfterSeconds": 900 }),
        json!({ "reuseLease": false }),
        json!({ "egressAllowlist": ["b.test"] }),
        json!({ "egressAllowlist": [] }),
    ];
    for change in changes {
        let mut config = base.clone();
        merge(&mut config, change.clone());
        let mut p = params.clone();
        merge(&mut p["config"], config);
        let result = h.provider.resume_lease(&p, &*h.sink).await;
        assert_eq!(result, Ok(expired()), "change {change}");
    }
    // Leases from before v0.3.0 lack keys: missing is not null.
    let mut old = params.clone();
    old["leaseMetadata"]
        .as_object_mut()
        .unwrap()
        .remove("snapshot");
    assert_eq!(h.provider.resume_lease(&old, &*h.sink).await, Ok(expired()));
    let mut bad_marker = params.clone();
    bad_marker["leaseMetadata"]["marker"] = json!("not-a-marker");
    assert_eq!(
        h.provider.resume_lease(&bad_marker, &*h.sink).await,
        Ok(expired())
    );
    assert!(h.calls().is_empty(), "{}", show(&h.calls()));
    h.destroy(&lease).await;
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expires_a_missing_or_mismatched_workspace_but_preserves_transient_failures() {
    let h = Harness::start().await;
    let reuse = json!({ "reuseLease": true });
    let lease = warm_lease(&h, json!({})).await;
    let id = id_of(&lease);
    let params = h.lease_params(reuse.clone(), &lease);

    // A transient failure is not expiry.
    h.fault(json!({ "method": "GET", "path": "/v1/sandboxes/*", "action": { "kind": "status", "status": 502 } }));
    assert_eq!(
        message(h.provider.resume_lease(&params, &*h.sink).await),
        "CreateOS request failed (HTTP 502) during sandbox lifecycle."
    );
    h.emu.clear_faults();

    // Recorded egress is not a list of strings.
    let mut bad_egress = params.clone();
    bad_egress["leaseMetadata"]["effectiveEgressAllowlist"] = json!(["a.test", 1]);
    assert_eq!(
        h.provider.resume_lease(&bad_egress, &*h.sink).await,
        Ok(expired())
    );

    // Another workspace: the marker no longer matches.
    let root = h.emu.sandbox_root(&id).unwrap();
    std::fs::write(
        root.join("paperclip-workspace/.paperclip-runtime/.paperclip-createos-lease"),
        "00000000-0000-4000-8000-000000000000",
    )
    .unwrap();
    h.clear_log();
    assert_eq!(
        h.provider.resume_lease(&params, &*h.sink).await,
        Ok(expired())
    );
    assert_eq!(
        h.calls().last().unwrap().path,
        format!("/sandboxes/{id}/exec")
    );

    // A sandbox the service reports as failed.
    assert!(h.emu.force_status(&id, Status::Failed));
    h.clear_log();
    assert_eq!(
        h.provider.resume_lease(&params, &*h.sink).await,
        Ok(expired())
    );
    assert_route(&h.calls(), &[("GET", &format!("/sandboxes/{id}"))]);

    // A sandbox that is gone (404). Resume never deletes anything.
    h.destroy(&lease).await;
    h.clear_log();
    assert_eq!(
        h.provider.resume_lease(&params, &*h.sink).await,
        Ok(expired())
    );
    assert_route(&h.calls(), &[("GET", &format!("/sandboxes/{id}"))]);

    // A 404 later on is expiry too.
    let lease = warm_lease(&h, json!({})).await;
    let params = h.lease_params(reuse, &lease);
    h.fault(json!({ "method": "PUT", "path": "/v1/sandboxes/*/egress", "action": { "kind": "status", "status": 404 } }));
    assert_eq!(
        h.provider.resume_lease(&params, &*h.sink).await,
        Ok(expired())
    );
    h.emu.clear_faults();
    h.destroy(&lease).await;
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn does_not_execute_resume_or_destroy_another_companys_lease() {
    let h = Harness::start().await;
    let lease = h.acquire(&h.run_params(json!({}))).await;
    h.clear_log();
    let mut foreign = lease.clone();
    foreign["metadata"]["companyId"] = json!("co_other");
    let mut other_env = lease.clone();
    other_env["metadata"]["environmentId"] = json!("env_other");
    let mut other_api = lease.clone();
    other_api["metadata"]["apiUrl"] = json!("https://api.sb.createos.sh");
    let mut not_ours = lease.clone();
    not_ours["metadata"]["provider"] = json!("kubernetes");
    for bad in [&foreign, &other_env, &other_api, &not_ours] {
        let params = h.lease_params(json!({}), bad);
        assert_eq!(
            message(h.provider.resume_lease(&params, &*h.sink).await),
            "CreateOS lease does not belong to this environment."
        );
        assert_eq!(
            message(h.provider.release_lease(&params, &*h.sink).await),
            "CreateOS lease does not belong to this environment."
        );
        assert_eq!(
            message(h.provider.destroy_lease(&params, &*h.sink).await),
            "CreateOS lease does not belong to this environment."
        );
        let exec = h.exec_params(bad, "true", &[], json!({}));
        assert_eq!(
            message(h.provider.execute(&exec, &*h.sink).await),
            "CreateOS execution requires a lease from this environment."
        );
        assert_eq!(
            message(h.provider.realize_workspace(&exec, &*h.sink).await),
            "CreateOS workspace requires a lease from this environment."
        );
    }
    // No lease at all.
    let mut none = lease.clone();
    none["providerLeaseId"] = Value::Null;
    let exec = h.exec_params(&none, "true", &[], json!({}));
    assert_eq!(
        message(h.provider.execute(&exec, &*h.sink).await),
        "CreateOS execution requires a lease from this environment."
    );
    assert_eq!(
        message(h.provider.realize_workspace(&exec, &*h.sink).await),
        "CreateOS workspace requires a lease from this environment."
    );
    // Release and destroy of "no lease" resolve with nothing and touch nothing.
    assert_eq!(
        h.provider
            .release_lease(&h.lease_params(json!({}), &none), &*h.sink)
            .await,
        Ok(None)
    );
    assert_eq!(
        h.provider
            .destroy_lease(&h.lease_params(json!({}), &none), &*h.sink)
            .await,
        Ok(None)
    );
    assert!(h.calls().is_empty(), "{}", show(&h.calls()));
    h.destroy(&lease).await;
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn realizes_the_fixed_workspace_without_io_and_without_checking_the_id() {
    let h = Harness::start().await;
    let md = json!({ "provider": "createos", "apiUrl": h.emu.base_url(), "companyId": COMPANY, "environmentId": ENVIRONMENT });
    // Realize checks the metadata only: an ID of any shape is accepted.
    let lease = json!({ "providerLeaseId": "not/an id", "metadata": md });
    let params = h.exec_params(
        &lease,
        "true",
        &[],
        json!({ "workspace": { "mode": "isolated" } }),
    );
    let realized = h
        .provider
        .realize_workspace(&params, &*h.sink)
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_string(&realized).unwrap(),
        r#"{"cwd":"/paperclip-workspace","metadata":{"provider":"createos","remoteCwd":"/paperclip-workspace"}}"#
    );
    // Release validates it.
    let released = h
        .provider
        .destroy_lease(&h.lease_params(json!({}), &lease), &*h.sink)
        .await;
    assert_eq!(
        message(released),
        "CreateOS returned an invalid resource ID."
    );
    assert!(h.calls().is_empty());
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_and_destroy_treat_a_vanished_sandbox_as_deleted_but_report_failures() {
    let h = Harness::start().await;
    let lease = h.acquire(&h.run_params(json!({}))).await;
    let id = id_of(&lease);
    let params = h.lease_params(json!({}), &lease);
    h.fault(json!({ "method": "DELETE", "path": "/v1/sandboxes/*", "action": { "kind": "status", "status": 500 } }));
    assert_eq!(
        message(h.provider.destroy_lease(&params, &*h.sink).await),
        "CreateOS request failed (HTTP 500) during sandbox lifecycle."
    );
    h.emu.clear_faults();
    // Retrying is allowed (the closing state ended) and succeeds.
    assert_eq!(h.provider.release_lease(&params, &*h.sink).await, Ok(None));
    // Destroyed already: the service answers the repeated delete as a no-op on the terminal row.
    h.clear_log();
    assert_eq!(h.provider.destroy_lease(&params, &*h.sink).await, Ok(None));
    let records = h.records();
    assert_eq!(records.len(), 1);
    assert_eq!(
        (records[0].method.as_str(), records[0].status),
        ("DELETE", Some(200))
    );
    assert_eq!(records[0].path, format!("/v1/sandboxes/{id}"));
    // Gone altogether (its row forgotten): a 404 counts as deleted too.
    h.clear_log();
    h.fault(json!({ "method": "DELETE", "path": "/v1/sandboxes/*", "action": { "kind": "status", "status": 404 } }));
    assert_eq!(h.provider.destroy_lease(&params, &*h.sink).await, Ok(None));
    let records = h.records();
    assert_eq!(
        (records[0].method.as_str(), records[0].status),
        ("DELETE", Some(404))
    );
    h.finish().await;
}
