//! The one error type every hook rejects with.

use std::fmt;

/// The JS error class the original implementation raised. The host only sees `message` (and a
/// numeric `code`), but tests and users that inspect `err.name` see this.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ErrorClass {
    #[default]
    Error,
    TypeError,
    /// zod's validation error: its message is the issue list as pretty-printed JSON.
    ZodError,
    AggregateError,
}

impl ErrorClass {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorClass::Error => "Error",
            ErrorClass::TypeError => "TypeError",
            ErrorClass::ZodError => "ZodError",
            ErrorClass::AggregateError => "AggregateError",
        }
    }
}

impl fmt::Display for ErrorClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A hook failure. `message` is exactly the text of the contract (`tests/data/contract/*.txt`);
/// it must never carry secrets, provider response bodies or URLs with credentials.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ProviderError {
    pub message: String,
    pub class: ErrorClass,
    /// A numeric code for the JSON-RPC error (the SDK forwards numeric codes; Kubernetes API
    /// errors carry their HTTP status this way, as the original client did).
    pub code: Option<i64>,
}

pub type ProviderResult<T> = Result<T, ProviderError>;

impl ProviderError {
    /// A plain `Error` with the given catalogued message.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            class: ErrorClass::Error,
            code: None,
        }
    }

    pub fn with_class(mut self, class: ErrorClass) -> Self {
        self.class = class;
        self
    }

    /// V8's `TypeError` for reading `property` of `undefined` or `null` (`receiver`), which the
    /// original surfaced verbatim.
    pub fn cannot_read_properties(receiver: &str, property: &str) -> Self {
        Self::new(js_compat::value::cannot_read_properties(receiver, property))
            .with_class(ErrorClass::TypeError)
    }

    /// V8's `TypeError` for calling `expression` when it is not a function, which the original
    /// surfaced verbatim (a method of the wrong type: `value.includes is not a function`).
    pub fn not_a_function(expression: &str) -> Self {
        Self::new(js_compat::value::not_a_function(expression)).with_class(ErrorClass::TypeError)
    }

    /// V8's `TypeError` for iterating `expression` when it is not iterable.
    pub fn not_iterable(expression: &str) -> Self {
        Self::new(js_compat::value::not_iterable(expression)).with_class(ErrorClass::TypeError)
    }

    pub fn with_code(mut self, code: i64) -> Self {
        self.code = Some(code);
        self
    }
}

impl From<&str> for ProviderError {
    fn from(message: &str) -> Self {
        ProviderError::new(message)
    }
}

impl From<String> for ProviderError {
    fn from(message: String) -> Self {
        ProviderError::new(message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_is_exactly_the_message() {
        let err = ProviderError::new("CreateOS requires an API URL.").with_code(404);
        assert_eq!(err.to_string(), "CreateOS requires an API URL.");
        assert_eq!(err.code, Some(404));
        assert_eq!(err.class.as_str(), "Error");
    }

    #[test]
    fn property_reads_of_nothing_are_type_errors() {
        let err = ProviderError::cannot_read_properties("null", "apiUrl");
        assert_eq!(
            err.message,
            "Cannot read properties of null (reading 'apiUrl')"
        );
        assert_eq!(err.class, ErrorClass::TypeError);
    }

    #[test]
    fn class_names_match_js() {
        assert_eq!(ErrorClass::ZodError.to_string(), "ZodError");
        assert_eq!(ErrorClass::TypeError.to_string(), "TypeError");
    }
}
