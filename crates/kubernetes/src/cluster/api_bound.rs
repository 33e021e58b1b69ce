//! Bounded Kubernetes API waits: every API request a hook makes finishes
//! within the hook's bound, so an API server that accepts requests and never answers cannot
//! hang acquire, release, destroy, resume, probe, execute, sync or a login open.
//!
//! The bound is the call's `timeoutMs` (the `config.timeoutMs` the host passes, or a
//! `timeoutMs` param) kept within a floor and a cap per hook ([`HookBound`]), so that it is
//! neither shorter than the hook's own waits nor longer than the host waits for the reply (the
//! host's RPC timeouts: acquire and resume `max(config.timeoutMs, config.bridgeRequestTimeoutMs)` +
//! 30 s; probe, release and destroy the default 30 s). The original applies no timeout of
//! its own to these calls (its client's requests have none).
//!
//! Execute, sync and login bound what comes before their stream instead of the whole hook (the
//! stream has its own watchdog): a readiness wait as a whole by the wait's own timeout
//! ([`wait_within`], so a hung poll ends as the contract's readiness timeout), each pod lookup
//! or version discovery by the call's budget left ([`remaining_ms`], never below the original's
//! 5 s exec floor) or, in sync, by [`LOOKUP`].
//!
//! The deadline is carried in a task-local, so every [`crate::cluster::KubeCluster`]
//! request made inside [`with_api_bound`] is cut at it and fails with
//! [`api_timeout_message`] as an ordinary transport error, through the hook's normal error
//! path (an acquire's partial-failure cleanup included, which gets a bound of its own: the
//! acquire's steps are cut 5 s before the acquire's bound, and the cleanup gets those 5 s).

use std::future::Future;
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

/// A hook's bound: `timeoutMs` clamped to `floor_ms..=cap_ms`, `default_ms` without one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HookBound {
    pub floor_ms: u64,
    pub cap_ms: u64,
    pub default_ms: u64,
}

/// Acquire: the call's timeout (the host waits 30 s more), at least 10 s; without one 25 s
/// (the host's default deadline is 30 s).
pub const ACQUIRE: HookBound = HookBound {
    floor_ms: 10_000,
    cap_ms: u64::MAX,
    default_ms: 25_000,
};
/// Resume: the call's timeout (the host waits 30 s more), at least 25 s, which is also the
/// bound without one (the host's default deadline is 30 s): its readiness wait
/// (`ResumeCheck::DEFAULT_READY_WAIT`, 20 s) and the pod lookups after it.
pub const RESUME: HookBound = HookBound {
    floor_ms: 25_000,
    cap_ms: u64::MAX,
    default_ms: 25_000,
};
/// Release and destroy: the host waits its default 30 s whatever the config says.
pub const RELEASE: HookBound = HookBound {
    floor_ms: 10_000,
    cap_ms: 25_000,
    default_ms: 25_000,
};
/// Probe: the published host calls it with its default RPC timeout, 30 s, whatever the config
/// says; the probe's checks run at once within 10 to 25 s.
pub const PROBE: HookBound = HookBound {
    floor_ms: 10_000,
    cap_ms: 25_000,
    default_ms: 25_000,
};

/// One pod lookup or version discovery of a sync (which has no `timeoutMs` of its own: the
/// call's `config.timeoutMs` if any, else 25 s, at least 10 s).
pub const LOOKUP: HookBound = HookBound {
    floor_ms: 10_000,
    cap_ms: u64::MAX,
    default_ms: 25_000,
};

#[derive(Clone, Copy, Debug)]
struct Bound {
    deadline: Instant,
    ms: u64,
}

tokio::task_local! {
    static API_BOUND: Bound;
}

/// `K8S_API_TIMEOUT`: what a request cut at the hook's bound fails with.
pub fn api_timeout_message(ms: u64) -> String {
    format!(
        "Kubernetes API server did not answer within {ms}ms; check that the cluster's API server is up and reachable, then retry."
    )
}

/// The call's timeout: the largest positive finite number of `config.timeoutMs`,
/// `config.bridgeRequestTimeoutMs` and `timeoutMs`.
pub fn call_timeout_ms(params: &Value) -> Option<u64> {
    let config = params.get("config");
    [
        config.and_then(|c| c.get("timeoutMs")),
        config.and_then(|c| c.get("bridgeRequestTimeoutMs")),
        params.get("timeoutMs"),
    ]
    .into_iter()
    .flatten()
    .filter_map(Value::as_f64)
    .filter(|ms| ms.is_finite() && *ms > 0.0)
    .map(|ms| ms.ceil() as u64)
    .max()
}

/// The bound of one hook call.
pub fn bound_ms(params: &Value, hook: HookBound) -> u64 {
    match call_timeout_ms(params) {
        Some(ms) => ms.clamp(hook.floor_ms, hook.cap_ms),
        None => hook.default_ms,
    }
}

/// Runs `fut` with every Kubernetes API request in it bounded by `ms` from now (a nested call
/// replaces the outer bound for its own requests).
pub async fn with_api_bound<F: Future>(ms: u64, fut: F) -> F::Output {
    let bound = Bound {
        deadline: Instant::now() + Duration::from_millis(ms),
        ms,
    };
    API_BOUND.scope(bound, fut).await
}

/// What is left of a `total_ms` budget after `elapsed_ms`, never below `floor_ms`.
pub fn remaining_ms(total_ms: u64, elapsed_ms: u64, floor_ms: u64) -> u64 {
    total_ms.saturating_sub(elapsed_ms).max(floor_ms)
}

/// A wait bounded as a whole by `ms` (a request hung inside it included, which is dropped):
/// `on_timeout()` when it is cut, the wait's own result otherwise.
pub async fn wait_within<T, E, F>(ms: u64, fut: F, on_timeout: impl FnOnce() -> E) -> Result<T, E>
where
    F: Future<Output = Result<T, E>>,
{
    tokio::time::timeout(Duration::from_millis(ms), fut)
        .await
        .unwrap_or_else(|_| Err(on_timeout()))
}

/// Whether an error message is [`api_timeout_message`]'s.
pub fn is_timeout(message: &str) -> bool {
    message.starts_with("Kubernetes API server did not answer within ")
}

/// One API request under the current bound, if any: `Err(message)` when it is cut.
pub async fn bounded<F: Future>(fut: F) -> Result<F::Output, String> {
    match API_BOUND.try_with(|b| *b) {
        Ok(bound) => tokio::time::timeout_at(bound.deadline, fut)
            .await
            .map_err(|_| api_timeout_message(bound.ms)),
        Err(_) => Ok(fut.await),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_bound_is_the_calls_timeout_within_the_hooks_limits() {
        let with = |v: Value| json!({"config": {"timeoutMs": v}});
        assert_eq!(bound_ms(&with(json!(60_000)), ACQUIRE), 60_000);
        assert_eq!(bound_ms(&with(json!(1500)), ACQUIRE), 10_000);
        assert_eq!(bound_ms(&with(json!(0)), ACQUIRE), 25_000);
        assert_eq!(bound_ms(&with(json!("9")), ACQUIRE), 25_000);
        assert_eq!(bound_ms(&json!({}), RESUME), 25_000);
        assert_eq!(bound_ms(&with(json!(3_600_000)), RELEASE), 25_000);
        assert_eq!(bound_ms(&with(json!(12_000.2)), RELEASE), 12_001);
        assert_eq!(bound_ms(&with(json!(3_600_000)), PROBE), 25_000);
        assert_eq!(bound_ms(&json!({}), PROBE), 25_000);
        let bridge = json!({"config": {"timeoutMs": 20_000, "bridgeRequestTimeoutMs": 90_000}});
        assert_eq!(bound_ms(&bridge, ACQUIRE), 90_000);
        assert_eq!(bound_ms(&json!({}), LOOKUP), 25_000);
        assert_eq!(remaining_ms(60_000, 1_000, 5_000), 59_000);
        assert_eq!(remaining_ms(1_500, 3_000, 5_000), 5_000);
    }

    #[tokio::test]
    async fn a_wait_past_its_bound_ends_with_its_timeout() {
        let hang = std::future::pending::<Result<(), &str>>();
        assert_eq!(wait_within(20, hang, || "late").await, Err("late"));
        assert_eq!(
            wait_within(20_000, async { Ok::<_, &str>(1) }, || "late").await,
            Ok(1)
        );
    }

    #[tokio::test]
    async fn a_request_past_the_bound_is_cut_and_one_outside_is_not() {
        let hang = std::future::pending::<()>();
        let cut = with_api_bound(50, bounded(hang)).await;
        assert_eq!(cut.unwrap_err(), api_timeout_message(50));
        assert_eq!(bounded(async { 3 }).await, Ok(3));
    }
}
