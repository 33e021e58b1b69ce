//! The in-worker state of the original plugin, and the rules that follow from it.
//!
//! - `active`: execute/sync calls in flight, per lease scope; release and shutdown abort them
//!   and wait for them to finish.
//! - `closing`: scopes being released or destroyed; no new work may start on them.
//! - `unconfirmed_cleanup`: scopes whose session cleanup failed; the lease may not be resumed or
//!   kept warm until it is destroyed.
//! - `leases`: leases acquired or resumed by this worker, for login PTY and duplex sessions.
//! - `sessions`: login PTY and duplex sessions, closed with their lease.
//! - `acquisitions` (not in the original): acquires and probes in flight. Shutdown stops them
//!   through [`WorkerState::stop_signal`] and waits until each has deleted what it created: the
//!   host never learns the lease of an acquire whose reply is abandoned at `process.exit`, so
//!   a sandbox created then would be left to nobody.
//!
//! A scope is `[companyId, environmentId, apiUrl, sha256(apiKey), leaseId]`: the same lease ID
//! under another account or environment is another scope.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use indexmap::IndexMap;

use crate::params::lease_of;
use js_compat::value;
use sandbox_core::{BoxFuture, ProviderError, ProviderResult};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use crate::client::{Clients, CreateOsClient};
use crate::config::{CreateOsConfig, MAX_TIMEOUT_MS, parse_config_arg};
use crate::messages;
use crate::signal::Signal;

/// The workspace root and remote cwd of every lease.
pub const CWD: &str = "/paperclip-workspace";
/// The lease marker: a random UUID written at acquire and checked at resume. The host excludes
/// `.paperclip-runtime` from workspace exports, so it never becomes a user file.
pub const MARKER: &str = "/paperclip-workspace/.paperclip-runtime/.paperclip-createos-lease";

/// A lease this worker acquired or resumed.
#[derive(Debug, Clone)]
pub struct CachedLease {
    pub company_id: Option<Value>,
    pub environment_id: Option<Value>,
    pub config: CreateOsConfig,
}

/// The two kinds of long-lived sessions bound to a lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SessionKind {
    LoginPty,
    Duplex,
}

/// A login PTY or duplex session, as far as lease cleanup is concerned.
pub trait LeaseSession: Send + Sync {
    /// Closes the session (idempotent). A failure means termination is unconfirmed.
    fn close(&self) -> BoxFuture<'_, ProviderResult<()>>;

    /// Sends input to the session's process (the login and duplex input hooks).
    fn write<'a>(&'a self, _bytes: &'a [u8]) -> BoxFuture<'a, ProviderResult<()>> {
        Box::pin(async { Ok(()) })
    }

    /// Stops the session's process without closing its input first (idempotent).
    fn stop(&self) -> BoxFuture<'_, ProviderResult<()>> {
        Box::pin(async { Ok(()) })
    }
}

/// One registered session.
#[derive(Clone)]
pub struct SessionEntry {
    pub kind: SessionKind,
    pub host_route_id: String,
    pub worker_session_id: String,
    pub provider_lease_id: String,
    pub session: Arc<dyn LeaseSession>,
}

/// Sessions by route and by worker session ID, per kind. An entry is forgotten only where the
/// maps still point to it (a route may have been reopened meanwhile).
#[derive(Default)]
pub struct SessionRegistry {
    /// In registration order, which is the order the original closed them in.
    by_route: IndexMap<(SessionKind, String), Arc<SessionEntry>>,
    by_session: HashMap<(SessionKind, String), Arc<SessionEntry>>,
}

impl SessionRegistry {
    pub fn insert(&mut self, entry: SessionEntry) -> Arc<SessionEntry> {
        let entry = Arc::new(entry);
        self.by_route
            .insert((entry.kind, entry.host_route_id.clone()), entry.clone());
        self.by_session
            .insert((entry.kind, entry.worker_session_id.clone()), entry.clone());
        entry
    }

    pub fn by_route(&self, kind: SessionKind, host_route_id: &str) -> Option<Arc<SessionEntry>> {
        self.by_route
            .get(&(kind, host_route_id.to_owned()))
            .cloned()
    }

    pub fn by_session(
        &self,
        kind: SessionKind,
        worker_session_id: &str,
    ) -> Option<Arc<SessionEntry>> {
        self.by_session
            .get(&(kind, worker_session_id.to_owned()))
            .cloned()
    }

    pub fn forget(&mut self, entry: &Arc<SessionEntry>) {
        let route = (entry.kind, entry.host_route_id.clone());
        if self
            .by_route
            .get(&route)
            .is_some_and(|e| Arc::ptr_eq(e, entry))
        {
            self.by_route.shift_remove(&route);
        }
        let session = (entry.kind, entry.worker_session_id.clone());
        if self
            .by_session
            .get(&session)
            .is_some_and(|e| Arc::ptr_eq(e, entry))
        {
            self.by_session.remove(&session);
        }
    }

    /// Login sessions first, then duplex ones, as the original listed them.
    fn for_lease(&self, provider_lease_id: &str) -> Vec<Arc<SessionEntry>> {
        let mut entries: Vec<Arc<SessionEntry>> = self
            .by_route
            .values()
            .filter(|e| e.provider_lease_id == provider_lease_id)
            .cloned()
            .collect();
        entries.sort_by_key(|e| e.kind == SessionKind::Duplex);
        entries
    }

    fn take_all(&mut self) -> Vec<Arc<SessionEntry>> {
        self.by_session.clear();
        let mut entries: Vec<Arc<SessionEntry>> = self.by_route.drain(..).map(|(_, e)| e).collect();
        entries.sort_by_key(|e| e.kind == SessionKind::Duplex);
        entries
    }
}

struct ActiveCall {
    id: u64,
    signal: Signal,
    done: CancellationToken,
}

#[derive(Default)]
struct Inner {
    shutting_down: bool,
    active: HashMap<String, Vec<ActiveCall>>,
    closing: HashSet<String>,
    unconfirmed_cleanup: HashSet<String>,
    leases: HashMap<String, CachedLease>,
    sessions: SessionRegistry,
    /// Acquires and probes in flight, each marked done when it has finished (or undone) its work.
    acquisitions: HashMap<u64, CancellationToken>,
}

#[derive(Default)]
pub struct WorkerState {
    /// Shared with the [`SessionForgetter`]s of running sessions.
    inner: Arc<Mutex<Inner>>,
    next_call: AtomicU64,
    /// Fired by shutdown, with [`messages::ACQUIRE_STOPPED_BY_SHUTDOWN`] as its reason: the
    /// parent of every acquire's and probe's signal.
    stop: Signal,
}

/// Forgets a session once its process has ended, from the task that followed it (which outlives
/// the hook call that opened it). Holds the state weakly: a dropped provider forgets nothing.
#[derive(Clone)]
pub struct SessionForgetter {
    inner: std::sync::Weak<Mutex<Inner>>,
}

impl SessionForgetter {
    /// Forgets `entry` where the maps still point to it.
    pub fn forget(&self, entry: &Arc<SessionEntry>) {
        if let Some(inner) = self.inner.upgrade() {
            inner
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .sessions
                .forget(entry);
        }
    }
}

impl std::fmt::Debug for WorkerState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerState").finish_non_exhaustive()
    }
}

/// `md?.provider === "createos"` and the same company, environment and API URL. Parsing the
/// config may fail, as the original's did, but only once the cheaper checks passed.
pub fn metadata_matches(params: &Value, metadata: Option<&Value>) -> ProviderResult<bool> {
    if value::prop(metadata, "provider").and_then(Value::as_str) != Some("createos")
        || !value::strict_eq(value::prop(metadata, "companyId"), params.get("companyId"))
        || !value::strict_eq(
            value::prop(metadata, "environmentId"),
            params.get("environmentId"),
        )
    {
        return Ok(false);
    }
    let config = parse_config_arg(params.get("config"))?;
    Ok(value::prop(metadata, "apiUrl").and_then(Value::as_str) == Some(config.api_url.as_str()))
}

/// A `timeoutMs` the original accepted: a JS integer in 1..=86 400 000.
pub fn valid_timeout(value: &Value) -> Option<u64> {
    if !value::is_integer(value) {
        return None;
    }
    let ms = value.as_f64()?;
    (ms >= 1.0 && ms <= MAX_TIMEOUT_MS as f64).then_some(ms as u64)
}

impl WorkerState {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The scope of lease `id` under the params' company, environment, API URL and key.
    pub fn scope_key(
        clients: &Clients,
        params: &Value,
        id: Option<&Value>,
    ) -> ProviderResult<String> {
        let config = parse_config_arg(params.get("config"))?;
        let key = clients.api_key(&config)?;
        let account: String = Sha256::digest(key.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let part = |v: Option<&Value>| v.cloned().unwrap_or(Value::Null);
        Ok(json!([
            part(params.get("companyId")),
            part(params.get("environmentId")),
            config.api_url,
            account,
            part(id),
        ])
        .to_string())
    }

    /// Caches lease `id` for sessions, with the params' config.
    pub fn register_lease(&self, params: &Value, id: &str) -> ProviderResult<()> {
        let config = parse_config_arg(params.get("config"))?;
        self.lock().leases.insert(
            id.to_owned(),
            CachedLease {
                company_id: params.get("companyId").cloned(),
                environment_id: params.get("environmentId").cloned(),
                config,
            },
        );
        Ok(())
    }

    /// The cached lease `providerLeaseId` of the same company and environment (sessions).
    pub fn resolve_lease(&self, params: &Value) -> ProviderResult<CachedLease> {
        let id = params.get("providerLeaseId").and_then(Value::as_str);
        let inner = self.lock();
        match id.and_then(|id| inner.leases.get(id)) {
            Some(lease)
                if value::strict_eq(lease.company_id.as_ref(), params.get("companyId"))
                    && value::strict_eq(
                        lease.environment_id.as_ref(),
                        params.get("environmentId"),
                    ) =>
            {
                Ok(lease.clone())
            }
            _ => Err(ProviderError::new(messages::SESSION_LEASE_NOT_CACHED)),
        }
    }

    pub fn is_cached(&self, id: &str) -> bool {
        self.lock().leases.contains_key(id)
    }

    /// Registers a login PTY or duplex session so that lease release and shutdown close it.
    pub fn register_session(&self, entry: SessionEntry) -> Arc<SessionEntry> {
        self.lock().sessions.insert(entry)
    }

    /// A handle that forgets sessions later, from outside a hook call.
    pub fn session_forgetter(&self) -> SessionForgetter {
        SessionForgetter {
            inner: Arc::downgrade(&self.inner),
        }
    }

    /// Whether `onShutdown` has begun (sessions opened since must be closed at once).
    pub fn is_shutting_down(&self) -> bool {
        self.lock().shutting_down
    }

    /// Runs `f` on the session maps (lookups and forgetting, for the session hooks).
    pub fn with_sessions<R>(&self, f: impl FnOnce(&mut SessionRegistry) -> R) -> R {
        f(&mut self.lock().sessions)
    }

    /// Whether resume must wait: the scope is closing or its cleanup is unconfirmed.
    pub fn is_closing_or_unconfirmed(&self, scope: &str) -> bool {
        let inner = self.lock();
        inner.closing.contains(scope) || inner.unconfirmed_cleanup.contains(scope)
    }

    pub fn is_unconfirmed(&self, scope: &str) -> bool {
        self.lock().unconfirmed_cleanup.contains(scope)
    }

    pub fn mark_unconfirmed(&self, scope: &str) {
        self.lock().unconfirmed_cleanup.insert(scope.to_owned());
    }

    pub fn clear_unconfirmed(&self, scope: &str) {
        self.lock().unconfirmed_cleanup.remove(scope);
    }

    /// Marks the scope closing; fails if a release or destroy of it is already running. The
    /// guard forgets the cached lease and ends the closing state when dropped.
    pub fn begin_closing(
        &self,
        scope: &str,
        lease_id: Option<&str>,
    ) -> ProviderResult<ClosingGuard<'_>> {
        let mut inner = self.lock();
        if !inner.closing.insert(scope.to_owned()) {
            return Err(ProviderError::new(messages::CLEANUP_IN_PROGRESS));
        }
        Ok(ClosingGuard {
            state: self,
            scope: scope.to_owned(),
            lease_id: lease_id.map(str::to_owned),
        })
    }

    /// Closes every session of lease `id` together. For a release (`tolerate_failure` false)
    /// the first failure is returned and the sessions stay registered; for a destroy failures
    /// are ignored and the sessions forgotten.
    pub async fn stop_lease_sessions(
        &self,
        id: &str,
        tolerate_failure: bool,
    ) -> ProviderResult<()> {
        let entries = self.lock().sessions.for_lease(id);
        let results =
            futures_util::future::join_all(entries.iter().map(|e| e.session.close())).await;
        if !tolerate_failure && let Some(Err(error)) = results.into_iter().find(Result::is_err) {
            return Err(error);
        }
        let mut inner = self.lock();
        for entry in &entries {
            inner.sessions.forget(entry);
        }
        Ok(())
    }

    /// Aborts every tracked call of the scope and waits until each has finished.
    pub async fn stop_active(&self, scope: &str) {
        let calls: Vec<(Signal, CancellationToken)> = self
            .lock()
            .active
            .get(scope)
            .map(|calls| {
                calls
                    .iter()
                    .map(|c| (c.signal.clone(), c.done.clone()))
                    .collect()
            })
            .unwrap_or_default();
        for (signal, _) in &calls {
            signal.abort();
        }
        for (_, done) in calls {
            done.cancelled().await;
        }
    }

    /// `track`: runs an execute or sync call on its lease with a fresh client and a signal that
    /// fires on the command deadline (`timeout_override`, else the config's `timeoutMs`) or when
    /// the lease is released. Concurrent calls on one lease are allowed.
    pub async fn track<T, F, Fut>(
        &self,
        clients: &Clients,
        params: &Value,
        timeout_override: Option<&Value>,
        work: F,
    ) -> ProviderResult<T>
    where
        F: FnOnce(CreateOsClient, Signal) -> Fut,
        Fut: Future<Output = ProviderResult<T>>,
    {
        let lease = lease_of(params)?;
        let lease_id = lease.get("providerLeaseId");
        if !value::truthy(lease_id) || !metadata_matches(params, lease.get("metadata"))? {
            return Err(ProviderError::new(messages::EXECUTION_LEASE_MISMATCH));
        }
        let scope = Self::scope_key(clients, params, lease_id)?;
        let config = parse_config_arg(params.get("config"))?;
        let timeout_ms = match timeout_override.filter(|v| !v.is_null()) {
            None => Some(config.timeout_ms),
            Some(value) => valid_timeout(value),
        };
        let call = {
            let mut inner = self.lock();
            if inner.shutting_down
                || inner.closing.contains(&scope)
                || inner.unconfirmed_cleanup.contains(&scope)
            {
                return Err(ProviderError::new(messages::LEASE_CLOSING));
            }
            let Some(timeout_ms) = timeout_ms else {
                return Err(ProviderError::new(messages::INVALID_COMMAND_TIMEOUT));
            };
            let call = ActiveCall {
                id: self.next_call.fetch_add(1, Ordering::Relaxed),
                signal: Signal::timeout(timeout_ms),
                done: CancellationToken::new(),
            };
            let guard = CallGuard {
                state: self,
                scope: scope.clone(),
                id: call.id,
                done: call.done.clone(),
                signal: call.signal.clone(),
            };
            inner.active.entry(scope).or_default().push(call);
            guard
        };
        let client = clients.client(&config)?;
        work(client, call.signal.clone()).await
    }

    /// Registers an acquire or probe; refused once shutdown has begun (before any request, so
    /// nothing is created that the host would never hear of). Its signals derive from
    /// [`WorkerState::stop_signal`]; shutdown waits until the guard is dropped.
    pub fn begin_acquisition(&self) -> ProviderResult<AcquisitionGuard<'_>> {
        let mut inner = self.lock();
        if inner.shutting_down {
            return Err(ProviderError::new(messages::ACQUIRE_STOPPED_BY_SHUTDOWN));
        }
        let id = self.next_call.fetch_add(1, Ordering::Relaxed);
        let done = CancellationToken::new();
        inner.acquisitions.insert(id, done.clone());
        Ok(AcquisitionGuard {
            state: self,
            id,
            done,
        })
    }

    /// The signal shutdown fires: acquires and probes run under children of it.
    pub fn stop_signal(&self) -> &Signal {
        &self.stop
    }

    /// `onShutdown`: refuses new work, stops acquires and probes in flight (each deletes what
    /// it created), closes every session (failures ignored), aborts and awaits every tracked
    /// call, waits for the acquires, and forgets the cached leases.
    pub async fn shutdown(&self) {
        let (sessions, acquisitions) = {
            let mut inner = self.lock();
            inner.shutting_down = true;
            let acquisitions: Vec<CancellationToken> =
                inner.acquisitions.values().cloned().collect();
            (inner.sessions.take_all(), acquisitions)
        };
        self.stop
            .abort_with(crate::signal::AbortReason::Error(ProviderError::new(
                messages::ACQUIRE_STOPPED_BY_SHUTDOWN,
            )));
        futures_util::future::join_all(sessions.iter().map(|e| e.session.close())).await;
        let scopes: Vec<String> = self.lock().active.keys().cloned().collect();
        futures_util::future::join_all(scopes.iter().map(|scope| self.stop_active(scope))).await;
        for done in acquisitions {
            done.cancelled().await;
        }
        self.lock().leases.clear();
    }

    /// Acquires and probes in flight (for tests and diagnostics).
    pub fn active_acquisitions(&self) -> usize {
        self.lock().acquisitions.len()
    }

    /// Number of tracked calls (for tests and diagnostics).
    pub fn active_calls(&self) -> usize {
        self.lock().active.values().map(Vec::len).sum()
    }
}

/// Unregisters a tracked call and marks it done, also when its future is dropped.
struct CallGuard<'a> {
    state: &'a WorkerState,
    scope: String,
    id: u64,
    done: CancellationToken,
    signal: Signal,
}

impl Drop for CallGuard<'_> {
    fn drop(&mut self) {
        let mut inner = self.state.lock();
        if let Some(calls) = inner.active.get_mut(&self.scope) {
            calls.retain(|c| c.id != self.id);
            if calls.is_empty() {
                inner.active.remove(&self.scope);
            }
        }
        drop(inner);
        self.done.cancel();
    }
}

/// Unregisters an acquire or probe and marks it done, also when its future is dropped.
pub struct AcquisitionGuard<'a> {
    state: &'a WorkerState,
    id: u64,
    done: CancellationToken,
}

impl Drop for AcquisitionGuard<'_> {
    fn drop(&mut self) {
        self.state.lock().acquisitions.remove(&self.id);
        self.done.cancel();
    }
}

/// Ends a release or destroy: forgets the cached lease and leaves the closing state.
pub struct ClosingGuard<'a> {
    state: &'a WorkerState,
    scope: String,
    lease_id: Option<String>,
}

impl Drop for ClosingGuard<'_> {
    fn drop(&mut self) {
        let mut inner = self.state.lock();
        if let Some(id) = &self.lease_id {
            inner.leases.remove(id);
        }
        inner.closing.remove(&self.scope);
    }
}
