//! Shared foundation of the sandbox providers.
//!
//! The provider crates know nothing of Node: they take JSON-shaped params, report through a
//! [`HostSink`], and fail with a [`ProviderError`] whose message is the exact catalogued text.
//! Each implements [`Provider`], the one hook table ([`Hook`]) the napi layer drives; a hook's
//! value is a JSON tree or a typed value that serializes itself ([`HookValue`]). How params and
//! values cross to JavaScript is decided in the napi layer (`src/bridge/` of the root package)
//! and nowhere here. The JavaScript
//! semantics the providers reproduce live in the `js-compat` crate.
//!
//! With the `testing` feature (the providers' dev-dependencies enable it), `golden` loads the
//! recorded golden vectors, `soak` drives the reliability soaks, `fuzz` holds the shared
//! half of the property fuzzing, `poll` is the tests' one bounded wait on a condition,
//! `hostile` the host-side checks of the hostile-sandbox suites, `hook_table` the check of
//! the catalogue's hook names against a provider's table and `module_graph` the check of a
//! crate's module layering and file and function sizes.

pub mod archive;
pub mod confined;
pub mod error;
#[cfg(feature = "testing")]
pub mod fuzz;
#[cfg(feature = "testing")]
pub mod golden;
pub mod hook;
#[cfg(feature = "testing")]
pub mod hook_table;
pub mod host;
#[cfg(feature = "testing")]
pub mod hostile;
#[cfg(feature = "testing")]
pub mod module_graph;
pub mod output_batch;
#[cfg(feature = "testing")]
pub mod poll;
#[cfg(feature = "testing")]
pub mod recording_sink;
#[cfg(feature = "testing")]
pub mod soak;
pub mod sparse;

pub use error::{ErrorClass, ProviderError, ProviderResult};
pub use hook::{Hook, HookFuture, HookResult, HookValue, Provider};
pub use host::{BoxFuture, HostSink, LogLevel, NullSink, OutputStream};
pub use output_batch::{OutputBatch, OutputQueue};
