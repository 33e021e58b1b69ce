//! The hooks of [`KubernetesProvider`](crate::KubernetesProvider), one file per hook family, and
//! the config stage every hook starts with.
//!
//! - `acquire`: acquire; [`probe`]: the probe and its checks; [`lifecycle`]: resume, release,
//!   destroy, realize workspace, shutdown;
//! - [`execute`]: a command in the lease's pod (or the job backend's log);
//! - [`sync`]: native file sync in and out of the lease's pod;
//! - [`login`]: the login-PTY hooks, over the worker's [`crate::login::LoginPtyManager`];
//! - `table`: the provider's hook table ([`sandbox_core::Provider`]): which hooks it implements
//!   and the method each one forwards to.
//!
//! The config stage here reproduces what each hook of the original does before it talks to the
//! cluster: the early returns that precede parsing, then `schema.parse`, which rejects with a
//! `ZodError`. validateConfig (which never reaches the cluster) is here too; health and setup are
//! on the provider itself.

mod acquire;
pub mod execute;
mod execute_call;
mod execute_run;
pub mod lifecycle;
pub mod login;
pub mod probe;
pub mod sync;
mod table;

use sandbox_core::{HookValue, ProviderError, ProviderResult};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Value, json};

use crate::config::adapters::adapter_defaults_with_images;
use crate::config::{Backend, KubernetesConfig, Normalized};
pub use crate::config::{parse_config_for_hook, zod_error};
use crate::error::Error;
use crate::lease::egress_warnings::validate_config_warning;
use crate::provider::KubernetesProvider;
use js_compat::value;

pub use crate::exec::EXEC_FLOOR_MS;
pub use crate::lease::{DEFAULT_REMOTE_CWD, LeaseView};
pub use acquire::generate_bootstrap_token;
pub use execute::{EXECUTE_POLL_MS, SANDBOX_POD_UNRESOLVED, sandbox_not_ready_message};
pub use lifecycle::{
    ACQUIRE_CLEANUP_INCOMPLETE, PAPERCLIP_SERVER_NAMESPACE, PROBE_FAILED_SUMMARY, probe_ok_summary,
};
pub use sync::{
    SYNC_POD_UNRESOLVED, SYNC_REQUIRES_LEASE_ID, SYNC_REQUIRES_REMOTE_DIR,
    sync_backend_unsupported_message,
};

/// validateConfig's answer for `backend: job`: the driver advertises a login PTY, which only
/// the sandbox-cr backend can serve.
pub const JOB_BACKEND_NO_LOGIN_PTY: &str =
    "The job backend cannot support login PTY advertised by the Kubernetes driver; use sandbox-cr.";
/// The probe's summary for a config that does not parse.
pub const INVALID_CONFIG_SUMMARY: &str = "Invalid Kubernetes provider configuration.";
/// execute's stderr for a lease without a provider lease id.
pub const NO_PROVIDER_LEASE_ID: &str = "No provider lease ID available for execution.";

/// A cluster failure as the hook rejects with it.
pub(crate) fn cluster_err(err: impl Into<Error>) -> ProviderError {
    ProviderError::from(err.into())
}

/// `onEnvironmentValidateConfig({config})`: `{ok: false, errors}` for an invalid config or the
/// job backend; otherwise `{ok: true, normalizedConfig, warnings?}`. Adapter-defaults failures
/// are not caught there, so they reject the hook.
pub fn validate_config(params: &Value) -> ProviderResult<HookValue> {
    let config = match KubernetesConfig::parse_input(params.get("config")) {
        Ok(config) => config,
        Err(issues) => return Ok(json!({ "ok": false, "errors": issues.messages() }).into()),
    };
    if config.backend == Backend::Job {
        return Ok(json!({ "ok": false, "errors": [JOB_BACKEND_NO_LOGIN_PTY] }).into());
    }
    let defaults = adapter_defaults_with_images(
        &config.adapter_type,
        config.adapters.as_deref(),
        config.runtime_images.as_ref(),
    )?;
    let warning = validate_config_warning(&config, &defaults.allow_fqdns);
    Ok(HookValue::typed(Valid { config, warning }))
}

/// A successful validate result, `{ok: true, normalizedConfig, warnings?}`, written from the
/// typed config.
struct Valid {
    config: KubernetesConfig,
    /// `warnings: []` becomes `undefined`, which JSON drops.
    warning: Option<String>,
}

impl Serialize for Valid {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut result = serializer.serialize_map(None)?;
        result.serialize_entry("ok", &true)?;
        result.serialize_entry("normalizedConfig", &Normalized(&self.config))?;
        if let Some(warning) = &self.warning {
            result.serialize_entry("warnings", std::slice::from_ref(warning))?;
        }
        result.end()
    }
}

/// `onEnvironmentProbe`'s answer when the config does not parse; `None` when it does (the probe
/// then goes on to the cluster).
pub fn probe_config_error(params: &Value) -> Option<Value> {
    let issues = KubernetesConfig::parse_input(params.get("config")).err()?;
    Some(json!({
        "ok": false,
        "summary": INVALID_CONFIG_SUMMARY,
        "metadata": { "errors": issues.messages() },
    }))
}

impl KubernetesProvider {
    /// `onEnvironmentValidateConfig`. Can throw, as the original does when adapter defaults
    /// cannot be resolved.
    pub fn validate_config(&self, params: &Value) -> ProviderResult<HookValue> {
        validate_config(params)
    }
}

/// How a hook's config stage ends.
#[derive(Debug, Clone, PartialEq)]
pub enum ConfigStage {
    /// The hook returns this without parsing its config (JS `undefined` is `Value::Null`).
    Return(Value),
    /// The config parsed; the hook goes on to the cluster with it.
    Proceed(Box<KubernetesConfig>),
}

/// The stage's end for a hook that goes on: parse, or reject with the `ZodError`.
fn proceed(params: &Value) -> ProviderResult<ConfigStage> {
    parse_config_for_hook(params).map(|config| ConfigStage::Proceed(Box::new(config)))
}

/// onEnvironmentAcquireLease: parses first thing.
pub fn config_stage_of_acquire(params: &Value) -> ProviderResult<ConfigStage> {
    proceed(params)
}

/// onEnvironmentResumeLease: parses first thing (there is no lease-id guard).
pub fn config_stage_of_resume(params: &Value) -> ProviderResult<ConfigStage> {
    proceed(params)
}

/// onEnvironmentReleaseLease: a falsy `providerLeaseId` resolves `undefined` before parsing.
pub fn config_stage_of_release(params: &Value) -> ProviderResult<ConfigStage> {
    if !value::truthy(params.get("providerLeaseId")) {
        return Ok(ConfigStage::Return(Value::Null));
    }
    proceed(params)
}

/// onEnvironmentDestroyLease: same guard as release.
pub fn config_stage_of_destroy(params: &Value) -> ProviderResult<ConfigStage> {
    config_stage_of_release(params)
}

/// onEnvironmentExecute: a lease without a truthy `providerLeaseId` gets a failed result before
/// parsing, `{exitCode: 1, signal: null, timedOut: false, stdout: "", stderr}`. `signal: null` is
/// G-exec2's (every execute result carries it, this one too; the recorded 1bbb5810 vector has
/// none, see `tests/golden_config.rs`); the key sits where every other execute result has it.
/// A missing `lease` makes the original's property read throw a TypeError.
pub fn config_stage_of_execute(params: &Value) -> ProviderResult<ConfigStage> {
    let lease_id = match params.get("lease") {
        None => {
            return Err(ProviderError::cannot_read_properties(
                "undefined",
                "providerLeaseId",
            ));
        }
        Some(Value::Null) => {
            return Err(ProviderError::cannot_read_properties(
                "null",
                "providerLeaseId",
            ));
        }
        Some(lease) => lease.get("providerLeaseId"),
    };
    if !value::truthy(lease_id) {
        return Ok(ConfigStage::Return(json!({
            "exitCode": 1,
            "signal": null,
            "timedOut": false,
            "stdout": "",
            "stderr": NO_PROVIDER_LEASE_ID,
        })));
    }
    proceed(params)
}

#[cfg(test)]
mod tests {
    use sandbox_core::ErrorClass;

    use super::*;

    #[test]
    fn release_and_destroy_skip_parsing_without_a_lease_id() {
        for id in [json!(null), json!(""), json!(0), json!(false)] {
            let params = json!({"config": {}, "providerLeaseId": id});
            assert_eq!(
                config_stage_of_release(&params),
                Ok(ConfigStage::Return(Value::Null))
            );
            assert_eq!(
                config_stage_of_destroy(&params),
                Ok(ConfigStage::Return(Value::Null))
            );
        }
        let missing = json!({"config": {}});
        assert_eq!(
            config_stage_of_release(&missing),
            Ok(ConfigStage::Return(Value::Null))
        );
    }

    #[test]
    fn resume_parses_even_without_a_lease_id() {
        let err =
            config_stage_of_resume(&json!({"config": {}, "providerLeaseId": null})).unwrap_err();
        assert_eq!(err.class, ErrorClass::ZodError);
    }

    #[test]
    fn execute_without_a_lease_id_returns_the_g_exec2_result_before_parsing() {
        for id in [json!(null), json!(""), json!(0), json!(false)] {
            let params = json!({"config": {"backend": 7}, "lease": {"providerLeaseId": id}});
            let Ok(ConfigStage::Return(result)) = config_stage_of_execute(&params) else {
                panic!("expected an early return for providerLeaseId {id}");
            };
            // Compared as text: the key order is part of the result.
            assert_eq!(
                result.to_string(),
                r#"{"exitCode":1,"signal":null,"timedOut":false,"stdout":"","stderr":"No provider lease ID available for execution."}"#
            );
        }
    }

    #[test]
    fn execute_without_lease_object_is_a_type_error() {
        let err = config_stage_of_execute(&json!({"config": {}})).unwrap_err();
        assert_eq!(err.class, ErrorClass::TypeError);
        assert_eq!(
            err.message,
            "Cannot read properties of undefined (reading 'providerLeaseId')"
        );
    }

    #[test]
    fn valid_config_proceeds() {
        let params = json!({"config": {"inCluster": true}, "providerLeaseId": "pc-x"});
        assert!(matches!(
            config_stage_of_release(&params),
            Ok(ConfigStage::Proceed(_))
        ));
        let params = json!({"config": {"inCluster": true}, "lease": {"providerLeaseId": "pc-x"}});
        assert!(matches!(
            config_stage_of_execute(&params),
            Ok(ConfigStage::Proceed(_))
        ));
    }

    #[test]
    fn missing_config_is_required() {
        let err = parse_config_for_hook(&json!({})).unwrap_err();
        assert_eq!(
            err.message,
            "[\n  {\n    \"code\": \"invalid_type\",\n    \"expected\": \"object\",\n    \"received\": \"undefined\",\n    \"path\": [],\n    \"message\": \"Required\"\n  }\n]"
        );
    }
}
