//! `connectKubernetesLoginPty` (login-pty-exec.ts @ 1bbb5810): always waits for the Sandbox to
//! be Ready (30 s, poll 1 s) and looks the pod up again (the remembered pod name is ignored),
//! then opens a tty exec in container `agent`.

use std::sync::Arc;

use sandbox_core::{BoxFuture, ProviderError, ProviderResult};

use super::manager::{LoginConnection, LoginConnector, LoginIo, LoginLeaseScope};
use crate::cluster::ClusterConnector;
use crate::cluster::{Clock, ClusterError, PollOptions, WorkloadOrchestrator};
use crate::exec::ExecError;
use crate::exec::tty::{TtyEvents, TtySession};

/// A30 (the manager always sets the lease id).
pub const LOGIN_REQUIRES_LEASE_ID: &str = "Kubernetes login PTY requires a lease ID";
/// A31.
pub const LOGIN_POD_UNAVAILABLE: &str = "Kubernetes login PTY sandbox pod is unavailable";
/// The connector's readiness wait.
pub const LOGIN_READY_WAIT: PollOptions = PollOptions {
    timeout_ms: 30_000,
    poll_ms: 1_000,
};

/// The production connector: the provider's cluster connector and clock.
pub struct KubeLoginConnector {
    pub connector: Arc<dyn ClusterConnector>,
    pub clock: Arc<dyn Clock>,
}

struct Events(Arc<dyn LoginIo>);

impl TtyEvents for Events {
    fn output(&self, data: &[u8]) {
        self.0.output(data);
    }
    fn exit(&self, code: Option<i32>) {
        self.0.exit(code);
    }
}

impl LoginConnection for TtySession {
    fn write(&self, data: &str) {
        TtySession::write(self, data);
    }
    fn close(&self) {
        TtySession::close(self);
    }
    fn resize(&self, cols: u16, rows: u16) {
        TtySession::resize(self, cols, rows);
    }
}

fn exec_error(err: ExecError) -> ProviderError {
    match err {
        ExecError::Setup(api) => ProviderError::from(ClusterError::from(api)),
        other => ProviderError::new(other.to_string()),
    }
}

impl LoginConnector for KubeLoginConnector {
    fn connect(
        &self,
        scope: Arc<LoginLeaseScope>,
        argv: Vec<String>,
        io: Arc<dyn LoginIo>,
    ) -> BoxFuture<'static, ProviderResult<Arc<dyn LoginConnection>>> {
        let connector = self.connector.clone();
        let clock = self.clock.clone();
        Box::pin(async move {
            if scope.lease_id.is_empty() {
                return Err(ProviderError::new(LOGIN_REQUIRES_LEASE_ID));
            }
            let connection = connector
                .connect(&scope.config)
                .await
                .map_err(|e| ProviderError::from(ClusterError::from(e)))?;
            let orchestrator = WorkloadOrchestrator::SandboxCr(scope.sandbox_api_version);
            let api = connection.api.as_ref();
            orchestrator
                .wait_for_completion(
                    api,
                    clock.as_ref(),
                    &scope.namespace,
                    &scope.lease_id,
                    LOGIN_READY_WAIT,
                )
                .await?;
            let pod = orchestrator
                .find_pod(api, &scope.namespace, &scope.lease_id)
                .await?
                .filter(|p| !p.is_empty())
                .ok_or_else(|| ProviderError::new(LOGIN_POD_UNAVAILABLE))?;
            let session = connection
                .exec
                .open_tty(&scope.namespace, &pod, argv, Arc::new(Events(io)))
                .await
                .map_err(exec_error)?;
            Ok(session as Arc<dyn LoginConnection>)
        })
    }
}
