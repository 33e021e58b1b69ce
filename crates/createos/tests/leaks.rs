//! Nothing is left to nobody (failed acquires leak no cloud resource, CreateOS half): a create
//! whose outcome is unknown is found by its ownership name and deleted; a fork whose outcome is
//! unknown is reported with its template and time; shutdown during an acquire or a probe undoes
//! it before the worker exits.

mod common;

use std::time::Duration;

use common::*;
use createos::messages;
use sandbox_core::LogLevel;
use sandbox_core::poll::poll;
use serde_json::json;

/// The ownership name of the create call in `calls`.
fn name_of(calls: &[Call]) -> String {
    let create = calls
        .iter()
        .find(|c| c.method == "POST" && c.path == "/sandboxes")
        .unwrap_or_else(|| panic!("no POST /sandboxes:\n{}", show(calls)));
    let name = &create.body.as_ref().unwrap()["name"];
    assert!(is_ownership_name(name), "{name}");
    name.as_str().unwrap().to_owned()
}

/// The first page of the lookup of a lost create.
const FIRST_PAGE: &str = "/sandboxes?limit=500&offset=0";

/// How long a wait on the emulator's state may take before the test fails.
const WAIT: Duration = Duration::from_secs(20);

fn looked_up(calls: &[Call]) -> bool {
    calls.iter().any(|c| c.is("GET", FIRST_PAGE))
}

/// Runs `call` and shuts the provider down once `ready` holds; shutdown must succeed.
async fn shut_down_when<T>(
    h: &Harness,
    what: &str,
    ready: impl FnMut() -> bool,
    call: impl std::future::Future<Output = T>,
) -> T {
    let stop = async {
        poll(what, WAIT).until(ready).await;
        h.provider.shutdown().await
    };
    let (out, stopped) = tokio::join!(call, stop);
    assert_eq!(stopped, Ok(None));
    out
}

/// The account's sandboxes were listed to find the create's.
fn assert_name_lookup(calls: &[Call]) {
    name_of(calls);
    assert!(looked_up(calls), "{}", show(calls));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_create_whose_outcome_is_unknown_is_found_by_its_name_and_deleted() {
    let h = Harness::start().await;
    // The sandbox is made, then the connection drops instead of the reply.
    h.fault(json!({"method": "POST", "path": "/v1/sandboxes", "action": {"kind": "drop", "after": true}}));
    let error = h
        .provider
        .acquire_lease(&h.run_params(json!({})), &*h.sink)
        .await
        .unwrap_err();
    assert_eq!(error.message, messages::CONNECTION_FAILED);
    let calls = h.calls();
    name_of(&calls);
    let lookup = calls
        .iter()
        .position(|c| c.is("GET", FIRST_PAGE))
        .unwrap_or_else(|| panic!("no lookup:\n{}", show(&calls)));
    assert!(
        calls[lookup + 1..]
            .iter()
            .any(|c| c.method == "DELETE" && c.path.starts_with("/sandboxes/sb")),
        "the found sandbox is deleted:\n{}",
        show(&calls)
    );
    assert_eq!(h.emu.counts().sandboxes, 0);

    // Each other unknown outcome: a 5xx after the sandbox was made, and a 200 whose body
    // cannot be read.
    for (action, message) in [
        (
            json!({"kind": "status", "status": 502, "after": true}),
            "CreateOS request failed (HTTP 502) during sandbox lifecycle.",
        ),
        (
            json!({"kind": "malformedJson", "after": true}),
            messages::INVALID_JSON,
        ),
    ] {
        h.clear_log();
        h.emu.clear_faults();
        h.fault(json!({"method": "POST", "path": "/v1/sandboxes", "action": action}));
        let error = h
            .provider
            .acquire_lease(&h.run_params(json!({})), &*h.sink)
            .await
            .unwrap_err();
        assert_eq!(error.message, message);
        assert_name_lookup(&h.calls());
        assert_eq!(h.emu.counts().sandboxes, 0, "{action}");
    }

    // A refusal (4xx) proves nothing was made: no lookup.
    h.clear_log();
    h.emu.clear_faults();
    h.fault(json!({"method": "POST", "path": "/v1/sandboxes", "action": {"kind": "status", "status": 429}}));
    let error = h
        .provider
        .acquire_lease(&h.run_params(json!({})), &*h.sink)
        .await
        .unwrap_err();
    assert_eq!(
        error.message,
        "CreateOS request failed (HTTP 429) during sandbox lifecycle."
    );
    assert!(!looked_up(&h.calls()), "{}", show(&h.calls()));
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lookup_pages_through_the_whole_list() {
    let h = Harness::start().await;
    // Three sandboxes made before, and pages of two: the lost one is on the second page.
    let mut others = Vec::new();
    for run in ["a", "b", "c"] {
        others.push(h.acquire(&h.params(json!({ "runId": run }))).await);
    }
    h.emu.settings().set_max_page_size(2);
    h.clear_log();
    h.fault(json!({"method": "POST", "path": "/v1/sandboxes", "action": {"kind": "drop", "after": true}}));
    let error = h
        .provider
        .acquire_lease(&h.run_params(json!({})), &*h.sink)
        .await
        .unwrap_err();
    assert_eq!(error.message, messages::CONNECTION_FAILED);
    let calls = h.calls();
    let pages: Vec<&str> = calls
        .iter()
        .filter(|c| c.method == "GET" && c.path.starts_with("/sandboxes?"))
        .map(|c| c.path.as_str())
        .collect();
    // The limit asked is the server's largest; the offset advances by what each page held.
    assert_eq!(
        pages,
        [
            "/sandboxes?limit=500&offset=0",
            "/sandboxes?limit=500&offset=2"
        ],
        "{}",
        show(&calls)
    );
    let name = name_of(&calls);
    assert!(
        !h.emu
            .sandbox_views()
            .iter()
            .any(|v| v["name"] == json!(name)),
        "the lost sandbox is deleted"
    );
    assert_eq!(h.emu.counts().sandboxes, 3);
    for lease in &others {
        h.destroy(lease).await;
    }
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_cannot_be_reached_is_not_searched() {
    // Nothing listens here: the create never left, so nothing can have been made.
    let h = Harness::start().await;
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let error = h
        .provider
        .acquire_lease(
            &h.params_with(
                json!({ "apiUrl": url, "rootfs": "devbox:1" }),
                json!({ "runId": "r" }),
            ),
            &*h.sink,
        )
        .await
        .unwrap_err();
    assert_eq!(error.message, messages::CONNECTION_FAILED);
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_lookup_names_the_sandbox_to_delete() {
    let h = Harness::start().await;
    h.fault(json!({"method": "POST", "path": "/v1/sandboxes", "action": {"kind": "drop", "after": true}}));
    h.fault(json!({"method": "GET", "path": "/v1/sandboxes", "action": {"kind": "status", "status": 503}}));
    let error = h
        .provider
        .acquire_lease(&h.run_params(json!({})), &*h.sink)
        .await
        .unwrap_err();
    let name = name_of(&h.calls());
    assert_eq!(error.message, messages::creation_cleanup_unconfirmed(&name));
    assert_eq!(
        error_catalog::explain(&error.message).map(|e| e.code),
        Some("CREATEOS_CREATION_CLEANUP_UNCONFIRMED")
    );
    // The name finds exactly the sandbox that was left; an operator (here: the test) deletes it.
    let views = h.emu.sandbox_views();
    assert_eq!(views.len(), 1);
    assert_eq!(views[0]["name"], json!(name));
    let id = views[0]["id"].as_str().unwrap();
    let orphan = json!({ "providerLeaseId": id, "metadata": {
        "provider": "createos", "apiUrl": h.emu.base_url(),
        "companyId": COMPANY, "environmentId": ENVIRONMENT } });
    h.destroy(&orphan).await;
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_whose_outcome_is_unknown_names_its_template_and_time_and_deletes_nothing() {
    let h = Harness::start().await;
    let template = h.acquire(&h.params(json!({ "runId": "t" }))).await;
    let template_id = template["providerLeaseId"].as_str().unwrap().to_owned();
    h.emu
        .force_status(&template_id, emulator::createos::Status::Paused);
    h.clear_log();
    h.fault(json!({"method": "POST", "path": "/v1/sandboxes/*/fork", "action": {"kind": "drop", "after": true}}));
    let before = std::time::SystemTime::now();
    let error = h
        .provider
        .acquire_lease(
            &h.params_with(json!({ "snapshot": template_id }), json!({ "runId": "r" })),
            &*h.sink,
        )
        .await
        .unwrap_err();
    // "… forked from it at 2026-12-05T13:45:00.123Z may exist …": the time of the request.
    let at = error
        .message
        .split_once(" at ")
        .and_then(|(_, rest)| rest.split_once(' '))
        .map(|(at, _)| at.to_owned())
        .unwrap_or_else(|| panic!("{}", error.message));
    assert_eq!(error.message, messages::fork_unconfirmed(&template_id, &at));
    let ms = |t: std::time::SystemTime| {
        t.duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as f64
    };
    let (from, to) = (
        js_compat::date::to_iso_string(ms(before)).unwrap(),
        js_compat::date::to_iso_string(ms(std::time::SystemTime::now())).unwrap(),
    );
    assert!(from <= at && at <= to, "{from} <= {at} <= {to}");
    assert_eq!(
        error_catalog::explain(&error.message).map(|e| e.code),
        Some("CREATEOS_FORK_UNCONFIRMED")
    );
    // Nothing is looked up or deleted: the fork is left for the operator the message names it to.
    let calls = h.calls();
    assert!(!looked_up(&calls), "{}", show(&calls));
    assert!(
        !calls.iter().any(|c| c.method == "DELETE"),
        "{}",
        show(&calls)
    );
    let views = h.emu.sandbox_views();
    assert_eq!(views.len(), 2, "{views:?}");
    let fork = views
        .iter()
        .find(|v| v["forked_from"] == json!(template_id))
        .expect("the fork");
    h.destroy_named(fork["id"].as_str().unwrap()).await;
    h.destroy(&template).await;
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_during_an_acquire_deletes_its_sandbox_before_it_returns() {
    let h = Harness::start().await;
    // The marker upload hangs: the sandbox exists, the acquire has not returned.
    h.fault(json!({"method": "PUT", "path": "/v1/sandboxes/*/files", "action": {"kind": "delay", "ms": 60_000}}));
    let params = h.run_params(json!({}));
    let acquire = h.provider.acquire_lease(&params, &*h.sink);
    let stop = async {
        // The hanging marker upload has arrived, so the acquire holds the create reply (a
        // shutdown while that reply is still being read: the test after the next).
        poll("the marker upload to hang", WAIT)
            .until(|| {
                h.calls()
                    .iter()
                    .any(|c| c.method == "PUT" && c.path.contains("/files"))
            })
            .await;
        assert_eq!(h.emu.counts().sandboxes, 1);
        assert_eq!(h.provider.state().active_acquisitions(), 1);
        h.provider.shutdown().await
    };
    let (acquired, stopped) = tokio::join!(acquire, stop);
    assert_eq!(stopped, Ok(None));
    assert_eq!(
        acquired.unwrap_err().message,
        messages::ACQUIRE_STOPPED_BY_SHUTDOWN
    );
    assert_eq!(
        error_catalog::explain(messages::ACQUIRE_STOPPED_BY_SHUTDOWN).map(|e| e.code),
        Some("CREATEOS_ACQUIRE_STOPPED_BY_SHUTDOWN")
    );
    // Shutdown returned only after the delete: nothing is left when the worker exits.
    assert_eq!(h.emu.counts().sandboxes, 0);
    assert_eq!(h.provider.state().active_acquisitions(), 0);
    // After shutdown, an acquire is refused before any request.
    h.clear_log();
    let refused = h.provider.acquire_lease(&params, &*h.sink).await;
    assert_eq!(
        refused.unwrap_err().message,
        messages::ACQUIRE_STOPPED_BY_SHUTDOWN
    );
    let probe = h.provider.probe(&params, &*h.sink).await;
    assert_eq!(
        probe.unwrap_err().message,
        messages::ACQUIRE_STOPPED_BY_SHUTDOWN
    );
    assert!(h.calls().is_empty(), "{}", show(&h.calls()));
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_during_a_create_looks_for_the_sandbox_by_its_name() {
    let h = Harness::start().await;
    // The create is answered late: shutdown stops the acquire while the reply is awaited.
    h.fault(
        json!({"method": "POST", "path": "/v1/sandboxes", "action": {"kind": "delay", "ms": 400}}),
    );
    let params = h.run_params(json!({}));
    let acquired = shut_down_when(
        &h,
        "the create to be sent",
        || h.emu.faults().iter().any(|f| f.fired == 1),
        h.provider.acquire_lease(&params, &*h.sink),
    )
    .await;
    assert_eq!(
        acquired.unwrap_err().message,
        messages::ACQUIRE_STOPPED_BY_SHUTDOWN
    );
    assert_name_lookup(&h.calls());
    // The aborted request never reached the handler; had it, the lookup would have deleted it.
    assert_eq!(h.emu.counts().sandboxes, 0);
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_during_a_probe_still_deletes_its_sandbox() {
    let h = Harness::start().await;
    h.fault(json!({"method": "POST", "path": "/v1/sandboxes/*/exec", "query": "stream=true", "action": {"kind": "delay", "ms": 60_000}}));
    let params = h.params(json!({}));
    let probed = shut_down_when(
        &h,
        "the probe command to be sent",
        || h.emu.faults().iter().any(|f| f.fired == 1),
        h.provider.probe(&params, &*h.sink),
    )
    .await;
    let probed = probed.expect("the probe reports as data");
    assert_eq!(probed["ok"], json!(false), "{probed}");
    assert_eq!(h.emu.counts().sandboxes, 0);
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_while_a_create_reply_is_read_deletes_the_sandbox_and_says_why() {
    let h = Harness::start().await;
    // The create takes effect and its reply stops after a few bytes, the connection open.
    h.fault(json!({"method": "POST", "path": "/v1/sandboxes",
        "action": {"kind": "cutStream", "afterBytes": 5, "hold": true}}));
    let params = h.run_params(json!({}));
    let acquired = shut_down_when(
        &h,
        "the sandbox to be created",
        || h.emu.counts().sandboxes == 1,
        h.provider.acquire_lease(&params, &*h.sink),
    )
    .await;
    // Why it stopped, not the half-read body's `CreateOS returned invalid JSON.`.
    assert_eq!(
        acquired.unwrap_err().message,
        messages::ACQUIRE_STOPPED_BY_SHUTDOWN
    );
    assert_name_lookup(&h.calls());
    assert_eq!(h.emu.counts().sandboxes, 0);
    h.finish().await;
}

/// The sandbox a probe created (the one sandbox of the emulator).
fn only_sandbox(h: &Harness) -> String {
    let views = h.emu.sandbox_views();
    assert_eq!(views.len(), 1, "{views:?}");
    views[0]["id"].as_str().expect("an id").to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_during_a_probe_whose_delete_fails_logs_its_sandbox() {
    let h = Harness::start().await;
    h.fault(json!({"method": "POST", "path": "/v1/sandboxes/*/exec", "query": "stream=true", "action": {"kind": "delay", "ms": 60_000}}));
    h.fault(json!({"method": "DELETE", "path": "/v1/sandboxes/*", "action": {"kind": "malformedJson", "after": false}}));
    let params = h.params(json!({}));
    let probed = shut_down_when(
        &h,
        "the probe command to be sent",
        || h.emu.faults().iter().any(|f| f.fired == 1),
        h.provider.probe(&params, &*h.sink),
    )
    .await;
    let id = only_sandbox(&h);
    // The delete's own error, as the original rejected; the log names the sandbox.
    assert_eq!(probed.unwrap_err().message, messages::INVALID_JSON);
    let warning = messages::probe_sandbox_not_deleted(&id);
    assert!(h.sink.has_logged(LogLevel::Warn, &warning), "{warning}");
    h.destroy_named(&id).await;
    h.finish().await;
}
