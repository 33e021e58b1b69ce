//! Local CreateOS and Kubernetes API emulators: real servers on loopback that the providers'
//! tests run against unmodified.
//!
//! [`sandbox_runner`] runs real processes inside bubblewrap sandboxes (shared by every
//! emulator); [`createos`] serves the CreateOS REST API and [`kubernetes`] the Kubernetes
//! API on loopback on top of it. [`common`] holds what the two emulators share: fault-rule
//! matching, the request log's ring buffer, the accept loop, the shared control routes and the
//! binaries' stdin/signal lifecycle.

pub mod common;
pub mod createos;
pub mod kubernetes;
pub mod sandbox_runner;

pub use createos::{CreateOsEmulator, EmulatorCounts, EmulatorOptions};
