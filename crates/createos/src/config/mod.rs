//! CreateOS environment config (`parseConfig` of the original) and the validation hook's result.
//!
//! Validation is strictly ordered and stops at the first failure, because the message the user
//! sees depends on which check runs first: apiUrl, URL shape, shape, timeoutMs, reuseLease,
//! autoPauseAfterSeconds, rootfsByAdapter, egressAllowlist, then apiKey, snapshot, rootfs, region.

mod api_url;
mod js_input;
pub mod messages;
mod resolve;
#[cfg(test)]
mod tests;

use indexmap::{IndexMap, IndexSet};
use js_compat::{json, string, value};
use sandbox_core::{HookValue, ProviderError};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value, json};

pub use api_url::OFFICIAL_API_URL;
pub use resolve::{
    API_KEY_ENV, resolve_api_key, resolve_api_key_from_env, resolve_egress_allowlist,
    resolve_rootfs,
};

use js_input::{clean_entry, has_nul_or_line_break, present, read, text};

pub const DEFAULT_TIMEOUT_MS: u64 = 300_000;
pub const MAX_TIMEOUT_MS: u64 = 86_400_000;
pub const DEFAULT_AUTO_PAUSE_AFTER_SECONDS: u64 = 600;
pub const MIN_AUTO_PAUSE_AFTER_SECONDS: u64 = 60;
pub const MAX_AUTO_PAUSE_AFTER_SECONDS: u64 = 86_400;

/// A validated CreateOS environment config. Text fields are trimmed; `api_url` is an origin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateOsConfig {
    pub api_url: String,
    pub api_key: Option<String>,
    pub shape: String,
    pub snapshot: Option<String>,
    pub rootfs: Option<String>,
    /// Adapter type to root filesystem, in the key order JS would list the object in.
    pub rootfs_by_adapter: IndexMap<String, String>,
    pub egress_allowlist: Vec<String>,
    pub region: Option<String>,
    pub timeout_ms: u64,
    pub reuse_lease: bool,
    pub auto_pause_after_seconds: u64,
}

/// `normalizedConfig`: the typed config's fields, keys in the order the original emitted them.
struct Normalized<'a>(&'a CreateOsConfig);

impl Serialize for Normalized<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let config = self.0;
        let mut out = serializer.serialize_map(Some(11))?;
        out.serialize_entry("apiUrl", &config.api_url)?;
        out.serialize_entry("apiKey", &config.api_key)?;
        out.serialize_entry("shape", &config.shape)?;
        out.serialize_entry("snapshot", &config.snapshot)?;
        out.serialize_entry("rootfs", &config.rootfs)?;
        out.serialize_entry("rootfsByAdapter", &Entries(&config.rootfs_by_adapter))?;
        out.serialize_entry("egressAllowlist", &config.egress_allowlist)?;
        out.serialize_entry("region", &config.region)?;
        out.serialize_entry("timeoutMs", &config.timeout_ms)?;
        out.serialize_entry("reuseLease", &config.reuse_lease)?;
        out.serialize_entry("autoPauseAfterSeconds", &config.auto_pause_after_seconds)?;
        out.end()
    }
}

/// An ordered map as a JSON object, in its order.
struct Entries<'a>(&'a IndexMap<String, String>);

impl Serialize for Entries<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0)
    }
}

/// A successful validate result, `{ok: true, normalizedConfig}`, written from the typed config
/// (no `Value` tree built only to be written out).
struct Valid(CreateOsConfig);

impl Serialize for Valid {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut out = serializer.serialize_map(Some(2))?;
        out.serialize_entry("ok", &true)?;
        out.serialize_entry("normalizedConfig", &Normalized(&self.0))?;
        out.end()
    }
}

/// Parses a raw environment config.
pub fn parse_config(raw: &Value) -> Result<CreateOsConfig, ProviderError> {
    parse_config_arg(Some(raw))
}

/// Parses a raw config that may be JS `undefined` (`None`, the key was absent from the params).
/// `null` and `undefined` fail with V8's TypeError text, as the original's first property read did.
pub fn parse_config_arg(raw: Option<&Value>) -> Result<CreateOsConfig, ProviderError> {
    let api_url =
        text(raw, "apiUrl")?.ok_or_else(|| ProviderError::new(messages::API_URL_REQUIRED))?;
    let api_url = api_url::api_origin(&api_url)?;
    let shape = text(raw, "shape")?.ok_or_else(|| ProviderError::new(messages::SHAPE_REQUIRED))?;
    let timeout_ms = bounded_integer(
        read(raw, "timeoutMs")?,
        DEFAULT_TIMEOUT_MS,
        1,
        MAX_TIMEOUT_MS,
    )
    .ok_or_else(|| ProviderError::new(messages::TIMEOUT_MS_RANGE))?;
    let reuse_lease = match present(read(raw, "reuseLease")?) {
        None => false,
        Some(Value::Bool(flag)) => *flag,
        Some(_) => return Err(ProviderError::new(messages::REUSE_LEASE_NOT_BOOLEAN)),
    };
    let auto_pause_after_seconds = bounded_integer(
        read(raw, "autoPauseAfterSeconds")?,
        DEFAULT_AUTO_PAUSE_AFTER_SECONDS,
        MIN_AUTO_PAUSE_AFTER_SECONDS,
        MAX_AUTO_PAUSE_AFTER_SECONDS,
    )
    .ok_or_else(|| ProviderError::new(messages::AUTO_PAUSE_RANGE))?;
    let rootfs_by_adapter = parse_rootfs_by_adapter(read(raw, "rootfsByAdapter")?)?;
    let egress_allowlist = parse_egress_allowlist(read(raw, "egressAllowlist")?)?;
    // The remaining text fields were read while building the result, so their errors come last
    // and in this order.
    let api_key = text(raw, "apiKey")?;
    let snapshot = text(raw, "snapshot")?;
    let rootfs = text(raw, "rootfs")?;
    let region = text(raw, "region")?;
    Ok(CreateOsConfig {
        api_url,
        api_key,
        shape,
        snapshot,
        rootfs,
        rootfs_by_adapter,
        egress_allowlist,
        region,
        timeout_ms,
        reuse_lease,
        auto_pause_after_seconds,
    })
}

/// `onEnvironmentValidateConfig` on the config itself: `{ok:true, normalizedConfig}` or
/// `{ok:false, errors:[message]}`. Never fails.
pub fn validate_config(raw: &Value) -> HookValue {
    validation_result(parse_config(raw))
}

/// `onEnvironmentValidateConfig` on the whole hook params: reads `params.config` first, so an
/// absent config reports the `undefined` TypeError text rather than the `null` one.
pub fn validate_config_params(params: &Value) -> HookValue {
    validation_result(read(Some(params), "config").and_then(parse_config_arg))
}

fn validation_result(parsed: Result<CreateOsConfig, ProviderError>) -> HookValue {
    match parsed {
        Ok(config) => HookValue::typed(Valid(config)),
        Err(error) => json!({ "ok": false, "errors": [error.message] }).into(),
    }
}

/// A JS-integer number within `min..=max`, with `default` for null/absent. Strings, fractions
/// and out-of-range values give `None`. The result is a Rust integer so that `1e3` or `1000.0`
/// in the input serialise as `1000`, as JS prints them.
fn bounded_integer(value: Option<&Value>, default: u64, min: u64, max: u64) -> Option<u64> {
    let Some(value) = present(value) else {
        return Some(default);
    };
    if !value::is_integer(value) {
        return None;
    }
    let number = value.as_f64()?;
    (number >= min as f64 && number <= max as f64).then_some(number as u64)
}

/// Adapter keys are trimmed and checked after trimming (a trailing CR is trimmed away); values
/// are checked untrimmed and stored trimmed. A later key that trims to an earlier one replaces
/// its value but keeps its position, and `__proto__` is dropped, as assignment to a JS object did.
fn parse_rootfs_by_adapter(
    value: Option<&Value>,
) -> Result<IndexMap<String, String>, ProviderError> {
    let Some(value) = present(value) else {
        return Ok(IndexMap::new());
    };
    let Value::Object(entries) = value else {
        return Err(ProviderError::new(messages::ROOTFS_BY_ADAPTER_NOT_OBJECT));
    };
    let mut assigned = Map::new();
    for (adapter, rootfs) in json::entries(entries) {
        let key = string::trim(adapter);
        let key_ok = !key.is_empty() && !has_nul_or_line_break(key);
        let rootfs = clean_entry(rootfs)
            .filter(|_| key_ok)
            .ok_or_else(|| ProviderError::new(messages::ROOTFS_BY_ADAPTER_BAD_ENTRY))?;
        json::assign(&mut assigned, key.to_owned(), Value::from(rootfs));
    }
    // Trimming can turn a key into an array index (" 1" -> "1"), which JS lists first.
    Ok(json::ordered(assigned)
        .into_iter()
        .filter_map(|(adapter, rootfs)| match rootfs {
            Value::String(rootfs) => Some((adapter, rootfs)),
            _ => None,
        })
        .collect())
}

/// Trimmed host/CIDR entries, de-duplicated keeping the first occurrence.
fn parse_egress_allowlist(value: Option<&Value>) -> Result<Vec<String>, ProviderError> {
    let Some(value) = present(value) else {
        return Ok(Vec::new());
    };
    let entries = value
        .as_array()
        .and_then(|list| list.iter().map(clean_entry).collect::<Option<Vec<&str>>>())
        .ok_or_else(|| ProviderError::new(messages::EGRESS_ALLOWLIST_INVALID))?;
    Ok(unique(entries.into_iter().map(str::to_owned)))
}

/// `[...new Set(list)]`: first occurrence wins, order kept.
pub(crate) fn unique(list: impl IntoIterator<Item = String>) -> Vec<String> {
    list.into_iter()
        .collect::<IndexSet<String>>()
        .into_iter()
        .collect()
}
