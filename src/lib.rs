//! The napi surface of paperclip-sandbox-native.
//!
//! Nothing here decides anything: one class, [`provider::NativeProvider`], forwards each hook of
//! a provider's hook table ([`sandbox_core::Provider`]) to its provider crate, converts JSON in
//! and out, and bridges the worker's `ctx` through ThreadsafeFunctions. Hook results
//! cross as an [`outcome::Outcome`] so that the JS facade can throw a plain `Error` with the
//! exact catalogued message (napi's own errors carry an enumerable string `code`).

pub mod debug;
pub mod execution_log;
pub mod explain;
pub mod guard;
mod hook_caller;
pub mod host;
mod js_params;
mod js_text;
mod napi_status;
pub mod outcome;
pub mod provider;
pub(crate) mod runtime;

#[napi_derive::module_init]
fn init() {
    guard::install_panic_hook();
    runtime::install();
}
