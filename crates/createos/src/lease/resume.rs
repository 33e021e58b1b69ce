//! `onEnvironmentResumeLease`: reuse a kept-warm sandbox, or report it expired so the host
//! destroys it and acquires a fresh one.
//!
//! Expired without a request when the lease was made under another shape, snapshot, root
//! filesystem, region, auto-pause or base egress (strict equality: keys missing from older
//! leases never match). Otherwise: `GET` the sandbox (gone → expired), `PUT` its egress
//! *before* it runs again, poll it to running (resuming it if paused), and `cat` the marker,
//! which must equal the recorded one exactly. A 404 anywhere means expired; any other failure
//! is reported, since it does not prove the sandbox is lost. Resume never deletes anything.

use sandbox_core::{ProviderError, ProviderResult};
use serde_json::{Value, json};

use super::acquire::is_zero;
use super::state::{MARKER, WorkerState, metadata_matches};
use crate::client::{Clients, Desired, identifier};
use crate::config::{CreateOsConfig, parse_config_arg, resolve_rootfs};
use crate::error::Result;
use crate::messages;
use crate::signal::Signal;
use js_compat::value;

fn expired() -> Value {
    json!({ "providerLeaseId": null, "metadata": { "expired": true } })
}

/// `^[0-9a-f-]{36}$`.
pub(crate) fn is_marker(value: Option<&Value>) -> bool {
    value.and_then(Value::as_str).is_some_and(|m| {
        m.len() == 36
            && m.bytes()
                .all(|b| b == b'-' || b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

pub(crate) async fn resume(
    state: &WorkerState,
    clients: &Clients,
    params: &Value,
) -> ProviderResult<Value> {
    let metadata = params.get("leaseMetadata");
    if !metadata_matches(params, metadata)? {
        return Err(ProviderError::new(messages::LEASE_NOT_OURS));
    }
    let id = params.get("providerLeaseId");
    let scope = WorkerState::scope_key(clients, params, id)?;
    if state.is_closing_or_unconfirmed(&scope) {
        return Err(ProviderError::new(messages::RESUME_DURING_CLEANUP));
    }
    // `metadata_matches` proved it is an object.
    let md = metadata
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let Some(marker) = md
        .get("marker")
        .filter(|m| is_marker(Some(m)))
        .and_then(Value::as_str)
    else {
        return Ok(expired());
    };
    let config = parse_config_arg(params.get("config"))?;
    if !same_request(&md, &config) {
        return Ok(expired());
    }
    let client = clients.client(&config)?;
    let signal = Signal::timeout(config.timeout_ms);
    let checked: Result<Option<String>> = async {
        let id = identifier(id)?;
        let sandbox = client.get_sandbox(&id, Some(&signal)).await?;
        if matches!(sandbox.status.as_str(), "destroyed" | "failed") {
            return Ok(None);
        }
        let egress = match md.get("effectiveEgressAllowlist") {
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| v.as_str().map(str::to_owned))
                .collect::<Option<Vec<String>>>(),
            _ => None,
        };
        let Some(egress) = egress else {
            return Ok(None);
        };
        client.set_egress(&id, &egress, &signal).await?;
        client.transition(&id, Desired::Running, &signal).await?;
        let result = client
            .exec(&id, "/bin/cat", &[MARKER], Some(&signal))
            .await?;
        let same_marker = result.get("stdout").and_then(Value::as_str) == Some(marker);
        Ok((is_zero(result.get("exit_code")) && same_marker).then_some(id))
    }
    .await;
    match checked {
        Ok(Some(id)) => {
            state.register_lease(params, &id)?;
            let mut metadata = md;
            metadata.insert("resumedLease".into(), json!(true));
            Ok(json!({ "providerLeaseId": id, "metadata": metadata }))
        }
        Ok(None) => Ok(expired()),
        Err(error) if error.is_status(404) => Ok(expired()),
        Err(error) => Err(error.into()),
    }
}

/// Whether the lease was made with what the config asks for now.
fn same_request(md: &serde_json::Map<String, Value>, config: &CreateOsConfig) -> bool {
    let adapter_type = md.get("adapterType").and_then(Value::as_str);
    let requested_rootfs = value::opt_str(resolve_rootfs(config, adapter_type).as_deref());
    let auto_pause = if config.reuse_lease {
        json!(config.auto_pause_after_seconds)
    } else {
        Value::Null
    };
    let base_egress_matches = match md.get("baseEgressAllowlist") {
        Some(Value::Array(items)) => {
            items.len() == config.egress_allowlist.len()
                && items
                    .iter()
                    .zip(&config.egress_allowlist)
                    .all(|(item, entry)| item.as_str() == Some(entry.as_str()))
        }
        _ => config.egress_allowlist.is_empty(),
    };
    value::strict_eq(md.get("shape"), Some(&json!(config.shape)))
        && value::strict_eq(
            md.get("snapshot"),
            Some(&value::opt_str(config.snapshot.as_deref())),
        )
        && value::strict_eq(md.get("requestedRootfs"), Some(&requested_rootfs))
        && value::strict_eq(
            md.get("region"),
            Some(&value::opt_str(config.region.as_deref())),
        )
        && value::strict_eq(md.get("autoPauseAfterSeconds"), Some(&auto_pause))
        && base_egress_matches
}
