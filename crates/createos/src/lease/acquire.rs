//! `acquire`: a new sandbox for a lease (or the probe), created from a root filesystem or
//! forked from a captured template, with its workspace and lease marker in place.
//!
//! Calls, all under one `timeoutMs` deadline:
//! 1. `GET /rootfs` when neither a snapshot nor a root filesystem is configured for the adapter;
//! 2. `POST /sandboxes` — or, with a snapshot, `GET` the template, `POST …/fork` (409 retried),
//!    polls until running, `PATCH` auto-pause;
//! 3. polls `GET /sandboxes/{id}` until running (resuming it if it is paused);
//! 4. `POST …/exec` `mkdir -p -- '/paperclip-workspace'` (one-shot);
//! 5. `PUT …/files?path=<marker>` with a fresh UUID.
//!
//! If 3–5 fail, the sandbox is deleted; when that fails as well the error says cleanup is
//! unconfirmed and names the sandbox.
//!
//! Beyond the original, which could leave a sandbox to nobody in two cases:
//! - **A create whose outcome is unknown**: the API has no idempotency key, so the create body
//!   carries a random ownership token as the sandbox's `name` (unique per user among live
//!   sandboxes). When the create fails in a way that does not prove nothing was made (a reply
//!   lost, cut or unreadable, a 5xx, the deadline), the account's sandboxes are listed page by
//!   page (`GET /sandboxes?limit=500&offset=…`) and the one with that name is deleted before the
//!   error is returned; if that fails too, the error names the sandbox to delete. A fork cannot
//!   carry a name: after a fork whose outcome is unknown nothing is deleted, and the error names
//!   the template and the time of the request.
//! - **Worker shutdown mid-acquire**: the acquire runs under a child of the worker's stop
//!   signal, so shutdown interrupts it where it is, and the steps above delete what it had made;
//!   shutdown waits for that (see `state::WorkerState::begin_acquisition`).

use reqwest::Method;
use sandbox_core::{ProviderError, ProviderResult};
use serde_json::{Map, Value, json};

use super::state::{CWD, MARKER};
use crate::client::{Clients, CreateOsClient, Desired, object, ownership_name};
use crate::config::{parse_config_arg, resolve_egress_allowlist, resolve_rootfs};
use crate::error::{Error, Result};
use crate::exec::shell_quote;
use crate::messages;
use crate::signal::Signal;
use js_compat::uuid::random_uuid;
use js_compat::value;

/// A lease as the hooks return it: `{providerLeaseId, metadata}`.
///
/// `stop` is the worker's stop signal (shutdown): the acquire's deadline is a child of it.
pub(crate) async fn acquire(
    clients: &Clients,
    params: &Value,
    stop: &Signal,
) -> ProviderResult<Value> {
    // An idle timer cannot promise an expiry.
    if value::truthy(params.get("requestedExpiresAt")) {
        return Err(ProviderError::new(messages::EXPIRY_UNSUPPORTED));
    }
    let config = parse_config_arg(params.get("config"))?;
    let client = clients.client(&config)?;
    let signal = stop.with_timeout(config.timeout_ms);
    let adapter_type = params.get("adapterType").and_then(Value::as_str);
    let requested_rootfs = resolve_rootfs(&config, adapter_type);
    let effective_rootfs = match config.snapshot {
        Some(_) => None,
        None => Some(
            client
                .resolve_rootfs(requested_rootfs.as_deref(), &signal)
                .await?,
        ),
    };
    let effective_egress =
        resolve_egress_allowlist(&config, params.get("executionWorkspaceSettings"))?;
    // Leases without an issue or workspace (login, probe) are disposable even with reuse on.
    let effective_auto_pause = (config.reuse_lease
        && (value::truthy(params.get("issueId"))
            || value::truthy(params.get("executionWorkspaceId"))))
    .then_some(config.auto_pause_after_seconds);
    let id = match &config.snapshot {
        Some(snapshot) => {
            client
                .fork_sandbox(snapshot, &signal, &effective_egress, effective_auto_pause)
                .await?
        }
        None => {
            client
                .create_sandbox(
                    &signal,
                    effective_rootfs.as_deref(),
                    &effective_egress,
                    effective_auto_pause,
                    &ownership_name(),
                )
                .await?
        }
    };
    let marker = random_uuid();
    if let Err(error) = prepare_workspace(&client, &id, &marker, &signal).await {
        if client
            .destroy_sandbox(&Value::from(id.as_str()), None)
            .await
            .is_err()
        {
            return Err(ProviderError::new(messages::setup_cleanup_unconfirmed(&id)));
        }
        return Err(error.into());
    }
    let mut metadata = Map::new();
    metadata.insert("provider".into(), json!("createos"));
    metadata.insert("apiUrl".into(), json!(config.api_url));
    value::insert_defined(&mut metadata, "companyId", params.get("companyId"));
    value::insert_defined(&mut metadata, "environmentId", params.get("environmentId"));
    metadata.insert("remoteCwd".into(), json!(CWD));
    metadata.insert("shellCommand".into(), json!("bash"));
    metadata.insert("marker".into(), json!(marker));
    metadata.insert("shape".into(), json!(config.shape));
    metadata.insert(
        "snapshot".into(),
        value::opt_str(config.snapshot.as_deref()),
    );
    metadata.insert("rootfs".into(), value::opt_str(effective_rootfs.as_deref()));
    metadata.insert(
        "requestedRootfs".into(),
        value::opt_str(requested_rootfs.as_deref()),
    );
    let adapter = params.get("adapterType").cloned().unwrap_or(Value::Null);
    metadata.insert("adapterType".into(), adapter);
    metadata.insert("region".into(), value::opt_str(config.region.as_deref()));
    metadata.insert("baseEgressAllowlist".into(), json!(config.egress_allowlist));
    metadata.insert("effectiveEgressAllowlist".into(), json!(effective_egress));
    metadata.insert("reuseLease".into(), json!(config.reuse_lease));
    metadata.insert("autoPauseAfterSeconds".into(), json!(effective_auto_pause));
    Ok(json!({ "providerLeaseId": id, "metadata": metadata }))
}

/// Running, the workspace directory made (this also proves the image has Bash), the marker
/// written.
pub(crate) async fn prepare_workspace(
    client: &CreateOsClient,
    id: &str,
    marker: &str,
    signal: &Signal,
) -> Result<()> {
    client.transition(id, Desired::Running, signal).await?;
    let script = format!("mkdir -p -- {}", shell_quote(CWD)?);
    let path = format!("/sandboxes/{id}/exec");
    let data = client
        .json(
            Method::POST,
            &path,
            Some(json!({ "cmd": "/bin/bash", "args": ["-lc", script] })),
            Some(signal),
        )
        .await?;
    if !is_zero(object(data.get("result"))?.get("exit_code")) {
        return Err(Error::msg(messages::WORKSPACE_PREPARATION_FAILED));
    }
    client
        .upload(id, MARKER, reqwest::Body::from(marker.to_owned()), signal)
        .await
}

/// `value === 0`.
pub(crate) fn is_zero(value: Option<&Value>) -> bool {
    value.and_then(Value::as_f64) == Some(0.0)
}
