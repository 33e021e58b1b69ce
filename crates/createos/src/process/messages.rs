//! The error and log texts of managed processes and of the login PTY / duplex hooks, verbatim
//! from the contract (`tests/data/contract/createos-errors.txt`). Never reword them.

pub const JOURNAL_INVALID: &str = "CreateOS process output journal is invalid.";
pub const EXIT_STATUS_MISSING: &str = "CreateOS process exit status is missing.";
pub const OUTPUT_EVICTED: &str = "CreateOS process output was evicted before it could be read.";
pub const OUTPUT_CONNECTION_FAILED: &str = "CreateOS process output connection failed.";
pub const SEQUENCE_INVALID: &str = "CreateOS process sequence is invalid.";
pub const SEQUENCE_GAP: &str = "CreateOS process output has a sequence gap.";
pub const OUTPUT_INVALID: &str = "CreateOS process output is invalid.";
pub const STREAM_ERROR: &str = "CreateOS process stream reported an error.";
pub const UNKNOWN_EVENT: &str = "CreateOS returned an unknown process event.";
pub const REPLAY_INCOMPLETE: &str =
    "CreateOS process stream ended before all output could be replayed.";
pub const TREE_TERMINATION_UNCONFIRMED: &str =
    "CreateOS process tree termination was not confirmed.";
/// The abort reason of a stopped session's follower: the host only sees exit code `null`.
pub const MANAGED_PROCESS_STOPPED: &str = "CreateOS managed process was stopped.";

pub const LOGIN_ROUTE_OPEN: &str = "CreateOS login route is already open.";
pub const LOGIN_HOME_INVALID: &str = "CreateOS login session home is invalid.";
pub const LOGIN_HOME_FAILED: &str = "CreateOS login home preparation failed.";
pub const DUPLEX_ROUTE_OPEN: &str = "CreateOS duplex route is already open.";
pub const DUPLEX_COMMAND_INVALID: &str = "CreateOS duplex command is invalid.";
/// Not in the original (which silently dropped such a write): the host contract asks for a
/// protocol error when `decodeChannelBytes` gives `null`.
pub const DUPLEX_DATA_INVALID: &str = "CreateOS duplex write data is not canonical base64.";

/// Logger lines (info) of the login PTY hooks.
pub const LOG_LOGIN_REQUESTED: &str = "CreateOS login PTY open requested.";
pub const LOG_LOGIN_HOME_PREPARED: &str = "CreateOS login PTY home prepared.";
pub const LOG_LOGIN_CREATION_BEFORE_BINDING: &str =
    "CreateOS login PTY process creation failed before binding.";
pub const LOG_LOGIN_OPENED: &str = "CreateOS login PTY process opened.";
pub const LOG_LOGIN_STREAM_FAILED: &str = "CreateOS login PTY stream failed.";

/// `CreateOS login PTY process creation failed (HTTP ${status}).`
pub fn log_login_creation_failed(status: u16) -> String {
    format!("CreateOS login PTY process creation failed (HTTP {status}).")
}

/// `CreateOS login PTY exited (code=${exitCode ?? "signal"}).`
pub fn log_login_exited(code: &str) -> String {
    format!("CreateOS login PTY exited (code={code}).")
}
