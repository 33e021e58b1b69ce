//! The hook surface of the CreateOS provider.

use serde_json::{Value, json};

use crate::config;

/// One provider instance per worker process: it owns the in-worker state of the original plugin.
#[derive(Debug, Default)]
pub struct CreateOsProvider {}

impl CreateOsProvider {
    pub fn new() -> Self {
        Self::default()
    }

    /// `onHealth`: no network; connectivity is what a probe is for.
    pub fn health(&self) -> Value {
        json!({
            "status": "ok",
            "message": "CreateOS provider loaded; probe an environment to check connectivity.",
        })
    }

    /// `onEnvironmentValidateConfig`: parse only, no network and no key resolution.
    pub fn validate_config(&self, params: &Value) -> Value {
        config::validate_config_params(params)
    }
}
