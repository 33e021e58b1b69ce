//! The service's JSend-style envelope: `{"status":"success","data":{…}}` for success,
//! `{"status":"fail","data":{…}}` for client errors and `{"status":"error",…}` for server errors.

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

/// An API error as the service reports it. The provider never reads these bodies (it only
/// branches on the status), but tests and humans do.
#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
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
            json!({ "status": "error", "message": self.message, "code": self.code })
        } else {
            json!({ "status": "fail", "data": { "code": self.code, "message": self.message } })
        };
        (self.status, axum::Json(body)).into_response()
    }
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
