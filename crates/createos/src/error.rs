//! The error of one client call: either a non-2xx API answer, which callers branch on by
//! status (404 is success for a delete, 409 is retried or tolerated, ...), or any other failure,
//! already carrying its final message.

use sandbox_core::{ErrorClass, ProviderError};

use crate::messages;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The original's `CreateosApiError`: the message names the status and a fixed label, never
    /// the path, the body or the URL.
    Api { status: u16, label: &'static str },
    /// Every other failure, with its exact message.
    Other(ProviderError),
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn msg(message: impl Into<String>) -> Self {
        Error::Other(ProviderError::new(message))
    }

    /// A JS `TypeError` with the given text (platform errors that passed through unchanged).
    pub fn type_error(message: impl Into<String>) -> Self {
        Error::Other(ProviderError::new(message).with_class(ErrorClass::TypeError))
    }

    /// The HTTP status when this is an API error.
    pub fn status(&self) -> Option<u16> {
        match self {
            Error::Api { status, .. } => Some(*status),
            Error::Other(_) => None,
        }
    }

    pub fn is_status(&self, status: u16) -> bool {
        self.status() == Some(status)
    }
}

impl From<Error> for ProviderError {
    fn from(error: Error) -> Self {
        match error {
            Error::Api { status, label } => {
                ProviderError::new(messages::request_failed(status, label))
            }
            Error::Other(error) => error,
        }
    }
}

impl From<ProviderError> for Error {
    fn from(error: ProviderError) -> Self {
        Error::Other(error)
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Api { status, label } => f.write_str(&messages::request_failed(*status, label)),
            Error::Other(error) => f.write_str(&error.message),
        }
    }
}

impl std::error::Error for Error {}
