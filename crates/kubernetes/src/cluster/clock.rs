//! Time for the waits, injectable so tests never sleep for real.

use std::time::{Duration, Instant};

use sandbox_core::BoxFuture;

/// The clock a readiness or completion poll reads and sleeps on.
pub trait Clock: Send + Sync {
    /// Milliseconds since an arbitrary fixed origin; only differences are used.
    fn now_ms(&self) -> u64;
    /// Waits `ms` milliseconds.
    fn sleep(&self, ms: u64) -> BoxFuture<'_, ()>;
    /// Wall-clock milliseconds since the Unix epoch: what the API server's timestamps
    /// (`creationTimestamp`, a condition's `lastTransitionTime`) are compared with.
    fn unix_ms(&self) -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }
}

/// The real clock: monotonic time and tokio timers (the original polls with `setTimeout`).
#[derive(Debug, Clone, Copy)]
pub struct SystemClock {
    origin: Instant,
}

impl SystemClock {
    pub fn new() -> Self {
        Self {
            origin: Instant::now(),
        }
    }
}

impl Default for SystemClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn sleep(&self, ms: u64) -> BoxFuture<'_, ()> {
        Box::pin(tokio::time::sleep(Duration::from_millis(ms)))
    }
}

/// A polling budget: `{timeoutMs, pollMs?}` in the original.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PollOptions {
    pub timeout_ms: u64,
    pub poll_ms: u64,
}

impl PollOptions {
    /// The poll interval when a caller gives only a timeout.
    pub const DEFAULT_POLL_MS: u64 = 2000;

    /// `{timeoutMs}` with the default 2 s poll.
    pub fn with_timeout(timeout_ms: u64) -> Self {
        Self {
            timeout_ms,
            poll_ms: Self::DEFAULT_POLL_MS,
        }
    }
}

impl Default for PollOptions {
    /// What a wait called without options uses: 120 s, polling every 2 s.
    fn default() -> Self {
        Self {
            timeout_ms: 120_000,
            poll_ms: Self::DEFAULT_POLL_MS,
        }
    }
}
