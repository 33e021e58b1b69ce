//! What several hook families read from their params the same way (`params.lease`), in a
//! module below them all, so that exec, sync and the lease hooks need not import each other.

use sandbox_core::ProviderError;
use serde_json::Value;

/// `params.lease`, failing as the original's first read of `params.lease.providerLeaseId` did
/// when there is no lease object at all.
pub(crate) fn lease_of(params: &Value) -> Result<&Value, ProviderError> {
    match params.get("lease") {
        Some(Value::Null) => Err(ProviderError::cannot_read_properties(
            "null",
            "providerLeaseId",
        )),
        None => Err(ProviderError::cannot_read_properties(
            "undefined",
            "providerLeaseId",
        )),
        Some(lease) => Ok(lease),
    }
}
