//! The CreateOS sandbox provider (v0.3.0 of the vendor fork), in plain Rust.
//!
//! Hooks take the JSON params the host sends and return the JSON results it expects; the napi
//! layer only converts. See `../shared/reference/createos.md`.

pub mod config;
mod provider;

pub use provider::CreateOsProvider;
