//! The napi surface of paperclip-sandbox-native.
//!
//! Nothing here decides anything: one class, [`provider::NativeProvider`], forwards each hook of
//! a provider's hook table ([`sandbox_core::Provider`]) to its provider crate through one
//! bridge ([`bridge`]: params in, the outcome out), and bridges the worker's `ctx` through
//! ThreadsafeFunctions ([`host`]). Hook results cross as an outcome object, `{value}` or
//! `{error}`, so that plugin-kit can throw a plain `Error` with the exact catalogued message
//! (napi's own errors carry an enumerable string `code`).

pub mod bridge;
pub mod debug;
pub mod execution_log;
pub mod explain;
pub mod guard;
pub mod host;
mod napi_status;
pub mod provider;
pub(crate) mod runtime;

#[napi_derive::module_init]
fn init() {
    guard::install_panic_hook();
    runtime::install();
}
