//! [`KubernetesProvider`]: the per-worker provider object, its constructors and the in-worker
//! state the hooks share: the cluster connector, the clock the readiness and completion
//! polls run on, the leases seen Ready, the fast-upload interceptors, the login-PTY sessions,
//! the Sandbox API versions discovered, the execute and sync calls in flight and the end each
//! Sandbox was last given.
//!
//! The hooks themselves are in [`crate::hooks`], one file per hook family; health and setup,
//! which touch nothing, are here.

use std::sync::Arc;

use sandbox_core::hook::healthy;
use sandbox_core::{HookValue, ProviderResult};

use crate::cluster::{Clock, SandboxApiVersion, SandboxApiVersionCache, SystemClock};
use crate::config::KubernetesConfig;
use crate::error::Error;
use crate::lease::calls::ActiveCalls;
use crate::lease::lease_end::{Kept, LeaseEnds, SandboxUse};
use crate::lease::state::{ReadySet, UploadInterceptors};
use crate::lease::view;
use crate::lease::{ClusterConnector, Connection, KubeConnector, LeaseView};
use crate::login::{KubeLoginConnector, LoginPtyManager};

/// One provider instance per worker process: the cluster connector, the clock the readiness
/// and completion polls run on, and the in-worker state the original keeps in module scope.
pub struct KubernetesProvider {
    connector: Arc<dyn ClusterConnector>,
    clock: Arc<dyn Clock>,
    ready: ReadySet,
    uploads: UploadInterceptors,
    login: LoginPtyManager,
    /// The Sandbox API version discovered per API server (G-apiversion), for this worker's life.
    api_versions: SandboxApiVersionCache,
    /// The execute and sync calls in flight, which shutdown answers and ends.
    calls: ActiveCalls,
    /// The end (`shutdownTime`) this worker last gave each Sandbox (issue #38).
    lease_ends: LeaseEnds,
    /// The sweep of dead workers' sync temp dirs this worker starts on its first asynchronous
    /// hook ([`crate::sync::host_temp`]).
    start_sweep: std::sync::Once,
}

impl std::fmt::Debug for KubernetesProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubernetesProvider").finish_non_exhaustive()
    }
}

impl Default for KubernetesProvider {
    fn default() -> Self {
        Self::with_connector(
            Arc::new(KubeConnector::default()),
            Arc::new(SystemClock::new()),
        )
    }
}

impl KubernetesProvider {
    /// The production provider: kube-rs clients, real time.
    pub fn new() -> Self {
        Self::default()
    }

    /// A provider on another cluster connector and clock (tests, emulators).
    pub fn with_connector(connector: Arc<dyn ClusterConnector>, clock: Arc<dyn Clock>) -> Self {
        let login = LoginPtyManager::new(Arc::new(KubeLoginConnector {
            connector: connector.clone(),
            clock: clock.clone(),
        }));
        Self::with_login_manager(connector, clock, login)
    }

    /// A provider with its own login-PTY manager (tests: a scripted login connector).
    pub fn with_login_manager(
        connector: Arc<dyn ClusterConnector>,
        clock: Arc<dyn Clock>,
        login: LoginPtyManager,
    ) -> Self {
        Self {
            login,
            connector,
            clock,
            ready: ReadySet::default(),
            uploads: UploadInterceptors::default(),
            api_versions: SandboxApiVersionCache::new(),
            calls: ActiveCalls::default(),
            lease_ends: LeaseEnds::default(),
            start_sweep: std::sync::Once::new(),
        }
    }

    /// Starts, once per worker, the background sweep of the sync temp dirs that workers which
    /// died in the middle of a sync left behind. Called by every asynchronous hook: `setup` and
    /// the synchronous hooks answer on the JS thread and must start no thread.
    pub(crate) fn sweep_dead_workers_sync_dirs(&self) {
        self.start_sweep
            .call_once(crate::sync::host_temp::spawn_sweep);
    }

    pub(crate) fn connector(&self) -> &dyn ClusterConnector {
        self.connector.as_ref()
    }

    pub(crate) fn clock(&self) -> &dyn Clock {
        self.clock.as_ref()
    }

    pub(crate) fn ready(&self) -> &ReadySet {
        &self.ready
    }

    pub(crate) fn uploads(&self) -> &UploadInterceptors {
        &self.uploads
    }

    pub(crate) fn api_versions(&self) -> &SandboxApiVersionCache {
        &self.api_versions
    }

    /// The execute and sync calls in flight in this worker.
    pub fn calls(&self) -> &ActiveCalls {
        &self.calls
    }

    /// The end this worker last gave each Sandbox ([`crate::lease::lease_end`]).
    pub fn lease_ends(&self) -> &LeaseEnds {
        &self.lease_ends
    }

    /// Before a hook uses the Sandbox lease `namespace/name` for up to `hook_ms` (its config's
    /// `podActivityDeadlineSec` being `idle_ms`): moves its end forward when due ([`LeaseEnds::keep_alive`]; a failed write is logged on `sink`).
    pub(crate) async fn keep_lease_alive(
        &self,
        connection: &Connection,
        version: SandboxApiVersion,
        (namespace, name): (&str, &str),
        (idle_ms, hook_ms): (u64, u64),
        sink: &dyn sandbox_core::HostSink,
    ) -> Kept {
        let sandbox = SandboxUse {
            api: connection.api.as_ref(),
            version,
            namespace,
            name,
            idle_ms,
            hook_ms,
        };
        self.lease_ends
            .keep_alive(self.clock(), &sandbox, sink)
            .await
    }

    /// The worker's login-PTY manager.
    pub fn login(&self) -> &LoginPtyManager {
        &self.login
    }

    /// `setup`: the original announces itself on the host log; no cluster calls, and no thread
    /// (the sweep of dead workers' sync temp dirs waits for the first asynchronous hook:
    /// [`crate::sync::host_temp`]).
    pub fn setup(&self, sink: &dyn sandbox_core::HostSink) {
        sink.log(
            sandbox_core::LogLevel::Info,
            "Kubernetes sandbox provider plugin ready",
        );
    }

    /// `onHealth`: makes no cluster call.
    pub fn health(&self) -> HookValue {
        healthy("Kubernetes sandbox provider plugin healthy")
    }

    /// The hook's connection to the config's cluster ([`view::connect`]).
    pub(crate) async fn connect(&self, config: &KubernetesConfig) -> ProviderResult<Connection> {
        view::connect(self.connector(), config).await
    }

    /// The Sandbox API version of the connection's cluster, through the worker's cache.
    pub(crate) async fn discover_sandbox_api_version(
        &self,
        connection: &Connection,
    ) -> Result<SandboxApiVersion, Error> {
        view::discover_sandbox_api_version(self.api_versions(), connection).await
    }

    /// The Sandbox API version of an existing sandbox-cr lease ([`view::lease_sandbox_api_version`]).
    pub(crate) async fn lease_sandbox_api_version(
        &self,
        connection: &Connection,
        lease: &LeaseView<'_>,
    ) -> ProviderResult<SandboxApiVersion> {
        view::lease_sandbox_api_version(self.api_versions(), connection, lease).await
    }

    /// The versions to delete an existing lease's Sandbox under ([`view::sandbox_versions_to_delete`]).
    pub(crate) async fn sandbox_versions_to_delete(
        &self,
        connection: &Connection,
        lease: &LeaseView<'_>,
    ) -> Vec<SandboxApiVersion> {
        view::sandbox_versions_to_delete(self.api_versions(), connection, lease).await
    }
}
