//! `performSyncOut`: pod files and trees streamed out as tar archives, each checked as it
//! arrives and extracted confined into the host destination.

use super::host::{count_host_files, extract_host_tarball, fs_error, host_temp_dir};
use super::operation::{SyncMapping, SyncOperation};
use super::paths::assert_confined_sandbox_path;
use super::script::{self};
use super::stream::{self};
use super::sync_in::scratch_stage;
use super::tar_list::escaping_member_message;
use super::target::{Counts, MAX_SYNC_OUTPUT_BYTES, SyncTarget, failed, operation_result};
use sandbox_core::archive::node_fs_message;
use sandbox_core::{ProviderError, ProviderResult};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// `streamPodStdoutToFile`, with the member check of `extractHostTarball` run on the bytes as
/// they arrive ([`super::stream::receive_checked`]): its verdict, for the extraction.
pub(super) async fn stream_pod_to_file(
    target: &SyncTarget,
    script: String,
    file: &Path,
    max_output_bytes: u64,
    timeout_ms: u64,
    label: &str,
) -> ProviderResult<Result<(), String>> {
    let sink = std::fs::File::create(file).map_err(|e| fs_error(&e, "open", file))?;
    let (output, verdict) =
        stream::receive_checked(target, script, sink, max_output_bytes, timeout_ms, label).await?;
    if output.exit_code != 0 {
        return Err(failed(label, &output));
    }
    Ok(verdict)
}

pub(super) async fn sync_out_files(
    target: &SyncTarget,
    mappings: &[&SyncMapping],
    remote_dir: &str,
    timeout_ms: u64,
    max_output_bytes: u64,
) -> ProviderResult<Counts> {
    if mappings.is_empty() {
        return Ok(Counts::default());
    }
    for m in mappings {
        assert_confined_sandbox_path(remote_dir, &m.source_path, "source")
            .map_err(ProviderError::new)?;
    }
    let tmp = host_temp_dir()?;
    let sources: Vec<String> = mappings.iter().map(|m| m.source_path.clone()).collect();
    let script = script::sync_out_files(remote_dir, &scratch_stage(remote_dir), &sources);
    let local = tmp.path().join("sync-out.tar");
    let verdict = stream_pod_to_file(
        target,
        script,
        &local,
        max_output_bytes,
        timeout_ms,
        "syncOut file transfer",
    )
    .await?;
    let extract = tmp.path().join("extract");
    extract_host_tarball(&local, &extract, verdict).await?;
    let mut bytes = 0;
    for (i, m) in mappings.iter().enumerate() {
        let staged = extract.join(i.to_string());
        // Only a regular file may take a target's place (never a link or directory).
        if !std::fs::symlink_metadata(&staged).is_ok_and(|m| m.file_type().is_file()) {
            return Err(ProviderError::new(escaping_member_message(&i.to_string())));
        }
        let target_path = PathBuf::from(&m.target_path);
        if let Some(parent) = target_path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| fs_error(&e, "mkdir", parent))?;
        }
        if let Some(mode) = m.mode {
            use std::os::unix::fs::PermissionsExt;
            let mode = (mode.trunc() as i64 as u32) & 0o7777;
            std::fs::set_permissions(&staged, std::fs::Permissions::from_mode(mode))
                .map_err(|e| fs_error(&e, "chmod", &staged))?;
        }
        bytes += std::fs::metadata(&staged)
            .map_err(|e| fs_error(&e, "stat", &staged))?
            .len();
        std::fs::rename(&staged, &target_path).map_err(|e| {
            ProviderError::new(format!(
                "{} -> '{}'",
                node_fs_message(&e, "rename", &staged),
                target_path.display()
            ))
        })?;
    }
    Ok(Counts {
        files: mappings.len() as u64,
        bytes,
    })
}

pub(super) async fn sync_out_directory(
    target: &SyncTarget,
    mapping: &SyncMapping,
    remote_dir: &str,
    timeout_ms: u64,
    max_output_bytes: u64,
) -> ProviderResult<Counts> {
    assert_confined_sandbox_path(remote_dir, &mapping.source_path, "source")
        .map_err(ProviderError::new)?;
    let tmp = host_temp_dir()?;
    let script = script::sync_out_directory(
        remote_dir,
        &mapping.source_path,
        &mapping.exclude,
        mapping.follow_symlinks,
    );
    let local = tmp.path().join("sync-out.tar");
    let verdict = stream_pod_to_file(
        target,
        script,
        &local,
        max_output_bytes,
        timeout_ms,
        "syncOut directory transfer",
    )
    .await?;
    let bytes = std::fs::metadata(&local)
        .map_err(|e| fs_error(&e, "stat", &local))?
        .len();
    let target_dir = PathBuf::from(&mapping.target_path);
    extract_host_tarball(&local, &target_dir, verdict).await?;
    Ok(Counts {
        files: count_host_files(&target_dir, &mapping.exclude),
        bytes,
    })
}

/// `performSyncOut`.
pub async fn perform_sync_out(
    target: &SyncTarget,
    operations: &[SyncOperation],
    remote_dir: &str,
    timeout_ms: u64,
    max_output_bytes: Option<u64>,
) -> ProviderResult<Value> {
    let max = max_output_bytes.unwrap_or(MAX_SYNC_OUTPUT_BYTES);
    let mut results = Vec::new();
    for op in operations {
        let mut counts = Counts::default();
        let files: Vec<&SyncMapping> = op.files.iter().filter(|m| m.kind == "file").collect();
        let r = sync_out_files(target, &files, remote_dir, timeout_ms, max).await?;
        counts.files += r.files;
        counts.bytes += r.bytes;
        for m in op.files.iter().filter(|m| m.kind == "directory") {
            let r = sync_out_directory(target, m, remote_dir, timeout_ms, max).await?;
            counts.files += r.files;
            counts.bytes += r.bytes;
        }
        results.push(operation_result(op, &counts));
    }
    Ok(json!({ "operations": results }))
}
