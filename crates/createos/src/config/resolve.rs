//! Values derived from a parsed config at lease time: the API key, the egress allowlist and the
//! root filesystem. Validation does not call these, so their errors surface on first use.

use js_compat::string;
use sandbox_core::ProviderError;
use serde_json::Value;

use super::js_input::{clean_entry, has_nul_or_line_break, present, read};
use super::{CreateOsConfig, OFFICIAL_API_URL, messages, unique};

/// The environment variable holding the host's key for the official endpoint.
pub const API_KEY_ENV: &str = "CREATEOS_API_KEY";

/// The API key to send. `env_api_key` is the value of `CREATEOS_API_KEY` (`None` when unset); it
/// is a parameter so callers and tests decide where it comes from.
///
/// The host's key may only go to the official endpoint: a custom endpoint without its own key is
/// refused even when the variable is set, so a board-edited URL cannot exfiltrate it.
pub fn resolve_api_key(
    config: &CreateOsConfig,
    env_api_key: Option<&str>,
) -> Result<String, ProviderError> {
    let configured = config.api_key.as_deref();
    if configured.is_none_or(str::is_empty) && config.api_url != OFFICIAL_API_URL {
        return Err(ProviderError::new(messages::CUSTOM_ENDPOINT_NEEDS_KEY));
    }
    // Only an absent config key falls back (`??`); the env value is trimmed, the config one
    // already was.
    let key = configured
        .or_else(|| env_api_key.map(string::trim))
        .unwrap_or("");
    // CR/LF/NUL would corrupt the request header.
    if key.is_empty() || has_nul_or_line_break(key) {
        return Err(ProviderError::new(messages::API_KEY_REQUIRED));
    }
    Ok(key.to_owned())
}

/// [`resolve_api_key`] with `CREATEOS_API_KEY` read from this process's environment. A value
/// that is not UTF-8 is decoded lossily, as Node does.
pub fn resolve_api_key_from_env(config: &CreateOsConfig) -> Result<String, ProviderError> {
    let env = std::env::var_os(API_KEY_ENV).map(|value| value.to_string_lossy().into_owned());
    resolve_api_key(config, env.as_deref())
}

/// The sandbox egress allowlist: the config's list, then the run's `networkEgress.allowFqdns`
/// and `allowCidrs` from `settings` (the execution workspace settings, `None` when absent),
/// de-duplicated. A lone `"*"` means "allow all" and is kept; next to real entries it is dropped
/// so a task grant narrows rather than widens egress.
pub fn resolve_egress_allowlist(
    config: &CreateOsConfig,
    settings: Option<&Value>,
) -> Result<Vec<String>, ProviderError> {
    // `settings?.networkEgress`: null or absent settings mean no grant.
    let network = match present(settings) {
        None => None,
        Some(settings) => present(read(Some(settings), "networkEgress")?),
    };
    let (fqdns, cidrs) = match network {
        None => (Vec::new(), Vec::new()),
        Some(Value::Object(_)) => (
            network_list(read(network, "allowFqdns")?)?,
            network_list(read(network, "allowCidrs")?)?,
        ),
        Some(_) => return Err(ProviderError::new(messages::NETWORK_EGRESS_NOT_OBJECT)),
    };
    let merged = unique(
        config
            .egress_allowlist
            .iter()
            .cloned()
            .chain(fqdns)
            .chain(cidrs),
    );
    if merged.len() > 1 {
        return Ok(merged.into_iter().filter(|entry| entry != "*").collect());
    }
    Ok(merged)
}

/// One `networkEgress` list: absent/null is empty; otherwise an array of clean strings, trimmed.
/// Unlike the config list these are not de-duplicated or lower-cased here.
fn network_list(value: Option<&Value>) -> Result<Vec<String>, ProviderError> {
    let Some(value) = present(value) else {
        return Ok(Vec::new());
    };
    value
        .as_array()
        .and_then(|list| {
            list.iter()
                .map(|entry| clean_entry(entry).map(str::to_owned))
                .collect()
        })
        .ok_or_else(|| ProviderError::new(messages::NETWORK_EGRESS_BAD_LIST))
}

/// The root filesystem for a run: the adapter's entry in `rootfsByAdapter` when the run names a
/// (non-empty) adapter that has one, else the config's `rootfs`, which may be unset.
///
/// A plain map lookup: the original's JS object would also have matched inherited names such as
/// `constructor`; that accident is deliberately not reproduced.
pub fn resolve_rootfs(config: &CreateOsConfig, adapter_type: Option<&str>) -> Option<String> {
    adapter_type
        .filter(|adapter| !adapter.is_empty())
        .and_then(|adapter| config.rootfs_by_adapter.get(adapter))
        .or(config.rootfs.as_ref())
        .cloned()
}
