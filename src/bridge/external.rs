//! Large ASCII strings handed to V8 without a copy, as external strings whose size V8 is told.

use napi::sys;

use crate::napi_status::check;

// Node-API 10 (Node >= 20.4; package.json requires 24.11), declared here rather than through
// napi-sys's `napi10` feature, which would raise the version the whole addon declares.
unsafe extern "C" {
    fn node_api_create_external_string_latin1(
        env: sys::napi_env,
        text: *const std::ffi::c_char,
        length: isize,
        finalize: Option<
            unsafe extern "C" fn(sys::napi_env, *mut std::ffi::c_void, *mut std::ffi::c_void),
        >,
        hint: *mut std::ffi::c_void,
        result: *mut sys::napi_value,
        copied: *mut bool,
    ) -> sys::napi_status;
}

/// An ASCII string handed to V8 without a copy: V8 keeps a small string object pointing at the
/// Rust buffer and frees the buffer (the finalizer) when it collects that object. V8 puts
/// external strings in its old space, so that happens at a full GC.
///
/// The buffer's size is reported with `napi_adjust_external_memory` for as long as it lives:
/// V8 checks its external-memory limit (a full GC once it has grown by 64 MiB) only when that
/// count changes, and an external string alone does not change it. Unreported, a series of
/// large executes kept every earlier result until something else started a full GC: 8 MiB a
/// run without end (measured: 108 MiB of dead results after 13 runs). A copy does no better:
/// measured, the copies ended up in V8's old large-object space (promoted by a scavenge while
/// the reply was still being written), where they too wait for a full GC.
///
/// # Safety
/// `env` is the current env, on its JS thread, inside a handle scope; `text` is ASCII.
pub(crate) unsafe fn external_latin1(
    env: sys::napi_env,
    text: String,
) -> napi::Result<sys::napi_value> {
    unsafe extern "C" fn finalize(
        env: sys::napi_env,
        _data: *mut std::ffi::c_void,
        hint: *mut std::ffi::c_void,
    ) {
        // SAFETY: `hint` is the box leaked below, finalized exactly once by Node.
        let text = unsafe { Box::from_raw(hint.cast::<String>()) };
        // SAFETY: `env` is the env Node finalizes in; adjusting external memory is allowed
        // in a finalizer (it touches no JS value).
        unsafe { report_external_bytes(env, -(text.len() as i64)) };
    }
    let text = Box::new(text);
    let (data, length) = (text.as_ptr(), text.len());
    let hint = Box::into_raw(text);
    let mut value = std::ptr::null_mut();
    let mut copied = false;
    // Reported first, so that the finalizer's decrease always has its increase, even when V8
    // copies instead (`copied`) and Node has run the finalizer already; either way the buffer
    // is Node's now. A failure (only for strings past V8's length limit, far above what a
    // result holds) leaves it unowned: it is leaked rather than risk freeing it twice, and
    // its report is taken back.
    // SAFETY: `env` is the current env, on its JS thread (this function's contract).
    unsafe { report_external_bytes(env, length as i64) };
    // SAFETY: `env` as above. `data`/`length` are the boxed string's buffer, which does not
    // move (the `String` is boxed and its heap buffer is never touched again here) and lives
    // until `finalize` frees it through `hint`, the same box; the bytes are ASCII (this
    // function's contract), so valid Latin-1. `value` and `copied` are locals.
    let status = unsafe {
        node_api_create_external_string_latin1(
            env,
            data.cast(),
            length as isize,
            Some(finalize),
            hint.cast(),
            &mut value,
            &mut copied,
        )
    };
    if status != sys::Status::napi_ok {
        // SAFETY: `env` as above.
        unsafe { report_external_bytes(env, -(length as i64)) };
    }
    check(status, "a hook's outcome (an external string)")?;
    Ok(value)
}

/// Tells V8 that `change` bytes outside its heap were kept alive (or let go) by JS values.
/// Its status is not checked: it fails only for a null env, and a missed report changes
/// when V8 collects, never what a result holds.
///
/// # Safety
/// `env` is a live env: the current one on its JS thread, or the one Node finalizes in.
unsafe fn report_external_bytes(env: sys::napi_env, change: i64) {
    let mut total = 0;
    // SAFETY: `env` is a live env (this function's contract); `total` is a local.
    unsafe { sys::napi_adjust_external_memory(env, change, &mut total) };
}
