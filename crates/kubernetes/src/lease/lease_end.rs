//! A lease's own end on the cluster (issue #38). Every Sandbox carries `spec.shutdownTime` with
//! `spec.shutdownPolicy: Delete`: at that time the agent-sandbox controller deletes its pod and
//! the Sandbox, and the garbage collector what the Sandbox owns (the per-run Secret, the scoped
//! egress policies). So a lease whose worker died mid-acquire, or that the host never released,
//! ends by itself. A hook that uses the lease (acquire, resume, execute, sync, a login open)
//! first moves that end forward when it is due ([`LeaseEnds::keep_alive`]).
//!
//! # When the end moves
//!
//! `idle` is the config's `podActivityDeadlineSec`; `hook` is the longest the hook may use the
//! lease (its own bound: an execute's or a sync's timeout, the acquire's or resume's API bound,
//! the login open's budget).
//!
//! - The end a hook writes is `now + hook + idle + idle/2` ([`end_to_write`]).
//! - A hook writes only when the end this worker knows is less than `hook + idle` from now, or
//!   when it knows none: its first use of the lease in this worker, or after a failed write
//!   ([`must_move`]).
//!
//! Why: (1) no hook is cut by the lease's end, since when it starts the end is at least `idle`
//! past its last possible moment; (2) an idle lease never ends sooner than `idle` after its last
//! use could have ended (what `podActivityDeadlineSec` promises), and an abandoned one is gone
//! at most `1.5 × idle` after that; (3) a lease in steady use costs one PATCH per `idle/2` of
//! wall time, not one per call (executes can come several a second), and nothing is read first.
//!
//! The end known is this worker's last write, per lease: a new worker's first use of a lease
//! writes again. Hooks on one lease take turns here (a per-lease async lock), so two writes of
//! one worker never land in the wrong order. A write that fails never fails the hook: it is
//! logged on the worker's log and the Sandbox keeps its previous end; the next hook retries
//! after [`retry_after_failure_ms`]. A Sandbox that is gone (404) is left to the hook's own
//! lookups, which answer as they always did (a resume reports the lease expired).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use sandbox_core::{HostSink, LogLevel};

use crate::builders::sandbox_cr::shutdown_time_text;
use crate::cluster::api_bound;
use crate::cluster::sandbox_end::patch_sandbox_end;
use crate::cluster::{Clock, ClusterApi, SandboxApiVersion};
use crate::config::KubernetesConfig;

/// The bound of one write: a hung API server costs a hook at most this much.
pub const KEEP_ALIVE_BOUND_MS: u64 = 5_000;
/// After a failed write, the next hook on the lease retries no sooner than this (or a quarter
/// of `idle` when that is shorter), so a refused PATCH (an RBAC without `patch`) is not
/// repeated, and logged, by every call.
pub const RETRY_AFTER_FAILURE_MS: u64 = 30_000;
/// The longest hook bound counted (30 days): an execute's `timeoutMs` is the caller's number.
pub const MAX_HOOK_MS: u64 = 30 * 86_400_000;
/// The longest `idle` counted (a year), so that every end is a date RFC 3339 can write.
pub const MAX_IDLE_MS: u64 = 366 * 86_400_000;

/// `podActivityDeadlineSec` in milliseconds, within [`MAX_IDLE_MS`].
pub fn idle_ms(config: &KubernetesConfig) -> u64 {
    let ms = config.pod_activity_deadline_sec * 1000.0;
    if ms.is_finite() && ms > 0.0 {
        (ms as u64).min(MAX_IDLE_MS)
    } else {
        0
    }
}

/// The end a hook starting at `now_ms` writes: `idle` and half of it again past the hook's last
/// possible moment.
pub fn end_to_write(now_ms: u64, hook_ms: u64, idle_ms: u64) -> u64 {
    now_ms
        .saturating_add(hook_ms.min(MAX_HOOK_MS))
        .saturating_add(idle_ms)
        .saturating_add(idle_ms / 2)
}

/// How long after a failed write the next one waits.
pub fn retry_after_failure_ms(idle_ms: u64) -> u64 {
    RETRY_AFTER_FAILURE_MS.min(idle_ms / 4)
}

/// What this worker knows of one lease's end.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct KnownEnd {
    /// The end it last wrote (or created the Sandbox with), Unix milliseconds.
    pub end_ms: Option<u64>,
    /// When its last write failed, if that came after the last success.
    pub failed_at_ms: Option<u64>,
}

/// Whether a hook starting at `now_ms` must write: the end known is not `idle` past the hook's
/// last possible moment (or none is known), and no write failed within the retry interval.
pub fn must_move(known: KnownEnd, now_ms: u64, hook_ms: u64, idle_ms: u64) -> bool {
    let needed = now_ms
        .saturating_add(hook_ms.min(MAX_HOOK_MS))
        .saturating_add(idle_ms);
    let short = known.end_ms.is_none_or(|end| end < needed);
    let resting = known
        .failed_at_ms
        .is_some_and(|at| now_ms < at.saturating_add(retry_after_failure_ms(idle_ms)));
    short && !resting
}

/// `K8S_LEASE_END_NOT_MOVED`: a write of the lease's end failed (a worker log warning).
pub fn lease_end_not_moved_message(
    namespace: &str,
    name: &str,
    shutdown_time: &str,
    error: &str,
) -> String {
    format!(
        "[plugin-kubernetes] Could not move the end of Sandbox {namespace}/{name} to {shutdown_time} ({error}); it keeps its previous end, and a later call on the lease retries. Check that the provider may patch sandboxes.agents.x-k8s.io (docs/rbac)."
    )
}

/// The lease a hook is about to use, and how long it may use it.
pub struct SandboxUse<'a> {
    pub api: &'a dyn ClusterApi,
    pub version: SandboxApiVersion,
    pub namespace: &'a str,
    pub name: &'a str,
    /// `podActivityDeadlineSec` in milliseconds ([`idle_ms`]).
    pub idle_ms: u64,
    /// The hook's own bound.
    pub hook_ms: u64,
}

/// What [`LeaseEnds::keep_alive`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kept {
    /// The end known was far enough: no request.
    Unchanged,
    /// The end was written (Unix milliseconds).
    Moved(u64),
    /// The Sandbox is gone (404): the hook's own lookups answer.
    Gone,
    /// The write failed (logged), or it was not tried after a recent failure.
    NotMoved,
}

/// The ends this worker knows, per lease id.
#[derive(Debug)]
pub struct LeaseEnds {
    leases: Mutex<HashMap<String, Arc<tokio::sync::Mutex<KnownEnd>>>>,
    /// The bound of one write ([`KEEP_ALIVE_BOUND_MS`]).
    bound_ms: u64,
}

impl Default for LeaseEnds {
    fn default() -> Self {
        Self::with_bound(KEEP_ALIVE_BOUND_MS)
    }
}

impl LeaseEnds {
    /// Writes bounded by `bound_ms` (tests: a hung API server without the real wait).
    pub fn with_bound(bound_ms: u64) -> Self {
        Self {
            leases: Mutex::default(),
            bound_ms,
        }
    }

    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<String, Arc<tokio::sync::Mutex<KnownEnd>>>> {
        self.leases.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn entry(&self, lease: &str) -> Arc<tokio::sync::Mutex<KnownEnd>> {
        self.lock().entry(lease.to_string()).or_default().clone()
    }

    /// The end a Sandbox was created with (acquire).
    pub async fn remember(&self, lease: &str, end_ms: u64) {
        let entry = self.entry(lease);
        let mut known = entry.lock().await;
        *known = KnownEnd {
            end_ms: Some(end_ms),
            failed_at_ms: None,
        };
    }

    /// What this worker knows of `lease` (tests, diagnostics).
    pub async fn known(&self, lease: &str) -> KnownEnd {
        let entry = self.lock().get(lease).cloned();
        match entry {
            Some(entry) => *entry.lock().await,
            None => KnownEnd::default(),
        }
    }

    /// Release, destroy: the lease is gone.
    pub fn forget(&self, lease: &str) {
        self.lock().remove(lease);
    }

    /// Worker shutdown.
    pub fn clear(&self) {
        self.lock().clear();
    }

    /// Moves the Sandbox's end forward if it is due ([`must_move`]), within the write's bound
    /// ([`KEEP_ALIVE_BOUND_MS`]); a failure is logged on `sink`, never returned.
    pub async fn keep_alive(
        &self,
        clock: &dyn Clock,
        sandbox: &SandboxUse<'_>,
        sink: &dyn HostSink,
    ) -> Kept {
        let entry = self.entry(sandbox.name);
        let mut known = entry.lock().await;
        let now_ms = clock.unix_ms();
        if !must_move(*known, now_ms, sandbox.hook_ms, sandbox.idle_ms) {
            return if known.failed_at_ms.is_some() {
                Kept::NotMoved
            } else {
                Kept::Unchanged
            };
        }
        let end_ms = end_to_write(now_ms, sandbox.hook_ms, sandbox.idle_ms);
        let Some(shutdown_time) = shutdown_time_text(end_ms) else {
            return Kept::NotMoved;
        };
        let patch = patch_sandbox_end(
            sandbox.api,
            sandbox.version,
            sandbox.namespace,
            sandbox.name,
            &shutdown_time,
        );
        match api_bound::with_api_bound(self.bound_ms, patch).await {
            Ok(()) => {
                *known = KnownEnd {
                    end_ms: Some(end_ms),
                    failed_at_ms: None,
                };
                Kept::Moved(end_ms)
            }
            Err(err) if err.is_not_found() => {
                *known = KnownEnd::default();
                Kept::Gone
            }
            Err(err) => {
                known.failed_at_ms = Some(now_ms);
                let message = lease_end_not_moved_message(
                    sandbox.namespace,
                    sandbox.name,
                    &shutdown_time,
                    &err.to_string(),
                );
                sink.log(LogLevel::Warn, &message);
                Kept::NotMoved
            }
        }
    }
}

#[cfg(test)]
#[path = "lease_end_tests.rs"]
mod tests;
