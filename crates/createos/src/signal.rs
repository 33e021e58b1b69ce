//! Cancellation with the semantics of the original's `AbortSignal`.
//!
//! The original passed one signal through every step of a hook: `AbortSignal.timeout(ms)` for a
//! deadline, an `AbortController` for explicit stops, `AbortSignal.any` to combine them. What a
//! caller observes depends on *why* the signal fired (a timed-out command returns
//! `timedOut: true`, a stopped one fails as cancelled) and on *where* it was noticed (the
//! platform error texts differ), so [`Signal`] keeps the first reason, as JS does.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use sandbox_core::ProviderError;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// `signal.reason` of a fired `AbortSignal.timeout` (a DOMException named `TimeoutError`).
pub const TIMEOUT_MESSAGE: &str = "The operation was aborted due to timeout";
/// `signal.reason` of `controller.abort()` (a DOMException named `AbortError`).
pub const ABORT_MESSAGE: &str = "This operation was aborted";
/// What an abortable Node timer (`timers/promises` `setTimeout` with a signal) rejects with.
pub const SLEEP_ABORT_MESSAGE: &str = "The operation was aborted";

/// Why a signal fired.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AbortReason {
    /// The deadline passed.
    Timeout,
    /// An explicit stop without a reason.
    Aborted,
    /// An explicit stop with an error as its reason.
    Error(ProviderError),
}

impl AbortReason {
    pub fn is_timeout(&self) -> bool {
        matches!(self, AbortReason::Timeout)
    }

    /// The error JS throws for this reason (`throwIfAborted`, an aborted `fetch`).
    pub fn to_error(&self) -> ProviderError {
        match self {
            AbortReason::Timeout => ProviderError::new(TIMEOUT_MESSAGE),
            AbortReason::Aborted => ProviderError::new(ABORT_MESSAGE),
            AbortReason::Error(error) => error.clone(),
        }
    }
}

struct Inner {
    token: CancellationToken,
    /// This signal's own deadline (not the parent's).
    deadline: Option<Instant>,
    /// The earliest deadline of this signal and its ancestors: when to wake up.
    wake_at: Option<Instant>,
    reason: OnceLock<AbortReason>,
    parent: Option<Signal>,
}

/// A cloneable abort signal; every clone observes and can fire the same signal.
#[derive(Clone)]
pub struct Signal {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Signal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signal")
            .field("reason", &self.reason())
            .finish()
    }
}

impl Default for Signal {
    fn default() -> Self {
        Self::new()
    }
}

impl Signal {
    /// A signal that fires only when [`Signal::abort`] is called (an `AbortController`).
    pub fn new() -> Self {
        Self::build(None, None)
    }

    /// `AbortSignal.timeout(ms)`; it can also be aborted explicitly, which makes it
    /// `AbortSignal.any([controller.signal, AbortSignal.timeout(ms)])`.
    pub fn timeout(ms: u64) -> Self {
        Self::build(Some(Instant::now() + Duration::from_millis(ms)), None)
    }

    /// `AbortSignal.any([self, AbortSignal.timeout(ms)])`: fires with this signal's reason when
    /// it fires first, with a timeout when `ms` passes first.
    pub fn with_timeout(&self, ms: u64) -> Self {
        Self::build(
            Some(Instant::now() + Duration::from_millis(ms)),
            Some(self.clone()),
        )
    }

    fn build(deadline: Option<Instant>, parent: Option<Signal>) -> Self {
        let token = match &parent {
            Some(parent) => parent.inner.token.child_token(),
            None => CancellationToken::new(),
        };
        let parent_wake = parent.as_ref().and_then(|p| p.inner.wake_at);
        let wake_at = match (deadline, parent_wake) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Self {
            inner: Arc::new(Inner {
                token,
                deadline,
                wake_at,
                reason: OnceLock::new(),
                parent,
            }),
        }
    }

    fn settle(&self, reason: AbortReason) -> AbortReason {
        self.inner.reason.get_or_init(|| reason).clone()
    }

    /// `signal.reason` once fired (the first reason wins), else `None`.
    pub fn reason(&self) -> Option<AbortReason> {
        if let Some(reason) = self.inner.reason.get() {
            return Some(reason.clone());
        }
        if let Some(reason) = self.inner.parent.as_ref().and_then(Signal::reason) {
            return Some(self.settle(reason));
        }
        match self.inner.deadline {
            Some(deadline) if Instant::now() >= deadline => Some(self.settle(AbortReason::Timeout)),
            _ => None,
        }
    }

    pub fn is_aborted(&self) -> bool {
        self.reason().is_some()
    }

    /// `controller.abort()`. No effect once the signal has fired.
    pub fn abort(&self) {
        self.abort_with(AbortReason::Aborted);
    }

    /// `controller.abort(reason)`.
    pub fn abort_with(&self, reason: AbortReason) {
        if self.reason().is_none() {
            self.settle(reason);
        }
        self.inner.token.cancel();
    }

    /// `signal.throwIfAborted()`.
    pub fn throw_if_aborted(&self) -> Result<(), ProviderError> {
        match self.reason() {
            Some(reason) => Err(reason.to_error()),
            None => Ok(()),
        }
    }

    /// Resolves with the reason once the signal fires.
    pub async fn aborted(&self) -> AbortReason {
        loop {
            if let Some(reason) = self.reason() {
                return reason;
            }
            match self.inner.wake_at {
                Some(at) => tokio::select! {
                    _ = self.inner.token.cancelled() => {}
                    _ = tokio::time::sleep_until(at) => {}
                },
                None => self.inner.token.cancelled().await,
            }
        }
    }

    /// An abortable sleep (`timers/promises` `setTimeout(ms, undefined, {signal})`): rejects
    /// with Node's timer `AbortError` when the signal fires first or had already fired.
    pub async fn sleep(&self, duration: Duration) -> Result<(), ProviderError> {
        if self.is_aborted() {
            return Err(ProviderError::new(SLEEP_ABORT_MESSAGE));
        }
        tokio::select! {
            _ = tokio::time::sleep(duration) => Ok(()),
            _ = self.aborted() => Err(ProviderError::new(SLEEP_ABORT_MESSAGE)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn first_reason_wins_and_children_follow_parents() {
        let parent = Signal::new();
        let child = parent.with_timeout(60_000);
        assert!(child.reason().is_none());
        parent.abort();
        assert_eq!(child.aborted().await, AbortReason::Aborted);
        parent.abort_with(AbortReason::Timeout);
        assert_eq!(parent.reason(), Some(AbortReason::Aborted));
    }

    #[tokio::test]
    async fn deadlines_fire_as_timeouts() {
        let signal = Signal::timeout(1);
        assert_eq!(signal.aborted().await, AbortReason::Timeout);
        signal.abort();
        assert_eq!(
            signal.throw_if_aborted().unwrap_err().message,
            TIMEOUT_MESSAGE
        );
        let err = signal.sleep(Duration::from_secs(5)).await.unwrap_err();
        assert_eq!(err.message, SLEEP_ABORT_MESSAGE);
    }
}
