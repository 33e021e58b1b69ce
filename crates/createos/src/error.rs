//! The error of one client call: either a non-2xx API answer, which callers branch on by
//! status (404 is success for a delete, 409 is retried or tolerated, ...), or any other failure,
//! already carrying its final message. A failure that happened before the request could reach
//! the service is told apart ([`Error::Unsent`]): after it, nothing can have been created.

use sandbox_core::{ErrorClass, ProviderError};

use crate::messages;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The original's `CreateosApiError`: the message names the status and a fixed label, never
    /// the path, the body or the URL.
    #[error("{}", messages::request_failed(*status, label))]
    Api { status: u16, label: &'static str },
    /// The request never left this process (the pacer's wait was aborted, or no connection
    /// could be made), with its exact message: the service cannot have acted on it.
    #[error("{}", .0.message)]
    Unsent(ProviderError),
    /// Every other failure, with its exact message.
    #[error("{}", .0.message)]
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
            Error::Unsent(_) | Error::Other(_) => None,
        }
    }

    pub fn is_status(&self, status: u16) -> bool {
        self.status() == Some(status)
    }

    /// Whether the service may have acted on the request although it failed: anything but a
    /// request that never left ([`Error::Unsent`]) or a 4xx refusal (the service answered that
    /// it did nothing). A 5xx, a reply lost or cut off, an unreadable or invalid body and a
    /// deadline that fired while the request was out all leave the outcome unknown.
    pub fn outcome_unknown(&self) -> bool {
        match self {
            Error::Api { status, .. } => !(400..500).contains(status),
            Error::Unsent(_) => false,
            Error::Other(_) => true,
        }
    }
}

impl From<Error> for ProviderError {
    fn from(error: Error) -> Self {
        match error {
            Error::Api { status, label } => {
                ProviderError::new(messages::request_failed(status, label))
            }
            Error::Unsent(error) | Error::Other(error) => error,
        }
    }
}

impl From<ProviderError> for Error {
    fn from(error: ProviderError) -> Self {
        Error::Other(error)
    }
}
