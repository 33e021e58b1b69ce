//! The Kubernetes sandbox provider (upstream paperclipai/paperclip at 1bbb5810), in plain Rust.
//!
//! See `../shared/reference/kubernetes.md`.

pub mod acquire_precheck;
pub mod adapters;
pub mod builders;
pub mod cluster;
pub mod config;
pub mod egress_warnings;
pub mod exec;
pub mod hooks;
pub mod js;
pub mod js_date;
pub mod kube_client;
pub mod lease_expiry;
pub mod login;
pub mod namespace;
pub mod orchestrate;
mod provider;
pub mod runtime;
pub mod sync;

pub use config::KubernetesConfig;
pub use namespace::{derive_company_slug, derive_tenant_namespace};
pub use provider::{
    ConfigStage, INVALID_CONFIG_SUMMARY, JOB_BACKEND_NO_LOGIN_PTY, KubernetesProvider,
    NO_PROVIDER_LEASE_ID, config_stage_of_acquire, config_stage_of_destroy,
    config_stage_of_execute, config_stage_of_release, config_stage_of_resume,
    parse_config_for_hook, probe_config_error, validate_config, zod_error,
};
