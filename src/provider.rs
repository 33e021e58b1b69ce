//! `NativeProvider`: the one napi class over a provider's hook table ([`Provider`]).
//!
//! A factory per provider builds it; `hooks()` says which hooks it implements (plugin-kit builds
//! the `definePlugin` definition from that list), `call(hook, params)` runs one of them, and
//! `execute(params, log)` runs the execute hook with the call's bound `ctx.execution.log`.
//!
//! Small plain params are read from the JS value in one string ([`crate::js_params`]) when the
//! provider's params carry long strings; any others cross as JSON text (see
//! [`crate::outcome`]): `JSON.stringify` runs here, on the JS thread, so that params too deep
//! for it (its stack runs out) become the catalogued [`PARAMS_TOO_DEEP`] failure instead of
//! V8's `RangeError`. The provider keeps a reference to that function from its construction:
//! looking `JSON.stringify` up on the global object on every call (the global, two property
//! reads by name) cost about as much as the call itself for small params. The parse and the
//! hook run on the tokio runtime, never blocking the JS thread, except for the synchronous
//! hooks (health and config validation: computation only), which run to their end on the JS
//! thread.

use std::sync::{Arc, OnceLock};

use napi::bindgen_prelude::{
    Either, Either3, Function, FunctionRef, JsObjectValue, JsValue, Object, PromiseRaw, This,
    Unknown,
};
use napi::{Env, ValueType, sys};
use napi_derive::napi;
use sandbox_core::hook::{PARAMS_TOO_DEEP, poll_once};
use sandbox_core::{Hook, HostSink, Provider, ProviderError};
use serde_json::Value;

use crate::execution_log::ExecutionLogCallback;
use crate::guard;
use crate::host::{HostCallbacks, JsHost};
use crate::js_params::PlainParams;
use crate::js_text::{HookName, JsText, RawValue, Utf8Text};
use crate::outcome::{ExecuteOutcome, Outcome, parse_params};

/// Every hook resolves with its outcome, `{value?, error?}`, as JSON text (an execute result
/// holding a large string, and a synchronous result with strings held beside its text: as an
/// object; see `outcome.rs`); plugin-kit's `settle` unwraps it.
#[napi]
pub struct NativeProvider {
    provider: Arc<dyn Provider>,
    host: Arc<JsHost>,
    /// This env's `JSON.stringify` and `JSON.parse`, taken once (see the module docs).
    stringify: FunctionRef<sys::napi_value, Utf8Text>,
    parse: FunctionRef<JsText, RawValue>,
    /// Set when the provider's params carry long strings ([`Provider::params_carry_long_strings`]);
    /// the reader is compiled by the first hook call with params, not at load.
    plain: Option<OnceLock<PlainParams>>,
}

#[napi]
impl NativeProvider {
    /// The CreateOS provider (`crates/createos`), reporting to `host`.
    #[napi(factory, catch_unwind)]
    pub fn createos(env: &Env, host: Option<HostCallbacks>) -> napi::Result<Self> {
        Self::with(env, Arc::new(createos::CreateOsProvider::new()), host)
    }

    /// The Kubernetes provider (`crates/kubernetes`), reporting to `host`.
    #[napi(factory, catch_unwind)]
    pub fn kubernetes(env: &Env, host: Option<HostCallbacks>) -> napi::Result<Self> {
        Self::with(env, Arc::new(kubernetes::KubernetesProvider::new()), host)
    }

    /// The `definePlugin` names of the hooks this provider implements (`onEnvironmentProbe`,
    /// ...): the methods the worker advertises, besides `setup` and `onShutdown`.
    #[napi(catch_unwind)]
    pub fn hooks(&self) -> Vec<String> {
        self.provider
            .hooks()
            .into_iter()
            .map(|hook| hook.js_name().to_owned())
            .collect()
    }

    /// `setup`: called once the worker has its ctx.
    #[napi(catch_unwind)]
    pub fn setup(&self) -> String {
        guard::sync(|| {
            self.provider.setup(&self.host.for_call(None));
            Outcome::nothing()
        })
        .into_json()
    }

    /// Runs the hook named `hook` (one of the names `hooks()` returns) with `params`: the
    /// outcome of a synchronous hook (health, config validation) at once, a promise of it for
    /// every other hook. plugin-kit calls the same through `hookCaller()`.
    #[napi(
        catch_unwind,
        ts_args_type = "hook: string, params: unknown",
        ts_return_type = "string | { value: unknown } | Promise<string>"
    )]
    pub fn call<'env>(
        &self,
        env: &'env Env,
        hook: HookName,
        params: Unknown<'env>,
    ) -> napi::Result<Either3<JsText, RawValue, PromiseRaw<'env, String>>> {
        self.dispatch(env, hook, params)
    }

    /// `call` as a plain function, `(hook, params) => outcome`, which keeps this provider
    /// alive while it lives and costs less per call (no napi-rs borrow bookkeeping: see
    /// `src/hook_caller.rs`): what plugin-kit calls for every hook but execute.
    #[napi(
        catch_unwind,
        ts_return_type = "(hook: string, params: unknown) => string | { value: unknown } | Promise<string>"
    )]
    pub fn hook_caller(&self, env: &Env, this: This) -> napi::Result<RawValue> {
        // SAFETY: `env` is the current env, on its JS thread (a method call); `this` is the
        // object napi-rs wrapped `self` in, so `self` stays where it is until that object is
        // collected, which the caller's strong reference to it prevents while the caller lives.
        unsafe { crate::hook_caller::create(env.raw(), self, this.object.raw()) }.map(RawValue)
    }

    /// `onEnvironmentExecute`. `on_output` is this call's `ctx.execution.log`, already bound to
    /// the hook's async context by plugin-kit; the result waits until every chunk of output has
    /// been handed to it.
    #[napi(
        catch_unwind,
        ts_args_type = "params: unknown, onOutput: (batch: string[]) => Promise<void> | undefined",
        ts_return_type = "Promise<string | { value: unknown }>"
    )]
    pub fn execute<'env>(
        &self,
        env: &'env Env,
        params: Unknown<'env>,
        on_output: ExecutionLogCallback,
    ) -> napi::Result<PromiseRaw<'env, ExecuteOutcome>> {
        let prepared = self.prepare(env, params)?;
        let provider = Arc::clone(&self.provider);
        let sink = Arc::new(self.host.for_call(Some(on_output)));
        env.spawn_future(async move {
            let outcome = guard::run(async move {
                let params = match prepared.and_then(Prepared::into_params) {
                    Ok(params) => params,
                    Err(failed) => return Outcome::error(failed),
                };
                let shared: Arc<dyn HostSink> = sink.clone();
                let outcome = match provider.call(Hook::Execute, &params, shared) {
                    Some(call) => call.await.into(),
                    None => not_implemented(Hook::Execute.js_name()),
                };
                sink.delivered().await;
                outcome
            })
            .await;
            Ok(ExecuteOutcome(outcome))
        })
    }

    /// `onShutdown`: stops in-flight work within the host's grace period.
    #[napi]
    pub async fn shutdown(&self) -> String {
        let provider = Arc::clone(&self.provider);
        guard::run(async move { provider.shutdown().await.into() })
            .await
            .into_json()
    }
}

impl NativeProvider {
    /// Runs the hook named `hook` (one of the names `hooks()` returns) with `params`.
    /// Session hooks (login PTY, duplex) keep the call's sink for as long as the session lives.
    /// A synchronous hook (health, config validation: `Hook::is_synchronous`) runs to its end
    /// here and returns its outcome itself: it is a few microseconds of computation, less than
    /// the promise and the two thread hops of the runtime path would cost. Every other hook
    /// runs on the tokio runtime and returns a promise.
    pub(crate) fn dispatch<'env>(
        &self,
        env: &'env Env,
        hook: HookName,
        params: Unknown<'env>,
    ) -> napi::Result<Either3<JsText, RawValue, PromiseRaw<'env, String>>> {
        let prepared = self.prepare(env, params)?;
        let known = hook.0.as_ref().ok().copied();
        let provider = Arc::clone(&self.provider);
        let sink: Arc<dyn HostSink> = Arc::new(self.host.for_call(None));
        let call = Box::pin(guard::run(async move {
            let params = match prepared.and_then(Prepared::into_params) {
                Ok(params) => params,
                Err(failed) => return Outcome::error(failed),
            };
            let hook = match hook.0 {
                Ok(hook) => hook,
                Err(name) => return not_implemented(&name),
            };
            match provider.call(hook, &params, sink) {
                Some(call) => call.await.into(),
                None => not_implemented(hook.js_name()),
            }
        }));
        let call = if known.is_some_and(Hook::is_synchronous) {
            match poll_once(call) {
                Ok(outcome) => {
                    return Ok(match outcome.into_js(env, &self.parse)? {
                        Either::A(text) => Either3::A(text),
                        Either::B(object) => Either3::B(object),
                    });
                }
                Err(pending) => pending,
            }
        } else {
            call
        };
        env.spawn_future(async move { Ok(call.await.into_json()) })
            .map(Either3::C)
    }

    fn with(
        env: &Env,
        provider: Arc<dyn Provider>,
        host: Option<HostCallbacks>,
    ) -> napi::Result<Self> {
        let json: Object<'_> = env.get_global()?.get_named_property_unchecked("JSON")?;
        let stringify: Function<'_, sys::napi_value, Utf8Text> =
            json.get_named_property_unchecked("stringify")?;
        let parse: Function<'_, JsText, RawValue> = json.get_named_property_unchecked("parse")?;
        let plain = provider.params_carry_long_strings().then(OnceLock::new);
        Ok(Self {
            provider,
            host: JsHost::new(host),
            stringify: stringify.create_ref()?,
            parse: parse.create_ref()?,
            plain,
        })
    }

    /// The params reader, compiled on first use. `None` for a provider without one, or when
    /// compiling it failed (never expected: the params then take the text path, as any others).
    fn plain_params(&self, env: &Env) -> Option<&PlainParams> {
        let cell = self.plain.as_ref()?;
        if cell.get().is_none() {
            let _ = cell.set(PlainParams::new(env).ok()?);
        }
        cell.get()
    }

    /// The params as the provider gets them (what serde_json parses from
    /// `JSON.stringify(params ?? null)`): read from the value when they are small plain data
    /// and the provider's params carry long strings, else as that text, or the failure for
    /// params nested too deeply for it. Any other failure
    /// of `JSON.stringify` (a `BigInt`, a cycle: impossible in params the host parsed from
    /// JSON) is rethrown as JavaScript threw it.
    fn prepare(
        &self,
        env: &Env,
        params: Unknown<'_>,
    ) -> napi::Result<Result<Prepared, ProviderError>> {
        if matches!(params.get_type()?, ValueType::Undefined | ValueType::Null) {
            return Ok(Ok(Prepared::Read(Value::Null)));
        }
        if let Some(read) = self
            .plain_params(env)
            .and_then(|plain| plain.read(env, params.raw()))
        {
            return Ok(Ok(Prepared::Read(read)));
        }
        match self.stringify.borrow_back(env)?.call(params.raw()) {
            Ok(text) => Ok(Ok(Prepared::Text(text.0))),
            // V8's stack overflow (`RangeError: Maximum call stack size exceeded`).
            Err(error) if error.reason.starts_with("RangeError") => {
                Ok(Err(ProviderError::new(PARAMS_TOO_DEEP)))
            }
            Err(error) => Err(error),
        }
    }
}

/// A hook's params on their way to the provider: read from the JS value already, or JSON text
/// still to be parsed (off the JS thread, for a hook that runs on the runtime).
enum Prepared {
    Read(Value),
    Text(String),
}

impl Prepared {
    fn into_params(self) -> Result<Value, ProviderError> {
        match self {
            Prepared::Read(params) => Ok(params),
            Prepared::Text(text) => parse_params(&text),
        }
    }
}

/// A hook this provider does not advertise: plugin-kit only forwards advertised hooks, so this
/// is a bug in the caller, reported as one.
fn not_implemented(hook: &str) -> Outcome {
    Outcome::error(ProviderError::new(format!(
        "paperclip-sandbox-native internal error: {hook} has no native implementation"
    )))
}
