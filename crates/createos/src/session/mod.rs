//! The login PTY and duplex channel hooks: managed processes bound to a host route.
//!
//! A session is registered with the worker state under its kind, host route ID and worker
//! session ID. It is forgotten when its process ends (just before the host is told), when the
//! host closes it, and when its lease is released or destroyed or the worker shuts down (which
//! close it first). Its [`sandbox_core::HostSink`] lives only in the task that follows the
//! process, so nothing of the host is held once the process has ended or was stopped.

mod duplex;
mod login;

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::lease::state::{SessionEntry, SessionKind};
use crate::process::ManagedProcess;
use crate::provider::CreateOsProvider;

/// A route or session ID as the maps key it. IDs are strings; anything else gets a key starting
/// with NUL, which no host ID has, so it never matches a real session.
fn id_key(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(id)) => id.clone(),
        None => "\0undefined".to_owned(),
        Some(other) => format!("\0{other}"),
    }
}

/// `{key: params[key]}`, leaving the key out when it is absent (`undefined`), as JSON does.
fn echo(params: &Value, keys: &[&str]) -> Map<String, Value> {
    let mut out = Map::new();
    for key in keys {
        if let Some(value) = params.get(*key) {
            out.insert((*key).to_owned(), value.clone());
        }
    }
    out
}

impl CreateOsProvider {
    /// Registers a freshly opened session; the returned closure forgets it (for the follower,
    /// once the process has ended and the host was told).
    fn register(
        &self,
        kind: SessionKind,
        host_route_id: &str,
        worker_session_id: &str,
        provider_lease_id: &str,
        process: &Arc<ManagedProcess>,
    ) -> (Arc<SessionEntry>, impl FnOnce() + Send + 'static) {
        let entry = self.state().register_session(SessionEntry {
            kind,
            host_route_id: host_route_id.to_owned(),
            worker_session_id: worker_session_id.to_owned(),
            provider_lease_id: provider_lease_id.to_owned(),
            session: process.clone(),
        });
        let forgetter = self.state().session_forgetter();
        let forgotten = entry.clone();
        (entry, move || forgetter.forget(&forgotten))
    }

    /// A session registered after `onShutdown` took the others is closed at once.
    async fn close_if_shutting_down(&self, entry: &Arc<SessionEntry>, process: &ManagedProcess) {
        if self.state().is_shutting_down() {
            self.forget_session(entry);
            let _ = process.close().await;
        }
    }

    fn session_by_id(&self, kind: SessionKind, params: &Value) -> Option<Arc<SessionEntry>> {
        let id = id_key(params.get("workerSessionId"));
        self.state().with_sessions(|r| r.by_session(kind, &id))
    }

    fn session_by_route(&self, kind: SessionKind, params: &Value) -> Option<Arc<SessionEntry>> {
        let route = id_key(params.get("hostRouteId"));
        self.state().with_sessions(|r| r.by_route(kind, &route))
    }

    fn forget_session(&self, entry: &Arc<SessionEntry>) {
        self.state().with_sessions(|r| r.forget(entry));
    }
}
