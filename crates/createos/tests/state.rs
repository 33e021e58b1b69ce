//! The in-worker state: closing and unconfirmed-cleanup scopes, cached leases, shutdown.
//!
//! Login PTY and duplex sessions are registered by their hooks; here stand-ins register the
//! same way so that the lease rules around them can be driven deterministically.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::*;
use createos::{LeaseSession, SessionEntry, SessionKind};
use sandbox_core::{BoxFuture, ProviderError, ProviderResult};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const TERMINATION_UNCONFIRMED: &str = "CreateOS process tree termination was not confirmed.";

/// A session whose close can be held open and can fail a number of times.
#[derive(Default)]
struct StandIn {
    closes: AtomicUsize,
    failures_left: AtomicUsize,
    /// Cancelled when a close has started.
    closing: CancellationToken,
    /// When set, close waits until it is cancelled.
    gate: Option<CancellationToken>,
}

impl LeaseSession for StandIn {
    fn close(&self) -> BoxFuture<'_, ProviderResult<()>> {
        Box::pin(async move {
            self.closes.fetch_add(1, Ordering::SeqCst);
            self.closing.cancel();
            if let Some(gate) = &self.gate {
                gate.cancelled().await;
            }
            let failing = self
                .failures_left
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok();
            if failing {
                return Err(ProviderError::new(TERMINATION_UNCONFIRMED));
            }
            Ok(())
        })
    }
}

fn register(h: &Harness, lease: &Value, kind: SessionKind, session: Arc<StandIn>) {
    h.provider.register_session(SessionEntry {
        kind,
        host_route_id: format!("route-{}", h.provider.state().active_calls()),
        worker_session_id: format!("session-{kind:?}"),
        provider_lease_id: lease["providerLeaseId"].as_str().unwrap().to_owned(),
        session,
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refuses_to_leave_a_sandbox_warm_after_unconfirmed_channel_cleanup_but_allows_destroy() {
    let h = Harness::start().await;
    let reuse = json!({ "reuseLease": true });
    let lease = h.acquire(&h.run_params(reuse.clone())).await;
    let session = Arc::new(StandIn {
        failures_left: AtomicUsize::new(1),
        ..Default::default()
    });
    register(&h, &lease, SessionKind::Duplex, session.clone());
    h.clear_log();

    let params = h.lease_params(reuse.clone(), &lease);
    // The channel cannot be confirmed closed: that error is the release's.
    assert_eq!(
        message(h.provider.release_lease(&params, &*h.sink).await),
        TERMINATION_UNCONFIRMED
    );
    // From now on the lease takes no work, cannot be resumed and cannot be kept warm.
    let exec = h.exec_params_with(reuse.clone(), &lease, "true", &[], json!({}));
    assert_eq!(
        message(h.provider.execute(&exec, &*h.sink).await),
        "CreateOS lease is closing or requires cleanup."
    );
    assert_eq!(
        message(h.provider.resume_lease(&params, &*h.sink).await),
        "CreateOS lease cleanup must finish before resume."
    );
    assert_eq!(
        message(h.provider.release_lease(&params, &*h.sink).await),
        "CreateOS process cleanup is unconfirmed; destroy this lease before reusing it."
    );
    assert!(h.calls().is_empty(), "{}", show(&h.calls()));
    assert_eq!(session.closes.load(Ordering::SeqCst), 2);

    // Destroying the whole sandbox is always allowed, and clears the poisoned state.
    assert_eq!(h.provider.destroy_lease(&params, &*h.sink).await, Ok(None));
    assert_route(
        &h.calls(),
        &[(
            "DELETE",
            &format!("/sandboxes/{}", lease["providerLeaseId"].as_str().unwrap()),
        )],
    );
    // The scope is clean again: a resume now reaches the API (and finds the sandbox gone).
    assert_eq!(
        h.provider.resume_lease(&params, &*h.sink).await,
        Ok(json!({ "providerLeaseId": null, "metadata": { "expired": true } }))
    );
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_being_released_takes_no_new_work_and_no_second_cleanup() {
    let h = Harness::start().await;
    let reuse = json!({ "reuseLease": true });
    let lease = h.acquire(&h.run_params(reuse.clone())).await;
    let gate = CancellationToken::new();
    let session = Arc::new(StandIn {
        gate: Some(gate.clone()),
        ..Default::default()
    });
    register(&h, &lease, SessionKind::LoginPty, session.clone());
    h.clear_log();
    let params = h.lease_params(reuse.clone(), &lease);

    let first = h.provider.release_lease(&params, &*h.sink);
    let meanwhile = async {
        session.closing.cancelled().await;
        assert_eq!(
            message(h.provider.release_lease(&params, &*h.sink).await),
            "CreateOS lease cleanup is already in progress."
        );
        assert_eq!(
            message(h.provider.destroy_lease(&params, &*h.sink).await),
            "CreateOS lease cleanup is already in progress."
        );
        let exec = h.exec_params_with(reuse.clone(), &lease, "true", &[], json!({}));
        assert_eq!(
            message(h.provider.execute(&exec, &*h.sink).await),
            "CreateOS lease is closing or requires cleanup."
        );
        assert_eq!(
            message(h.provider.resume_lease(&params, &*h.sink).await),
            "CreateOS lease cleanup must finish before resume."
        );
        gate.cancel();
    };
    let (released, ()) = tokio::join!(first, meanwhile);
    assert_eq!(released, Ok(None), "kept warm");
    assert!(h.calls().is_empty(), "{}", show(&h.calls()));
    // The closing state ended with the release: the lease resumes.
    let resumed = h.provider.resume_lease(&params, &*h.sink).await.unwrap();
    assert_eq!(resumed["metadata"]["resumedLease"], json!(true));
    h.destroy(&resumed).await;
    assert_eq!(
        session.closes.load(Ordering::SeqCst),
        1,
        "a destroy does not close a forgotten session again"
    );
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn caches_acquired_and_resumed_leases_for_sessions_per_environment() {
    let h = Harness::start().await;
    let reuse = json!({ "reuseLease": true });
    let lease = h.acquire(&h.run_params(reuse.clone())).await;
    let id = lease["providerLeaseId"].as_str().unwrap().to_owned();
    let session_params = h.params(json!({ "providerLeaseId": id }));
    let cached = h.provider.state().resolve_lease(&session_params).unwrap();
    assert_eq!(cached.config.api_url, h.emu.base_url());
    let other = {
        let mut p = session_params.clone();
        p["companyId"] = json!("co_other");
        p
    };
    assert_eq!(
        message(h.provider.state().resolve_lease(&other)),
        "CreateOS session requires a lease cached for this environment."
    );
    // Released: forgotten.
    h.provider
        .release_lease(&h.lease_params(reuse.clone(), &lease), &*h.sink)
        .await
        .unwrap();
    assert_eq!(
        message(h.provider.state().resolve_lease(&session_params)),
        "CreateOS session requires a lease cached for this environment."
    );
    // Resumed: cached again.
    h.provider
        .resume_lease(&h.lease_params(reuse.clone(), &lease), &*h.sink)
        .await
        .unwrap();
    assert!(h.provider.state().is_cached(&id));
    h.destroy(&lease).await;
    assert!(!h.provider.state().is_cached(&id));
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_stops_in_flight_work_closes_sessions_and_refuses_new_work() {
    let h = Harness::start().await;
    let lease = h.acquire(&h.run_params(json!({}))).await;
    let id = lease["providerLeaseId"].as_str().unwrap().to_owned();
    let session = Arc::new(StandIn {
        failures_left: AtomicUsize::new(1),
        ..Default::default()
    });
    register(&h, &lease, SessionKind::LoginPty, session.clone());

    let params = h.exec_params(
        &lease,
        "bash",
        &["-c", "echo started; exec sleep 60"],
        json!({}),
    );
    let running = h.provider.execute(&params, &*h.sink);
    let shutdown = async {
        h.sink.wait_for_stdout("started").await;
        // A failing session close does not stop the shutdown.
        h.provider.shutdown().await
    };
    let (result, shut) = tokio::join!(running, shutdown);
    assert_eq!(message(result), "CreateOS command was cancelled.");
    assert_eq!(shut, Ok(None));
    assert_eq!(session.closes.load(Ordering::SeqCst), 1);
    assert_eq!(h.provider.state().active_calls(), 0);
    assert!(!h.provider.state().is_cached(&id));
    assert_eq!(
        message(
            h.provider
                .execute(&h.exec_params(&lease, "true", &[], json!({})), &*h.sink)
                .await
        ),
        "CreateOS lease is closing or requires cleanup."
    );
    // Cleanup still works after shutdown.
    h.destroy(&lease).await;
    h.finish().await;
}
