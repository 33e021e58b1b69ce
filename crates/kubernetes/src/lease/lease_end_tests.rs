//! The lease-end rule and its writes against the scripted cluster.

use super::*;
use crate::cluster::ApiMethod;
use crate::cluster::testing::{ManualClock, ScriptedCluster, ScriptedReply};
use crate::error::Error;
use sandbox_core::recording_sink::RecordingSink;
use serde_json::json;

const IDLE: u64 = 3_600_000;
/// 2026-01-02T03:04:05Z.
const T0: u64 = 1_767_323_045_000;

fn sandbox_use(api: &dyn ClusterApi, hook_ms: u64) -> SandboxUse<'_> {
    SandboxUse {
        api,
        version: SandboxApiVersion::V1beta1,
        namespace: "paperclip-acme",
        name: "pc-1",
        idle_ms: IDLE,
        hook_ms,
    }
}

fn patches(cluster: &ScriptedCluster) -> Vec<serde_json::Value> {
    cluster
        .calls()
        .into_iter()
        .filter(|c| c.method == ApiMethod::PatchNamespacedCustomObject)
        .map(|c| c.args["body"].clone())
        .collect()
}

#[test]
fn the_end_written_is_idle_and_a_half_past_the_hooks_last_moment() {
    assert_eq!(
        end_to_write(T0, 25_000, IDLE),
        T0 + 25_000 + IDLE + IDLE / 2
    );
    assert_eq!(
        end_to_write(T0, u64::MAX, IDLE),
        T0 + MAX_HOOK_MS + IDLE + IDLE / 2
    );
    assert_eq!(
        end_to_write(u64::MAX, 1, 1),
        u64::MAX,
        "saturates, never wraps"
    );
}

#[test]
fn a_write_is_due_only_when_the_end_is_less_than_idle_past_the_hook() {
    let unknown = KnownEnd::default();
    assert!(
        must_move(unknown, T0, 0, IDLE),
        "a lease this worker never wrote"
    );
    let written = KnownEnd {
        end_ms: Some(end_to_write(T0, 0, IDLE)),
        failed_at_ms: None,
    };
    // Short hooks in steady use: no write until half of idle has passed.
    assert!(!must_move(written, T0 + 1_000, 0, IDLE));
    assert!(!must_move(written, T0 + IDLE / 2, 0, IDLE));
    assert!(must_move(written, T0 + IDLE / 2 + 1, 0, IDLE));
    // A long execute right after a short one still needs its own end.
    assert!(must_move(written, T0 + 1_000, IDLE, IDLE));
    // After a failure the next write waits, unless the end known is still far enough.
    let failed = KnownEnd {
        end_ms: None,
        failed_at_ms: Some(T0),
    };
    assert!(!must_move(failed, T0 + 29_999, 0, IDLE));
    assert!(must_move(failed, T0 + RETRY_AFTER_FAILURE_MS, 0, IDLE));
    assert_eq!(
        retry_after_failure_ms(20_000),
        5_000,
        "a short idle retries sooner"
    );
}

#[test]
fn idle_is_the_configs_deadline_within_a_year() {
    let mut config = KubernetesConfig::parse(&json!({"inCluster": true})).unwrap();
    assert_eq!(
        idle_ms(&config),
        3_600_000,
        "podActivityDeadlineSec's default"
    );
    config.pod_activity_deadline_sec = 1e15;
    assert_eq!(idle_ms(&config), MAX_IDLE_MS);
}

#[tokio::test]
async fn the_first_use_writes_and_the_next_ones_do_not_until_due() {
    let cluster = ScriptedCluster::new();
    let clock = ManualClock::at_unix_ms(T0);
    let ends = LeaseEnds::default();
    let sink = RecordingSink::default();
    let kept = ends
        .keep_alive(&clock, &sandbox_use(&cluster, 60_000), &sink)
        .await;
    let end = T0 + 60_000 + IDLE + IDLE / 2;
    assert_eq!(kept, Kept::Moved(end));
    assert_eq!(
        patches(&cluster),
        [json!({"spec": {"shutdownTime": "2026-01-02T04:35:05Z", "shutdownPolicy": "Delete"}})]
    );
    // Calls every few seconds for nearly half of idle: no request at all.
    for _ in 0..100 {
        clock.sleep(15_000).await;
        let kept = ends
            .keep_alive(&clock, &sandbox_use(&cluster, 60_000), &sink)
            .await;
        assert_eq!(kept, Kept::Unchanged);
    }
    clock.sleep(IDLE / 2).await;
    let kept = ends
        .keep_alive(&clock, &sandbox_use(&cluster, 60_000), &sink)
        .await;
    assert!(
        matches!(kept, Kept::Moved(later) if later > end),
        "{kept:?}"
    );
    assert_eq!(patches(&cluster).len(), 2);
    assert!(sink.logs.lock().unwrap().is_empty());
    ends.forget("pc-1");
    assert_eq!(ends.known("pc-1").await, KnownEnd::default());
}

#[tokio::test]
async fn an_acquired_lease_is_not_written_again_at_once() {
    let cluster = ScriptedCluster::new();
    let clock = ManualClock::at_unix_ms(T0);
    let ends = LeaseEnds::default();
    ends.remember("pc-1", end_to_write(T0, 25_000, IDLE)).await;
    let kept = ends
        .keep_alive(
            &clock,
            &sandbox_use(&cluster, 25_000),
            &RecordingSink::default(),
        )
        .await;
    assert_eq!(kept, Kept::Unchanged);
    assert!(cluster.calls().is_empty());
}

#[tokio::test]
async fn a_refused_write_is_logged_not_thrown_and_retried_later() {
    let refused = Error::new(403, "HTTP-Code: 403\nMessage: sandboxes is forbidden");
    let cluster = ScriptedCluster::new().script(
        ApiMethod::PatchNamespacedCustomObject,
        vec![
            ScriptedReply::Throws(refused),
            ScriptedReply::Returns(json!({})),
        ],
    );
    let clock = ManualClock::at_unix_ms(T0);
    let ends = LeaseEnds::default();
    let sink = RecordingSink::default();
    let kept = ends
        .keep_alive(&clock, &sandbox_use(&cluster, 0), &sink)
        .await;
    assert_eq!(kept, Kept::NotMoved);
    let logs = sink.logs.lock().unwrap().clone();
    assert_eq!(
        logs,
        [(
            LogLevel::Warn,
            lease_end_not_moved_message(
                "paperclip-acme",
                "pc-1",
                "2026-01-02T04:34:05Z",
                "HTTP-Code: 403\nMessage: sandboxes is forbidden"
            )
        )]
    );
    // Not every call repeats the refused request.
    clock.sleep(1_000).await;
    let kept = ends
        .keep_alive(&clock, &sandbox_use(&cluster, 0), &sink)
        .await;
    assert_eq!(kept, Kept::NotMoved);
    assert_eq!(patches(&cluster).len(), 1);
    clock.sleep(RETRY_AFTER_FAILURE_MS).await;
    let kept = ends
        .keep_alive(&clock, &sandbox_use(&cluster, 0), &sink)
        .await;
    assert!(matches!(kept, Kept::Moved(_)), "{kept:?}");
    assert_eq!(sink.logs.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn a_sandbox_that_is_gone_is_left_to_the_hook_and_not_logged() {
    let cluster = ScriptedCluster::new().script(
        ApiMethod::PatchNamespacedCustomObject,
        vec![ScriptedReply::Throws(Error::new(404, "not found"))],
    );
    let clock = ManualClock::at_unix_ms(T0);
    let ends = LeaseEnds::default();
    let sink = RecordingSink::default();
    let kept = ends
        .keep_alive(&clock, &sandbox_use(&cluster, 0), &sink)
        .await;
    assert_eq!(kept, Kept::Gone);
    assert!(sink.logs.lock().unwrap().is_empty());
    assert_eq!(ends.known("pc-1").await, KnownEnd::default());
}

#[tokio::test]
async fn a_hung_write_costs_the_hook_its_bound_only() {
    let cluster = ScriptedCluster::new().script(
        ApiMethod::PatchNamespacedCustomObject,
        vec![ScriptedReply::Hangs],
    );
    let clock = ManualClock::at_unix_ms(T0);
    let sink = RecordingSink::default();
    let kept = LeaseEnds::with_bound(50)
        .keep_alive(&clock, &sandbox_use(&cluster, 0), &sink)
        .await;
    assert_eq!(kept, Kept::NotMoved);
    let logs = sink.logs.lock().unwrap();
    assert!(
        logs[0].1.contains(&api_bound::api_timeout_message(50)),
        "{logs:?}"
    );
}

#[tokio::test]
async fn concurrent_hooks_on_one_lease_write_once() {
    let cluster = ScriptedCluster::new();
    let clock = ManualClock::at_unix_ms(T0);
    let ends = LeaseEnds::default();
    let sink = RecordingSink::default();
    let sandbox = sandbox_use(&cluster, 0);
    let uses = (0..5).map(|_| ends.keep_alive(&clock, &sandbox, &sink));
    let kept = futures::future::join_all(uses).await;
    assert_eq!(
        kept.iter().filter(|k| matches!(k, Kept::Moved(_))).count(),
        1
    );
    assert_eq!(patches(&cluster).len(), 1);
}
