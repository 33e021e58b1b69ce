//! Test-only entry points that exercise the bridge itself: streaming from a Rust task into a
//! bound `ctx.execution.log`, and panics on both kinds of call. They do nothing a user can
//! observe outside of tests, so they ship in the addon (one binary for tests and production).

use napi_derive::napi;
use sandbox_core::{HostSink, OutputStream};

use crate::execution_log::ExecutionLogCallback;
use crate::guard;
use crate::host::JsHost;

/// Streams `chunks` (alternating stdout, stderr) from a tokio task through the same
/// [`crate::host::CallSink`] the execute hooks use; resolves with the number sent once every
/// chunk has been handed over, as an execute result does.
#[napi]
pub async fn debug_stream_execution_log(
    chunks: Vec<String>,
    #[napi(ts_arg_type = "(batch: string[]) => Promise<void> | undefined")]
    on_output: ExecutionLogCallback,
) -> napi::Result<u32> {
    let sink = JsHost::new(None).for_call(Some(on_output));
    let task = tokio::spawn(async move {
        let mut sent = 0u32;
        for (index, chunk) in chunks.into_iter().enumerate() {
            let stream = if index % 2 == 0 {
                OutputStream::Stdout
            } else {
                OutputStream::Stderr
            };
            sink.execution_log(stream, chunk).await;
            sent += 1;
        }
        sink.delivered().await;
        sent
    });
    task.await
        .map_err(|e| napi::Error::from_reason(format!("stream task failed: {e}")))
}

/// Panics inside an async call: the promise must reject, the worker must live on.
#[napi]
pub async fn debug_panic_async(message: String) -> String {
    guard::run(async move { panic!("{message}") })
        .await
        .into_json()
}

/// Panics inside a sync call: the guard turns it into a failed outcome.
#[napi(catch_unwind)]
pub fn debug_panic_sync(message: String) -> String {
    guard::sync(|| panic!("{message}")).into_json()
}
