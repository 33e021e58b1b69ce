//! A Sandbox's own end, as the agent-sandbox controller (v1.0.1) ends it: once
//! `spec.shutdownTime` has passed, the Sandbox is marked expired (Ready `False`, reason
//! `SandboxExpired`), its pod is deleted, and then, with `spec.shutdownPolicy: Delete`, the
//! Sandbox itself (the garbage collector then takes what it owns); with `Retain` (the CRD's
//! default) the Sandbox stays, its status reduced to its conditions. A shutdown time moved
//! forward before it passes simply moves the end (the controller waits on the latest one).

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use tokio::sync::broadcast;

use super::events::{Heard, next};
use super::fields::condition;
use crate::kubernetes::deletion::{Propagation, delete_object};
use crate::kubernetes::state::App;
use crate::kubernetes::store::{Event, ObjKey};

/// The reason of the expired Sandbox's Ready condition (`SandboxReasonExpired`).
pub const SANDBOX_EXPIRED: &str = "SandboxExpired";

fn now_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_millis() as f64)
}

/// `spec.shutdownTime` as Unix milliseconds, if set and readable.
fn shutdown_ms(sb: &Value) -> Option<f64> {
    js_compat::date::parse(sb.pointer("/spec/shutdownTime")?.as_str()?)
}

/// Whether the Sandbox's shutdown time has come.
pub fn expired(sb: &Value) -> bool {
    shutdown_ms(sb).is_some_and(|at| now_ms() >= at)
}

/// The next store event, or a resync when the Sandbox's shutdown time comes first.
pub async fn next_or_expiry(
    rx: &mut broadcast::Receiver<Arc<Event>>,
    app: &App,
    sb: &Value,
) -> Heard {
    let Some(at) = shutdown_ms(sb) else {
        return next(rx, app).await;
    };
    let wait = Duration::from_millis((at - now_ms()).max(0.0) as u64);
    tokio::select! {
        heard = next(rx, app) => heard,
        woke = app.sleep(wait) => if woke { Heard::Resync } else { Heard::Stop },
    }
}

/// Ends an expired Sandbox: the expired mark, its pod deleted, then the Sandbox by its policy.
pub fn expire(app: &Arc<App>, key: &ObjKey, pod: Option<&ObjKey>) {
    app.store.update::<()>(key, |o| {
        let generation = o["metadata"]["generation"].clone();
        let ready = condition(
            "Ready",
            false,
            SANDBOX_EXPIRED,
            "Sandbox has expired",
            &generation,
        );
        o["status"] = json!({"conditions": [ready]});
        Ok(())
    });
    if let Some(pod) = pod {
        let _ = delete_object(app, pod, Some(Propagation::Background), None, None);
    }
    let delete = app
        .store
        .get(key)
        .and_then(|sb| sb.pointer("/spec/shutdownPolicy").cloned())
        .is_some_and(|policy| policy == "Delete");
    if delete {
        let _ = delete_object(app, key, Some(Propagation::Background), None, None);
    }
}
