//! The runtime error texts of the client, exec and lease hooks, verbatim from the contract
//! (`tests/data/contract/createos-errors.txt`). Config texts live in `config::messages`.
//!
//! Hosts and users match on these strings: never reword them.

pub const INVALID_RESPONSE: &str = "CreateOS returned an invalid response.";
pub const INVALID_RESOURCE_ID: &str = "CreateOS returned an invalid resource ID.";
pub const CONNECTION_FAILED: &str = "CreateOS connection failed.";
pub const INVALID_JSON: &str = "CreateOS returned invalid JSON.";
pub const UNSUCCESSFUL_RESPONSE: &str = "CreateOS returned an unsuccessful response.";
pub const SANDBOX_IDENTITY_INVALID: &str = "CreateOS sandbox identity or state is invalid.";
pub const ROOTFS_DEFAULT_INVALID: &str = "CreateOS rootfs catalog did not provide a valid default.";
pub const TEMPLATE_NOT_PAUSED: &str =
    "CreateOS template sandbox must be paused before it can be forked.";

pub const COMMAND_VALUE_NUL: &str = "Sandbox command values cannot contain NUL.";
pub const COMMAND_REQUIRED: &str = "A sandbox command is required.";
pub const INVALID_ENV: &str = "Invalid sandbox environment variable.";
pub const EMPTY_PROCESS_STREAM: &str = "CreateOS returned an empty process stream.";
pub const FRAME_TOO_LARGE: &str = "CreateOS process frame is too large.";
pub const INVALID_FRAME: &str = "CreateOS returned an invalid process frame.";
pub const COMMAND_STREAM_ERROR: &str = "CreateOS command stream reported an error.";
pub const INVALID_COMMAND_EVENT: &str = "CreateOS returned an invalid command stream event.";
pub const COMMAND_STREAM_NO_EXIT: &str = "CreateOS command stream ended without an exit status.";
pub const COMMAND_CANCELLED: &str = "CreateOS command was cancelled.";
/// What Node's fetch rejects a body read with when the connection ends mid-body (a TypeError).
pub const TERMINATED: &str = "terminated";

pub const WORKSPACE_PREPARATION_FAILED: &str =
    "CreateOS workspace preparation failed; the image must provide Bash.";
pub const EXPIRY_UNSUPPORTED: &str =
    "CreateOS does not yet support leases with a guaranteed expiration deadline.";
pub const EXECUTION_LEASE_MISMATCH: &str =
    "CreateOS execution requires a lease from this environment.";
pub const LEASE_CLOSING: &str = "CreateOS lease is closing or requires cleanup.";
pub const INVALID_COMMAND_TIMEOUT: &str = "Invalid CreateOS command timeout.";
pub const LEASE_NOT_OURS: &str = "CreateOS lease does not belong to this environment.";
pub const CLEANUP_IN_PROGRESS: &str = "CreateOS lease cleanup is already in progress.";
pub const CLEANUP_UNCONFIRMED: &str =
    "CreateOS process cleanup is unconfirmed; destroy this lease before reusing it.";
pub const PROBE_COMMAND_FAILED: &str = "CreateOS command probe failed.";
pub const RESUME_DURING_CLEANUP: &str = "CreateOS lease cleanup must finish before resume.";
pub const WORKSPACE_LEASE_MISMATCH: &str =
    "CreateOS workspace requires a lease from this environment.";
pub const SESSION_LEASE_NOT_CACHED: &str =
    "CreateOS session requires a lease cached for this environment.";

/// Returned (not thrown) texts of the probe.
pub const PROBE_SUCCEEDED: &str = "CreateOS sandbox creation and command execution succeeded.";
pub const PROBE_FAILED: &str = "CreateOS probe failed.";

/// `CreateOS request failed (HTTP ${status}) during ${label}.`
pub fn request_failed(status: u16, label: &str) -> String {
    format!("CreateOS request failed (HTTP {status}) during {label}.")
}

/// `CreateOS fork setup failed and cleanup is unconfirmed for sandbox ${id}.`
pub fn fork_cleanup_unconfirmed(id: &str) -> String {
    format!("CreateOS fork setup failed and cleanup is unconfirmed for sandbox {id}.")
}

/// `CreateOS sandbox did not reach ${desired}; provider state is ${status}.`
pub fn transition_failed(desired: &str, status: &str) -> String {
    format!("CreateOS sandbox did not reach {desired}; provider state is {status}.")
}

/// `CreateOS setup failed and cleanup is unconfirmed for sandbox ${id}.`
pub fn setup_cleanup_unconfirmed(id: &str) -> String {
    format!("CreateOS setup failed and cleanup is unconfirmed for sandbox {id}.")
}

// File sync.
pub const TRANSFER_PATH_UNCONFINED: &str =
    "CreateOS transfer requires a confined absolute sandbox path.";
pub const TRANSFER_PATH_ESCAPES: &str = "CreateOS transfer path escapes the workspace.";
pub const ARCHIVE_UNSAFE: &str =
    "CreateOS archive contains unsafe entries or exceeds the extraction limit.";
/// `followSymlinks` reached a host directory twice (a link loop or two links to it).
pub fn sync_source_repeated_directory(path: &std::path::Path) -> String {
    format!(
        "CreateOS sync source repeats a directory through symbolic links at {}; followSymlinks needs a tree without link loops or two links to one directory.",
        path.display()
    )
}
/// `followSymlinks` on a sync-out: the sandbox tree repeats a directory through links.
pub fn sync_out_repeated_directory(remote: &str) -> String {
    format!(
        "CreateOS sync-out source {remote} repeats a directory through symbolic links; followSymlinks needs a tree without link loops or two links to one directory."
    )
}
/// A file sync-out over the outbound bound ([`crate::sync::SYNC_OUT_FILE_LIMIT`]).
pub fn sync_out_file_too_large(remote: &str) -> String {
    format!(
        "CreateOS sync-out file {remote} is larger than the 8 GiB limit; nothing was written to the target."
    )
}
/// A PAX header or GNU long name / long link in a downloaded archive over the bound.
pub fn archive_extended_header_too_large(size: u64) -> String {
    format!(
        "CreateOS archive has an extended header of {size} bytes (a PAX header or GNU long name), over the 1 MiB limit; nothing was extracted."
    )
}
/// An archive entry would be written through a symbolic link in the destination.
pub fn archive_through_symlink(path: &std::path::Path) -> String {
    format!(
        "CreateOS archive entry would be written through the symbolic link {}; links in the destination are never followed.",
        path.display()
    )
}
pub const TRANSFER_COMMAND_FAILED: &str = "CreateOS transfer command failed.";
pub const DOWNLOAD_NO_BODY: &str = "CreateOS file download has no body.";
pub const TRANSFER_KIND_UNSUPPORTED: &str = "Unsupported CreateOS transfer kind.";
pub const TRANSFER_HOST_PATH_RELATIVE: &str = "CreateOS transfer requires an absolute host path.";
pub const INVALID_FILE_MODE: &str = "Invalid CreateOS file mode.";
pub const INVALID_TRANSFER_TIMEOUT: &str = "Invalid CreateOS transfer timeout.";
pub const OUTBOUND_POST_UPLOAD: &str =
    "Outbound CreateOS transfers cannot run post-upload commands.";
pub const ARCHIVE_DESTINATION_SYMLINK: &str = "CreateOS archive destination cannot be a symlink.";

// Interactive setup and templates.
pub const SETUP_IDENTITY_UNVERIFIED: &str =
    "CreateOS setup sandbox identity could not be verified.";
pub const SETUP_NOT_OURS: &str = "CreateOS setup sandbox does not belong to this environment.";
pub const CAPTURE_WITHOUT_LEASE: &str =
    "Cannot capture a CreateOS template without a setup sandbox lease.";
pub const INVALID_CAPTURE_TIMEOUT: &str = "Invalid CreateOS template capture timeout.";

/// `CreateOS can start from snapshot templates only, not ${sourceTemplateKind}.`
pub fn setup_source_kind_unsupported(kind: &str) -> String {
    format!("CreateOS can start from snapshot templates only, not {kind}.")
}

/// `CreateOS interactive setup failed and cleanup is unconfirmed for sandbox ${sandboxId}.`
pub fn interactive_setup_cleanup_unconfirmed(id: &str) -> String {
    format!("CreateOS interactive setup failed and cleanup is unconfirmed for sandbox {id}.")
}

/// `CreateOS can delete snapshot templates only, not ${templateKind}.`
pub fn template_kind_unsupported(kind: &str) -> String {
    format!("CreateOS can delete snapshot templates only, not {kind}.")
}

// Beyond the original (catalogued in `error_catalog` as additions): the original could
// leave a sandbox behind in these cases; this implementation cleans up and says so.

/// An acquire or probe that worker shutdown stopped; what it had created was deleted.
pub const ACQUIRE_STOPPED_BY_SHUTDOWN: &str =
    "CreateOS lease acquisition was stopped by worker shutdown; nothing was left behind.";

/// A probe whose final delete failed rejects with the delete's own error, as the original did;
/// this warning on the worker log names the sandbox that may still exist, so that an operator
/// can delete it.
pub fn probe_sandbox_not_deleted(id: &str) -> String {
    format!(
        "CreateOS probe could not delete sandbox {id}; delete it in CreateOS so that it stops billing."
    )
}

/// A create whose outcome is unknown, when finding or deleting the sandbox by its name failed
/// too.
pub fn creation_cleanup_unconfirmed(name: &str) -> String {
    format!(
        "CreateOS sandbox creation could not be confirmed and cleanup is unconfirmed; delete the sandbox named {name} if it exists."
    )
}

/// A fork whose outcome is unknown: a fork carries no name, so a sandbox made by it cannot be
/// told from any other and is not deleted.
pub fn fork_unconfirmed(template: &str, requested_at: &str) -> String {
    format!(
        "CreateOS fork of template {template} could not be confirmed; a sandbox forked from it at {requested_at} may exist and was not deleted."
    )
}
