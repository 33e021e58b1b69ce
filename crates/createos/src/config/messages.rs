//! The config error texts, verbatim from the contract (`tests/data/contract/createos-errors.txt`).
//!
//! Hosts and users match on these strings, so they are data, not prose: never reword them.

pub const API_URL_REQUIRED: &str = "CreateOS requires an API URL.";
pub const API_URL_INVALID: &str = "CreateOS API URL is invalid.";
pub const API_URL_NOT_ORIGIN: &str = "CreateOS API URL must be an HTTPS origin (optionally ending in /v1); HTTP is allowed on loopback only.";
pub const SHAPE_REQUIRED: &str = "CreateOS requires a shape from its shape catalog.";
pub const TIMEOUT_MS_RANGE: &str = "timeoutMs must be an integer between 1 and 86400000.";
pub const REUSE_LEASE_NOT_BOOLEAN: &str = "reuseLease must be a boolean.";
pub const AUTO_PAUSE_RANGE: &str = "autoPauseAfterSeconds must be an integer between 60 and 86400.";
pub const ROOTFS_BY_ADAPTER_NOT_OBJECT: &str =
    "rootfsByAdapter must be an object of adapter names to root filesystems.";
pub const ROOTFS_BY_ADAPTER_BAD_ENTRY: &str =
    "rootfsByAdapter must contain non-empty adapter and root filesystem strings.";
pub const EGRESS_ALLOWLIST_INVALID: &str =
    "egressAllowlist must be an array of non-empty host or CIDR strings.";
pub const NETWORK_EGRESS_BAD_LIST: &str =
    "networkEgress allowlists must contain non-empty strings.";
pub const NETWORK_EGRESS_NOT_OBJECT: &str = "networkEgress must be an object.";
pub const CUSTOM_ENDPOINT_NEEDS_KEY: &str = "Custom CreateOS API endpoints require an explicit environment API key; the host fallback is only available for https://api.sb.createos.sh.";
pub const API_KEY_REQUIRED: &str =
    "CreateOS requires an API key in the environment config or CREATEOS_API_KEY.";

/// What `onEnvironmentValidateConfig` reported when something other than an `Error` was thrown.
/// Every failure of this port is a `ProviderError`, so validation itself never produces it; it is
/// kept for callers that must report a failure with no message of its own (e.g. a caught panic).
pub const INVALID_CONFIGURATION: &str = "Invalid CreateOS configuration.";

/// `${key} must be a non-empty string.`, the message of every optional/required text field.
pub fn not_a_non_empty_string(key: &str) -> String {
    format!("{key} must be a non-empty string.")
}
