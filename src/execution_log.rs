//! Streamed execute output on its way to `ctx.execution.log`.
//!
//! A provider hands over one chunk per frame it reads. Sending each chunk to the JS thread on
//! its own costs two thread wake-ups per chunk (Rust -> JS, and JS -> Rust to say it was taken),
//! and each `execute.log` notification costs the SDK a `JSON.stringify`, a pipe write and the
//! host a parse. So chunks are *batched* while the JS thread is busy, by
//! [`sandbox_core::OutputQueue`]: at most one batch is on its way at a time, a chunk that
//! arrives while none is goes out at once (slow output is not delayed), and the chunks that
//! arrive meanwhile go out together in the next batch, adjacent chunks of one stream joined
//! into one `execute.log` call, up to [`BATCH_BYTES`].
//!
//! Memory stays bounded: chunks hold [`BUDGET_BYTES`] of budget from the moment they are queued
//! until JS has taken them *and* the worker's stdout has drained (the JS callback returns a
//! promise while the host reads slower than the stream arrives). A producer that runs out of
//! budget waits, so a slow host slows the provider's read of the stream (and, through TCP, the
//! sandbox) instead of growing the worker's heap.
//!
//! Chunks cross into V8 as Latin-1 when they are ASCII (the usual case): the same string,
//! copied without V8's UTF-8 decoding pass.

use std::sync::{Arc, Mutex, PoisonError};

use napi::Status;
use napi::bindgen_prelude::{Promise, ToNapiValue};
use napi::sys;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use sandbox_core::{OutputBatch, OutputQueue, OutputStream};
use tokio::sync::Semaphore;

use crate::napi_status::check;

/// Output bytes that may be queued or in flight towards JS for one execute call. A chunk larger
/// than the whole budget takes all of it (it is sent alone). 1 MiB keeps the JS thread busy
/// (the pipe to the host takes 64 KiB at a time) while keeping what a slow host makes the worker
/// buffer small enough to stay in V8's young generation: with 4 MiB, a 64 MiB stream grew the
/// old space by ~65 MiB and peak RSS by ~60 MiB (measured).
pub const BUDGET_BYTES: usize = 1024 * 1024;

/// Output bytes sent to JS in one batch, and so in one joined chunk, at most (a larger chunk
/// goes alone). 64 KiB: the size of the floor's fastest notifications, far under the host's
/// 1,000,000-character chunk limit, and under V8's large-object size (128 KiB), above which
/// each string would get pages of its own. JS turns a whole batch into strings before it logs
/// the first; if a scavenge comes meanwhile, the rest survive it, and surviving bytes are what
/// makes V8 grow its young generation, so batches stay small.
pub const BATCH_BYTES: usize = 64 * 1024;

/// A batch as JS receives it: a flat `[stream, chunk, stream, chunk, ...]` array.
pub struct LogBatch(Vec<(OutputStream, String)>);

impl ToNapiValue for LogBatch {
    unsafe fn to_napi_value(env: sys::napi_env, batch: Self) -> napi::Result<sys::napi_value> {
        let mut array = std::ptr::null_mut();
        // SAFETY: `to_napi_value`'s contract: `env` is the env of the JS thread this runs on (the
        // threadsafe function's call into JS), inside its handle scope; `array` is a local the
        // call writes one handle to.
        let status =
            unsafe { sys::napi_create_array_with_length(env, batch.0.len() * 2, &mut array) };
        check(status, "the execution-log batch (array)")?;
        for (index, (stream, text)) in batch.0.into_iter().enumerate() {
            // SAFETY: the same env, on its JS thread, as this function's contract gives it.
            let stream = unsafe { <&str>::to_napi_value(env, stream.as_str())? };
            // SAFETY: as above (`text_to_napi` asks for nothing more).
            let text = unsafe { text_to_napi(env, &text)? };
            for (offset, value) in [(0, stream), (1, text)] {
                let at = (index * 2 + offset) as u32;
                check(
                    // SAFETY: `array` and `value` are handles made above in this env's current
                    // scope, so still alive; `at` is within the length the array was made with.
                    unsafe { sys::napi_set_element(env, array, at, value) },
                    "the execution-log batch (element)",
                )?;
            }
        }
        Ok(array)
    }
}

/// A chunk as a JS string (ASCII copied as Latin-1, anything else through UTF-8).
///
/// # Safety
/// `env` is the current env, on its JS thread, inside a handle scope.
unsafe fn text_to_napi(env: sys::napi_env, text: &str) -> napi::Result<sys::napi_value> {
    // SAFETY: `env` is the current env on its JS thread (this function's contract), which is
    // `create_string`'s.
    unsafe { crate::bridge::strings::create_string(env, text) }
}

/// The bound `ctx.execution.log` of one execute call, as plugin-kit hands it to Rust: called with
/// a flat `[stream, chunk, stream, chunk, ...]` batch, it returns nothing when the batch is on its
/// way, or a promise that settles once the worker's stdout has drained.
pub type ExecutionLogCallback =
    ThreadsafeFunction<LogBatch, Option<Promise<()>>, LogBatch, Status, false>;

/// One execute call's output channel to JS.
pub struct ExecutionLog {
    shared: Arc<Shared>,
}

struct Shared {
    callback: ExecutionLogCallback,
    /// Permits are bytes of output; see [`BUDGET_BYTES`].
    budget: Semaphore,
    queue: Mutex<OutputQueue>,
}

impl ExecutionLog {
    pub fn new(callback: ExecutionLogCallback) -> Self {
        Self {
            shared: Arc::new(Shared {
                callback,
                budget: Semaphore::new(BUDGET_BYTES),
                // One bound for both: batches of several 64 KiB chunks (256 KiB) measured
                // the same throughput and CPU per MiB, so a larger batch buys nothing.
                queue: Mutex::new(OutputQueue::new(BATCH_BYTES, BATCH_BYTES)),
            }),
        }
    }

    /// Queues one chunk, waiting first for budget if the host is behind.
    pub async fn send(&self, stream: OutputStream, chunk: String) {
        let cost = chunk.len().clamp(1, BUDGET_BYTES);
        let Ok(permit) = self.shared.budget.acquire_many(cost as u32).await else {
            return; // never closed; nothing to deliver to if it were
        };
        // The budget now belongs to the chunk; `Batch::drop` gives it back.
        permit.forget();
        let batch = self.shared.lock().push(stream, chunk, cost);
        if let Some(batch) = batch {
            Shared::dispatch(&self.shared, batch);
        }
    }

    /// Resolves once every chunk queued so far has been taken by JS and the output has drained.
    /// An execute result must wait for this: the host closes the call's output route when the
    /// result arrives, and a chunk still queued behind it would be dropped.
    pub async fn delivered(&self) {
        // All of the budget free = nothing queued or in flight.
        let _all = self.shared.budget.acquire_many(BUDGET_BYTES as u32).await;
    }
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, OutputQueue> {
        // The queue holds plain data; a panic elsewhere cannot leave it half-updated.
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sends one batch. Whatever happens to the call (taken, drained later, or refused because
    /// the worker is shutting down), the batch's budget comes back and the next batch goes out:
    /// that is [`Batch`]'s drop.
    fn dispatch(shared: &Arc<Self>, batch: OutputBatch) {
        let sent = Batch {
            shared: Arc::clone(shared),
            cost: batch.cost,
        };
        let _ = shared.callback.call_with_return_value(
            LogBatch(batch.chunks),
            ThreadsafeFunctionCallMode::NonBlocking,
            move |returned, _env| {
                if let Ok(Some(drained)) = returned {
                    crate::runtime::spawn(async move {
                        let _ = drained.await;
                        drop(sent);
                    });
                }
                Ok(())
            },
        );
    }
}

/// A batch on its way to JS. Dropping it returns its budget and sends whatever queued up
/// meanwhile.
struct Batch {
    shared: Arc<Shared>,
    cost: usize,
}

impl Drop for Batch {
    fn drop(&mut self) {
        self.shared.budget.add_permits(self.cost);
        let next = self.shared.lock().finish();
        if let Some(batch) = next {
            Shared::dispatch(&self.shared, batch);
        }
    }
}
