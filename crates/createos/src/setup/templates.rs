//! Templates: capturing a setup sandbox (it is paused and becomes the template itself; nothing
//! is copied or deleted) and deleting one.

use reqwest::Method;
use sandbox_core::{ProviderError, ProviderResult};
use serde_json::{Value, json};

use super::owned_setup;
use crate::client::{Clients, CreateOsClient, Desired, object};
use crate::config::parse_config_arg;
use crate::error::{Error, Result};
use crate::lease::acquire::is_zero;
use crate::lease::state::{MARKER, valid_timeout};
use crate::messages;
use crate::signal::Signal;
use js_compat::value;

/// Running, and its workspace marker is exactly the setup marker.
async fn verify_marker(
    client: &CreateOsClient,
    id: &str,
    marker: &str,
    signal: &Signal,
) -> Result<()> {
    client.transition(id, Desired::Running, signal).await?;
    let path = format!("/sandboxes/{id}/exec");
    let data = client
        .json(
            Method::POST,
            &path,
            Some(json!({ "cmd": "/bin/cat", "args": [MARKER] })),
            Some(signal),
        )
        .await?;
    let result = object(data.get("result"))?;
    if !is_zero(result.get("exit_code")) || result.get("stdout") != Some(&json!(marker)) {
        return Err(Error::msg(messages::SETUP_IDENTITY_UNVERIFIED));
    }
    Ok(())
}

/// `onEnvironmentCaptureTemplate`: `{templateRef, templateKind: "snapshot", metadata}`.
pub(crate) async fn capture_template(clients: &Clients, params: &Value) -> ProviderResult<Value> {
    if !value::truthy(params.get("providerLeaseId")) {
        return Err(ProviderError::new(messages::CAPTURE_WITHOUT_LEASE));
    }
    let id_value = owned_setup(params)?;
    let config = parse_config_arg(params.get("config"))?;
    let timeout_ms = match params.get("timeoutMs").filter(|v| !v.is_null()) {
        None => Some(config.timeout_ms),
        Some(value) => valid_timeout(value),
    }
    .ok_or_else(|| ProviderError::new(messages::INVALID_CAPTURE_TIMEOUT))?;
    let client = clients.client(&config)?;
    let signal = Signal::timeout(timeout_ms);
    let id = id_value.as_str().unwrap_or_default();
    let marker = value::prop(params.get("setupMetadata"), "setupMarker")
        .and_then(Value::as_str)
        .unwrap_or_default();
    verify_marker(&client, id, marker, &signal).await?;
    // A paused sandbox is what `/fork` accepts: this setup sandbox is the template.
    client.transition(id, Desired::Paused, &signal).await?;
    Ok(json!({
        "templateRef": id,
        "templateKind": "snapshot",
        "metadata": {
            "provider": "createos",
            "capturedAt": js_compat::date::now_iso_string(),
            "sourceTemplateRefRedacted": value::truthy(params.get("sourceTemplateRef")),
            "previousTemplateRefRedacted": value::truthy(params.get("previousTemplateRef")),
        },
    }))
}

/// `onEnvironmentDeleteTemplate`: deletes the template sandbox (already gone counts as
/// deleted). No ownership check, as in the original.
pub(crate) async fn delete_template(clients: &Clients, params: &Value) -> ProviderResult<Value> {
    let kind = match params.get("templateKind") {
        None | Some(Value::Null) => json!("snapshot"),
        Some(kind) => kind.clone(),
    };
    if kind != json!("snapshot") {
        return Err(ProviderError::new(messages::template_kind_unsupported(
            &value::to_string(&kind),
        )));
    }
    let config = parse_config_arg(params.get("config"))?;
    let client = clients.client(&config)?;
    let template = params.get("templateRef").unwrap_or(&Value::Null);
    client
        .destroy_sandbox(template, Some(&Signal::timeout(config.timeout_ms)))
        .await?;
    Ok(json!({
        "deleted": true,
        "metadata": {
            "provider": "createos",
            "templateKind": "snapshot",
            "templateRefRedacted": true,
            "reason": params.get("reason").cloned().unwrap_or(Value::Null),
        },
    }))
}
