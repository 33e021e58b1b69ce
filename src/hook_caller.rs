//! `NativeProvider.hookCaller()`: the provider's `call(hook, params)` as a plain JS function
//! made with `napi_create_function`, which plugin-kit takes once per plugin and calls for every
//! hook but execute.
//!
//! napi-rs 3 wraps every generated method that takes arguments in a borrow scope: an
//! `Arc<Mutex<…>>` per call, the receiver registered in a process-wide `Mutex<HashMap>` (SipHash)
//! and removed again, thread-local scope stacks, and a class identity check. That is ~3,000
//! instructions, a sixth of a whole health call (counted with callgrind), guarding
//! against a `&mut self` call re-entering while a borrow is alive: `NativeProvider` has no
//! `&mut self` method, so there is nothing here for it to guard. The function does exactly what
//! `call` does ([`NativeProvider::dispatch`]); `call` stays for tests and tools.
//!
//! The function holds a strong reference to the provider's JS object, so the provider it points
//! at lives at least as long as the function; its finalizer lets go of both.

use std::panic::{AssertUnwindSafe, catch_unwind};

use napi::bindgen_prelude::{FromNapiValue, ToNapiValue, Unknown, panic_to_error};
use napi::{Env, JsError, sys};

use crate::js_text::HookName;
use crate::napi_status::check;
use crate::provider::NativeProvider;

/// The function's data: the provider it calls, and the reference that keeps it alive.
struct Caller {
    provider: *const NativeProvider,
    object: sys::napi_ref,
}

/// A new caller of `provider`, whose JS object is `object`.
///
/// # Safety
/// `env` is the current env, on its JS thread; `provider` is the native side of `object` (a
/// `NativeProvider` napi-rs wrapped, which stays where it is until `object` is collected).
pub(crate) unsafe fn create(
    env: sys::napi_env,
    provider: &NativeProvider,
    object: sys::napi_value,
) -> napi::Result<sys::napi_value> {
    let mut reference = std::ptr::null_mut();
    check(
        // SAFETY: `env` is the current env on its JS thread and `object` a live handle of it
        // (this function's contract); `reference` is a local the call writes to.
        unsafe { sys::napi_create_reference(env, object, 1, &mut reference) },
        "the hook caller (its provider's reference)",
    )?;
    let caller = Box::into_raw(Box::new(Caller {
        provider,
        object: reference,
    }));
    let mut function = std::ptr::null_mut();
    // SAFETY: `env` as above; the name is a static NUL-terminated string given with its length;
    // `call_hook` has the `napi_callback` signature and reads its data only as the `Caller`
    // boxed here, which stays alive until `finalize` (below, or at the function's collection);
    // `function` is a local the call writes to.
    let mut status = unsafe {
        sys::napi_create_function(
            env,
            c"callHook".as_ptr(),
            c"callHook".count_bytes() as isize,
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
    env: sys::napi_env,
    data: *mut std::ffi::c_void,
    _hint: *mut std::ffi::c_void,
) {
    // SAFETY: `data` is the caller boxed in `create`, finalized exactly once.
    let caller = unsafe { Box::from_raw(data.cast::<Caller>()) };
    // SAFETY: `env` is the env Node finalizes in; `caller.object` is the reference `create`
    // made, deleted here and nowhere else (deleting a reference is allowed in a finalizer).
    unsafe { sys::napi_delete_reference(env, caller.object) };
}

/// `callHook(hook, params)`: `NativeProvider.call`'s outcome, or its throw.
unsafe extern "C" fn call_hook(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> sys::napi_value {
    let mut argc = 2;
    // Arguments not passed are filled in as `undefined`.
    let mut argv = [std::ptr::null_mut(); 2];
    let mut data = std::ptr::null_mut();
    // SAFETY: `env` and `info` are what Node passed to this callback, on the JS thread;
    // `argv` has room for `argc` (2) handles, and `data` is a local the call writes to.
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
            // SAFETY: `data` is this function's caller (`create`), alive until the function is
            // finalized; its provider is alive while the caller holds its object.
            let provider = unsafe { &*(*data.cast::<Caller>()).provider };
            // SAFETY: `argv[0]` is a live handle of this callback's scope (an argument, or the
            // `undefined` napi fills in for a missing one), and `env` is this callback's env.
            let hook = unsafe { HookName::from_napi_value(env, argv[0]) }?;
            // SAFETY: as above, for `argv[1]`.
            let params = unsafe { Unknown::from_napi_value(env, argv[1]) }?;
            let scope = Env::from_raw(env);
            let outcome = provider.dispatch(&scope, hook, params)?;
            // SAFETY: `env` is this callback's env, on its JS thread, inside its handle scope.
            unsafe { ToNapiValue::to_napi_value(env, outcome) }
        }))
        .unwrap_or_else(|panic| Err(panic_to_error(panic)))
    });
    answer.unwrap_or_else(|error| {
        // SAFETY: `env` is this callback's env, on its JS thread; the thrown error is the
        // callback's result (its null return value is then ignored by Node).
        unsafe { JsError::from(error).throw_into(env) };
        std::ptr::null_mut()
    })
}
