//! Strings across the boundary in one pass each way, for the texts every hook call moves: its
//! params in, its outcome's text and long strings out, and its hook name.
//!
//! napi-rs's `String` conversions take two passes over a string going into Rust
//! (`napi_get_value_string_utf8` once to measure the UTF-8 length, once to copy) and decode UTF-8
//! coming out. A validate call's params carry the kubeconfig (kilobytes), so both passes cost
//! instructions per byte of it on every call, in and out:
//!
//! * In ([`read_utf8`]): the string's UTF-16 length is read first (free: V8 stores it), and a
//!   UTF-8 copy of at most three bytes per UTF-16 unit fits in a buffer of three times that, so
//!   one `napi_get_value_string_utf8` call fills it. Past [`ONE_PASS_LIMIT`] units the buffer
//!   would waste too much, so the copy is measured first, as napi-rs does.
//! * Out ([`create_string`]): JSON text is nearly always ASCII, and an ASCII string is its own Latin-1,
//!   so V8 copies it as it is (`napi_create_string_latin1`) instead of decoding UTF-8; anything
//!   else still crosses as UTF-8.

use napi::bindgen_prelude::{FromNapiValue, ToNapiValue};
use napi::sys;
use sandbox_core::Hook;

/// A string longer than this many UTF-16 units is measured before it is copied (see the module
/// docs): a one-pass buffer for it would be up to three times its UTF-8 size.
const ONE_PASS_LIMIT: usize = 64 * 1024;

/// A JS string's UTF-8 copy, in one pass when it is short (see the module docs); lone
/// surrogates become U+FFFD, as V8 writes them.
///
/// # Safety
/// `value` is a live handle of `env`.
pub(crate) unsafe fn read_utf8(env: sys::napi_env, value: sys::napi_value) -> napi::Result<String> {
    let mut units = 0;
    // SAFETY: `value` is a live handle of `env` (this function's contract); with a null buffer
    // napi writes only the length, to the local `units`.
    let status = unsafe {
        sys::napi_get_value_string_utf16(env, value, std::ptr::null_mut(), 0, &mut units)
    };
    if status != sys::Status::napi_ok || units > ONE_PASS_LIMIT {
        // Not a string (napi-rs reports that as it always has), or a long one.
        // SAFETY: `value` is a live handle of `env` (this function's contract).
        return unsafe { String::from_napi_value(env, value) };
    }
    // Three UTF-8 bytes at most per UTF-16 unit (a surrogate pair: two units, four bytes; a
    // lone surrogate becomes U+FFFD, three), and one for the NUL napi always writes.
    let mut bytes: Vec<u8> = Vec::with_capacity(units * 3 + 1);
    let mut written = 0;
    // SAFETY: `value` is a live handle of `env`; the buffer is `bytes`'s allocation, writable
    // for the `capacity()` bytes passed (napi writes at most that many, NUL included).
    let status = unsafe {
        sys::napi_get_value_string_utf8(
            env,
            value,
            bytes.as_mut_ptr().cast(),
            bytes.capacity(),
            &mut written,
        )
    };
    if status != sys::Status::napi_ok {
        // SAFETY: `value` is a live handle of `env` (this function's contract).
        return unsafe { String::from_napi_value(env, value) };
    }
    // SAFETY: napi wrote `written` bytes (then a NUL) into the buffer's capacity, so the
    // first `written` bytes are initialised and `written < capacity`.
    unsafe { bytes.set_len(written) };
    // V8 writes valid UTF-8 (lone surrogates replaced), so this only checks it.
    Ok(String::from_utf8(bytes)
        .unwrap_or_else(|invalid| String::from_utf8_lossy(invalid.as_bytes()).into_owned()))
}

/// The UTF-8 bytes [`with_utf8_short_first`] tries on the stack.
const SHORT_BYTES: usize = 128;

/// `read`'s answer for a JS string's UTF-8 text, for a string that is most likely short (a
/// name): one napi call into a stack buffer, and only when that filled up, [`read_utf8`]. A
/// reader that keeps nothing of the text allocates nothing.
///
/// # Safety
/// `value` is a live handle of `env`.
unsafe fn with_utf8_short_first<T>(
    env: sys::napi_env,
    value: sys::napi_value,
    read: impl FnOnce(&str) -> T,
) -> napi::Result<T> {
    let mut buffer = [0u8; SHORT_BYTES];
    let mut written = 0;
    // SAFETY: `value` is a live handle of `env` (this function's contract); `buffer` is a local
    // array of exactly `SHORT_BYTES` writable bytes, the size passed.
    let status = unsafe {
        sys::napi_get_value_string_utf8(
            env,
            value,
            buffer.as_mut_ptr().cast(),
            SHORT_BYTES,
            &mut written,
        )
    };
    // napi writes whole characters (at most four bytes each) into `SHORT_BYTES - 1` bytes and
    // a NUL, so a cut string leaves fewer than four of them unused: more left means it is
    // all there.
    if status == sys::Status::napi_ok
        && written + 4 < SHORT_BYTES
        && let Ok(text) = std::str::from_utf8(&buffer[..written])
    {
        return Ok(read(text));
    }
    // SAFETY: `value` is a live handle of `env` (this function's contract).
    unsafe { read_utf8(env, value) }.map(|text| read(&text))
}

/// A hook's name as the hook caller takes it: the [`Hook`] it names,
/// found from a stack copy (the names are short), or, for a name that is no hook's, the name
/// itself for the error that reports it.
pub struct HookName(pub Result<Hook, String>);

impl FromNapiValue for HookName {
    unsafe fn from_napi_value(env: sys::napi_env, value: sys::napi_value) -> napi::Result<Self> {
        // SAFETY: `from_napi_value`'s contract: `value` is a live handle of `env`, on its thread.
        unsafe {
            with_utf8_short_first(env, value, |name| {
                Hook::from_js_name(name).ok_or_else(|| name.to_owned())
            })
        }
        .map(HookName)
    }
}

/// `text` as a JS string: copied as Latin-1 when it is ASCII, decoded from UTF-8 otherwise.
///
/// # Safety
/// `env` is the current env, on its JS thread.
pub(crate) unsafe fn create_string(
    env: sys::napi_env,
    text: &str,
) -> napi::Result<sys::napi_value> {
    let create = if text.is_ascii() {
        sys::napi_create_string_latin1
    } else {
        sys::napi_create_string_utf8
    };
    let mut value = std::ptr::null_mut();
    // SAFETY: `env` is the current env (this function's contract); the pointer and length are
    // `text`'s bytes, borrowed for the call (V8 copies them), and Latin-1 is chosen only for
    // ASCII, whose bytes are the same characters in both; `value` is a local.
    let status = unsafe { create(env, text.as_ptr().cast(), text.len() as isize, &mut value) };
    crate::napi_status::check(status, "a string for JavaScript")?;
    Ok(value)
}

/// A JS value as napi handed it over, for the few values passed straight on.
pub struct RawValue(pub sys::napi_value);

impl FromNapiValue for RawValue {
    unsafe fn from_napi_value(_env: sys::napi_env, value: sys::napi_value) -> napi::Result<Self> {
        Ok(RawValue(value))
    }
}

impl ToNapiValue for RawValue {
    unsafe fn to_napi_value(_env: sys::napi_env, value: Self) -> napi::Result<sys::napi_value> {
        Ok(value.0)
    }
}
