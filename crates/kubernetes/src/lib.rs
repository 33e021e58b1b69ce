//! The Kubernetes sandbox provider (upstream paperclipai/paperclip at 1bbb5810), in plain Rust.
//!
//! See `../shared/reference/kubernetes.md`.

pub mod config;
mod provider;

pub use provider::KubernetesProvider;
