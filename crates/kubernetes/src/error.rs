//! The crate's one error type, [`Error`]: how anything below the hooks fails (an API call, an
//! orchestration step, an exec in a pod), with the HTTP status the API server answered and the
//! JS error class the original raised. A hook rejects with it as a [`ProviderError`]; the text
//! the host sees is its `Display`, which is the catalogued message.

use sandbox_core::{ErrorClass, ProviderError};
use serde_json::{Map, Value, json};

/// HTTP 404: the object does not exist.
pub const NOT_FOUND: u16 = 404;
/// HTTP 409: a create lost a race (`AlreadyExists`) or hit a conflict.
pub const CONFLICT: u16 = 409;

/// `AggregateError` message of `destroyLeaseResources` (A20).
pub const DESTROY_LEASE_FAILED: &str = "Failed to delete one or more Kubernetes lease resources";
/// `AggregateError` message of `createScopedNetworkEgressPolicyOrReleaseWorkload` (A21).
pub const SCOPED_POLICY_AND_RELEASE_FAILED: &str =
    "Failed to create scoped network egress policy and release its workload";
/// A Job create whose reply carries no UID (A15 in the error reference).
pub const JOB_CREATED_WITHOUT_UID: &str = "Job created without a UID";
/// A Sandbox custom resource create whose reply carries no UID (A17 in the error reference).
pub const SANDBOX_CREATED_WITHOUT_UID: &str = "Sandbox CR created without a UID";

/// A failure of the Kubernetes provider below its hooks.
///
/// The variants are the classes callers branch on: only [`Error::Api`] carries an HTTP status
/// (404 and 409 are absorbed exactly where the original absorbs them); the execute hook turns a
/// [`Error::SandboxReadyTimeout`] into a timed-out result but rethrows every other cluster
/// failure; every failure of an exec (the exec variants, and an [`Error::Api`] refusing its
/// websocket) becomes a timed-out execute result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    /// What the original's `@kubernetes/client-node` raised: an `ApiException` whose `code` is
    /// the HTTP status and whose `message` the hooks pass through unchanged (an error owned by
    /// a dependency). From an exec, the websocket handshake was refused (403, pod not found, ...).
    #[error("{message}")]
    Api {
        /// The HTTP status. `0` when the request never got an HTTP answer (connection refused,
        /// TLS, timeouts): such errors have no `code` in JS either, so no 404/409 rule applies.
        code: u16,
        /// The text the host sees as `err.message`.
        message: String,
        /// The `metav1.Status` body the API server answered with, when there was one.
        status: Option<Value>,
    },
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
        errors: Vec<Error>,
    },
    /// An exec's watchdog fired (A32/A35).
    #[error("{0}")]
    Timeout(String),
    /// An exec's output cap was exceeded (A33/A34/A36).
    #[error("{0}")]
    Cap(String),
    /// An exec's connection failed or closed before a status frame, or a local stream failed.
    #[error("{0}")]
    Transport(String),
}

impl Error {
    /// An error the API server answered with HTTP `code` (`0`: see [`Error::unanswered`]).
    pub fn new(code: u16, message: impl Into<String>) -> Self {
        Error::Api {
            code,
            message: message.into(),
            status: None,
        }
    }

    /// An API request that got no HTTP answer (no status, so no 404/409 rule applies).
    pub fn unanswered(message: impl Into<String>) -> Self {
        Self::new(0, message)
    }

    /// Keeps the API server's `metav1.Status` body alongside an API error's message.
    pub fn with_status(mut self, body: Value) -> Self {
        if let Error::Api { status, .. } = &mut self {
            *status = Some(body);
        }
        self
    }

    /// The `metav1.Status` body an API error's answer carried, if any.
    pub fn status_body(&self) -> Option<&Value> {
        match self {
            Error::Api { status, .. } => status.as_ref(),
            _ => None,
        }
    }

    /// `err.name` in the original.
    pub fn js_name(&self) -> &'static str {
        match self {
            Error::SandboxReadyTimeout { .. } => "SandboxCrTimeoutError",
            Error::JobTimeout { .. } => "JobTimeoutError",
            Error::Aggregate { .. } => "AggregateError",
            Error::Api { .. }
            | Error::Failed(_)
            | Error::Timeout(_)
            | Error::Cap(_)
            | Error::Transport(_) => "Error",
        }
    }

    /// The HTTP status, if this is an API error the API server answered.
    pub fn http_status(&self) -> Option<u16> {
        match self {
            Error::Api { code, .. } if *code != 0 => Some(*code),
            _ => None,
        }
    }

    /// `isKubeNotFoundError(err)`: an API error with HTTP 404. Errors raised by the
    /// orchestration code itself never count, as they carry no `code` in the original.
    pub fn is_not_found(&self) -> bool {
        self.http_status() == Some(NOT_FOUND)
    }

    /// `err.code === 409 || err.statusCode === 409` in the original.
    pub fn is_already_exists(&self) -> bool {
        self.http_status() == Some(CONFLICT)
    }

    /// The error as recorded in the golden vectors: `{name, message}`, plus `errors` (the inner
    /// errors, recorded the same way) for an `AggregateError`.
    pub fn to_js_json(&self) -> Value {
        let mut shape = Map::new();
        shape.insert("name".into(), json!(self.js_name()));
        shape.insert("message".into(), json!(self.to_string()));
        if let Error::Aggregate { errors, .. } = self {
            let inner = errors.iter().map(Error::to_js_json).collect();
            shape.insert("errors".into(), Value::Array(inner));
        }
        Value::Object(shape)
    }
}

/// The result of one API call: the response body (a JSON object, or a string for pod logs).
pub type ApiResult = Result<Value, Error>;

impl From<Error> for ProviderError {
    /// What a hook rejects with. The host sees the message and, for API errors, the HTTP status
    /// as `code`, as it saw the client's `ApiException.code`.
    fn from(err: Error) -> Self {
        let class = match err {
            Error::Aggregate { .. } => ErrorClass::AggregateError,
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
        assert!(Error::new(404, "HTTP-Code: 404 Message: Not Found").is_not_found());
        assert!(Error::new(409, "AlreadyExists").is_already_exists());
        assert!(!Error::new(403, "Forbidden").is_not_found());
        assert_eq!(Error::unanswered("ECONNREFUSED").http_status(), None);
        assert_eq!(Error::new(500, "x").http_status(), Some(500));
    }

    #[test]
    fn displays_exactly_the_message() {
        let err = Error::new(403, "HTTP-Code: 403 Message: Forbidden");
        assert_eq!(err.to_string(), "HTTP-Code: 403 Message: Forbidden");
    }

    #[test]
    fn timeout_messages_are_exact() {
        let sandbox = Error::SandboxReadyTimeout {
            namespace: "ns".into(),
            name: "pc-1".into(),
            timeout_ms: 30000,
        };
        assert_eq!(
            sandbox.to_string(),
            "Sandbox ns/pc-1 did not reach Ready phase within 30000ms"
        );
        assert_eq!(sandbox.js_name(), "SandboxCrTimeoutError");
        let job = Error::JobTimeout {
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
        let err = Error::Aggregate {
            message: DESTROY_LEASE_FAILED,
            errors: vec![
                Error::new(500, "boom"),
                Error::Failed("release failed".into()),
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
        let provider = ProviderError::from(Error::new(403, "Forbidden"));
        assert_eq!(provider.message, "Forbidden");
        assert_eq!(provider.code, Some(403));
        assert!(Error::new(404, "x").is_not_found());
        assert!(!Error::Failed("404".into()).is_not_found());
    }
}
