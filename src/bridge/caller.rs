//! `NativeProvider.hookCaller()`: the one way JavaScript calls a hook, `callHook(hook, params,
//! onOutput?)`. plugin-kit takes it once per plugin. It has two halves: `caller.js`, compiled
//! here, reads the params into one string and parses the outcome's text (see its header for why
//! that half is JavaScript), and between the two calls the native half, a plain JS function made
//! with `napi_create_function` that runs [`Bridge::call`].
//!
//! Why the native half is not a `#[napi]` method: napi-rs 3 wraps every generated method that takes arguments in a
//! borrow scope: an `Arc<Mutex<…>>` per call, the receiver registered in a process-wide
//! `Mutex<HashMap>` (SipHash) and removed again, thread-local scope stacks, and a class identity
//! check. That is ~3,000 instructions, a sixth of a whole health call (counted with callgrind),
//! guarding against a `&mut self` call re-entering while a borrow is alive, which a bridge that
//! is only ever shared cannot meet.
//!
//! The native function's data is the bridge itself (an `Arc`), let go of in its finalizer; the
//! JS half holds the native function.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use napi::bindgen_prelude::{
    FnArgs, FromNapiValue, Function, JsObjectValue, Object, panic_to_error,
};
use napi::{Env, JsError, sys};

use crate::bridge::Bridge;
use crate::bridge::params::{LONG_STRING_UNITS, MAX_DEPTH, MAX_VALUES};
use crate::bridge::strings::{HookName, RawValue};
use crate::execution_log::ExecutionLogCallback;
use crate::napi_status::check;

/// The JS half's source: a script whose value is `(maxValues, maxDepth, longString) => {read,
/// caller}`.
const JS_HALF: &str = include_str!("caller.js");

/// The JS half, compiled: `{read, caller}` (see `caller.js`).
pub(crate) fn js_half(env: &Env) -> napi::Result<Object<'_>> {
    let factory: Function<'_, FnArgs<(u32, u32, u32)>, Object<'_>> = env.run_script(JS_HALF)?;
    // Three arguments (a bare tuple would be passed as one array).
    factory.call(FnArgs::from((MAX_VALUES, MAX_DEPTH, LONG_STRING_UNITS)))
}

/// A new `callHook` of `bridge`: the JS half around a new native half.
pub(crate) fn create(env: &Env, bridge: Arc<Bridge>) -> napi::Result<RawValue> {
    // SAFETY: `env` is the current env, on its JS thread (a method call's).
    let native = unsafe { native_half(env.raw(), bridge) }?;
    let caller: Function<'_, RawValue, RawValue> =
        js_half(env)?.get_named_property_unchecked("caller")?;
    caller.call(RawValue(native))
}

/// The native half: `(hook, handed, onOutput?)`, where `handed` is the params as `caller.js`
/// hands them over.
///
/// # Safety
/// `env` is the current env, on its JS thread.
unsafe fn native_half(env: sys::napi_env, bridge: Arc<Bridge>) -> napi::Result<sys::napi_value> {
    let caller = Box::into_raw(Box::new(bridge));
    let mut function = std::ptr::null_mut();
    // SAFETY: `env` as above; the name is a static NUL-terminated string given with its length;
    // `call_hook` has the `napi_callback` signature and reads its data only as the bridge boxed
    // here, which stays alive until `finalize` (below, or at the function's collection);
    // `function` is a local the call writes to.
    let mut status = unsafe {
        sys::napi_create_function(
            env,
            c"callNative".as_ptr(),
            c"callNative".count_bytes() as isize,
            Some(call_hook),
            caller.cast(),
            &mut function,
        )
    };
    if status == sys::Status::napi_ok {
        // SAFETY: `function` is the live handle just made; `caller` is the box above, whose
        // ownership passes to `finalize`, which Node runs once, when the function is collected;
        // no wrap reference is asked for (the last pointer is null).
        status = unsafe {
            // Node-API 1's way to tie data to a JS object's life (napi_add_finalizer is 5).
            sys::napi_wrap(
                env,
                function,
                caller.cast(),
                Some(finalize),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        };
    }
    if status != sys::Status::napi_ok {
        // No finalizer owns the caller: let go of it here (a function made without one is
        // never called, as it is never returned).
        // SAFETY: `caller` is the box made above, owned by no finalizer (the wrap failed or
        // was not tried), so this is its one release; `env` is the current env.
        unsafe { finalize(env, caller.cast(), std::ptr::null_mut()) };
    }
    check(status, "the hook caller (its function)")?;
    Ok(function)
}

unsafe extern "C" fn finalize(
    _env: sys::napi_env,
    data: *mut std::ffi::c_void,
    _hint: *mut std::ffi::c_void,
) {
    // SAFETY: `data` is the bridge boxed in `create`, finalized exactly once. Dropping the last
    // `Arc` deletes the bridge's function references, which Node allows in a finalizer.
    drop(unsafe { Box::from_raw(data.cast::<Arc<Bridge>>()) });
}

/// `callNative(hook, handed, onOutput?)`: [`Bridge::call`]'s outcome, or its throw.
unsafe extern "C" fn call_hook(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> sys::napi_value {
    let mut argc = 3;
    // Arguments not passed are filled in as `undefined`.
    let mut argv = [std::ptr::null_mut(); 3];
    let mut data = std::ptr::null_mut();
    // SAFETY: `env` and `info` are what Node passed to this callback, on the JS thread;
    // `argv` has room for `argc` (3) handles, and `data` is a local the call writes to.
    let status = unsafe {
        sys::napi_get_cb_info(
            env,
            info,
            &mut argc,
            argv.as_mut_ptr(),
            std::ptr::null_mut(),
            &mut data,
        )
    };
    let answer = check(status, "a hook call (its arguments)").and_then(|()| {
        catch_unwind(AssertUnwindSafe(|| {
            // SAFETY: `data` is this function's bridge (`create`), alive until the function is
            // finalized, which cannot happen while it is being called.
            let bridge = unsafe { &*data.cast::<Arc<Bridge>>() };
            // SAFETY: `argv[0]` is a live handle of this callback's scope (an argument, or the
            // `undefined` napi fills in for a missing one), and `env` is this callback's env.
            let hook = unsafe { HookName::from_napi_value(env, argv[0]) }?;
            // SAFETY: as above, for `argv[2]`.
            let log = unsafe { Option::<ExecutionLogCallback>::from_napi_value(env, argv[2]) }?;
            bridge.call(&Env::from_raw(env), hook, argv[1], log)
        }))
        .unwrap_or_else(|panic| Err(panic_to_error(panic)))
    });
    answer.unwrap_or_else(|error| {
        let mut pending = false;
        // SAFETY: `env` is this callback's env, on its JS thread; `pending` is a local.
        unsafe { sys::napi_is_exception_pending(env, &mut pending) };
        if !pending {
            // SAFETY: `env` is this callback's env, on its JS thread; the thrown error is the
            // callback's result (its null return value is then ignored by Node).
            unsafe { JsError::from(error).throw_into(env) };
        }
        // Else an exception is pending already, and JS sees it thrown as it is.
        std::ptr::null_mut()
    })
}
