//! Interactive setup: a sandbox the user prepares by hand (`createos sandbox shell <id>`),
//! later captured as a template (a paused sandbox that new leases fork from).
//!
//! - start: fork the source template (snapshot templates only) or create from the root
//!   filesystem, disable auto-pause, prepare the workspace with a fresh setup marker. A failure
//!   after the sandbox exists deletes it; if that fails too, the error names the sandbox.
//! - get: the session while the sandbox exists (resumed if paused), `missing` once it is gone.
//! - cancel: deletes the setup sandbox.
//!
//! Setup sandboxes are not cached as leases of this worker.

mod templates;

use sandbox_core::{ProviderError, ProviderResult};
use serde_json::{Map, Value, json};

pub(crate) use templates::{capture_template, delete_template};

use crate::client::{Clients, Desired, ownership_name};
use crate::config::{CreateOsConfig, parse_config_arg, resolve_rootfs};
use crate::lease::acquire::prepare_workspace;
use crate::lease::resume::is_marker;
use crate::lease::state::metadata_matches;
use crate::messages;
use crate::signal::Signal;
use js_compat::uuid::random_uuid;
use js_compat::value;

/// `setupMetadataMatches`: the lease checks plus `sandboxId` naming this sandbox and a marker.
pub(crate) fn setup_metadata_matches(
    params: &Value,
    id: &Value,
    metadata: Option<&Value>,
) -> ProviderResult<bool> {
    Ok(metadata_matches(params, metadata)?
        && value::strict_eq(value::prop(metadata, "sandboxId"), Some(id))
        && is_marker(value::prop(metadata, "setupMarker")))
}

/// The setup ID of get/capture/cancel, once ownership is proven.
fn owned_setup(params: &Value) -> ProviderResult<&Value> {
    let id = params.get("providerLeaseId").unwrap_or(&Value::Null);
    if !setup_metadata_matches(params, id, params.get("setupMetadata"))? {
        return Err(ProviderError::new(messages::SETUP_NOT_OURS));
    }
    Ok(id)
}

fn missing_setup() -> Value {
    json!({
        "providerLeaseId": null,
        "status": "missing",
        "connectionSummary": null,
        "connectionPayload": null,
        "metadata": { "provider": "createos", "missing": true },
    })
}

/// `connectionSummary` and `connectionPayload` (the shell command only when asked for).
fn connection(map: &mut Map<String, Value>, id: &str, expires_at: &Value, include_payload: bool) {
    map.insert(
        "connectionSummary".into(),
        json!({
            "type": "createos_cli",
            "hostRedacted": true,
            "portRedacted": true,
            "commandRedacted": !include_payload,
            "expiresAt": expires_at,
            "metadata": { "provider": "createos" },
        }),
    );
    let payload = if include_payload {
        json!({
            "type": "createos_cli",
            "command": format!("createos sandbox shell {id}"),
            "expiresAt": expires_at,
            "metadata": { "provider": "createos" },
        })
    } else {
        Value::Null
    };
    map.insert("connectionPayload".into(), payload);
}

/// `params.key ?? null`.
fn or_null(params: &Value, key: &str) -> Value {
    params.get(key).cloned().unwrap_or(Value::Null)
}

/// `onEnvironmentStartInteractiveSetup`.
pub(crate) async fn start_interactive_setup(
    clients: &Clients,
    params: &Value,
) -> ProviderResult<Value> {
    let config = parse_config_arg(params.get("config"))?;
    let source = params.get("sourceTemplateRef");
    let source_kind = params.get("sourceTemplateKind");
    if value::truthy(source)
        && value::truthy(source_kind)
        && source_kind != Some(&json!("snapshot"))
    {
        return Err(ProviderError::new(messages::setup_source_kind_unsupported(
            &value::to_string(source_kind.unwrap_or(&Value::Null)),
        )));
    }
    let client = clients.client(&config)?;
    let signal = Signal::timeout(config.timeout_ms);
    let setup_marker = random_uuid();
    let id = if value::truthy(source) {
        let source = match source {
            Some(Value::String(source)) => source.as_str(),
            // Not a string: no identifier can match it.
            _ => return Err(ProviderError::new(messages::INVALID_RESOURCE_ID)),
        };
        client
            .fork_sandbox(source, &signal, &config.egress_allowlist, None)
            .await?
    } else {
        let rootfs = client
            .resolve_rootfs(resolve_rootfs(&config, None).as_deref(), &signal)
            .await?;
        let name = ownership_name();
        client
            .create_sandbox(
                &signal,
                Some(&rootfs),
                &config.egress_allowlist,
                None,
                &name,
            )
            .await?
    };
    let prepared = async {
        // Setup must stay available until the host session ends or the user finishes it.
        client.set_auto_pause(&id, None, &signal).await?;
        prepare_workspace(&client, &id, &setup_marker, &signal).await
    };
    if let Err(error) = prepared.await {
        if client
            .destroy_sandbox(&Value::from(id.as_str()), None)
            .await
            .is_err()
        {
            return Err(ProviderError::new(
                messages::interactive_setup_cleanup_unconfirmed(&id),
            ));
        }
        return Err(error.into());
    }
    Ok(setup_session(&config, params, &id, &setup_marker))
}

fn setup_session(config: &CreateOsConfig, params: &Value, id: &str, marker: &str) -> Value {
    let expires_at = or_null(params, "expiresAt");
    let mut session = Map::new();
    session.insert("providerLeaseId".into(), json!(id));
    session.insert("status".into(), json!("waiting_for_user"));
    session.insert("expiresAt".into(), expires_at.clone());
    connection(&mut session, id, &expires_at, true);
    let mut metadata = Map::new();
    metadata.insert("provider".into(), json!("createos"));
    metadata.insert("apiUrl".into(), json!(config.api_url));
    value::insert_defined(&mut metadata, "companyId", params.get("companyId"));
    value::insert_defined(&mut metadata, "environmentId", params.get("environmentId"));
    metadata.insert("sandboxId".into(), json!(id));
    metadata.insert("setupMarker".into(), json!(marker));
    metadata.insert("expiresAt".into(), expires_at);
    metadata.insert(
        "sourceTemplateRefRedacted".into(),
        json!(value::truthy(params.get("sourceTemplateRef"))),
    );
    session.insert("metadata".into(), Value::Object(metadata));
    Value::Object(session)
}

/// `onEnvironmentGetInteractiveSetup`.
pub(crate) async fn get_interactive_setup(
    clients: &Clients,
    params: &Value,
) -> ProviderResult<Value> {
    if !value::truthy(params.get("providerLeaseId")) {
        return Ok(missing_setup());
    }
    let id_value = owned_setup(params)?;
    let config = parse_config_arg(params.get("config"))?;
    let client = clients.client(&config)?;
    let signal = Signal::timeout(config.timeout_ms);
    let id = id_value.as_str().unwrap_or_default();
    let checked = async {
        let sandbox = client.get_sandbox(id, Some(&signal)).await?;
        if matches!(sandbox.status.as_str(), "destroyed" | "failed") {
            return Ok(false);
        }
        client.transition(id, Desired::Running, &signal).await?;
        Ok::<bool, crate::error::Error>(true)
    };
    match checked.await {
        Ok(true) => {}
        Ok(false) => return Ok(missing_setup()),
        Err(error) if error.is_status(404) => return Ok(missing_setup()),
        Err(error) => return Err(error.into()),
    }
    let metadata = params.get("setupMetadata").cloned().unwrap_or(Value::Null);
    let expires_at = match value::prop(Some(&metadata), "expiresAt") {
        Some(Value::String(at)) => json!(at),
        _ => Value::Null,
    };
    let include = params.get("includeConnectionPayload") == Some(&Value::Bool(true));
    let mut session = Map::new();
    session.insert("providerLeaseId".into(), json!(id));
    session.insert("status".into(), json!("waiting_for_user"));
    session.insert("expiresAt".into(), expires_at.clone());
    connection(&mut session, id, &expires_at, include);
    session.insert("metadata".into(), metadata);
    Ok(Value::Object(session))
}

/// `onEnvironmentCancelInteractiveSetup`.
pub(crate) async fn cancel_interactive_setup(
    clients: &Clients,
    params: &Value,
) -> ProviderResult<Value> {
    let reason = or_null(params, "reason");
    let missing = || json!({ "status": "missing", "metadata": { "provider": "createos", "missing": true, "reason": reason } });
    if !value::truthy(params.get("providerLeaseId")) {
        return Ok(missing());
    }
    let id_value = owned_setup(params)?;
    let config = parse_config_arg(params.get("config"))?;
    let client = clients.client(&config)?;
    let id = id_value.as_str().unwrap_or_default();
    match client
        .get_sandbox(id, Some(&Signal::timeout(config.timeout_ms)))
        .await
    {
        Ok(_) => {}
        Err(error) if error.is_status(404) => return Ok(missing()),
        Err(error) => return Err(error.into()),
    }
    client
        .destroy_sandbox(id_value, Some(&Signal::timeout(config.timeout_ms)))
        .await?;
    let status = if reason == json!("timed_out") {
        "timed_out"
    } else {
        "cancelled"
    };
    Ok(json!({ "status": status, "metadata": { "provider": "createos", "reason": reason } }))
}
