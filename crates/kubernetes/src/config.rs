//! Kubernetes provider config (the zod schema of the original). Placeholder until the port lands.

use sandbox_core::ProviderResult;
use serde_json::{Value, json};

pub fn validate_config(_raw: &Value) -> ProviderResult<Value> {
    Ok(json!({ "ok": false, "errors": ["Invalid Kubernetes provider configuration."] }))
}
