//! Streamed execute output on its way to `ctx.execution.log`.
//!
//! A provider hands over one chunk per frame it reads. Sending each chunk to the JS thread on
//! its own costs two thread wake-ups per chunk (Rust -> JS, and JS -> Rust to say it was taken),
//! and a fast stream of small frames spends its time waking threads. So chunks are *batched*
//! while the JS thread is busy: at most one batch is on its way at a time, and the chunks that
//! arrive meanwhile go out together in the next one, up to [`BATCH_BYTES`]. JS still calls `ctx.execution.log` once per
//! chunk, so the host sees exactly the frames the provider read, in order.
//!
//! Memory stays bounded: chunks hold [`BUDGET_BYTES`] of budget from the moment they are queued
//! until JS has taken them *and* the worker's stdout has drained (the JS callback returns a
//! promise while the host reads slower than the stream arrives). A producer that runs out of
//! budget waits, so a slow host slows the provider's read of the stream (and, through TCP, the
//! sandbox) instead of growing the worker's heap.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use napi::Status;
use napi::bindgen_prelude::Promise;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use sandbox_core::OutputStream;
use tokio::sync::Semaphore;

/// Output bytes that may be queued or in flight towards JS for one execute call. A chunk larger
/// than the whole budget takes all of it (it is sent alone). 1 MiB keeps the JS thread busy
/// (the pipe to the host takes 64 KiB at a time) while keeping what a slow host makes the worker
/// buffer small enough to stay in V8's young generation: with 4 MiB, a 64 MiB stream grew the
/// old space by ~65 MiB and peak RSS by ~60 MiB (bench/profile/README.md).
pub const BUDGET_BYTES: usize = 1024 * 1024;

/// Output bytes sent to JS in one batch, at most (a larger chunk goes alone). JS turns a whole
/// batch into strings before it logs the first; if a scavenge comes meanwhile, the rest survive
/// it, and surviving bytes are what makes V8 grow its young generation. Small frames are what
/// batching is for, so 64 KiB of them still make one trip.
pub const BATCH_BYTES: usize = 64 * 1024;

/// The bound `ctx.execution.log` of one execute call, as plugin-kit hands it to Rust: called with
/// a flat `[stream, chunk, stream, chunk, ...]` batch, it returns nothing when the batch is on its
/// way, or a promise that settles once the worker's stdout has drained.
pub type ExecutionLogCallback =
    ThreadsafeFunction<Vec<String>, Option<Promise<()>>, Vec<String>, Status, false>;

/// One execute call's output channel to JS.
pub struct ExecutionLog {
    shared: Arc<Shared>,
}

struct Shared {
    callback: ExecutionLogCallback,
    /// Permits are bytes of output; see [`BUDGET_BYTES`].
    budget: Semaphore,
    queue: Mutex<Queue>,
}

#[derive(Default)]
struct Queue {
    /// Chunks waiting for the batch in flight to be taken, with the budget each holds.
    chunks: VecDeque<(OutputStream, String, u32)>,
    /// A batch is on its way to JS; its completion sends the next one.
    in_flight: bool,
}

impl ExecutionLog {
    pub fn new(callback: ExecutionLogCallback) -> Self {
        Self {
            shared: Arc::new(Shared {
                callback,
                budget: Semaphore::new(BUDGET_BYTES),
                queue: Mutex::default(),
            }),
        }
    }

    /// Queues one chunk, waiting first for budget if the host is behind.
    pub async fn send(&self, stream: OutputStream, chunk: String) {
        let cost = chunk.len().clamp(1, BUDGET_BYTES) as u32;
        let Ok(permit) = self.shared.budget.acquire_many(cost).await else {
            return; // never closed; nothing to deliver to if it were
        };
        // The budget now belongs to the chunk; `Batch::drop` gives it back.
        permit.forget();
        let batch = {
            let mut queue = self.shared.lock();
            queue.chunks.push_back((stream, chunk, cost));
            if queue.in_flight {
                None
            } else {
                queue.in_flight = true;
                Some(queue.take())
            }
        };
        if let Some((entries, cost)) = batch {
            Shared::dispatch(&self.shared, entries, cost);
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

impl Queue {
    /// The next batch, `[stream, chunk, ...]`, and the budget it holds: queued chunks from the
    /// front up to [`BATCH_BYTES`] (at least one).
    fn take(&mut self) -> (Vec<String>, u32) {
        let mut entries = Vec::new();
        let (mut bytes, mut cost) = (0, 0);
        while let Some((stream, chunk, chunk_cost)) = self.chunks.pop_front() {
            bytes += chunk.len();
            cost += chunk_cost;
            entries.push(stream.as_str().to_owned());
            entries.push(chunk);
            if bytes >= BATCH_BYTES {
                break;
            }
        }
        (entries, cost)
    }
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        // The queue holds plain data; a panic elsewhere cannot leave it half-updated.
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sends one batch. Whatever happens to the call (taken, drained later, or refused because
    /// the worker is shutting down), the batch's budget comes back and the next batch goes out:
    /// that is [`Batch`]'s drop.
    fn dispatch(shared: &Arc<Self>, entries: Vec<String>, cost: u32) {
        let batch = Batch {
            shared: Arc::clone(shared),
            cost,
        };
        let _ = shared.callback.call_with_return_value(
            entries,
            ThreadsafeFunctionCallMode::NonBlocking,
            move |returned, _env| {
                if let Ok(Some(drained)) = returned {
                    napi::bindgen_prelude::spawn(async move {
                        let _ = drained.await;
                        drop(batch);
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
    cost: u32,
}

impl Drop for Batch {
    fn drop(&mut self) {
        self.shared.budget.add_permits(self.cost as usize);
        let next = {
            let mut queue = self.shared.lock();
            if queue.chunks.is_empty() {
                queue.in_flight = false;
                None
            } else {
                Some(queue.take())
            }
        };
        if let Some((entries, cost)) = next {
            Shared::dispatch(&self.shared, entries, cost);
        }
    }
}
