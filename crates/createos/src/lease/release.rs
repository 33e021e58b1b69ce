//! `onEnvironmentReleaseLease` and `onEnvironmentDestroyLease`. Both resolve with nothing (no
//! termination receipt, as v0.3.0).
//!
//! Sessions of the lease are closed and its tracked calls aborted and awaited first. Then a
//! destroy, or a release of a lease that may not be kept warm, deletes the sandbox (404 counts
//! as deleted). A lease is kept warm only when the environment reuses leases and the lease
//! recorded the auto-pause window configured now, because the service's idle timer is then the
//! guard against a forgotten sandbox; keeping it warm sends nothing at all. Release never
//! pauses.

use sandbox_core::{ProviderError, ProviderResult};
use serde_json::{Value, json};

use super::state::{WorkerState, metadata_matches};
use crate::client::Clients;
use crate::config::parse_config_arg;
use crate::messages;
use js_compat::value;

pub(crate) async fn release(
    state: &WorkerState,
    clients: &Clients,
    params: &Value,
    destroy: bool,
) -> ProviderResult<Option<Value>> {
    let id = params.get("providerLeaseId");
    let Some(id) = id.filter(|id| value::truthy(Some(id))) else {
        return Ok(None);
    };
    let metadata = params.get("leaseMetadata");
    if !metadata_matches(params, metadata)? {
        return Err(ProviderError::new(messages::LEASE_NOT_OURS));
    }
    let scope = WorkerState::scope_key(clients, params, Some(id))?;
    let _closing = state.begin_closing(&scope, id.as_str())?;
    if let Err(error) = state
        .stop_lease_sessions(id.as_str().unwrap_or_default(), destroy)
        .await
    {
        state.mark_unconfirmed(&scope);
        return Err(error);
    }
    state.stop_active(&scope).await;
    let config = parse_config_arg(params.get("config"))?;
    let client = clients.client(&config)?;
    let guarded = config.reuse_lease
        && value::strict_eq(
            value::prop(metadata, "autoPauseAfterSeconds"),
            Some(&json!(config.auto_pause_after_seconds)),
        );
    if destroy || !guarded {
        client.destroy_sandbox(id, None).await?;
        state.clear_unconfirmed(&scope);
    } else if state.is_unconfirmed(&scope) {
        return Err(ProviderError::new(messages::CLEANUP_UNCONFIRMED));
    }
    // Kept warm: the service pauses it after the idle window; resume accepts either state.
    Ok(None)
}
