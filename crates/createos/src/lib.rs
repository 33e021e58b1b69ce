//! The CreateOS sandbox provider (v0.3.0 of the vendor fork), in plain Rust.
//!
//! Hooks take the JSON params the host sends and return the JSON results it expects; the napi
//! layer only converts.

pub mod client;
pub mod config;
pub mod error;
pub mod exec;
pub mod lease;
pub mod messages;
pub mod ndjson;
pub mod pacer;
mod params;
pub mod process;
mod provider;
mod session;
mod setup;
pub mod signal;
pub mod sync;

pub use client::{CreateOsClient, HostApiKey};
pub use lease::state::{LeaseSession, SessionEntry, SessionForgetter, SessionKind};
pub use pacer::Pacer;
pub use provider::{CreateOsProvider, ProviderOptions};
pub use signal::{AbortReason, Signal};
