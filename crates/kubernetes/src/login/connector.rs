//! `connectKubernetesLoginPty` (login-pty-exec.ts @ 1bbb5810): always waits for the Sandbox to
//! be Ready and looks the pod up again (the remembered pod name is ignored), then opens a tty
//! exec in container `agent`. The original waits 30 s, polling every second; this one waits
//! 20 s ([`LOGIN_READY_WAIT`]) so the whole open fits the host's 30 s.

use std::sync::Arc;
use std::time::Duration;

use sandbox_core::{BoxFuture, ProviderError, ProviderResult};

use super::manager::{LoginConnection, LoginConnector, LoginIo, LoginLeaseScope};
use crate::cluster::api_bound;
use crate::cluster::{Clock, PollOptions, ReadinessLimits, WorkloadOrchestrator};
use crate::error::Error;
use crate::exec::tty::{TtyEvents, TtySession};
use crate::lease::ClusterConnector;

/// A login PTY connect without a lease id; the manager always sets one (A30 in the error
/// reference).
pub const LOGIN_REQUIRES_LEASE_ID: &str = "Kubernetes login PTY requires a lease ID";
/// A login PTY connect whose Ready Sandbox has no pod to attach to (A31 in the error reference).
pub const LOGIN_POD_UNAVAILABLE: &str = "Kubernetes login PTY sandbox pod is unavailable";
/// The connector's readiness wait: 20 s (the original waits 30 s, the host's whole open), so
/// that the open as a whole stays within [`LOGIN_OPEN_BUDGET_MS`]; polling every second where
/// the Sandbox cannot be watched.
pub const LOGIN_READY_WAIT: PollOptions = PollOptions {
    timeout_ms: 20_000,
    poll_ms: 1_000,
};
/// What a login open may take from its ready-wait's start to an open terminal (the host waits
/// 30 s): the pod lookup and the exec upgrade share what the ready-wait leaves, at least
/// [`LOGIN_LOOKUP_FLOOR_MS`] each.
pub const LOGIN_OPEN_BUDGET_MS: u64 = 25_000;
/// The least time the pod lookup and the exec upgrade each get.
pub const LOGIN_LOOKUP_FLOOR_MS: u64 = 1_000;

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

fn exec_error(err: Error) -> ProviderError {
    ProviderError::from(err)
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
                .map_err(ProviderError::from)?;
            let orchestrator = WorkloadOrchestrator::SandboxCr(scope.sandbox_api_version);
            let api = connection.api.as_ref();
            // A hung API server cannot hang the open: the readiness wait is bounded as a whole (a
            // hung read ends as its timeout); the pod lookup and the tty exec's upgrade share what
            // it leaves of the open's budget.
            let started = clock.now_ms();
            let ready_ms = LOGIN_READY_WAIT.timeout_ms;
            let wait = orchestrator.wait_for_completion(
                api,
                clock.as_ref(),
                &scope.namespace,
                &scope.lease_id,
                LOGIN_READY_WAIT,
                ReadinessLimits::of(&scope.config),
            );
            let ready_timeout = || Error::SandboxReadyTimeout {
                namespace: scope.namespace.clone(),
                name: scope.lease_id.clone(),
                timeout_ms: ready_ms,
            };
            api_bound::wait_within(ready_ms, wait, ready_timeout).await?;
            let elapsed = clock.now_ms().saturating_sub(started);
            let left_ms =
                api_bound::remaining_ms(LOGIN_OPEN_BUDGET_MS, elapsed, LOGIN_LOOKUP_FLOOR_MS);
            let find = orchestrator.find_pod(api, &scope.namespace, &scope.lease_id);
            let pod = api_bound::with_api_bound(left_ms, find)
                .await?
                .filter(|p| !p.is_empty())
                .ok_or_else(|| ProviderError::new(LOGIN_POD_UNAVAILABLE))?;
            let elapsed = clock.now_ms().saturating_sub(started);
            let left_ms =
                api_bound::remaining_ms(LOGIN_OPEN_BUDGET_MS, elapsed, LOGIN_LOOKUP_FLOOR_MS);
            let open = connection
                .exec
                .open_tty(&scope.namespace, &pod, argv, Arc::new(Events(io)));
            let session = tokio::time::timeout(Duration::from_millis(left_ms), open)
                .await
                .map_err(|_| ProviderError::new(api_bound::api_timeout_message(left_ms)))?
                .map_err(exec_error)?;
            Ok(session as Arc<dyn LoginConnection>)
        })
    }
}
