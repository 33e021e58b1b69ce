//! `KubernetesProvider`: the napi face of `crates/kubernetes`. Each method forwards one hook.

use std::sync::Arc;

use napi_derive::napi;

use crate::execution_log::ExecutionLogCallback;
use crate::guard;
use crate::host::{HostCallbacks, JsHost};
use crate::outcome::{ExecuteOutcome, Outcome};

/// Every hook method takes the hook's params as JSON text and returns its outcome,
/// `{value?, error?}`, as JSON text (see `outcome.rs`); plugin-kit does both conversions.
#[napi(js_name = "KubernetesProvider")]
pub struct JsKubernetesProvider {
    provider: Arc<kubernetes::KubernetesProvider>,
    host: Arc<JsHost>,
}

#[napi]
impl JsKubernetesProvider {
    #[napi(constructor)]
    pub fn new(host: Option<HostCallbacks>) -> Self {
        Self {
            provider: Arc::new(kubernetes::KubernetesProvider::new()),
            host: JsHost::new(host),
        }
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

    /// `onHealth`.
    #[napi(catch_unwind)]
    pub fn health(&self) -> String {
        guard::sync(|| Outcome::value(self.provider.health())).into_json()
    }

    /// `onEnvironmentValidateConfig`: synchronous, it never touches a cluster.
    #[napi(catch_unwind)]
    pub fn validate_config(&self, params: String) -> String {
        let params = match crate::outcome::parse_params(&params) {
            Ok(params) => params,
            Err(failed) => return failed,
        };
        guard::sync(|| self.provider.validate_config(&params).into()).into_json()
    }

    /// `onEnvironmentProbe`.
    #[napi]
    pub async fn probe(&self, params: String) -> String {
        crate::forward_hook!(self, probe, params)
    }

    /// `onEnvironmentAcquireLease`.
    #[napi]
    pub async fn acquire_lease(&self, params: String) -> String {
        crate::forward_hook!(self, acquire_lease, params)
    }

    /// `onEnvironmentResumeLease`.
    #[napi]
    pub async fn resume_lease(&self, params: String) -> String {
        crate::forward_hook!(self, resume_lease, params)
    }

    /// `onEnvironmentReleaseLease`.
    #[napi]
    pub async fn release_lease(&self, params: String) -> String {
        crate::forward_hook!(self, release_lease, params)
    }

    /// `onEnvironmentDestroyLease`.
    #[napi]
    pub async fn destroy_lease(&self, params: String) -> String {
        crate::forward_hook!(self, destroy_lease, params)
    }

    /// `onEnvironmentRealizeWorkspace`.
    #[napi]
    pub async fn realize_workspace(&self, params: String) -> String {
        crate::forward_hook!(self, realize_workspace, params)
    }

    /// `onEnvironmentExecute`. `on_output` is this call's `ctx.execution.log`, already bound to
    /// the hook's async context by the worker.
    #[napi(ts_return_type = "Promise<string | { value: unknown }>")]
    pub async fn execute(
        &self,
        params: String,
        #[napi(ts_arg_type = "(batch: string[]) => Promise<void> | undefined")]
        on_output: ExecutionLogCallback,
    ) -> ExecuteOutcome {
        crate::forward_hook!(execute self, params, on_output)
    }

    /// `onEnvironmentSyncIn`: host files into the Sandbox pod (sandbox-cr backend).
    #[napi]
    pub async fn sync_in(&self, params: String) -> String {
        crate::forward_hook!(self, sync_in, params)
    }

    /// `onEnvironmentSyncOut`: pod files back to the host.
    #[napi]
    pub async fn sync_out(&self, params: String) -> String {
        crate::forward_hook!(self, sync_out, params)
    }

    /// `onLoginPtyOpen`: starts the login terminal; output and exit reach `ctx.loginPty`.
    #[napi]
    pub async fn login_pty_open(&self, params: String) -> String {
        crate::forward_hook!(session self, login_pty_open, params)
    }

    /// `onLoginPtyInput`.
    #[napi]
    pub async fn login_pty_input(&self, params: String) -> String {
        crate::forward_hook!(self, login_pty_input, params)
    }

    /// `onLoginPtyStop`.
    #[napi]
    pub async fn login_pty_stop(&self, params: String) -> String {
        crate::forward_hook!(self, login_pty_stop, params)
    }

    /// `onLoginPtyClose`.
    #[napi]
    pub async fn login_pty_close(&self, params: String) -> String {
        crate::forward_hook!(self, login_pty_close, params)
    }

    /// `onShutdown`.
    #[napi]
    pub async fn shutdown(&self) -> String {
        let params = String::from("null");
        crate::forward_hook!(self, shutdown, params)
    }
}
