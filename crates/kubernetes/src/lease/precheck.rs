//! The part of `onEnvironmentAcquireLease` that runs before any cluster access (its first
//! five steps): everything that can refuse a lease without side effects is decided here, so a
//! refused lease never leaves a half-provisioned tenant behind.

use serde_json::Value;

use crate::builders::runtime_images::{
    check_image_reference, invalid_runtime_image_error, runtime_image,
};
use crate::config::adapters::{
    AdapterDefaults, adapter_defaults_with_images, resolve_run_adapter_type,
};
use crate::config::parse_config_for_hook;
use crate::config::{Backend, KubernetesConfig};
use crate::lease::egress_warnings::acquire_console_warning;
use crate::lease::expiry::{BoundedLeaseDeadline, compute_bounded_lease_deadline};
use crate::lease::namespace::derive_tenant_namespace;
use sandbox_core::{ProviderError, ProviderResult};

/// A Job's deadline counts from its start and the job backend has no exec channel for the login
/// PTY that requests deadlines, so it cannot honour one.
pub const JOB_BACKEND_CANNOT_HONOR_DEADLINE: &str = "The Kubernetes job backend cannot honor a requested lease deadline; use the sandbox-cr backend.";

/// What acquire has settled before it talks to the cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct AcquirePlan {
    pub config: KubernetesConfig,
    pub namespace: String,
    /// The run's adapter: the per-run hint when given, else the config's.
    pub effective_adapter_type: String,
    pub adapter_defaults: AdapterDefaults,
    /// The run's image: `runtimeImages`' or the table's with `imageRegistry` applied, checked
    /// against the reference grammar.
    pub image: String,
    /// Present when the caller requested a deadline (sandbox-cr only).
    pub bounded_deadline: Option<BoundedLeaseDeadline>,
}

/// Acquire's checks, in the original's order: parse the config (a `ZodError`), derive the
/// namespace, resolve the run's adapter and its defaults (unknown adapters are refused), warn
/// about standard-mode egress, bound the requested deadline, and refuse a deadline on the job
/// backend, then (issue #37) check the run's image reference. `warn` receives each `console.warn` line, which is printed even when a later check
/// fails. `now_ms` is the clock the deadline is bounded against.
pub fn prepare_acquire(
    params: &Value,
    now_ms: f64,
    warn: &mut dyn FnMut(&str),
) -> ProviderResult<AcquirePlan> {
    let config = parse_config_for_hook(params)?;
    let namespace = tenant_namespace(&config, params.get("companyId"))?;
    let effective_adapter_type =
        resolve_run_adapter_type(params.get("adapterType"), &config.adapter_type);
    let adapter_defaults = adapter_defaults_with_images(
        &effective_adapter_type,
        config.adapters.as_deref(),
        config.runtime_images.as_ref(),
    )?;
    if let Some(line) = acquire_console_warning(&config, &adapter_defaults.allow_fqdns) {
        warn(&line);
    }
    let bounded_deadline =
        compute_bounded_lease_deadline(params.get("requestedExpiresAt"), now_ms)?;
    if bounded_deadline.is_some() && config.backend != Backend::SandboxCr {
        return Err(ProviderError::new(JOB_BACKEND_CANNOT_HONOR_DEADLINE));
    }
    // Last, so that every refusal of the original comes first, as it did; still before the
    // cluster is touched, so an invalid reference never leaves a pod in `InvalidImageName`.
    let image = runtime_image(&config, &effective_adapter_type, &adapter_defaults);
    if let Err(reason) = check_image_reference(&image) {
        return Err(invalid_runtime_image_error(
            &effective_adapter_type,
            &image,
            &reason,
        ));
    }
    Ok(AcquirePlan {
        config,
        namespace,
        effective_adapter_type,
        adapter_defaults: adapter_defaults.into_owned(),
        image,
        bounded_deadline,
    })
}

/// `deriveTenantNamespace(config, params.companyId)`. Without a configured slug the company id is
/// lower-cased, which throws V8's TypeError when it is not a string.
pub(crate) fn tenant_namespace(
    config: &KubernetesConfig,
    company_id: Option<&Value>,
) -> ProviderResult<String> {
    match company_id {
        Some(Value::String(id)) => Ok(derive_tenant_namespace(config, id)),
        // The id is not read at all when the slug is configured.
        _ if config.company_slug.is_some() => Ok(derive_tenant_namespace(config, "")),
        None | Some(Value::Null) => {
            let receiver = if company_id.is_none() {
                "undefined"
            } else {
                "null"
            };
            Err(ProviderError::cannot_read_properties(
                receiver,
                "toLowerCase",
            ))
        }
        Some(_) => Err(ProviderError::not_a_function("input.toLowerCase")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sandbox_core::ErrorClass;
    use serde_json::json;

    const NOW: f64 = 1_767_225_600_000.0;

    fn run(params: Value) -> (ProviderResult<AcquirePlan>, Vec<String>) {
        let mut lines = Vec::new();
        let result = prepare_acquire(&params, NOW, &mut |line| lines.push(line.to_string()));
        (result, lines)
    }

    #[test]
    fn unknown_run_adapter_fails_before_warning() {
        let (result, lines) = run(
            json!({"companyId": "c", "adapterType": "aider_local", "config": {"inCluster": true}}),
        );
        assert_eq!(
            result.unwrap_err().message,
            "Unknown adapter type: aider_local"
        );
        assert!(lines.is_empty());
    }

    #[test]
    fn an_unknown_run_adapter_named_by_runtime_images_is_accepted() {
        let (result, _) = run(json!({
            "companyId": "c",
            "adapterType": "aider_local",
            "config": {"inCluster": true, "egressMode": "cilium", "imageRegistry": "https://ghcr.io/acme",
                       "runtimeImages": {"aider_local": "r.example/aider:1"}},
        }));
        let plan = result.unwrap();
        assert_eq!(plan.effective_adapter_type, "aider_local");
        assert_eq!(
            plan.image, "r.example/aider:1",
            "imageRegistry leaves it alone"
        );
        assert!(plan.adapter_defaults.env_keys.is_empty());
    }

    #[test]
    fn the_image_has_the_registry_without_its_scheme() {
        for registry in [
            "https://ghcr.io/acme",
            "ghcr.io/acme",
            "http://ghcr.io/acme/",
        ] {
            let (result, _) = run(json!({
                "companyId": "c",
                "config": {"inCluster": true, "egressMode": "cilium", "imageRegistry": registry},
            }));
            assert_eq!(
                result.unwrap().image,
                "ghcr.io/acme/agent-runtime-claude:git-38d8f371722b315d2fb3bbaa512518742e33ce2f"
            );
        }
    }

    #[test]
    fn an_invalid_image_fails_last_naming_adapter_and_reference() {
        let (result, lines) = run(json!({
            "companyId": "c",
            "config": {"inCluster": true, "egressAllowCidrs": ["10.0.0.0/8"],
                       "runtimeImages": {"claude_local": "GHCR.io/acme/Claude:v1"}},
        }));
        assert_eq!(
            result.unwrap_err().message,
            "Kubernetes runtime image for adapter \"claude_local\" is not a valid image reference: \"GHCR.io/acme/Claude:v1\" (the repository path component \"Claude\" has upper-case letters; repository paths are lower-case); set a valid reference (host/path:tag or host/path@sha256:…) for it in runtimeImages."
        );
        assert_eq!(lines.len(), 1, "the warning still comes first");
        // The original's refusals keep their place before it.
        let (result, _) = run(json!({
            "companyId": "c",
            "requestedExpiresAt": "2026-01-01T01:00:00Z",
            "config": {"inCluster": true, "backend": "job", "runtimeImages": {"claude_local": "Bad"}},
        }));
        assert_eq!(
            result.unwrap_err().message,
            JOB_BACKEND_CANNOT_HONOR_DEADLINE
        );
    }

    #[test]
    fn job_backend_refuses_a_deadline_after_warning() {
        let (result, lines) = run(json!({
            "companyId": "c",
            "requestedExpiresAt": "2026-01-01T01:00:00Z",
            "config": {"inCluster": true, "backend": "job", "egressAllowCidrs": ["10.0.0.0/8"]},
        }));
        assert_eq!(
            result.unwrap_err().message,
            JOB_BACKEND_CANNOT_HONOR_DEADLINE
        );
        assert_eq!(lines.len(), 1);
        assert!(lines[0].starts_with("[plugin-kubernetes] egressMode=standard cannot enforce FQDN-based egress rules. The following FQDNs"));
    }

    #[test]
    fn job_backend_without_deadline_proceeds() {
        let (result, _) = run(
            json!({"companyId": "Acme", "config": {"inCluster": true, "backend": "job", "egressMode": "cilium"}}),
        );
        let plan = result.unwrap();
        assert_eq!(plan.namespace, "paperclip-acme");
        assert_eq!(plan.effective_adapter_type, "claude_local");
        assert_eq!(plan.bounded_deadline, None);
    }

    #[test]
    fn sandbox_cr_gets_its_bounded_deadline() {
        let (result, lines) = run(json!({
            "companyId": "c",
            "adapterType": " codex_local ",
            "requestedExpiresAt": "2026-01-01T01:00:00Z",
            "config": {"inCluster": true, "egressMode": "cilium"},
        }));
        let plan = result.unwrap();
        assert!(lines.is_empty(), "no warning in cilium mode");
        assert_eq!(plan.effective_adapter_type, "codex_local");
        assert_eq!(
            plan.bounded_deadline.unwrap().expires_at,
            "2026-01-01T01:00:00.000Z"
        );
    }

    #[test]
    fn company_id_must_be_a_string_without_a_slug() {
        let (result, _) = run(json!({"config": {"inCluster": true}}));
        let err = result.unwrap_err();
        assert_eq!(
            (err.class, err.message.as_str()),
            (
                ErrorClass::TypeError,
                "Cannot read properties of undefined (reading 'toLowerCase')"
            )
        );
        let (result, _) = run(json!({"config": {"inCluster": true, "companySlug": "acme"}}));
        assert_eq!(result.unwrap().namespace, "paperclip-acme");
    }

    #[test]
    fn config_errors_come_first() {
        let (result, _) =
            run(json!({"companyId": "c", "adapterType": "aider_local", "config": {}}));
        assert_eq!(result.unwrap_err().class, ErrorClass::ZodError);
    }
}
