//! `metav1.Status` bodies: every error the emulator returns has the `code`, `reason`, `message`
//! and `details` a real API server would send, so `kube::Error::Api` helpers such as
//! `is_not_found()` and `is_already_exists()` classify them correctly.

use axum::body::Body;
use axum::http::{HeaderValue, Response, StatusCode, header};
use serde_json::{Value, json};

use super::resources::ResourceType;

/// An API error, rendered as a `Status` object.
#[derive(Debug, Clone, PartialEq)]
pub struct KubeError {
    pub code: u16,
    pub reason: String,
    pub message: String,
    /// Boxed: keeps `Result<_, KubeError>` small.
    pub details: Option<Box<Value>>,
}

fn details(rt: &ResourceType, name: &str) -> Value {
    let mut d = json!({ "name": name, "kind": rt.plural });
    if !rt.group.is_empty() {
        d["group"] = json!(rt.group);
    }
    d
}

impl KubeError {
    pub fn new(code: u16, reason: &str, message: impl Into<String>) -> Self {
        KubeError {
            code,
            reason: reason.to_string(),
            message: message.into(),
            details: None,
        }
    }

    /// 404 `pods "x" not found`.
    pub fn not_found(rt: &ResourceType, name: &str) -> Self {
        KubeError {
            details: Some(Box::new(details(rt, name))),
            ..Self::new(
                404,
                "NotFound",
                format!("{} \"{name}\" not found", rt.group_resource()),
            )
        }
    }

    /// 404 for a URL that names no resource at all.
    pub fn no_route(path: &str) -> Self {
        KubeError {
            details: Some(Box::new(json!({}))),
            ..Self::new(
                404,
                "NotFound",
                format!("the server could not find the requested resource ({path})"),
            )
        }
    }

    /// 409 `pods "x" already exists`.
    pub fn already_exists(rt: &ResourceType, name: &str) -> Self {
        KubeError {
            details: Some(Box::new(details(rt, name))),
            ..Self::new(
                409,
                "AlreadyExists",
                format!("{} \"{name}\" already exists", rt.group_resource()),
            )
        }
    }

    /// 409 Conflict: a stale `resourceVersion` or a failed precondition.
    pub fn conflict(rt: &ResourceType, name: &str, why: &str) -> Self {
        KubeError {
            details: Some(Box::new(details(rt, name))),
            ..Self::new(
                409,
                "Conflict",
                format!(
                    "Operation cannot be fulfilled on {} \"{name}\": {why}",
                    rt.group_resource()
                ),
            )
        }
    }

    pub fn stale(rt: &ResourceType, name: &str) -> Self {
        Self::conflict(
            rt,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 422 with one cause per invalid field: `Pod "x" is invalid: spec.containers: Required value`.
    pub fn invalid(rt: &ResourceType, name: &str, causes: Vec<FieldError>) -> Self {
        let text: Vec<String> = causes.iter().map(FieldError::text).collect();
        let joined = if text.len() == 1 {
            text[0].clone()
        } else {
            format!("[{}]", text.join(", "))
        };
        let mut d = details(rt, name);
        d["kind"] = json!(rt.kind);
        d["causes"] = Value::Array(causes.iter().map(FieldError::cause).collect());
        KubeError {
            details: Some(Box::new(d)),
            ..Self::new(
                422,
                "Invalid",
                format!("{} \"{name}\" is invalid: {joined}", rt.kind),
            )
        }
    }

    /// 403 in the API server's words.
    pub fn forbidden(
        user: &str,
        verb: &str,
        rt: &ResourceType,
        subresource: Option<&str>,
        namespace: Option<&str>,
        name: Option<&str>,
    ) -> Self {
        let resource = match subresource {
            Some(sub) => format!("{}/{sub}", rt.plural),
            None => rt.plural.to_string(),
        };
        let subject = match name {
            Some(n) => format!("{} \"{n}\"", rt.group_resource()),
            None => rt.group_resource(),
        };
        let scope = match namespace {
            Some(ns) => format!(" in the namespace \"{ns}\""),
            None => " at the cluster scope".to_string(),
        };
        let mut d = json!({ "kind": rt.plural });
        if let Some(n) = name {
            d["name"] = json!(n);
        }
        if !rt.group.is_empty() {
            d["group"] = json!(rt.group);
        }
        KubeError {
            details: Some(Box::new(d)),
            ..Self::new(
                403,
                "Forbidden",
                format!(
                    "{subject} is forbidden: User \"{user}\" cannot {verb} resource \"{resource}\" in API group \"{}\"{scope}",
                    rt.group
                ),
            )
        }
    }

    pub fn unauthorized() -> Self {
        Self::new(401, "Unauthorized", "Unauthorized")
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    pub fn method_not_allowed(message: impl Into<String>) -> Self {
        Self::new(405, "MethodNotAllowed", message)
    }

    pub fn unsupported_media(message: impl Into<String>) -> Self {
        Self::new(415, "UnsupportedMediaType", message)
    }

    /// 410 Expired: a watch or list from a resourceVersion the emulator no longer remembers.
    pub fn expired(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(500, "InternalError", message)
    }

    pub fn to_json(&self) -> Value {
        let mut v = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
        });
        if let Some(d) = &self.details {
            v["details"] = (**d).clone();
        }
        v["code"] = json!(self.code);
        v
    }

    pub fn into_response(self) -> Response<Body> {
        json_response(self.code, &self.to_json())
    }
}

/// One `field.Error` of a 422.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldError {
    pub field: String,
    /// `FieldValueRequired`, `FieldValueInvalid`, `FieldValueNotSupported`, …
    pub reason: &'static str,
    pub detail: String,
    /// The offending value, quoted in the message for `FieldValueInvalid`.
    pub value: Option<Value>,
}

impl FieldError {
    pub fn required(field: impl Into<String>, detail: impl Into<String>) -> Self {
        FieldError {
            field: field.into(),
            reason: "FieldValueRequired",
            detail: detail.into(),
            value: None,
        }
    }

    pub fn invalid(field: impl Into<String>, value: Value, detail: impl Into<String>) -> Self {
        FieldError {
            field: field.into(),
            reason: "FieldValueInvalid",
            detail: detail.into(),
            value: Some(value),
        }
    }

    pub fn not_supported(field: impl Into<String>, value: Value, valid: &[&str]) -> Self {
        let list: Vec<String> = valid.iter().map(|v| format!("\"{v}\"")).collect();
        FieldError {
            field: field.into(),
            reason: "FieldValueNotSupported",
            detail: format!("supported values: {}", list.join(", ")),
            value: Some(value),
        }
    }

    fn kind_text(&self) -> &'static str {
        match self.reason {
            "FieldValueRequired" => "Required value",
            "FieldValueNotSupported" => "Unsupported value",
            "FieldValueForbidden" => "Forbidden",
            _ => "Invalid value",
        }
    }

    fn text(&self) -> String {
        let mut s = format!("{}: {}", self.field, self.kind_text());
        if let Some(v) = &self.value {
            s.push_str(&format!(": {v}"));
        }
        if !self.detail.is_empty() {
            s.push_str(&format!(": {}", self.detail));
        }
        s
    }

    fn cause(&self) -> Value {
        let message = match self.text().split_once(": ") {
            Some((_, rest)) => rest.to_string(),
            None => self.text(),
        };
        json!({ "reason": self.reason, "message": message, "field": self.field })
    }
}

pub fn json_response(code: u16, body: &Value) -> Response<Body> {
    let mut resp = Response::new(Body::from(body.to_string()));
    *resp.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

pub type KubeResult<T> = Result<T, KubeError>;
