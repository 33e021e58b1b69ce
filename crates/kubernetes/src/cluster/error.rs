//! The errors of the cluster boundary: [`ApiError`], what one Kubernetes API call fails with
//! (its HTTP status kept, as client-node's `ApiException` kept it), and [`ClusterError`], how an
//! orchestration step fails, with the JS error class the original raised.

use std::fmt;

use sandbox_core::{ErrorClass, ProviderError};
use serde_json::{Map, Value, json};

/// HTTP 404: the object does not exist.
pub const NOT_FOUND: u16 = 404;
/// HTTP 409: a create lost a race (`AlreadyExists`) or hit a conflict.
pub const CONFLICT: u16 = 409;

/// What the original's `@kubernetes/client-node` raised: an `ApiException` whose `code` is the
/// HTTP status and whose `message` the hooks pass through unchanged (an error owned by a dependency).
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

/// `AggregateError` message of `destroyLeaseResources` (A20).
pub const DESTROY_LEASE_FAILED: &str = "Failed to delete one or more Kubernetes lease resources";
/// `AggregateError` message of `createScopedNetworkEgressPolicyOrReleaseWorkload` (A21).
pub const SCOPED_POLICY_AND_RELEASE_FAILED: &str =
    "Failed to create scoped network egress policy and release its workload";
/// A Job create whose reply carries no UID (A15 in the error reference).
pub const JOB_CREATED_WITHOUT_UID: &str = "Job created without a UID";
/// A Sandbox custom resource create whose reply carries no UID (A17 in the error reference).
pub const SANDBOX_CREATED_WITHOUT_UID: &str = "Sandbox CR created without a UID";

/// An orchestration failure.
///
/// The variants are the error classes callers branch on: the execute hook turns a
/// [`ClusterError::SandboxReadyTimeout`] into a timed-out result but rethrows everything else,
/// and only [`ClusterError::Api`] carries an HTTP status.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ClusterError {
    /// An API call failed; passed through unchanged (an error owned by a dependency).
    #[error("{0}")]
    Api(#[from] ApiError),
    /// `SandboxCrTimeoutError` (A16).
    #[error("Sandbox {namespace}/{name} did not reach Ready phase within {timeout_ms}ms")]
    SandboxReadyTimeout {
        namespace: String,
        name: String,
        timeout_ms: u64,
    },
    /// `JobTimeoutError` (A14).
    #[error("Job {namespace}/{name} did not complete within {timeout_ms}ms")]
    JobTimeout {
        namespace: String,
        name: String,
        timeout_ms: u64,
    },
    /// A plain `Error` the orchestration code raises itself, with its catalogued message.
    #[error("{0}")]
    Failed(String),
    /// An `AggregateError`: a fixed message and the inner errors, in order.
    #[error("{message}")]
    Aggregate {
        message: &'static str,
        errors: Vec<ClusterError>,
    },
}

impl ClusterError {
    /// `err.name` in the original.
    pub fn js_name(&self) -> &'static str {
        match self {
            ClusterError::Api(_) | ClusterError::Failed(_) => "Error",
            ClusterError::SandboxReadyTimeout { .. } => "SandboxCrTimeoutError",
            ClusterError::JobTimeout { .. } => "JobTimeoutError",
            ClusterError::Aggregate { .. } => "AggregateError",
        }
    }

    /// The HTTP status of an API error.
    pub fn http_status(&self) -> Option<u16> {
        match self {
            ClusterError::Api(err) => err.http_status(),
            _ => None,
        }
    }

    /// `isKubeNotFoundError(err)`: an API error with HTTP 404. Errors raised by the
    /// orchestration code itself never count, as they carry no `code` in the original.
    pub fn is_not_found(&self) -> bool {
        matches!(self, ClusterError::Api(err) if err.is_not_found())
    }

    /// The error as recorded in the golden vectors: `{name, message}`, plus `errors` (the inner
    /// errors, recorded the same way) for an `AggregateError`.
    pub fn to_js_json(&self) -> Value {
        let mut shape = Map::new();
        shape.insert("name".into(), json!(self.js_name()));
        shape.insert("message".into(), json!(self.to_string()));
        if let ClusterError::Aggregate { errors, .. } = self {
            let inner = errors.iter().map(ClusterError::to_js_json).collect();
            shape.insert("errors".into(), Value::Array(inner));
        }
        Value::Object(shape)
    }
}

impl From<ClusterError> for ProviderError {
    /// What a hook rejects with. The host sees the message and, for API errors, the HTTP status
    /// as `code`, as it saw the client's `ApiException.code`.
    fn from(err: ClusterError) -> Self {
        let class = match err {
            ClusterError::Aggregate { .. } => ErrorClass::AggregateError,
            _ => ErrorClass::Error,
        };
        let provider = ProviderError::new(err.to_string()).with_class(class);
        match err.http_status() {
            Some(code) => provider.with_code(i64::from(code)),
            None => provider,
        }
    }
}

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

    #[test]
    fn timeout_messages_are_exact() {
        let sandbox = ClusterError::SandboxReadyTimeout {
            namespace: "ns".into(),
            name: "pc-1".into(),
            timeout_ms: 30000,
        };
        assert_eq!(
            sandbox.to_string(),
            "Sandbox ns/pc-1 did not reach Ready phase within 30000ms"
        );
        assert_eq!(sandbox.js_name(), "SandboxCrTimeoutError");
        let job = ClusterError::JobTimeout {
            namespace: "ns".into(),
            name: "pc-1".into(),
            timeout_ms: 120000,
        };
        assert_eq!(
            job.to_string(),
            "Job ns/pc-1 did not complete within 120000ms"
        );
        assert_eq!(job.js_name(), "JobTimeoutError");
    }

    #[test]
    fn fixed_messages_are_exact() {
        assert_eq!(
            DESTROY_LEASE_FAILED,
            "Failed to delete one or more Kubernetes lease resources"
        );
        assert_eq!(
            SCOPED_POLICY_AND_RELEASE_FAILED,
            "Failed to create scoped network egress policy and release its workload"
        );
        assert_eq!(JOB_CREATED_WITHOUT_UID, "Job created without a UID");
        assert_eq!(
            SANDBOX_CREATED_WITHOUT_UID,
            "Sandbox CR created without a UID"
        );
    }

    #[test]
    fn aggregate_records_its_inner_errors() {
        let err = ClusterError::Aggregate {
            message: DESTROY_LEASE_FAILED,
            errors: vec![
                ApiError::new(500, "boom").into(),
                ClusterError::Failed("release failed".into()),
            ],
        };
        assert_eq!(
            err.to_js_json(),
            json!({"name": "AggregateError", "message": DESTROY_LEASE_FAILED, "errors": [
                {"name": "Error", "message": "boom"},
                {"name": "Error", "message": "release failed"}
            ]})
        );
        let provider = ProviderError::from(err);
        assert_eq!(provider.class, ErrorClass::AggregateError);
        assert_eq!(provider.code, None);
    }

    #[test]
    fn api_errors_keep_their_status_for_the_host() {
        let provider = ProviderError::from(ClusterError::from(ApiError::new(403, "Forbidden")));
        assert_eq!(provider.message, "Forbidden");
        assert_eq!(provider.code, Some(403));
        assert!(ClusterError::from(ApiError::new(404, "x")).is_not_found());
        assert!(!ClusterError::Failed("404".into()).is_not_found());
    }
}
