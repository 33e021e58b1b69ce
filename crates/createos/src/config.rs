//! CreateOS environment config (`parseConfig` of the original). Placeholder until the port lands.

use serde_json::{Value, json};

pub fn validate_config(_raw: &Value) -> Value {
    json!({ "ok": false, "errors": ["Invalid CreateOS configuration."] })
}
