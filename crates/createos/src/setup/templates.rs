//! Templates: capturing a setup sandbox (it is paused and becomes the template itself; nothing
//! is copied or deleted) and deleting one.

use reqwest::Method;
use sandbox_core::{ProviderError, ProviderResult};
use serde_json::{Value, json};

use super::{js_display, owned_setup};
use crate::client::{Clients, CreateOsClient, Desired, object};
use crate::config::parse_config_arg;
use crate::error::{Error, Result};
use crate::js::{prop, truthy};
use crate::lease::acquire::is_zero;
use crate::lease::state::{MARKER, valid_timeout};
use crate::messages;
use crate::signal::Signal;

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
    if !truthy(params.get("providerLeaseId")) {
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
    let marker = prop(params.get("setupMetadata"), "setupMarker")
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
            "capturedAt": iso_now(),
            "sourceTemplateRefRedacted": truthy(params.get("sourceTemplateRef")),
            "previousTemplateRefRedacted": truthy(params.get("previousTemplateRef")),
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
            &js_display(&kind),
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

/// `new Date().toISOString()`: `YYYY-MM-DDTHH:MM:SS.mmmZ` in UTC.
pub(crate) fn iso_now() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    iso_from_millis(now.as_millis() as i64)
}

fn iso_from_millis(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    let rest = ms.rem_euclid(86_400_000);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3_600_000,
        rest / 60_000 % 60,
        rest / 1000 % 60,
        rest % 1000
    )
}

#[cfg(test)]
mod tests {
    use super::iso_from_millis;

    #[test]
    fn iso_dates_match_js() {
        assert_eq!(iso_from_millis(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            iso_from_millis(1_700_000_000_123),
            "2023-11-14T22:13:20.123Z"
        );
        assert_eq!(iso_from_millis(951_782_400_000), "2000-02-29T00:00:00.000Z");
    }
}
