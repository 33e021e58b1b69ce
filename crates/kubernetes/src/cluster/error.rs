//! The error a Kubernetes API call fails with.

use std::fmt;

use serde_json::Value;

/// HTTP 404: the object does not exist.
pub const NOT_FOUND: u16 = 404;
/// HTTP 409: a create lost a race (`AlreadyExists`) or hit a conflict.
pub const CONFLICT: u16 = 409;

/// What the original's `@kubernetes/client-node` raised: an `ApiException` whose `code` is the
/// HTTP status and whose `message` the hooks pass through unchanged (kubernetes-errors.md §F).
///
/// The orchestration code only ever inspects [`ApiError::code`], and only for 404 and 409, in
/// the places the original does. A kube-rs implementation fills `code` from
/// `kube::Error::Api(ErrorResponse { code, .. })`, `message` from the Status message it wants the
/// host to see, and keeps the whole `metav1.Status` in `status` so nothing is lost.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// The HTTP status. `0` when the request never got an HTTP answer (connection refused, TLS,
    /// timeouts): such errors have no `code` in JS either, so no 404/409 rule applies to them.
    pub code: u16,
    /// The text the host sees as `err.message`.
    pub message: String,
    /// The `metav1.Status` body the API server answered with, when there was one.
    pub status: Option<Value>,
}

impl ApiError {
    /// An error the API server answered with HTTP `code`.
    pub fn new(code: u16, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            status: None,
        }
    }

    /// A failure with no HTTP status (the request did not get an answer).
    pub fn transport(message: impl Into<String>) -> Self {
        Self::new(0, message)
    }

    /// Keeps the API server's `metav1.Status` body alongside the message.
    pub fn with_status(mut self, status: Value) -> Self {
        self.status = Some(status);
        self
    }

    /// The HTTP status, if the API server answered at all.
    pub fn http_status(&self) -> Option<u16> {
        (self.code != 0).then_some(self.code)
    }

    /// `err.code === 404 || err.statusCode === 404` in the original.
    pub fn is_not_found(&self) -> bool {
        self.code == NOT_FOUND
    }

    /// `err.code === 409 || err.statusCode === 409` in the original.
    pub fn is_already_exists(&self) -> bool {
        self.code == CONFLICT
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ApiError {}

/// The result of one API call: the response body (a JSON object, or a string for pod logs).
pub type ApiResult = Result<Value, ApiError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_by_http_status_only() {
        assert!(ApiError::new(404, "HTTP-Code: 404 Message: Not Found").is_not_found());
        assert!(ApiError::new(409, "AlreadyExists").is_already_exists());
        assert!(!ApiError::new(403, "Forbidden").is_not_found());
        assert_eq!(ApiError::transport("ECONNREFUSED").http_status(), None);
        assert_eq!(ApiError::new(500, "x").http_status(), Some(500));
    }

    #[test]
    fn displays_exactly_the_message() {
        let err = ApiError::new(403, "HTTP-Code: 403 Message: Forbidden");
        assert_eq!(err.to_string(), "HTTP-Code: 403 Message: Forbidden");
    }
}
