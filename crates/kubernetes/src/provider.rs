//! The hook surface of the Kubernetes provider.

use sandbox_core::ProviderResult;
use serde_json::{Value, json};

use crate::config;

/// One provider instance per worker process.
#[derive(Debug, Default)]
pub struct KubernetesProvider {}

impl KubernetesProvider {
    pub fn new() -> Self {
        Self::default()
    }

    /// `onHealth`: makes no cluster call.
    pub fn health(&self) -> Value {
        json!({ "status": "ok", "message": "Kubernetes sandbox provider plugin healthy" })
    }

    /// `onEnvironmentValidateConfig`. Can throw, as the original does when adapter defaults
    /// cannot be resolved.
    pub fn validate_config(&self, params: &Value) -> ProviderResult<Value> {
        config::validate_config(params.get("config").unwrap_or(&Value::Null))
    }
}
