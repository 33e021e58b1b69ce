//! Real execution for the emulators: every sandbox is a private directory tree that becomes
//! `/` of a bubblewrap container, with the host's system directories mounted read-only on top.
//!
//! Why bubblewrap rather than plain child processes: the provider under test runs `bash -lc`,
//! `tar`, `realpath` and friends against absolute paths such as `/paperclip-workspace` and
//! `/tmp`, so each sandbox needs its own writable `/` without touching the host. A pid namespace
//! per command also gives us the service's "tree" semantics: when the command's namespace init
//! dies, the kernel kills every process left inside it.

mod bwrap;
mod exit;
mod procfs;
mod root;
mod spawn;

pub use bwrap::{BWRAP_PACKAGE, Bwrap, PidMode};
pub use exit::{ExitInfo, signal_from_name};
pub use root::SandboxRoot;
pub use spawn::{IoMode, LaunchSpec, Launched, LaunchedIo, PidNamespace, ProcessTree, PtyMaster};

/// Errors of the runner itself (not of the commands it runs, whose failures are exit codes).
#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    /// bwrap is absent or cannot create namespaces here; names the package to install.
    #[error(
        "bubblewrap (`bwrap`) is required to run emulated sandboxes but is not usable: {detail}. \
         Install the `{package}` package (e.g. `apt-get install -y {package}`)."
    )]
    BwrapUnavailable {
        detail: String,
        package: &'static str,
    },
    #[error("sandbox I/O failed: {0}")]
    Io(#[from] std::io::Error),
}
