//! `NativeProvider`: the one napi class, a provider as JavaScript holds it.
//!
//! A factory per provider builds it; `hooks()` describes the hooks it implements (from the hook
//! table: each one's name, whether it runs synchronously, streams output, takes params), from
//! which plugin-kit builds the `definePlugin` definition; `hookCaller()` is the one way to call
//! a hook ([`crate::bridge`]); `setup()` and `shutdown()` are the two calls every plugin has.

use std::sync::Arc;

use napi::Env;
use napi_derive::napi;

use crate::bridge::Bridge;
use crate::bridge::strings::RawValue;
use crate::host::{HostCallbacks, JsHost};

/// A provider: every call answers with its outcome object, `{value}`, `{error}` or `{}`, or a
/// promise of one; plugin-kit's `settle` unwraps it.
#[napi]
pub struct NativeProvider {
    bridge: Arc<Bridge>,
}

/// What the hook table says of one hook a provider implements.
#[napi(object, object_from_js = false)]
pub struct HookDescription {
    /// The `definePlugin` method name (`onEnvironmentAcquireLease`, ...).
    pub name: String,
    /// Runs to its end on the JS thread (computation only): the call answers at once.
    pub synchronous: bool,
    /// Streams output while it runs: called with the call's bound `ctx.execution.log`.
    pub streams_output: bool,
    /// The host passes it params.
    pub takes_params: bool,
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

    /// The hooks this provider implements (besides `setup` and `onShutdown`), in the table's
    /// order: the methods the worker advertises.
    #[napi(catch_unwind)]
    pub fn hooks(&self) -> Vec<HookDescription> {
        self.bridge
            .hooks()
            .into_iter()
            .map(|hook| HookDescription {
                name: hook.js_name().to_owned(),
                synchronous: hook.is_synchronous(),
                streams_output: hook.streams_output(),
                takes_params: hook.takes_params(),
            })
            .collect()
    }

    /// `callHook(hook, params, onOutput?)`: runs the hook named `hook` (a name `hooks()` gives)
    /// with `params`; `onOutput` is the call's bound `ctx.execution.log` for a hook that streams
    /// output. Answers the outcome of a synchronous hook at once, a promise of it for any other.
    /// The function keeps this provider alive while it lives.
    #[napi(
        catch_unwind,
        ts_return_type = "(hook: string, params?: unknown, onOutput?: (batch: string[]) => Promise<void> | undefined) => { value?: unknown; error?: { message: string; name: string; code?: number } } | Promise<{ value?: unknown; error?: { message: string; name: string; code?: number } }>"
    )]
    pub fn hook_caller(&self, env: &Env) -> napi::Result<RawValue> {
        crate::bridge::caller::create(env, Arc::clone(&self.bridge))
    }

    /// `setup`: called once the worker has its ctx.
    #[napi(
        catch_unwind,
        ts_return_type = "{ value?: unknown; error?: { message: string; name: string; code?: number } }"
    )]
    pub fn setup(&self, env: &Env) -> napi::Result<RawValue> {
        self.bridge.setup(env).map(RawValue)
    }

    /// `onShutdown`: stops in-flight work within the host's grace period.
    #[napi(
        catch_unwind,
        ts_return_type = "Promise<{ value?: unknown; error?: { message: string; name: string; code?: number } }>"
    )]
    pub fn shutdown(&self, env: &Env) -> napi::Result<RawValue> {
        self.bridge.shutdown(env).map(RawValue)
    }
}

impl NativeProvider {
    fn with(
        env: &Env,
        provider: Arc<dyn sandbox_core::Provider>,
        host: Option<HostCallbacks>,
    ) -> napi::Result<Self> {
        Ok(Self {
            bridge: Arc::new(Bridge::new(env, provider, JsHost::new(host))?),
        })
    }
}
