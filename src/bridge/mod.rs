//! The bridge between JavaScript and a provider: one way in, one way out.
//!
//! Every hook call takes the same route. plugin-kit calls the provider's hook caller
//! ([`caller`]: `callHook(hook, params, onOutput?)`), whose JS half hands the params over as one
//! string and whose native half calls [`Bridge::call`], which
//! 1. reads the params into a `serde_json::Value` ([`params`]),
//! 2. runs the provider's hook ([`sandbox_core::Provider::call`]) with a host sink for the call
//!    (its bound `ctx.execution.log` when the hook streams output), under the panic guard, and
//! 3. hands back the outcome, which reaches plugin-kit as one JS object, `{value}`, `{error}`
//!    or `{}` ([`outcome`]).
//!
//! A synchronous hook ([`Hook::is_synchronous`]: health, config validation, computation only)
//! runs to its end on the JS thread and the object is returned at once: a few microseconds of
//! work, less than a promise and two thread hops would cost. Every other hook runs on the tokio
//! runtime, never blocking the JS thread, and the call returns a promise of the object.
//!
//! How params are read and how outcomes are written is decided in this module and nowhere
//! else: the provider crates take and give plain Rust values and never learn how they cross.
//! [`strings`] moves the texts across in one pass each way.

pub(crate) mod caller;
mod external;
mod json_text;
pub mod outcome;
pub(crate) mod params;
pub(crate) mod strings;

use std::sync::Arc;

use napi::bindgen_prelude::{Function, FunctionRef, JsObjectValue, JsValue, Object};
use napi::{Env, sys};
use sandbox_core::hook::poll_once;
use sandbox_core::{Hook, HostSink, Provider, ProviderError};

use crate::execution_log::ExecutionLogCallback;
use crate::guard;
use crate::host::JsHost;
use outcome::Outcome;
use strings::{HookName, RawValue};

/// One provider as JavaScript reaches it: the provider, its host callbacks, and the JS
/// functions the bridge uses in its env.
pub(crate) struct Bridge {
    provider: Arc<dyn Provider>,
    host: Arc<JsHost>,
    js: Arc<JsFunctions>,
}

/// This env's `JSON.parse`, taken once (looking it up on the global object each time, the global
/// and two property reads by name, cost about as much as a small call itself), for the outcomes
/// made into objects here: those that settle a promise and those holding long strings.
struct JsFunctions {
    parse: FunctionRef<RawValue, RawValue>,
}

impl Bridge {
    pub fn new(env: &Env, provider: Arc<dyn Provider>, host: Arc<JsHost>) -> napi::Result<Self> {
        let json: Object<'_> = env.get_global()?.get_named_property_unchecked("JSON")?;
        let parse: Function<'_, RawValue, RawValue> = json.get_named_property_unchecked("parse")?;
        Ok(Self {
            provider,
            host,
            js: Arc::new(JsFunctions {
                parse: parse.create_ref()?,
            }),
        })
    }

    /// The hooks the provider implements, in the table's order.
    pub fn hooks(&self) -> Vec<Hook> {
        self.provider.hooks()
    }

    /// Runs `hook` with the params `handed` over by the caller's JS half (see the module docs):
    /// a synchronous hook's outcome at once (its JSON text, which the JS half parses, or the
    /// object itself when it holds long strings), a promise of the object for any other. `log`
    /// is the call's bound `ctx.execution.log`, for a hook that streams output; the outcome
    /// waits until every chunk has been handed to it.
    pub fn call(
        &self,
        env: &Env,
        hook: HookName,
        handed: sys::napi_value,
        log: Option<ExecutionLogCallback>,
    ) -> napi::Result<sys::napi_value> {
        let read = params::from_js(env, handed)?;
        let known = hook.0.as_ref().ok().copied();
        let provider = Arc::clone(&self.provider);
        let sink = Arc::new(self.host.for_call(log));
        let call = Box::pin(guard::run(async move {
            let params = match read.and_then(params::Params::into_value) {
                Ok(params) => params,
                Err(failed) => return Outcome::error(failed),
            };
            let hook = match hook.0 {
                Ok(hook) => hook,
                Err(name) => return not_implemented(&name),
            };
            let shared: Arc<dyn HostSink> = sink.clone();
            let outcome = match provider.call(hook, &params, shared) {
                Some(call) => call.await.into(),
                None => not_implemented(hook.js_name()),
            };
            sink.delivered().await;
            outcome
        }));
        let call = if known.is_some_and(Hook::is_synchronous) {
            match poll_once(call) {
                Ok(outcome) => return Ok(outcome.write().into_text_or_js(env, &self.js.parse)?.0),
                // Did not complete on its first poll: it finishes on the runtime.
                Err(pending) => pending,
            }
        } else {
            call
        };
        self.settle_later(env, call)
    }

    /// `setup`: called once the worker has its ctx.
    pub fn setup(&self, env: &Env) -> napi::Result<sys::napi_value> {
        let outcome = guard::sync(|| {
            self.provider.setup(&self.host.for_call(None));
            Outcome::nothing()
        });
        Ok(outcome.into_js(env, &self.js.parse)?.0)
    }

    /// `onShutdown`: stops in-flight work within the host's grace period.
    pub fn shutdown(&self, env: &Env) -> napi::Result<sys::napi_value> {
        let provider = Arc::clone(&self.provider);
        self.settle_later(
            env,
            Box::pin(guard::run(async move { provider.shutdown().await.into() })),
        )
    }

    /// A promise of `call`'s outcome object, run on the runtime and made into the object on the
    /// JS thread when it settles.
    fn settle_later(
        &self,
        env: &Env,
        call: futures::future::BoxFuture<'static, Outcome>,
    ) -> napi::Result<sys::napi_value> {
        let js = Arc::clone(&self.js);
        let promise = env
            .spawn_future_with_callback(async move { Ok(call.await) }, move |env, outcome| {
                outcome.into_js(env, &js.parse)
            })?;
        Ok(promise.raw())
    }
}

/// A hook this provider does not advertise: plugin-kit only forwards advertised hooks, so this
/// is a bug in the caller, reported as one.
fn not_implemented(hook: &str) -> Outcome {
    Outcome::error(ProviderError::new(format!(
        "paperclip-sandbox-native internal error: {hook} has no native implementation"
    )))
}
