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
        let (provider, sink) = (Arc::clone(&self.provider), self.host.for_call(None));
        guard::run(async move { provider.probe(&params, &sink).await.into() }).await
    }

    /// `onEnvironmentAcquireLease`.
    #[napi]
    pub async fn acquire_lease(&self, params: Value) -> Outcome {
        let (provider, sink) = (Arc::clone(&self.provider), self.host.for_call(None));
        guard::run(async move { provider.acquire_lease(&params, &sink).await.into() }).await
    }

    /// `onEnvironmentResumeLease`.
    #[napi]
    pub async fn resume_lease(&self, params: Value) -> Outcome {
        let (provider, sink) = (Arc::clone(&self.provider), self.host.for_call(None));
        guard::run(async move { provider.resume_lease(&params, &sink).await.into() }).await
    }

    /// `onEnvironmentReleaseLease`: resolves with nothing, as v0.3.0 does.
    #[napi]
    pub async fn release_lease(&self, params: Value) -> Outcome {
        let (provider, sink) = (Arc::clone(&self.provider), self.host.for_call(None));
        guard::run(async move { provider.release_lease(&params, &sink).await.into() }).await
    }

    /// `onEnvironmentDestroyLease`: resolves with nothing, as v0.3.0 does.
    #[napi]
    pub async fn destroy_lease(&self, params: Value) -> Outcome {
        let (provider, sink) = (Arc::clone(&self.provider), self.host.for_call(None));
        guard::run(async move { provider.destroy_lease(&params, &sink).await.into() }).await
    }

    /// `onEnvironmentRealizeWorkspace`.
    #[napi]
    pub async fn realize_workspace(&self, params: Value) -> Outcome {
        let (provider, sink) = (Arc::clone(&self.provider), self.host.for_call(None));
        guard::run(async move { provider.realize_workspace(&params, &sink).await.into() }).await
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
        let (provider, sink) = (
            Arc::clone(&self.provider),
            self.host.for_call(Some(on_output)),
        );
        guard::run(async move { provider.execute(&params, &sink).await.into() }).await
    }

    /// `onShutdown`: stops in-flight work within the host's grace period.
    #[napi]
    pub async fn shutdown(&self) -> Outcome {
        let provider = Arc::clone(&self.provider);
        guard::run(async move { provider.shutdown().await.into() }).await
    }
}
