//! `onLoginPtyOpen` / `onLoginPtyInput` / `onLoginPtyStop` / `onLoginPtyClose`:
//! thin forwards to the worker's login-PTY manager ([`crate::login`]), which owns the sessions.

use std::sync::Arc;

use sandbox_core::{HostSink, ProviderResult};
use serde_json::Value;

use crate::provider::KubernetesProvider;

impl KubernetesProvider {
    /// `onLoginPtyOpen({hostRouteId, driverKey, companyId, environmentId, providerLeaseId,
    /// loginCommandKey, sessionHome})` → `{workerSessionId}`. The session outlives the call:
    /// its output and its single exit go to `sink.login_output` / `sink.login_exit`.
    pub async fn login_pty_open(
        &self,
        params: &Value,
        sink: Arc<dyn HostSink>,
    ) -> ProviderResult<Value> {
        self.login().open(params, sink).await
    }

    /// `onLoginPtyInput({workerSessionId, data})` → `undefined` (`None`).
    pub async fn login_pty_input(
        &self,
        params: &Value,
        _sink: &dyn HostSink,
    ) -> ProviderResult<Option<Value>> {
        self.login().input(params).map(|()| None)
    }

    /// `onLoginPtyStop({workerSessionId})` → `undefined` (`None`).
    pub async fn login_pty_stop(
        &self,
        params: &Value,
        _sink: &dyn HostSink,
    ) -> ProviderResult<Option<Value>> {
        self.login().stop(params);
        Ok(None)
    }

    /// `onLoginPtyClose({hostRouteId, workerSessionId?})` → `{hostRouteId}`.
    pub async fn login_pty_close(
        &self,
        params: &Value,
        _sink: &dyn HostSink,
    ) -> ProviderResult<Value> {
        Ok(self.login().close(params))
    }
}
