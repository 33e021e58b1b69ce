//! The one check of a raw `napi_*` call's status, for the few values built by hand (execute
//! results and execution-log batches): a failure is a bug here or an exhausted V8, reported as
//! an internal error naming what was being built, never as output.

use napi::sys;

/// `Ok` for `napi_ok`, else the internal error "building `what` failed".
pub(crate) fn check(status: sys::napi_status, what: &str) -> napi::Result<()> {
    if status == sys::Status::napi_ok {
        Ok(())
    } else {
        Err(napi::Error::new(
            napi::Status::from(status),
            format!("paperclip-sandbox-native internal error: building {what} failed"),
        ))
    }
}
