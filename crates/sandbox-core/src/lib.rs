//! Shared foundation of the sandbox providers.
//!
//! The provider crates know nothing of Node: they take JSON-shaped params, report through a
//! [`HostSink`], and fail with a [`ProviderError`] whose message is the exact catalogued text.
//! Each implements [`Provider`], the one hook table ([`Hook`]) the napi layer drives.
//! The napi layer (`src/` of the root package) only converts and bridges.

pub mod archive;
pub mod confined;
pub mod error;
pub mod golden;
pub mod hook;
pub mod host;
pub mod json;
pub mod soak;
pub mod utf8;

pub use error::{ErrorClass, ProviderError, ProviderResult};
pub use hook::{Hook, HookFuture, HookResult, Provider};
pub use host::{BoxFuture, HostSink, LogLevel, NullSink, OutputStream};
