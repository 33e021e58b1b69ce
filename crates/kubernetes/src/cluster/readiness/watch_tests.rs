//! The ready-wait's watches: a Ready event ends it at once, a watch that ends or loses its
//! place is opened again without missing anything, a refused watch falls back to the
//! original's poll, and a Sandbox no controller reconciles is named.

use serde_json::json;

use super::tests::{
    NAME, NS, T0, iso, pending_cr, ready_cr, sandbox_returning, wait_within_ms, watches, watching,
};
use super::*;
use crate::cluster::testing::{ManualClock, ScriptedReply, ScriptedWatch};
use crate::cluster::{WatchEvent, WorkloadPhase};

const NO_CONTROLLER: &str = "Sandbox paperclip-acme/pc-01 has no status 30s after it was created: no agent-sandbox controller is reconciling it; check that the agent-sandbox controller is installed and running.";

fn sandbox_watch_request(resource_version: Option<&str>, timeout_seconds: u64) -> Value {
    let mut request = json!({"group": "agents.x-k8s.io", "version": "v1beta1",
        "namespace": NS, "plural": "sandboxes", "fieldSelector": "metadata.name=pc-01",
        "timeoutSeconds": timeout_seconds});
    if let Some(version) = resource_version {
        request["resourceVersion"] = json!(version);
    }
    request
}

#[tokio::test]
async fn a_ready_event_ends_the_wait_at_once() {
    let cluster = watching(
        vec![pending_cr("10")],
        vec![ScriptedWatch::open(vec![
            WatchEvent::Added(pending_cr("10")),
            WatchEvent::Modified(ready_cr("11")),
        ])],
        vec![ScriptedWatch::open(vec![])],
    );
    let clock = ManualClock::new();
    let status = wait_within_ms(&cluster, &clock, 60_000, ReadinessLimits::default())
        .await
        .unwrap();
    // The phase mapping of a condition-only Ready, as the original reports it.
    assert_eq!(status.phase, WorkloadPhase::Pending);
    assert_eq!(cluster.calls().len(), 1, "one GET, then the watch");
    assert_eq!(
        watches(&cluster),
        vec![(
            ApiMethod::WatchNamespacedCustomObject,
            sandbox_watch_request(None, 60)
        )]
    );
    assert_eq!(clock.sleeps(), Vec::<u64>::new(), "no poll interval");
    assert_eq!(clock.now_ms(), 0);
}

#[tokio::test]
async fn a_sandbox_already_ready_needs_no_watch() {
    let cluster = watching(vec![ready_cr("3")], vec![], vec![]);
    let clock = ManualClock::new();
    wait_within_ms(&cluster, &clock, 60_000, ReadinessLimits::default())
        .await
        .unwrap();
    assert_eq!(cluster.calls().len(), 1);
    assert!(watches(&cluster).is_empty());
}

#[tokio::test]
async fn a_failed_or_terminating_event_fails_as_the_original() {
    let failed = json!({"status": {"conditions": [{"type": "Failed", "status": "True",
        "reason": "PodFailed", "message": "container exited"}]}});
    let terminating = json!({"status": {"phase": "Terminating"}});
    for (event, message) in [
        (
            failed,
            "Sandbox paperclip-acme/pc-01 failed: PodFailed \u{2014} container exited",
        ),
        (
            terminating,
            "Sandbox paperclip-acme/pc-01 is Terminating \u{2014} cannot wait for Ready",
        ),
    ] {
        let cluster = watching(
            vec![pending_cr("1")],
            vec![ScriptedWatch::open(vec![WatchEvent::Modified(event)])],
            vec![],
        );
        let err = wait_within_ms(&cluster, &ManualClock::new(), 60_000, Default::default())
            .await
            .unwrap_err();
        assert_eq!(err.to_string(), message);
    }
}

#[tokio::test]
async fn a_dropped_watch_goes_on_from_the_last_version_seen() {
    let bookmark = json!({"kind": "Sandbox", "apiVersion": "agents.x-k8s.io/v1beta1",
        "metadata": {"resourceVersion": "17"}});
    let cluster = watching(
        vec![pending_cr("10")],
        vec![
            // Ends after an event and a bookmark (a dropped connection, or its timeoutSeconds).
            ScriptedWatch::closing(vec![
                WatchEvent::Added(pending_cr("12")),
                WatchEvent::Bookmark(bookmark),
            ]),
            ScriptedWatch::open(vec![WatchEvent::Modified(ready_cr("18"))]),
        ],
        vec![ScriptedWatch::open(vec![])],
    );
    let clock = ManualClock::new();
    wait_within_ms(&cluster, &clock, 60_000, Default::default())
        .await
        .unwrap();
    let sandbox_watches: Vec<Value> = watches(&cluster)
        .into_iter()
        .filter(|(m, _)| *m == ApiMethod::WatchNamespacedCustomObject)
        .map(|(_, args)| args)
        .collect();
    assert_eq!(
        sandbox_watches,
        vec![
            sandbox_watch_request(None, 60),
            sandbox_watch_request(Some("17"), 60)
        ]
    );
    assert_eq!(cluster.calls().len(), 1, "no GET: nothing was missed");
    assert_eq!(
        clock.sleeps(),
        Vec::<u64>::new(),
        "it delivered, so no retry wait"
    );
}

#[tokio::test]
async fn a_watch_that_lost_its_place_reads_the_sandbox_again() {
    let expired = json!({"kind": "Status", "status": "Failure", "code": 410,
        "reason": "Expired", "message": "too old resource version"});
    let cluster = watching(
        vec![pending_cr("10"), pending_cr("20")],
        vec![
            ScriptedWatch::open(vec![WatchEvent::Error(expired)]),
            // A transport failure opening the next one: read again too.
            ScriptedWatch::Refused(Error::unanswered("connection reset by peer")),
            ScriptedWatch::open(vec![WatchEvent::Modified(ready_cr("21"))]),
        ],
        vec![ScriptedWatch::open(vec![])],
    );
    let clock = ManualClock::new();
    wait_within_ms(&cluster, &clock, 60_000, Default::default())
        .await
        .unwrap();
    assert_eq!(
        cluster.calls().len(),
        3,
        "the first GET and one after each lost place"
    );
    let versions: Vec<Option<Value>> = watches(&cluster)
        .into_iter()
        .filter(|(m, _)| *m == ApiMethod::WatchNamespacedCustomObject)
        .map(|(_, args)| args.get("resourceVersion").cloned())
        .collect();
    assert_eq!(
        versions,
        vec![None, None, None],
        "each starts at the current state"
    );
    // Two watches in a row ended without delivering: the retry waits grow.
    assert_eq!(clock.sleeps(), vec![250, 500]);
}

#[tokio::test]
async fn a_deleted_sandbox_fails_with_the_reads_404() {
    let cluster = sandbox_returning(vec![pending_cr("1")]).script_watch(
        ApiMethod::WatchNamespacedCustomObject,
        vec![ScriptedWatch::open(vec![WatchEvent::Deleted(pending_cr(
            "2",
        ))])],
    );
    let cluster = cluster.script(
        ApiMethod::GetNamespacedCustomObject,
        vec![
            ScriptedReply::Returns(pending_cr("1")),
            ScriptedReply::Throws(Error::new(404, "sandboxes \"pc-01\" not found")),
        ],
    );
    let err = wait_within_ms(&cluster, &ManualClock::new(), 60_000, Default::default())
        .await
        .unwrap_err();
    assert!(err.is_not_found());
    assert_eq!(err.to_string(), "sandboxes \"pc-01\" not found");
}

#[tokio::test]
async fn a_refused_watch_falls_back_to_the_originals_poll() {
    let forbidden = Error::new(403, "sandboxes.agents.x-k8s.io is forbidden: cannot watch");
    let cluster = watching(
        vec![pending_cr("1"), pending_cr("2"), ready_cr("3")],
        vec![ScriptedWatch::Refused(forbidden)],
        vec![ScriptedWatch::open(vec![])],
    );
    let clock = ManualClock::new();
    let options = PollOptions::default();
    let version = SandboxApiVersion::V1beta1;
    wait_for_sandbox_ready(&cluster, &clock, version, NS, NAME, options)
        .await
        .unwrap();
    assert_eq!(cluster.calls().len(), 3);
    assert_eq!(clock.sleeps(), vec![2000, 2000]);
    assert_eq!(
        watches(&cluster)
            .iter()
            .map(|(m, _)| *m)
            .collect::<Vec<_>>(),
        vec![ApiMethod::WatchNamespacedCustomObject],
        "the pod is not watched either"
    );
}

#[tokio::test]
async fn the_deadline_holds_while_the_watches_are_silent() {
    let cluster = watching(
        vec![pending_cr("1")],
        vec![ScriptedWatch::open(vec![])],
        vec![ScriptedWatch::open(vec![])],
    );
    let clock = ManualClock::new();
    let err = wait_within_ms(&cluster, &clock, 7_000, Default::default())
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Sandbox paperclip-acme/pc-01 did not reach Ready phase within 7000ms"
    );
    assert_eq!(clock.now_ms(), 7_000);
    assert_eq!(cluster.calls().len(), 1);
}

fn without_status(created: u64) -> Value {
    json!({"metadata": {"name": NAME, "namespace": NS, "resourceVersion": "5",
        "creationTimestamp": iso(created)}})
}

#[tokio::test]
async fn a_sandbox_no_controller_reconciles_names_the_controller() {
    let cluster = watching(
        vec![without_status(T0)],
        vec![ScriptedWatch::open(vec![WatchEvent::Added(
            without_status(T0),
        )])],
        vec![ScriptedWatch::open(vec![])],
    );
    // The wait starts 5 s after the creation: it fails 30 s after the creation, not after it.
    let clock = ManualClock::at_unix_ms(T0 + 5_000);
    let err = wait_within_ms(&cluster, &clock, 120_000, Default::default())
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), NO_CONTROLLER);
    assert_eq!(clock.now_ms(), 25_000);
}

#[tokio::test]
async fn an_old_sandbox_without_status_is_judged_on_its_first_read() {
    let cluster = watching(vec![without_status(T0)], vec![], vec![]);
    let clock = ManualClock::at_unix_ms(T0 + 3_600_000);
    let err = wait_within_ms(&cluster, &clock, 20_000, Default::default())
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), NO_CONTROLLER);
    assert_eq!(cluster.calls().len(), 1);
    assert!(watches(&cluster).is_empty());
}

#[tokio::test]
async fn a_status_within_the_window_keeps_the_wait_going() {
    let cluster = watching(
        vec![without_status(T0)],
        vec![ScriptedWatch::open(vec![WatchEvent::Modified(pending_cr(
            "6",
        ))])],
        vec![ScriptedWatch::open(vec![])],
    );
    let clock = ManualClock::at_unix_ms(T0 + 1_000);
    let err = wait_within_ms(&cluster, &clock, 45_000, Default::default())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::SandboxReadyTimeout { .. }), "{err}");
    assert_eq!(clock.now_ms(), 45_000);
}

#[tokio::test]
async fn a_sandbox_without_a_creation_time_gets_the_window_from_its_first_read() {
    let cluster = watching(
        vec![json!({})],
        vec![ScriptedWatch::open(vec![])],
        vec![ScriptedWatch::open(vec![])],
    );
    let clock = ManualClock::at_unix_ms(T0);
    let err = wait_within_ms(&cluster, &clock, 60_000, Default::default())
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), NO_CONTROLLER);
    assert_eq!(clock.now_ms(), 30_000);
}
