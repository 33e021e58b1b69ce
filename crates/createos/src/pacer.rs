//! The request pacer: every request to one API origin starts at least 300 ms after the previous
//! one, in the order the requests were issued, whichever lease, hook or cleanup path sends it.
//!
//! The service allows 300 requests a minute per caller IP; a worker polls, streams and cleans
//! up on behalf of many leases at once, so the budget is shared by the whole worker. The slot is
//! taken only to *start* a request: a long stream does not hold it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use sandbox_core::ProviderError;
use tokio::time::Instant;

use crate::signal::{SLEEP_ABORT_MESSAGE, Signal};

/// The spacing the service's rate limit asks for.
pub const DEFAULT_INTERVAL: Duration = Duration::from_millis(300);

/// One FIFO queue per API origin. [`Pacer::global`] is the worker-wide instance; tests build
/// their own with a shorter interval.
#[derive(Debug)]
pub struct Pacer {
    interval: Duration,
    /// Origin to "when the last request started". The async mutex is fair, so waiters take
    /// their turns in the order they asked.
    origins: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Option<Instant>>>>>,
}

impl Pacer {
    pub fn new(interval: Duration) -> Arc<Self> {
        Arc::new(Self {
            interval,
            origins: Mutex::new(HashMap::new()),
        })
    }

    /// The pacer every provider of this process shares (300 ms). Shared on purpose, also between
    /// the plugins `createPlugin()` makes: the spacing protects the API origin, whose rate limit
    /// is the same whichever plugin instance sends the request.
    pub fn global() -> Arc<Self> {
        static GLOBAL: OnceLock<Arc<Pacer>> = OnceLock::new();
        GLOBAL.get_or_init(|| Pacer::new(DEFAULT_INTERVAL)).clone()
    }

    pub fn interval(&self) -> Duration {
        self.interval
    }

    fn origin(&self, api_url: &str) -> Arc<tokio::sync::Mutex<Option<Instant>>> {
        let mut origins = self.origins.lock().unwrap_or_else(|e| e.into_inner());
        origins.entry(api_url.to_owned()).or_default().clone()
    }

    /// Waits for this request's turn to `api_url`. Fails with the signal's reason when it fired
    /// before or after the wait, and with Node's timer abort text when it fired during the
    /// spacing sleep. A waiter that gives up leaves the queue and never delays the others.
    pub async fn wait(&self, api_url: &str, signal: &Signal) -> Result<(), ProviderError> {
        let origin = self.origin(api_url);
        let mut last_started = tokio::select! {
            biased;
            guard = origin.lock() => guard,
            reason = signal.aborted() => return Err(reason.to_error()),
        };
        signal.throw_if_aborted()?;
        if let Some(previous) = *last_started {
            let due = previous + self.interval;
            if due > Instant::now() {
                tokio::select! {
                    _ = tokio::time::sleep_until(due) => {}
                    _ = signal.aborted() => return Err(ProviderError::new(SLEEP_ABORT_MESSAGE)),
                }
            }
        }
        signal.throw_if_aborted()?;
        *last_started = Some(Instant::now());
        Ok(())
    }
}
