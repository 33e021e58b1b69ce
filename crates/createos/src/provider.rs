//! The hook surface of the CreateOS provider.
//!
//! Every hook takes the JSON params the host sent and a [`HostSink`] for what it reports while
//! it runs. Failures carry exactly the catalogued message. The [`Provider`] impl at the end is
//! the provider's hook table: the hooks it implements, each with the method it forwards to.

use std::sync::Arc;

use sandbox_core::hook::{healthy, resolves, resolves_maybe};
use sandbox_core::{
    Hook, HookFuture, HookValue, HostSink, Provider, ProviderError, ProviderResult,
};
use serde_json::{Value, json};

use crate::client::{Clients, HostApiKey};
use crate::config;
use crate::exec::execute_command;
use crate::lease::state::{CWD, SessionEntry, WorkerState, metadata_matches};
use crate::lease::{acquire, probe, release, resume};
use crate::messages;
use crate::pacer::Pacer;
use crate::params::lease_of;
use js_compat::value;

/// How a provider reaches the API. The defaults are the production ones.
#[derive(Debug, Clone)]
pub struct ProviderOptions {
    /// Request spacing per API origin; [`Pacer::global`] (300 ms, shared by the process) unless
    /// a test supplies its own.
    pub pacer: Arc<Pacer>,
    /// Where the official endpoint's fallback key comes from.
    pub host_api_key: HostApiKey,
}

impl Default for ProviderOptions {
    fn default() -> Self {
        Self {
            pacer: Pacer::global(),
            host_api_key: HostApiKey::Environment,
        }
    }
}

/// One provider instance per worker process: it owns the in-worker state of the original plugin.
#[derive(Debug)]
pub struct CreateOsProvider {
    clients: Clients,
    state: WorkerState,
}

impl Default for CreateOsProvider {
    fn default() -> Self {
        Self::new()
    }
}

impl CreateOsProvider {
    pub fn new() -> Self {
        Self::with_options(ProviderOptions::default())
    }

    pub fn with_options(options: ProviderOptions) -> Self {
        Self {
            clients: Clients::new(options.pacer, options.host_api_key),
            state: WorkerState::default(),
        }
    }

    /// The in-worker state (sessions register here; release and shutdown close them).
    pub fn state(&self) -> &WorkerState {
        &self.state
    }

    /// The shared client factory (HTTP pool, pacer, key source), for the other hook families.
    pub fn clients(&self) -> &Clients {
        &self.clients
    }

    /// `setup`: the original announces itself on the host log.
    pub fn setup(&self, sink: &dyn HostSink) {
        sink.log(
            sandbox_core::LogLevel::Info,
            "CreateOS sandbox provider ready",
        );
    }

    /// `onHealth`: no network; connectivity is what a probe is for.
    pub fn health(&self) -> HookValue {
        healthy("CreateOS provider loaded; probe an environment to check connectivity.")
    }

    /// `onEnvironmentValidateConfig`: parse only, no network and no key resolution.
    pub fn validate_config(&self, params: &Value) -> HookValue {
        config::validate_config_params(params)
    }

    /// `onEnvironmentProbe`: `{ok, summary}`; rejects only when deleting the probe sandbox fails
    /// (and then logs a warning naming it).
    /// Shutdown stops it; its sandbox is deleted all the same.
    pub async fn probe(&self, params: &Value, sink: &dyn HostSink) -> ProviderResult<Value> {
        let _running = self.state.begin_acquisition()?;
        probe::probe(&self.clients, params, self.state.stop_signal(), sink).await
    }

    /// `onEnvironmentAcquireLease`: `{providerLeaseId, metadata}`, cached for sessions.
    pub async fn acquire_lease(
        &self,
        params: &Value,
        _sink: &dyn HostSink,
    ) -> ProviderResult<Value> {
        // Shutdown stops it and waits until what it created is deleted.
        let _running = self.state.begin_acquisition()?;
        let lease = acquire::acquire(&self.clients, params, self.state.stop_signal()).await?;
        if let Some(id) = lease.get("providerLeaseId").and_then(Value::as_str) {
            self.state.register_lease(params, id)?;
        }
        Ok(lease)
    }

    /// `onEnvironmentResumeLease`: the lease with `resumedLease: true`, or
    /// `{providerLeaseId: null, metadata: {expired: true}}`.
    pub async fn resume_lease(
        &self,
        params: &Value,
        _sink: &dyn HostSink,
    ) -> ProviderResult<Value> {
        resume::resume(&self.state, &self.clients, params).await
    }

    /// `onEnvironmentReleaseLease`: keeps the sandbox warm or deletes it. Resolves with nothing
    /// (`Ok(None)`: the napi layer returns `undefined`).
    pub async fn release_lease(
        &self,
        params: &Value,
        _sink: &dyn HostSink,
    ) -> ProviderResult<Option<Value>> {
        release::release(&self.state, &self.clients, params, false).await
    }

    /// `onEnvironmentDestroyLease`: deletes the sandbox. Resolves with nothing.
    pub async fn destroy_lease(
        &self,
        params: &Value,
        _sink: &dyn HostSink,
    ) -> ProviderResult<Option<Value>> {
        release::release(&self.state, &self.clients, params, true).await
    }

    /// `onEnvironmentRealizeWorkspace`: the fixed workspace of the lease; no I/O. Only the lease
    /// metadata is checked, not the shape of the ID.
    pub async fn realize_workspace(
        &self,
        params: &Value,
        _sink: &dyn HostSink,
    ) -> ProviderResult<Value> {
        let lease = lease_of(params)?;
        if !value::truthy(lease.get("providerLeaseId"))
            || !metadata_matches(params, lease.get("metadata"))?
        {
            return Err(ProviderError::new(messages::WORKSPACE_LEASE_MISMATCH));
        }
        Ok(json!({ "cwd": CWD, "metadata": { "provider": "createos", "remoteCwd": CWD } }))
    }

    /// `onEnvironmentExecute`: streams the command's output to `sink.execution_log` as it
    /// arrives and returns `{exitCode, signal, timedOut, stdout, stderr, metadata}`.
    pub async fn execute(&self, params: &Value, sink: &dyn HostSink) -> ProviderResult<Value> {
        self.state
            .track(
                &self.clients,
                params,
                params.get("timeoutMs"),
                |client, signal| async move {
                    let outcome = execute_command(&client, params, &signal, Some(sink)).await?;
                    Ok(outcome.to_json())
                },
            )
            .await
    }

    /// `onEnvironmentSyncIn`: host files and directories into the lease's workspace, then the
    /// post-upload commands. `{operations: [{operationId, filesTransferred, bytesTransferred}]}`.
    /// Tracked like execute, under the config's `timeoutMs` for the whole call.
    pub async fn sync_in(&self, params: &Value, _sink: &dyn HostSink) -> ProviderResult<Value> {
        self.state
            .track(&self.clients, params, None, |client, signal| async move {
                crate::sync::sync_files(&client, params, crate::sync::Direction::In, &signal).await
            })
            .await
    }

    /// `onEnvironmentSyncOut`: workspace files and directories onto the host. Same result shape.
    pub async fn sync_out(&self, params: &Value, _sink: &dyn HostSink) -> ProviderResult<Value> {
        self.state
            .track(&self.clients, params, None, |client, signal| async move {
                crate::sync::sync_files(&client, params, crate::sync::Direction::Out, &signal).await
            })
            .await
    }

    /// `onEnvironmentStartInteractiveSetup`: a setup sandbox waiting for the user.
    pub async fn start_interactive_setup(
        &self,
        params: &Value,
        _sink: &dyn HostSink,
    ) -> ProviderResult<Value> {
        crate::setup::start_interactive_setup(&self.clients, params).await
    }

    /// `onEnvironmentGetInteractiveSetup`: the setup session, or `status: "missing"`.
    pub async fn get_interactive_setup(
        &self,
        params: &Value,
        _sink: &dyn HostSink,
    ) -> ProviderResult<Value> {
        crate::setup::get_interactive_setup(&self.clients, params).await
    }

    /// `onEnvironmentCancelInteractiveSetup`: deletes the setup sandbox.
    pub async fn cancel_interactive_setup(
        &self,
        params: &Value,
        _sink: &dyn HostSink,
    ) -> ProviderResult<Value> {
        crate::setup::cancel_interactive_setup(&self.clients, params).await
    }

    /// `onEnvironmentCaptureTemplate`: pauses the setup sandbox, which becomes the template.
    pub async fn capture_template(
        &self,
        params: &Value,
        _sink: &dyn HostSink,
    ) -> ProviderResult<Value> {
        crate::setup::capture_template(&self.clients, params).await
    }

    /// `onEnvironmentDeleteTemplate`: deletes a snapshot template.
    pub async fn delete_template(
        &self,
        params: &Value,
        _sink: &dyn HostSink,
    ) -> ProviderResult<Value> {
        crate::setup::delete_template(&self.clients, params).await
    }

    /// `onShutdown`: refuses new work, closes sessions, aborts and awaits in-flight calls.
    pub async fn shutdown(&self) -> ProviderResult<Option<Value>> {
        self.state.shutdown().await;
        Ok(None)
    }

    /// Registers a login PTY or duplex session with its lease (used by the session hooks).
    pub fn register_session(&self, entry: SessionEntry) {
        self.state.register_session(entry);
    }
}

/// The hook table of the CreateOS provider: every hook it implements, and the method each one
/// forwards to.
impl Provider for CreateOsProvider {
    fn setup(&self, sink: &dyn HostSink) {
        CreateOsProvider::setup(self, sink);
    }

    fn call<'a>(
        &'a self,
        hook: Hook,
        params: &'a Value,
        sink: Arc<dyn HostSink>,
    ) -> Option<HookFuture<'a>> {
        Some(match hook {
            Hook::Health => resolves(async move { Ok(self.health()) }),
            Hook::ValidateConfig => resolves(async move { Ok(self.validate_config(params)) }),
            Hook::Probe => resolves(async move { self.probe(params, &*sink).await }),
            Hook::AcquireLease => resolves(async move { self.acquire_lease(params, &*sink).await }),
            Hook::ResumeLease => resolves(async move { self.resume_lease(params, &*sink).await }),
            Hook::ReleaseLease => {
                resolves_maybe(async move { self.release_lease(params, &*sink).await })
            }
            Hook::DestroyLease => {
                resolves_maybe(async move { self.destroy_lease(params, &*sink).await })
            }
            Hook::RealizeWorkspace => {
                resolves(async move { self.realize_workspace(params, &*sink).await })
            }
            Hook::Execute => resolves(async move { self.execute(params, &*sink).await }),
            Hook::SyncIn => resolves(async move { self.sync_in(params, &*sink).await }),
            Hook::SyncOut => resolves(async move { self.sync_out(params, &*sink).await }),
            Hook::StartInteractiveSetup => {
                resolves(async move { self.start_interactive_setup(params, &*sink).await })
            }
            Hook::GetInteractiveSetup => {
                resolves(async move { self.get_interactive_setup(params, &*sink).await })
            }
            Hook::CancelInteractiveSetup => {
                resolves(async move { self.cancel_interactive_setup(params, &*sink).await })
            }
            Hook::CaptureTemplate => {
                resolves(async move { self.capture_template(params, &*sink).await })
            }
            Hook::DeleteTemplate => {
                resolves(async move { self.delete_template(params, &*sink).await })
            }
            Hook::LoginPtyOpen => resolves(self.login_pty_open(params, sink)),
            Hook::LoginPtyInput => resolves_maybe(self.login_pty_input(params)),
            Hook::LoginPtyStop => resolves_maybe(self.login_pty_stop(params)),
            Hook::LoginPtyClose => resolves(self.login_pty_close(params)),
            Hook::DuplexChannelOpen => resolves(self.duplex_channel_open(params, sink)),
            Hook::DuplexChannelWrite => resolves_maybe(self.duplex_channel_write(params)),
            Hook::DuplexChannelStop => resolves_maybe(self.duplex_channel_stop(params)),
            Hook::DuplexChannelClose => resolves(self.duplex_channel_close(params)),
        })
    }

    fn shutdown(&self) -> HookFuture<'_> {
        resolves_maybe(CreateOsProvider::shutdown(self))
    }
}

#[cfg(test)]
mod tests {
    use sandbox_core::NullSink;

    use super::*;

    fn is_send<T: Send>(_: &T) {}
    fn is_send_sync<T: Send + Sync>() {}

    /// The napi layer runs hooks on a multi-threaded runtime and shares the provider.
    #[test]
    fn hooks_are_send_and_the_provider_is_shared() {
        is_send_sync::<CreateOsProvider>();
        let provider = CreateOsProvider::new();
        let (params, sink) = (json!({}), NullSink);
        is_send(&provider.probe(&params, &sink));
        is_send(&provider.acquire_lease(&params, &sink));
        is_send(&provider.resume_lease(&params, &sink));
        is_send(&provider.release_lease(&params, &sink));
        is_send(&provider.destroy_lease(&params, &sink));
        is_send(&provider.realize_workspace(&params, &sink));
        is_send(&provider.execute(&params, &sink));
        is_send(&provider.shutdown());
        is_send(&provider.sync_in(&params, &sink));
        is_send(&provider.sync_out(&params, &sink));
        is_send(&provider.start_interactive_setup(&params, &sink));
        is_send(&provider.get_interactive_setup(&params, &sink));
        is_send(&provider.cancel_interactive_setup(&params, &sink));
        is_send(&provider.capture_template(&params, &sink));
        is_send(&provider.delete_template(&params, &sink));
    }

    /// The exact hook list is asserted against the worker in the forked-worker suite; here,
    /// that the table answers every hook (CreateOS implements all of them).
    #[test]
    fn the_hook_table_answers_every_hook() {
        assert_eq!(Provider::hooks(&CreateOsProvider::new()), Hook::ALL);
    }

    /// The napi layer runs the synchronous hooks on the JS thread, polling each call once; a
    /// call that did not complete there would take the slower path through the runtime.
    #[test]
    fn synchronous_hooks_complete_on_the_first_poll() {
        let provider = CreateOsProvider::new();
        let cases = [
            Value::Null,
            json!({}),
            json!({ "config": { "apiUrl": "https://api.sb.createos.sh", "apiKey": "key", "shape": "s-1vcpu-1gb" } }),
            json!({ "config": { "apiUrl": "not a url", "apiKey": 7 } }),
        ];
        sandbox_core::hook::assert_synchronous_hooks_complete_at_once(&provider, &cases);
    }
}
