//! `createLoginPtyManager` (login-pty.ts @ 1516b74): leases remembered by this worker, routes
//! reserved before the asynchronous connect, sessions, their limits and their single exit.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use sandbox_core::{BoxFuture, HostSink, ProviderError, ProviderResult};
use serde_json::{Value, json};

use crate::config::KubernetesConfig;
use js_compat::{date, utf8::Utf8Decoder};

/// A login PTY open whose descriptor (driver, login command or session home) is refused
/// (A22 in the error reference).
pub const LOGIN_PTY_DESCRIPTOR_REJECTED: &str = "LOGIN_PTY_DESCRIPTOR_REJECTED";
/// A login PTY call for a lease the caller does not own, or an unknown one (A23 in the error
/// reference).
pub const LOGIN_LEASE_MISMATCH: &str =
    "Kubernetes login PTY: lease ownership mismatch or unknown lease";
/// A login PTY call for a lease past its expiry (A24 in the error reference).
pub const LOGIN_LEASE_EXPIRED: &str = "Kubernetes login PTY: lease has expired";
/// A login PTY open on a route that already has an open session (A25 in the error reference).
pub const LOGIN_ROUTE_ALREADY_OPEN: &str = "Kubernetes login PTY: route already open";
/// A login PTY open past the limit of concurrent sessions overall (A26 in the error reference).
pub const LOGIN_LIMIT_REACHED: &str = "Kubernetes login PTY concurrent session limit reached";
/// A login PTY open past one company's limit of concurrent sessions (A27 in the error reference).
pub const LOGIN_COMPANY_LIMIT_REACHED: &str =
    "Kubernetes login PTY concurrent session limit reached for this company";
/// A login PTY open whose session was closed, or its lease forgotten, while it connected
/// (A28 in the error reference).
pub const LOGIN_OPEN_CANCELLED: &str = "Kubernetes login PTY open cancelled";
/// A login PTY input write larger than [`MAX_CHUNK`] (A29 in the error reference).
pub const LOGIN_INPUT_TOO_LARGE: &str = "Kubernetes login PTY input exceeds limit";

/// One output chunk and one input write may not exceed 64 KiB.
pub const MAX_CHUNK: usize = 64 * 1024;
/// Total output per session: 4 MiB.
pub const MAX_TOTAL: u64 = 4 * 1024 * 1024;
/// Sessions per worker.
pub const GLOBAL_MAX_SESSIONS: usize = 16;
/// Sessions per company.
pub const PER_COMPANY_MAX_SESSIONS: usize = 4;

/// The login command templates; only `=HOME ` is substituted.
pub fn command_template(key: &str) -> Option<&'static str> {
    match key {
        "claude" => Some("exec claude setup-token"),
        "codex" => Some(
            "exec env CODEX_HOME=HOME codex -c 'cli_auth_credentials_store=\"file\"' login --device-auth",
        ),
        "grok" => Some("exec env GROK_HOME=HOME grok login --device-auth"),
        _ => None,
    }
}

/// `^/tmp/paperclip-adapter-login/<uuid 8-4-4-4-12 lower-case hex>$`.
pub fn is_session_home(home: &str) -> bool {
    let Some(id) = home.strip_prefix("/tmp/paperclip-adapter-login/") else {
        return false;
    };
    let groups: Vec<&str> = id.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, n)| g.len() == n && g.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
}

/// What the manager keeps per remembered lease.
#[derive(Debug, Clone)]
pub struct LoginLeaseScope {
    pub company_id: Value,
    pub environment_id: Value,
    pub lease_id: String,
    pub namespace: String,
    /// Diagnostics only: the connector always re-resolves the pod.
    pub pod_name: Option<String>,
    pub expires_at: Option<String>,
    /// The version the lease's Sandbox is addressed with (G-apiversion).
    pub sandbox_api_version: crate::cluster::SandboxApiVersion,
    pub config: KubernetesConfig,
}

/// Where a connection reports.
pub trait LoginIo: Send + Sync {
    fn output(&self, data: &[u8]);
    fn exit(&self, code: Option<i32>);
}

/// An open login terminal.
pub trait LoginConnection: Send + Sync {
    fn write(&self, data: &str);
    fn close(&self);
    /// Terminal size (no hook sends it in the original protocol).
    fn resize(&self, _cols: u16, _rows: u16) {}
}

/// `LoginPtyConnector`.
pub trait LoginConnector: Send + Sync {
    fn connect(
        &self,
        scope: Arc<LoginLeaseScope>,
        argv: Vec<String>,
        io: Arc<dyn LoginIo>,
    ) -> BoxFuture<'static, ProviderResult<Arc<dyn LoginConnection>>>;
}

struct EntryState {
    closed: bool,
    exited: bool,
    bytes: u64,
    decoder: Utf8Decoder,
    connection: Option<Arc<dyn LoginConnection>>,
}

struct Entry {
    route: String,
    id: String,
    lease: String,
    sink: Arc<dyn HostSink>,
    state: Mutex<EntryState>,
}

impl Entry {
    fn lock(&self) -> std::sync::MutexGuard<'_, EntryState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[derive(Default)]
struct Tables {
    leases: HashMap<String, Arc<LoginLeaseScope>>,
    routes: HashMap<String, Arc<Entry>>,
    sessions: HashMap<String, Arc<Entry>>,
}

struct Inner {
    connector: Arc<dyn LoginConnector>,
    tables: Mutex<Tables>,
    now_ms: Box<dyn Fn() -> f64 + Send + Sync>,
}

impl Inner {
    fn tables(&self) -> std::sync::MutexGuard<'_, Tables> {
        self.tables.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Idempotent: closes, unregisters, Ctrl-C when `signal`, then closes the connection.
    fn terminate(&self, entry: &Arc<Entry>, signal: bool) {
        let connection = {
            let mut st = entry.lock();
            if st.closed {
                return;
            }
            st.closed = true;
            st.connection.clone()
        };
        {
            let mut t = self.tables();
            if t.sessions
                .get(&entry.id)
                .is_some_and(|e| Arc::ptr_eq(e, entry))
            {
                t.sessions.remove(&entry.id);
            }
            if t.routes
                .get(&entry.route)
                .is_some_and(|e| Arc::ptr_eq(e, entry))
            {
                t.routes.remove(&entry.route);
            }
        }
        if let Some(connection) = connection {
            if signal {
                connection.write("\u{3}");
            }
            connection.close();
        }
    }

    /// `exit(entry, code)` then `terminate(entry, signal)`: the exit is reported once, unless
    /// the entry is already closed. The entry is unregistered before the exit is reported, so
    /// a host reacting to the exit finds the route free.
    fn exit_and_terminate(&self, entry: &Arc<Entry>, code: Option<i32>, signal: bool) {
        let report = {
            let mut st = entry.lock();
            let report = !st.exited && !st.closed;
            st.exited = true;
            report
        };
        self.terminate(entry, signal);
        if report {
            entry.sink.login_exit(&entry.route, &entry.id, code);
        }
    }

    fn forget(&self, lease_id: &str) {
        let entries: Vec<Arc<Entry>> = {
            let mut t = self.tables();
            t.leases.remove(lease_id);
            t.routes
                .values()
                .filter(|e| e.lease == lease_id)
                .cloned()
                .collect()
        };
        for entry in entries {
            self.exit_and_terminate(&entry, None, true);
        }
    }
}

struct EntryIo {
    manager: Weak<Inner>,
    entry: Arc<Entry>,
}

impl LoginIo for EntryIo {
    fn output(&self, data: &[u8]) {
        let text = {
            let mut st = self.entry.lock();
            if st.closed || st.exited {
                return;
            }
            st.bytes += data.len() as u64;
            if data.len() > MAX_CHUNK || st.bytes > MAX_TOTAL {
                None
            } else {
                Some(st.decoder.decode(data))
            }
        };
        match text {
            Some(text) => {
                if !text.is_empty() {
                    self.entry
                        .sink
                        .login_output(&self.entry.route, &self.entry.id, text);
                }
            }
            None => {
                if let Some(manager) = self.manager.upgrade() {
                    manager.exit_and_terminate(&self.entry, None, true);
                }
            }
        }
    }

    fn exit(&self, code: Option<i32>) {
        if let Some(manager) = self.manager.upgrade() {
            manager.exit_and_terminate(&self.entry, code, false);
        }
    }
}

fn str_param<'a>(params: &'a Value, key: &str) -> Option<&'a str> {
    params.get(key).and_then(Value::as_str)
}

fn is_later_than_now(expires_at: &str, now_ms: f64) -> bool {
    date::parse(expires_at).is_some_and(|t| t > now_ms)
}

/// The login-PTY manager of one worker.
#[derive(Clone)]
pub struct LoginPtyManager {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for LoginPtyManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoginPtyManager").finish_non_exhaustive()
    }
}

impl LoginPtyManager {
    pub fn new(connector: Arc<dyn LoginConnector>) -> Self {
        Self::with_now(connector, Box::new(wall_now_ms))
    }

    /// A manager whose "now" (for lease expiry) is `now_ms` (tests).
    pub fn with_now(
        connector: Arc<dyn LoginConnector>,
        now_ms: Box<dyn Fn() -> f64 + Send + Sync>,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                connector,
                tables: Mutex::default(),
                now_ms,
            }),
        }
    }

    /// `remember(leaseId, scope)`: forgets the lease first (ending its sessions).
    pub fn remember(&self, lease_id: &str, mut scope: LoginLeaseScope) {
        self.forget(lease_id);
        scope.lease_id = lease_id.to_string();
        self.inner
            .tables()
            .leases
            .insert(lease_id.to_string(), Arc::new(scope));
    }

    /// `forget(leaseId)`: each live session of the lease gets exit `None` and is terminated.
    pub fn forget(&self, lease_id: &str) {
        self.inner.forget(lease_id);
    }

    pub fn is_remembered(&self, lease_id: &str) -> bool {
        self.inner.tables().leases.contains_key(lease_id)
    }

    /// The remembered lease an open names, if the open's company and environment are the
    /// lease's (what `open` checks first): issue #38 moves its end before the terminal opens.
    pub fn scope_of_open(&self, params: &Value) -> Option<Arc<LoginLeaseScope>> {
        let lease_id = str_param(params, "providerLeaseId")?;
        let null = Value::Null;
        let matches = |scope: &&Arc<LoginLeaseScope>| {
            &scope.company_id == params.get("companyId").unwrap_or(&null)
                && &scope.environment_id == params.get("environmentId").unwrap_or(&null)
        };
        self.inner
            .tables()
            .leases
            .get(lease_id)
            .filter(matches)
            .cloned()
    }

    /// Open routes (reserved or connected).
    pub fn route_count(&self) -> usize {
        self.inner.tables().routes.len()
    }

    /// `shutdown()`: forgets every lease.
    pub fn shutdown(&self) {
        let ids: Vec<String> = self.inner.tables().leases.keys().cloned().collect();
        for id in ids {
            self.forget(&id);
        }
    }

    /// `open(params)` → `{workerSessionId}`.
    pub async fn open(&self, params: &Value, sink: Arc<dyn HostSink>) -> ProviderResult<Value> {
        let inner = &self.inner;
        let home = str_param(params, "sessionHome").unwrap_or_default();
        let template = str_param(params, "loginCommandKey").and_then(command_template);
        let template = match template {
            Some(t)
                if str_param(params, "driverKey") == Some("kubernetes")
                    && is_session_home(home) =>
            {
                t
            }
            _ => return Err(ProviderError::new(LOGIN_PTY_DESCRIPTOR_REJECTED)),
        };
        let lease_id = str_param(params, "providerLeaseId").unwrap_or_default();
        let route = js_compat::value::to_string_or_undefined(params.get("hostRouteId"));
        let null = Value::Null;
        let (scope, entry) = {
            let mut t = inner.tables();
            let scope = match t.leases.get(lease_id) {
                Some(scope)
                    if &scope.company_id == params.get("companyId").unwrap_or(&null)
                        && &scope.environment_id
                            == params.get("environmentId").unwrap_or(&null) =>
                {
                    scope.clone()
                }
                _ => return Err(ProviderError::new(LOGIN_LEASE_MISMATCH)),
            };
            if let Some(expires_at) = scope.expires_at.as_deref().filter(|e| !e.is_empty())
                && !is_later_than_now(expires_at, (inner.now_ms)())
            {
                return Err(ProviderError::new(LOGIN_LEASE_EXPIRED));
            }
            if t.routes.contains_key(&route) {
                return Err(ProviderError::new(LOGIN_ROUTE_ALREADY_OPEN));
            }
            if t.routes.len() >= GLOBAL_MAX_SESSIONS {
                return Err(ProviderError::new(LOGIN_LIMIT_REACHED));
            }
            let per_company = t
                .routes
                .values()
                .filter(|r| {
                    t.leases
                        .get(&r.lease)
                        .is_some_and(|s| s.company_id == scope.company_id)
                })
                .count();
            if per_company >= PER_COMPANY_MAX_SESSIONS {
                return Err(ProviderError::new(LOGIN_COMPANY_LIMIT_REACHED));
            }
            let entry = Arc::new(Entry {
                route: route.clone(),
                id: format!("pty-{}", js_compat::uuid::random_uuid()),
                lease: lease_id.to_string(),
                sink,
                state: Mutex::new(EntryState {
                    closed: false,
                    exited: false,
                    bytes: 0,
                    decoder: Utf8Decoder::keeping_bom(),
                    connection: None,
                }),
            });
            t.routes.insert(route.clone(), entry.clone());
            (scope, entry)
        };
        let quoted_home = format!("'{home}'");
        let line = template.replacen("=HOME ", &format!("={quoted_home} "), 1);
        let argv = vec![
            "/bin/sh".to_string(),
            "-c".into(),
            format!("mkdir -p {quoted_home} && {line}"),
        ];
        let io = Arc::new(EntryIo {
            manager: Arc::downgrade(inner),
            entry: entry.clone(),
        });
        let result = async {
            let connection = inner.connector.connect(scope.clone(), argv, io).await?;
            let cancelled = {
                let mut t = inner.tables();
                let same_scope = t
                    .leases
                    .get(&entry.lease)
                    .is_some_and(|s| Arc::ptr_eq(s, &scope));
                let mut st = entry.lock();
                if st.closed || !same_scope {
                    true
                } else {
                    st.connection = Some(connection.clone());
                    drop(st);
                    t.sessions.insert(entry.id.clone(), entry.clone());
                    false
                }
            };
            if cancelled {
                connection.close();
                return Err(ProviderError::new(LOGIN_OPEN_CANCELLED));
            }
            Ok(json!({ "workerSessionId": entry.id }))
        }
        .await;
        if result.is_err() {
            inner.terminate(&entry, true);
        }
        result
    }

    /// `input({workerSessionId, data})`: the data's UTF-8 length is capped at 64 KiB; unknown
    /// sessions are ignored.
    pub fn input(&self, params: &Value) -> ProviderResult<()> {
        let data = str_param(params, "data").unwrap_or_default();
        if data.len() > MAX_CHUNK {
            return Err(ProviderError::new(LOGIN_INPUT_TOO_LARGE));
        }
        let id = js_compat::value::to_string_or_undefined(params.get("workerSessionId"));
        let entry = self.inner.tables().sessions.get(&id).cloned();
        if let Some(entry) = entry {
            let connection = {
                let st = entry.lock();
                if st.closed || st.exited {
                    None
                } else {
                    st.connection.clone()
                }
            };
            if let Some(connection) = connection {
                connection.write(data);
            }
        }
        Ok(())
    }

    /// `stop({workerSessionId})`: exit `None`, then terminate with Ctrl-C.
    pub fn stop(&self, params: &Value) {
        let id = js_compat::value::to_string_or_undefined(params.get("workerSessionId"));
        let entry = self.inner.tables().sessions.get(&id).cloned();
        if let Some(entry) = entry {
            self.inner.exit_and_terminate(&entry, None, true);
        }
    }

    /// `close({hostRouteId})` → `{hostRouteId}`.
    pub fn close(&self, params: &Value) -> Value {
        let route = js_compat::value::to_string_or_undefined(params.get("hostRouteId"));
        let entry = self.inner.tables().routes.get(&route).cloned();
        if let Some(entry) = entry {
            self.inner.terminate(&entry, true);
        }
        json!({ "hostRouteId": params.get("hostRouteId").cloned().unwrap_or(Value::Null) })
    }

    /// Resizes a session's terminal (an extension; no hook of the original sends one).
    pub fn resize(&self, worker_session_id: &str, cols: u16, rows: u16) {
        let entry = self.inner.tables().sessions.get(worker_session_id).cloned();
        if let Some(entry) = entry {
            let connection = entry.lock().connection.clone();
            if let Some(connection) = connection {
                connection.resize(cols, rows);
            }
        }
    }
}

fn wall_now_ms() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_millis() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_home_pattern() {
        assert!(is_session_home(
            "/tmp/paperclip-adapter-login/0f8e2c1a-1b2c-4d3e-8f90-a1b2c3d4e5f6"
        ));
        assert!(!is_session_home(
            "/tmp/paperclip-adapter-login/0F8E2C1A-1b2c-4d3e-8f90-a1b2c3d4e5f6"
        ));
        assert!(!is_session_home(
            "/tmp/paperclip-adapter-login/0f8e2c1a-1b2c-4d3e-8f90-a1b2c3d4e5f6/x"
        ));
        assert!(!is_session_home("/tmp/paperclip-adapter-login/../x"));
        assert!(!is_session_home(
            "/tmp/other/0f8e2c1a-1b2c-4d3e-8f90-a1b2c3d4e5f6"
        ));
    }

    #[test]
    fn templates() {
        assert_eq!(command_template("claude"), Some("exec claude setup-token"));
        assert!(command_template("toString").is_none());
    }
}
