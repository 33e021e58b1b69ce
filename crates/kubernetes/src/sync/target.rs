//! The pod a sync runs against, the limits every sync exec runs under, and what sync-in and
//! sync-out report and fail with alike.

use super::operation::SyncOperation;
use super::script::{self};
use crate::error::Error;
use crate::exec::PodExec;
use crate::exec::{StreamingIo, StreamingOutput};
use sandbox_core::ProviderError;
use serde_json::{Value, json};
use std::sync::Arc;

/// Reserved scratch-name stem of staged transfers.
pub const SCRATCH_PREFIX: &str = ".paperclip-upload";
/// The outbound disk guard (8 GiB); the plugin never overrides it.
pub const MAX_SYNC_OUTPUT_BYTES: u64 = 8 * 1024 * 1024 * 1024;
/// The stderr cap of every sync exec (1 MiB).
pub const SYNC_STDERR_CAP_BYTES: u64 = 1024 * 1024;

/// The pod a sync runs against.
#[derive(Clone)]
pub struct SyncTarget {
    pub exec: Arc<dyn PodExec>,
    pub namespace: String,
    pub pod: String,
}

impl SyncTarget {
    pub(super) async fn run(
        &self,
        argv: &[String],
        io: StreamingIo<'_>,
    ) -> Result<StreamingOutput, ProviderError> {
        self.exec
            .exec_streaming(&self.namespace, &self.pod, argv, io)
            .await
            .map_err(exec_error)
    }
}

/// An exec rejection as the hook rejects: a handshake failure keeps its API status.
pub(super) fn exec_error(err: Error) -> ProviderError {
    ProviderError::from(err)
}

pub(super) fn repeated_directory_message(path: impl std::fmt::Display) -> String {
    format!(
        "Kubernetes sync source repeats a directory through symbolic links at {path}; followSymlinks needs a tree without link loops or two links to one directory."
    )
}

/// The sandbox path a sync-out's in-pod walk reported as reached twice
/// ([`script::REPEATED_DIRECTORY_EXIT`]): one line, control characters replaced, at most 1 KiB
/// (it is a name the sandbox chose).
pub(super) fn repeated_in_pod(output: &StreamingOutput) -> Option<String> {
    if output.exit_code != script::REPEATED_DIRECTORY_EXIT {
        return None;
    }
    let line = output.stderr.lines().next()?;
    let path = line.strip_prefix(script::REPEATED_DIRECTORY_TOKEN)?;
    let clean: String = path
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .take(1024)
        .collect();
    Some(clean)
}

pub(super) fn failed(label: &str, output: &StreamingOutput) -> ProviderError {
    if let Some(path) = repeated_in_pod(output) {
        return ProviderError::new(repeated_directory_message(path));
    }
    let suffix = stderr_suffix(output);
    ProviderError::new(format!(
        "Kubernetes {label} failed (exit {}){suffix}",
        output.exit_code
    ))
}

/// `: <stderr>` (trimmed) for a failed in-pod command's message, or nothing when it wrote none.
pub(super) fn stderr_suffix(output: &StreamingOutput) -> String {
    let detail = output.stderr.trim();
    if detail.is_empty() {
        String::new()
    } else {
        format!(": {detail}")
    }
}

/// The message of a streamed sync payload that grew past its on-disk size guard (A40 in the error
/// reference).
pub fn disk_guard_message(label: &str, max: u64) -> String {
    format!(
        "Kubernetes {label} payload exceeded the {max}-byte streamed-output disk guard; the sandbox emitted more bytes than allowed."
    )
}

#[derive(Default)]
pub(super) struct Counts {
    pub(super) files: u64,
    pub(super) bytes: u64,
}

pub(super) fn operation_result(op: &SyncOperation, counts: &Counts) -> Value {
    json!({"operationId": op.operation_id, "filesTransferred": counts.files,
        "bytesTransferred": counts.bytes})
}
