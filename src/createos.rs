//! `CreateOsProvider`: the napi face of `crates/createos`. Each method forwards one hook.

use std::sync::Arc;

use napi_derive::napi;

use crate::execution_log::ExecutionLogCallback;
use crate::guard;
use crate::host::{HostCallbacks, JsHost};
use crate::outcome::{ExecuteOutcome, Outcome};

/// Every hook method takes the hook's params as JSON text and returns its outcome,
/// `{value?, error?}`, as JSON text (see `outcome.rs`); plugin-kit does both conversions.
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

    /// `onEnvironmentValidateConfig`: synchronous, it never touches the network.
    #[napi(catch_unwind)]
    pub fn validate_config(&self, params: String) -> String {
        let params = match crate::outcome::parse_params(&params) {
            Ok(params) => params,
            Err(failed) => return failed,
        };
        guard::sync(|| Outcome::value(self.provider.validate_config(&params))).into_json()
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

    /// `onEnvironmentReleaseLease`: resolves with nothing, as v0.3.0 does.
    #[napi]
    pub async fn release_lease(&self, params: String) -> String {
        crate::forward_hook!(self, release_lease, params)
    }

    /// `onEnvironmentDestroyLease`: resolves with nothing, as v0.3.0 does.
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

    /// `onEnvironmentSyncIn`: host files into the sandbox workspace.
    #[napi]
    pub async fn sync_in(&self, params: String) -> String {
        crate::forward_hook!(self, sync_in, params)
    }

    /// `onEnvironmentSyncOut`: sandbox files back to the host.
    #[napi]
    pub async fn sync_out(&self, params: String) -> String {
        crate::forward_hook!(self, sync_out, params)
    }

    /// `onEnvironmentStartInteractiveSetup`.
    #[napi]
    pub async fn start_interactive_setup(&self, params: String) -> String {
        crate::forward_hook!(self, start_interactive_setup, params)
    }

    /// `onEnvironmentGetInteractiveSetup`.
    #[napi]
    pub async fn get_interactive_setup(&self, params: String) -> String {
        crate::forward_hook!(self, get_interactive_setup, params)
    }

    /// `onEnvironmentCancelInteractiveSetup`.
    #[napi]
    pub async fn cancel_interactive_setup(&self, params: String) -> String {
        crate::forward_hook!(self, cancel_interactive_setup, params)
    }

    /// `onEnvironmentCaptureTemplate`.
    #[napi]
    pub async fn capture_template(&self, params: String) -> String {
        crate::forward_hook!(self, capture_template, params)
    }

    /// `onEnvironmentDeleteTemplate`.
    #[napi]
    pub async fn delete_template(&self, params: String) -> String {
        crate::forward_hook!(self, delete_template, params)
    }

    /// `onLoginPtyOpen`: starts the login terminal; output and exit reach `ctx.loginPty`.
    #[napi]
    pub async fn login_pty_open(&self, params: String) -> String {
        crate::forward_hook!(session self, login_pty_open, params)
    }

    /// `onLoginPtyInput`.
    #[napi]
    pub async fn login_pty_input(&self, params: String) -> String {
        crate::forward_hook!(no_sink self, login_pty_input, params)
    }

    /// `onLoginPtyStop`.
    #[napi]
    pub async fn login_pty_stop(&self, params: String) -> String {
        crate::forward_hook!(no_sink self, login_pty_stop, params)
    }

    /// `onLoginPtyClose`.
    #[napi]
    pub async fn login_pty_close(&self, params: String) -> String {
        crate::forward_hook!(no_sink self, login_pty_close, params)
    }

    /// `onDuplexChannelOpen`: starts the command; bytes and exit reach `ctx.duplexChannel`.
    #[napi]
    pub async fn duplex_channel_open(&self, params: String) -> String {
        crate::forward_hook!(session self, duplex_channel_open, params)
    }

    /// `onDuplexChannelWrite`.
    #[napi]
    pub async fn duplex_channel_write(&self, params: String) -> String {
        crate::forward_hook!(no_sink self, duplex_channel_write, params)
    }

    /// `onDuplexChannelStop`.
    #[napi]
    pub async fn duplex_channel_stop(&self, params: String) -> String {
        crate::forward_hook!(no_sink self, duplex_channel_stop, params)
    }

    /// `onDuplexChannelClose`.
    #[napi]
    pub async fn duplex_channel_close(&self, params: String) -> String {
        crate::forward_hook!(no_sink self, duplex_channel_close, params)
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
