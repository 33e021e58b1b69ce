//! The hook surface of the CreateOS provider.
//!
//! Every hook takes the JSON params the host sent and a [`HostSink`] for what it reports while
//! it runs. Failures carry exactly the catalogued message.

use std::sync::Arc;

use sandbox_core::{HostSink, ProviderError, ProviderResult};
use serde_json::{Value, json};

use crate::client::{Clients, HostApiKey};
use crate::config;
use crate::exec::execute_stream;
use crate::lease::lease_of;
use crate::lease::state::{CWD, SessionEntry, WorkerState, metadata_matches};
use crate::lease::{acquire, probe, release, resume};
use crate::messages;
use crate::pacer::Pacer;
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
    pub fn health(&self) -> Value {
        json!({
            "status": "ok",
            "message": "CreateOS provider loaded; probe an environment to check connectivity.",
        })
    }

    /// `onEnvironmentValidateConfig`: parse only, no network and no key resolution.
    pub fn validate_config(&self, params: &Value) -> Value {
        config::validate_config_params(params)
    }

    /// `onEnvironmentProbe`: `{ok, summary}`; rejects only when deleting the probe sandbox fails.
    /// Shutdown stops it; its sandbox is deleted all the same.
    pub async fn probe(&self, params: &Value, _sink: &dyn HostSink) -> ProviderResult<Value> {
        let _running = self.state.begin_acquisition()?;
        probe::probe(&self.clients, params, self.state.stop_signal()).await
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
                    let outcome = execute_stream(&client, params, &signal, Some(sink)).await?;
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
}
