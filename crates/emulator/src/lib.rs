//! Local CreateOS and Kubernetes API emulators. See issue 3 and issue 7.
//!
//! [`sandbox_runner`] runs real processes inside bubblewrap sandboxes (shared by every
//! emulator); [`createos`] serves the CreateOS REST API on loopback on top of it.

pub mod createos;
pub mod kubernetes;
pub mod sandbox_runner;

pub use createos::{CreateOsEmulator, EmulatorCounts, EmulatorOptions};
