//! `onLoginPtyOpen` / `onLoginPtyInput` / `onLoginPtyStop` / `onLoginPtyClose`:
//! thin forwards to the worker's login-PTY manager ([`crate::login`]), which owns the sessions.

use std::sync::Arc;

use sandbox_core::{HostSink, ProviderResult};
use serde_json::Value;

use crate::lease::lease_end::idle_ms;
use crate::login::LoginLeaseScope;
use crate::login::connector::LOGIN_OPEN_BUDGET_MS;
use crate::provider::KubernetesProvider;

impl KubernetesProvider {
    /// `onLoginPtyOpen({hostRouteId, driverKey, companyId, environmentId, providerLeaseId,
    /// loginCommandKey, sessionHome})` → `{workerSessionId}`. The session outlives the call:
    /// its output and its single exit go to `sink.login_output` / `sink.login_exit`.
    ///
    /// Issue #38: the open uses the lease, so its end moves (when due) beside the open, which
    /// keeps all of the host's 30 s for itself.
    pub async fn login_pty_open(
        &self,
        params: &Value,
        sink: Arc<dyn HostSink>,
    ) -> ProviderResult<Value> {
        let keep_alive = async {
            if let Some(scope) = self.login().scope_of_open(params) {
                self.keep_login_lease_alive(&scope, sink.as_ref()).await;
            }
        };
        let (opened, ()) = tokio::join!(self.login().open(params, sink.clone()), keep_alive);
        opened
    }

    /// Moves the end of a remembered login lease when due, for the open's budget. A config
    /// whose cluster cannot be reached is left to the open, which reports it.
    async fn keep_login_lease_alive(&self, scope: &LoginLeaseScope, sink: &dyn HostSink) {
        let Ok(connection) = self.connect(&scope.config).await else {
            return;
        };
        let lease_ref = (scope.namespace.as_str(), scope.lease_id.as_str());
        let bounds = (idle_ms(&scope.config), LOGIN_OPEN_BUDGET_MS);
        let version = scope.sandbox_api_version;
        self.keep_lease_alive(&connection, version, lease_ref, bounds, sink)
            .await;
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
