//! The process-level setup of the addon: its tokio runtime and the allocator settings.
//!
//! The runtime is built on the first hook that needs it, not at load. napi-rs' `tokio_rt` alone
//! starts a runtime when the module registers (`start_async_runtime` forces it), so a worker
//! that only loads the addon, or answers health and config validation (synchronous hooks, run on
//! the JS thread), would pay for the build and its parked worker thread. Instead the addon
//! registers [`LazyRuntime`] as napi's async-runtime backend: every future napi runs
//! (`env.spawn_future`, `#[napi] async fn`) and everything this crate spawns ([`spawn`]) goes to
//! the one runtime it builds on first use.

use std::future::Future;
use std::pin::Pin;
use std::sync::{PoisonError, RwLock};
use std::time::Duration;

use napi::bindgen_prelude::{AsyncRuntime, AsyncRuntimeRejection, AsyncRuntimeTask};
use tokio::runtime::{Handle, Runtime};

/// The name of the runtime's threads (Linux shows its first 15 bytes in `/proc/*/task/*/comm`).
pub const THREAD_NAME: &str = "paperclip-sandbox-rt";

/// How long an environment's teardown waits for the runtime's threads, as napi-rs does for its
/// own runtime; threads still busy after that are left to finish (the image stays loaded).
const SHUTDOWN_WAIT: Duration = Duration::from_millis(100);

/// The one runtime, once built; empty before the first hook that needs it and after teardown.
static RUNTIME: RwLock<Option<Runtime>> = RwLock::new(None);

/// Called once from `module_init`, before napi-rs would start its default runtime.
pub fn install() {
    tune_malloc();
    napi::bindgen_prelude::register_async_runtime(LazyRuntime);
}

/// Spawns `future` onto the addon's runtime, building it if this is the first use. If the
/// runtime cannot be built (no thread could be started), `future` is dropped unrun.
pub fn spawn<F>(future: F)
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    if let Ok(handle) = handle() {
        handle.spawn(future);
    }
}

/// A handle on the runtime, built now if there is none yet.
fn handle() -> napi::Result<Handle> {
    if let Some(runtime) = RUNTIME
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .as_ref()
    {
        return Ok(runtime.handle().clone());
    }
    let mut slot = RUNTIME.write().unwrap_or_else(PoisonError::into_inner);
    if let Some(runtime) = slot.as_ref() {
        return Ok(runtime.handle().clone());
    }
    Ok(slot.insert(build()?).handle().clone())
}

/// napi-rs would start one tokio worker per core. In a burst of Rust work (200 executes, each
/// with its TLS handshake and websocket) those keep every core busy, and the worker's JS thread,
/// which must stay responsive to the host, waits for a core. One core is left to the JS thread
/// instead (measured on 2 cores: worst event-loop stall per burst, median ~14 ms with one worker
/// against ~18 ms with two, same wall time): the Rust side is I/O-bound, so one thread fewer
/// does not slow it.
fn build() -> napi::Result<Runtime> {
    // The runtime's threads can outlive an environment's teardown (see SHUTDOWN_WAIT), and
    // their wakers point into this image: keep it loaded, as napi-rs does for its runtime.
    napi::bindgen_prelude::retain_current_module_for_unload_safety();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let workers = cores.saturating_sub(1).max(1);
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .thread_name(THREAD_NAME)
        .enable_all()
        .build()
        .or_else(|_| Runtime::new())
        .map_err(|error| {
            napi::Error::from_reason(format!(
                "paperclip-sandbox-native internal error: the tokio runtime could not be built ({error})"
            ))
        })
}

/// napi's async-runtime backend over [`RUNTIME`].
struct LazyRuntime;

// SAFETY: after `shutdown` returns, the runtime's threads either have exited or, past
// SHUTDOWN_WAIT, keep running on an image that `build` pinned (it is never unloaded), which is
// the alternative the trait allows; every accepted task is owned by the tokio runtime, which
// drops unfinished ones (cancelling their promises) when it shuts down.
unsafe impl AsyncRuntime for LazyRuntime {
    fn spawn(&self, task: AsyncRuntimeTask) -> Result<(), AsyncRuntimeRejection<AsyncRuntimeTask>> {
        match handle() {
            Ok(handle) => {
                handle.spawn(task);
                Ok(())
            }
            Err(error) => Err(AsyncRuntimeRejection::new(task, error)),
        }
    }

    fn block_on(&self, future: Pin<&mut dyn Future<Output = ()>>) -> napi::Result<()> {
        handle()?.block_on(future);
        Ok(())
    }

    fn spawn_blocking(
        &self,
        work: Box<dyn FnOnce() + Send + 'static>,
    ) -> Result<(), AsyncRuntimeRejection<Box<dyn FnOnce() + Send + 'static>>> {
        match handle() {
            Ok(handle) => {
                handle.spawn_blocking(work);
                Ok(())
            }
            Err(error) => Err(AsyncRuntimeRejection::new(work, error)),
        }
    }

    /// Takes the runtime out (the next use builds a new one: a worker restart, a new
    /// environment) and shuts it down; from inside a runtime it cannot wait, so it does not.
    fn shutdown(&self) -> napi::Result<()> {
        let taken = RUNTIME
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(runtime) = taken {
            if Handle::try_current().is_ok() {
                runtime.shutdown_background();
            } else {
                runtime.shutdown_timeout(SHUTDOWN_WAIT);
            }
        }
        Ok(())
    }
}

/// glibc's malloc, tuned for a worker that moves output between threads.
///
/// Streamed output is allocated on tokio threads and freed on the JS thread, in blocks from a few
/// KiB to the 4 MiB of a captured tail. Left alone, glibc gives every thread its own arena and,
/// once a large block has been freed, raises its mmap threshold so that later large blocks come
/// from those arenas, where freed memory mostly stays resident. A fixed 256 KiB threshold (large
/// blocks are mapped and unmapped) and at most two arenas keep the worker ~30 MiB smaller after
/// repeated large executes (measured). The worker process is the plugin's own;
/// Node's allocations only see the same two settings.
fn tune_malloc() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only adjusts allocator parameters; it is called once, at module load,
    // before the runtime's threads exist.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 256 * 1024);
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
}
