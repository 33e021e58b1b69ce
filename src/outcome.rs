//! How a hook's result or failure crosses into JS.

use napi_derive::napi;
use sandbox_core::{ProviderError, ProviderResult};
use serde_json::Value;

/// A failure as data: the facade turns it into `Error` with exactly this `message`, `name`,
/// and a numeric `code` when present (the SDK forwards numeric codes to the host).
#[napi(object)]
pub struct NativeError {
    pub message: String,
    pub name: String,
    pub code: Option<i64>,
}

/// A hook's outcome. `value` absent means the hook resolved with `undefined`.
#[napi(object)]
pub struct Outcome {
    pub value: Option<Value>,
    pub error: Option<NativeError>,
}

impl Outcome {
    pub fn value(value: Value) -> Self {
        Self {
            value: Some(value),
            error: None,
        }
    }

    pub fn nothing() -> Self {
        Self {
            value: None,
            error: None,
        }
    }

    pub fn error(err: ProviderError) -> Self {
        Self {
            value: None,
            error: Some(NativeError {
                message: err.message,
                name: err.class.as_str().to_owned(),
                code: err.code,
            }),
        }
    }
}

impl From<ProviderResult<Value>> for Outcome {
    fn from(result: ProviderResult<Value>) -> Self {
        match result {
            Ok(value) => Outcome::value(value),
            Err(err) => Outcome::error(err),
        }
    }
}

impl From<ProviderResult<Option<Value>>> for Outcome {
    fn from(result: ProviderResult<Option<Value>>) -> Self {
        match result {
            Ok(Some(value)) => Outcome::value(value),
            Ok(None) => Outcome::nothing(),
            Err(err) => Outcome::error(err),
        }
    }
}
