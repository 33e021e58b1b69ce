//! The pod a controller creates from its owner's pod template (a Sandbox's `podTemplate`, a
//! Job's `template`).

use serde_json::{Value, json};

/// A pod with `metadata` (plus the template's annotations) and the template's spec.
pub fn pod_from_template(template: &Value, mut metadata: Value) -> Value {
    if let Some(a) = template.pointer("/metadata/annotations") {
        metadata["annotations"] = a.clone();
    }
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": template.get("spec").cloned().unwrap_or(json!({})),
    })
}
