//! The runner's own error.

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
