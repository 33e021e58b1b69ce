//! `onEnvironmentProbe`: a real sandbox and a real command, then the sandbox is deleted.
//!
//! The outcome is data (`{ok, summary}`), except that a failed final delete rejects the hook
//! with the delete's own error, as the original did: a probe must never hide a leaked sandbox.
//! The message cannot name the sandbox without differing from the original's, so a warning on
//! the worker log (which the host shows with the plugin's logs) names it for whoever deletes it.

use sandbox_core::{HostSink, LogLevel, ProviderError, ProviderResult};
use serde_json::{Value, json};

use super::acquire::acquire;
use super::state::CWD;
use crate::client::Clients;
use crate::config::parse_config_arg;
use crate::exec::execute_stream;
use crate::messages;
use crate::signal::Signal;
use js_compat::value;

const READY: &str = "paperclip-createos-ready";

/// `stop` is the worker's stop signal: shutdown interrupts the probe, which still deletes its
/// sandbox before it returns.
pub(crate) async fn probe(
    clients: &Clients,
    params: &Value,
    stop: &Signal,
    sink: &dyn HostSink,
) -> ProviderResult<Value> {
    let mut acquired: Option<Value> = None;
    let outcome = async {
        let mut acquire_params = params.clone();
        if let Some(map) = acquire_params.as_object_mut() {
            map.insert("runId".into(), json!("probe"));
        }
        let lease = acquire(clients, &acquire_params, stop).await?;
        acquired = lease.get("providerLeaseId").cloned();
        let config = parse_config_arg(params.get("config"))?;
        let client = clients.client(&config)?;
        let mut exec_params = params.clone();
        if let Some(map) = exec_params.as_object_mut() {
            map.insert("lease".into(), lease);
            map.insert("command".into(), json!("/bin/echo"));
            map.insert("args".into(), json!([READY]));
            map.insert("cwd".into(), json!(CWD));
        }
        let signal = stop.with_timeout(config.timeout_ms);
        let result = execute_stream(&client, &exec_params, &signal, None).await?;
        if !result.succeeded() || !result.stdout.contains(READY) {
            return Err(ProviderError::new(messages::PROBE_COMMAND_FAILED));
        }
        Ok(())
    }
    .await;
    let result = match outcome {
        Ok(()) => json!({ "ok": true, "summary": messages::PROBE_SUCCEEDED }),
        Err(error) => json!({ "ok": false, "summary": error.message }),
    };
    // Never leave the probe's sandbox behind, and never hide that its deletion failed.
    if let Some(id) = acquired.filter(|id| value::truthy(Some(id))) {
        let config = parse_config_arg(params.get("config"))?;
        if let Err(error) = clients.client(&config)?.destroy_sandbox(&id, None).await {
            let named = value::to_string(&id);
            sink.log(LogLevel::Warn, &messages::probe_sandbox_not_deleted(&named));
            return Err(error.into());
        }
    }
    Ok(result)
}
