//! No panic crosses napi. A panic in a hook becomes that hook's failure with a clear message,
//! and the worker lives on; the panic hook prints one line to stderr (the host logs stderr as
//! warnings) instead of a backtrace.

use std::any::Any;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};

use futures::FutureExt;
use sandbox_core::ProviderError;

use crate::bridge::outcome::Outcome;

/// Installed once from `module_init`.
// The addon's only write: one line per panic on stderr, which the host logs as a warning (never
// stdout, the host's JSON-RPC channel).
#[allow(clippy::print_stderr)]
pub fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        eprintln!(
            "paperclip-sandbox-native: {}",
            internal_error_message(info.payload())
        );
    }));
}

fn internal_error_message(payload: &(dyn Any + Send)) -> String {
    let detail = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned());
    format!("internal error: {detail}")
}

fn panic_outcome(payload: Box<dyn Any + Send>) -> Outcome {
    Outcome::error(ProviderError::new(format!(
        "paperclip-sandbox-native {}",
        internal_error_message(payload.as_ref())
    )))
}

/// Runs a synchronous hook body, turning a panic into a failed outcome.
pub fn sync(body: impl FnOnce() -> Outcome) -> Outcome {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(panic_outcome)
}

/// Runs an asynchronous hook body, turning a panic into a failed outcome.
pub async fn run(body: impl Future<Output = Outcome>) -> Outcome {
    AssertUnwindSafe(body)
        .catch_unwind()
        .await
        .unwrap_or_else(panic_outcome)
}
