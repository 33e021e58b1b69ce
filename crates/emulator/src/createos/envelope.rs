//! The service's JSend envelopes, as the vendor's client reads them: `{"status":"success",
//! "data":…}` for success, `{"status":"fail","data":{…}}` (a field-keyed object) for client
//! errors and `{"status":"error","message":…,"code":<number>}` for server errors.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// A successful envelope with the given HTTP status.
pub fn success(status: StatusCode, data: Value) -> Response {
    (
        status,
        axum::Json(json!({ "status": "success", "data": data })),
    )
        .into_response()
}

pub fn ok(data: Value) -> Response {
    success(StatusCode::OK, data)
}

/// An API error as the service reports it. `code` is the machine-readable `data.code` of a
/// `fail` envelope (the vendor client's `error.code`); a 5xx carries the HTTP status as its
/// numeric `code` instead, as the vendor's `ErrorEnvelope` says.
#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    /// The body field the error is about, sent as `data.field`.
    pub field: Option<String>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
            field: None,
        }
    }
    /// A body field its request type does not define (see `request_types`).
    pub fn unknown_field(field: &str, type_name: &str) -> Self {
        ApiError {
            field: Some(field.to_string()),
            ..Self::bad_request(format!(
                "unknown field {field:?}: {type_name} has no such field"
            ))
        }
    }
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_request", message)
    }
    pub fn not_found(what: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("{what} not found"),
        )
    }
    pub fn conflict(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, code, message)
    }
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = if self.status.is_server_error() {
            error_envelope(self.status.as_u16(), &self.message)
        } else {
            let mut data = json!({ "code": self.code, "message": self.message });
            if let Some(field) = self.field {
                data["field"] = json!(field);
            }
            json!({ "status": "fail", "data": data })
        };
        (self.status, axum::Json(body)).into_response()
    }
}

/// The `error` envelope of a 5xx: `code` is a number (the HTTP status), never a string.
pub fn error_envelope(status: u16, message: &str) -> Value {
    json!({ "status": "error", "message": message, "code": status })
}

impl From<std::io::Error> for ApiError {
    fn from(e: std::io::Error) -> Self {
        ApiError::internal(e.to_string())
    }
}

/// Parses a request body that must be a JSON object (an empty body counts as `{}`).
pub fn json_object(body: &[u8]) -> Result<serde_json::Map<String, Value>, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(serde_json::Map::new());
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(ApiError::bad_request("request body must be a JSON object")),
        Err(_) => Err(ApiError::bad_request("request body is not valid JSON")),
    }
}
