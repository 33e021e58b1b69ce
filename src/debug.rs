//! Test-only entry points that exercise the bridge itself: streaming from a Rust task into a
//! bound `ctx.execution.log`, panics on both kinds of call, the two ways of reading params, and
//! large execute results. They do nothing a user can
//! observe outside of tests, so they ship in the addon (one binary for tests and production).

use napi::bindgen_prelude::{FnArgs, Function, JsObjectValue, JsValue, Object, Unknown};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{Env, Status};
use napi_derive::napi;
use sandbox_core::{HostSink, OutputStream};

use crate::bridge::outcome::Outcome;
use crate::bridge::params::{self, Params};
use crate::bridge::strings::RawValue;
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

/// An outcome as plugin-kit receives one ([`Outcome::into_js`]), with this env's `JSON.parse`
/// looked up afresh (the bridge keeps its own).
fn outcome_object(env: &Env, outcome: Outcome) -> napi::Result<RawValue> {
    let json: Object<'_> = env.get_global()?.get_named_property_unchecked("JSON")?;
    let parse: Function<'_, RawValue, RawValue> = json.get_named_property_unchecked("parse")?;
    outcome.into_js(env, &parse.create_ref()?)
}

/// Panics inside an async call: the promise must resolve with a failed outcome, the worker must
/// live on.
#[napi(ts_return_type = "Promise<{ error?: { message: string } }>")]
pub fn debug_panic_async(env: &Env, message: String) -> napi::Result<RawValue> {
    let promise = env.spawn_future_with_callback(
        async move { Ok(guard::run(async move { panic!("{message}") }).await) },
        outcome_object,
    )?;
    Ok(RawValue(promise.raw()))
}

/// Panics inside a sync call: the guard turns it into a failed outcome.
#[napi(catch_unwind, ts_return_type = "{ error?: { message: string } }")]
pub fn debug_panic_sync(env: &Env, message: String) -> napi::Result<RawValue> {
    outcome_object(env, guard::sync(|| panic!("{message}")))
}

/// What the two routes of reading a hook's params make of `params` (see
/// [`crate::bridge::params`]): the reader's form (`None` where it hands the params over as
/// text) and the text route (`JSON.stringify`, then serde_json), each as JSON text, or the text
/// route's failure.
#[napi(object, object_from_js = false)]
pub struct DebugParamsRead {
    /// How a hook call hands these params over: `form`, `text`, or `none` (too deep, or no
    /// value).
    pub route: String,
    pub walked: Option<String>,
    pub parsed: Option<String>,
    pub parse_error: Option<String>,
}

/// Reads `params` both ways, so a test can hold the reader's form (written here whether or not
/// the params hold a long string) to the text route's result.
#[napi(ts_args_type = "params: unknown")]
pub fn debug_read_params(env: &Env, params: Unknown<'_>) -> napi::Result<DebugParamsRead> {
    let read: Function<'_, FnArgs<(RawValue, bool)>, RawValue> =
        crate::bridge::caller::js_half(env)?.get_named_property_unchecked("read")?;
    let route = match read.call(FnArgs::from((RawValue(params.raw()), false))) {
        Ok(handed) if is_form(env, handed.0) => "form",
        Ok(handed) if is_string(env, handed.0) => "text",
        Ok(_) => "none",
        Err(_) => "thrown",
    };
    // The form whenever it can carry the params, long strings or not.
    let walked = match read.call(FnArgs::from((RawValue(params.raw()), true))) {
        Ok(handed) => match params::from_js(env, handed.0)? {
            Ok(Params::Read(tree)) if is_form(env, handed.0) => Some(tree.to_string()),
            _ => None,
        },
        // What JSON.stringify threw (a BigInt): the text route below meets it again.
        Err(_) => None,
    };
    let json: Object<'_> = env.get_global()?.get_named_property_unchecked("JSON")?;
    let stringify: Function<'_, napi::sys::napi_value, String> =
        json.get_named_property_unchecked("stringify")?;
    let (parsed, parse_error) = match stringify.call(params.raw()) {
        Ok(text) => match Params::Text(text).into_value() {
            Ok(tree) => (Some(tree.to_string()), None),
            Err(failed) => (None, Some(failed.message)),
        },
        Err(thrown) => (None, Some(thrown.reason)),
    };
    Ok(DebugParamsRead {
        route: route.to_owned(),
        walked,
        parsed,
        parse_error,
    })
}

/// Whether the reader answered in its form (a string starting with `~`), not with text.
fn is_form(env: &Env, handed: napi::sys::napi_value) -> bool {
    handed_text(env, handed).is_some_and(|text| text.starts_with('~'))
}

/// Whether the reader answered a string at all.
fn is_string(env: &Env, handed: napi::sys::napi_value) -> bool {
    handed_text(env, handed).is_some()
}

fn handed_text(env: &Env, handed: napi::sys::napi_value) -> Option<String> {
    // SAFETY: `handed` is a live handle of this env, on its JS thread (this call's scope).
    unsafe { <String as napi::bindgen_prelude::FromNapiValue>::from_napi_value(env.raw(), handed) }
        .ok()
}

/// An execute outcome `{value: {stdout}}` with `bytes` ASCII characters of stdout, through the
/// same conversion a real execute's result takes ([`Outcome::into_js`]), so a test can watch
/// what V8 does with a series of large results.
#[napi(ts_return_type = "{ value: { stdout: string } }")]
pub fn debug_large_execute_outcome(env: &Env, bytes: u32) -> napi::Result<RawValue> {
    let stdout = "a".repeat(bytes as usize);
    outcome_object(env, Outcome::value(serde_json::json!({ "stdout": stdout })))
}
