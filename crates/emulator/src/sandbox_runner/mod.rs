//! Real execution for the emulators: every sandbox is a private directory tree that becomes
//! `/` of a bubblewrap container, with the host's system directories mounted read-only on top.
//!
//! Why bubblewrap rather than plain child processes: the provider under test runs `bash -lc`,
//! `tar`, `realpath` and friends against absolute paths such as `/paperclip-workspace` and
//! `/tmp`, so each sandbox needs its own writable `/` without touching the host. A pid namespace
//! per command also gives us the service's "tree" semantics: when the command's namespace init
//! dies, the kernel kills every process left inside it.
//!
//! The submodules import each other, never this one: `error`, `exit` and `procfs` at the
//! bottom, then `bwrap`, `root` and `spawn`; this module declares them and re-exports.

mod bwrap;
mod error;
mod exit;
mod procfs;
mod root;
mod spawn;

pub use bwrap::{BWRAP_PACKAGE, Bwrap, PidMode};
pub use error::RunnerError;
pub use exit::{ExitInfo, signal_from_name};
pub use root::SandboxRoot;
pub use spawn::{IoMode, LaunchSpec, Launched, LaunchedIo, PidNamespace, ProcessTree, PtyMaster};

#[cfg(test)]
mod tests;
