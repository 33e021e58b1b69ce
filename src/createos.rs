//! `CreateOsProvider`: the napi face of `crates/createos`. Each method forwards one hook.

use std::sync::Arc;

use napi::Status;
use napi::bindgen_prelude::FnArgs;
use napi::threadsafe_function::ThreadsafeFunction;
use napi_derive::napi;
use serde_json::Value;

use crate::guard;
use crate::host::{HostCallbacks, JsHost};
use crate::outcome::Outcome;

#[napi(js_name = "CreateOsProvider")]
pub struct JsCreateOsProvider {
    provider: Arc<createos::CreateOsProvider>,
    host: Arc<JsHost>,
}

#[napi]
impl JsCreateOsProvider {
    #[napi(constructor)]
    pub fn new(host: Option<HostCallbacks>) -> Self {
        Self {
            provider: Arc::new(createos::CreateOsProvider::new()),
            host: JsHost::new(host),
        }
    }

    /// `setup`: called once the worker has its ctx.
    #[napi(catch_unwind)]
    pub fn setup(&self) -> Outcome {
        guard::sync(|| {
            self.provider.setup(&self.host.for_call(None));
            Outcome::nothing()
        })
    }

    /// `onHealth`.
    #[napi(catch_unwind)]
    pub fn health(&self) -> Outcome {
        guard::sync(|| Outcome::value(self.provider.health()))
    }

    /// `onEnvironmentValidateConfig`: synchronous, it never touches the network.
    #[napi(catch_unwind)]
    pub fn validate_config(&self, params: Value) -> Outcome {
        guard::sync(|| Outcome::value(self.provider.validate_config(&params)))
    }

    /// `onEnvironmentProbe`.
    #[napi]
    pub async fn probe(&self, params: Value) -> Outcome {
        crate::forward_hook!(self, probe, params)
    }

    /// `onEnvironmentAcquireLease`.
    #[napi]
    pub async fn acquire_lease(&self, params: Value) -> Outcome {
        crate::forward_hook!(self, acquire_lease, params)
    }

    /// `onEnvironmentResumeLease`.
    #[napi]
    pub async fn resume_lease(&self, params: Value) -> Outcome {
        crate::forward_hook!(self, resume_lease, params)
    }

    /// `onEnvironmentReleaseLease`: resolves with nothing, as v0.3.0 does.
    #[napi]
    pub async fn release_lease(&self, params: Value) -> Outcome {
        crate::forward_hook!(self, release_lease, params)
    }

    /// `onEnvironmentDestroyLease`: resolves with nothing, as v0.3.0 does.
    #[napi]
    pub async fn destroy_lease(&self, params: Value) -> Outcome {
        crate::forward_hook!(self, destroy_lease, params)
    }

    /// `onEnvironmentRealizeWorkspace`.
    #[napi]
    pub async fn realize_workspace(&self, params: Value) -> Outcome {
        crate::forward_hook!(self, realize_workspace, params)
    }

    /// `onEnvironmentExecute`. `on_output` is this call's `ctx.execution.log`, already bound to
    /// the hook's async context by the worker.
    #[allow(clippy::type_complexity)] // spelled out for the .d.ts generator
    #[napi]
    pub async fn execute(
        &self,
        params: Value,
        on_output: ThreadsafeFunction<
            FnArgs<(String, String)>,
            (),
            FnArgs<(String, String)>,
            Status,
            false,
        >,
    ) -> Outcome {
        crate::forward_hook!(self, execute, params, Some(on_output))
    }

    /// `onShutdown`: stops in-flight work within the host's grace period.
    #[napi]
    pub async fn shutdown(&self) -> Outcome {
        let provider = Arc::clone(&self.provider);
        guard::run(async move { provider.shutdown().await.into() }).await
    }
}
