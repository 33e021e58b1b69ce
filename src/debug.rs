//! Test-only entry points that exercise the bridge itself: streaming from a Rust task into a
//! bound `ctx.execution.log`, panics on both kinds of call, the two ways of reading params, and
//! large execute results. They do nothing a user can
//! observe outside of tests, so they ship in the addon (one binary for tests and production).

use napi::Status;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi_derive::napi;
use sandbox_core::{HostSink, OutputStream};

use crate::execution_log::ExecutionLogCallback;
use crate::guard;
use crate::host::JsHost;

/// How [`debug_stream_execution_log`] produces its chunks (every field optional).
#[napi(object, object_to_js = false)]
pub struct DebugStreamOptions {
    /// The stream of each chunk (`"stdout"` or `"stderr"`); default: alternating, stdout first.
    pub streams: Option<Vec<String>>,
    /// Wait after each chunk until it has been taken by JS (and the output has drained) before
    /// producing the next one: output that arrives slowly.
    pub trickle: Option<bool>,
    /// Called once every chunk has been handed to the sink (before the result waits for their
    /// delivery), so a test can hold the output until the rest has queued up.
    pub on_handed_over: Option<ThreadsafeFunction<(), (), (), Status, false>>,
}

/// Streams `chunks` from a tokio task through the same [`crate::host::CallSink`] the execute
/// hooks use; resolves with the number sent once every chunk has been handed over, as an
/// execute result does.
#[napi]
pub async fn debug_stream_execution_log(
    chunks: Vec<String>,
    #[napi(ts_arg_type = "(batch: string[]) => Promise<void> | undefined")]
    on_output: ExecutionLogCallback,
    options: Option<DebugStreamOptions>,
) -> napi::Result<u32> {
    let options = options.unwrap_or(DebugStreamOptions {
        streams: None,
        trickle: None,
        on_handed_over: None,
    });
    let sink = JsHost::new(None).for_call(Some(on_output));
    let task = tokio::spawn(async move {
        let mut sent = 0u32;
        for (index, chunk) in chunks.into_iter().enumerate() {
            let stream = match options.streams.as_ref().and_then(|s| s.get(index)) {
                Some(name) if name == "stderr" => OutputStream::Stderr,
                Some(_) => OutputStream::Stdout,
                None if index % 2 == 0 => OutputStream::Stdout,
                None => OutputStream::Stderr,
            };
            sink.execution_log(stream, chunk).await;
            if options.trickle == Some(true) {
                sink.delivered().await;
            }
            sent += 1;
        }
        if let Some(handed_over) = &options.on_handed_over {
            let _ = handed_over.call((), ThreadsafeFunctionCallMode::NonBlocking);
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

/// What the two ways of reading a hook's params make of `params` (see [`crate::js_params`]):
/// the reader's tree (`None` where it leaves them to the text path) and the text path's
/// (`JSON.stringify`, then serde_json), each as JSON text, or the text path's error.
#[napi(object, object_from_js = false)]
pub struct DebugParamsRead {
    pub walked: Option<String>,
    pub parsed: Option<String>,
    pub parse_error: Option<String>,
}

/// Reads `params` both ways, so a test can hold the reader to the text path's result.
#[napi(ts_args_type = "params: unknown")]
pub fn debug_read_params(
    env: &napi::Env,
    params: napi::bindgen_prelude::Unknown<'_>,
) -> napi::Result<DebugParamsRead> {
    use napi::bindgen_prelude::{Function, JsObjectValue, JsValue, Object};
    let walked = crate::js_params::PlainParams::new(env)?
        .read(env, params.raw())
        .map(|tree| tree.to_string());
    let json: Object<'_> = env.get_global()?.get_named_property_unchecked("JSON")?;
    let stringify: Function<'_, napi::sys::napi_value, String> =
        json.get_named_property_unchecked("stringify")?;
    let (parsed, parse_error) = match stringify.call(params.raw()) {
        Ok(text) => match crate::outcome::parse_params(&text) {
            Ok(tree) => (Some(tree.to_string()), None),
            Err(failed) => (None, Some(failed.message)),
        },
        Err(thrown) => (None, Some(thrown.reason)),
    };
    Ok(DebugParamsRead {
        walked,
        parsed,
        parse_error,
    })
}

/// An execute outcome `{value: {stdout}}` with `bytes` ASCII characters of stdout, through the
/// same conversion a real execute's result takes ([`crate::outcome::ExecuteOutcome`]), so a
/// test can watch what V8 does with a series of large results.
#[napi(ts_return_type = "{ value: { stdout: string } } | string")]
pub fn debug_large_execute_outcome(bytes: u32) -> crate::outcome::ExecuteOutcome {
    let stdout = "a".repeat(bytes as usize);
    crate::outcome::ExecuteOutcome(crate::outcome::Outcome::value(
        serde_json::json!({ "stdout": stdout }),
    ))
}
