//! `POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews`: the caller asks whether it may
//! do something, and gets the verdict of the emulator's authorization (a forbidden token may do
//! nothing, a deny rule refuses what it names), as the real server answers with its
//! authorizer's. Like the real server, every authenticated caller may ask, a forbidden token
//! included, and nothing is stored. Discovery (`/api`, `/apis`, `/version`) is open to every
//! caller here, as RBAC's default `system:discovery` role opens it on a real server.

use axum::body::Body;
use axum::http::Response;
use serde_json::{Value, json};

use super::state::App;
use super::status::{KubeError, KubeResult, json_response};

/// The review's answer: the request echoed with its `status`.
pub fn review(app: &App, forbidden: bool, method: &str, body: &[u8]) -> KubeResult<Response<Body>> {
    if method != "POST" {
        return Err(KubeError::method_not_allowed(format!(
            "the server does not allow this method on the requested resource ({method} selfsubjectaccessreviews.authorization.k8s.io)"
        )));
    }
    let mut review: Value = serde_json::from_slice(body).map_err(|e| {
        KubeError::bad_request(format!(
            "the body of the request was in an unknown format: {e}"
        ))
    })?;
    let spec = &review["spec"];
    let allowed = if let Some(url) = spec.get("nonResourceAttributes") {
        let path = url["path"].as_str().unwrap_or_default();
        let verb = url["verb"].as_str().unwrap_or_default();
        !app.denied(verb, "", path, None, None)
    } else if let Some(attributes) = spec.get("resourceAttributes") {
        let text = |key: &str| attributes[key].as_str().unwrap_or_default();
        let resource = match text("subresource") {
            "" => text("resource").to_string(),
            sub => format!("{}/{sub}", text("resource")),
        };
        let namespace = Some(text("namespace")).filter(|n| !n.is_empty());
        let name = Some(text("name")).filter(|n| !n.is_empty());
        !forbidden && !app.denied(text("verb"), text("group"), &resource, namespace, name)
    } else {
        return Err(KubeError::new(
            422,
            "Invalid",
            "SelfSubjectAccessReview.authorization.k8s.io \"\" is invalid: spec.resourceAttributes: Invalid value: \"null\": exactly one of nonResourceAttributes or resourceAttributes must be specified",
        ));
    };
    // The server decodes the spec into its typed fields and writes it back: empty strings
    // (`group: ""` for the core group) are left out, as Go's `omitempty` does.
    for key in ["resourceAttributes", "nonResourceAttributes"] {
        if let Some(attributes) = review["spec"].get_mut(key).and_then(Value::as_object_mut) {
            attributes.retain(|_, v| v != "");
        }
    }
    review["apiVersion"] = json!("authorization.k8s.io/v1");
    review["kind"] = json!("SelfSubjectAccessReview");
    review["metadata"] = json!({});
    review["status"] = json!({"allowed": allowed});
    Ok(json_response(201, &review))
}
