//! `performSyncIn`: host files and trees streamed into the pod as tar archives, each checked
//! and extracted there by the in-pod script, then each operation's post-upload commands.

use super::host::{
    check_followed_source, copyfile_error, count_host_files, create_host_tarball, fs_error,
    host_temp_dir, sorted_entries, tarball_args,
};
use super::operation::{PostUploadCommand, SyncMapping, SyncOperation};
use super::paths::assert_confined_sandbox_path;
use super::script::{self, InboundFile};
use super::stream::{self, Sent, sh_argv};
use super::target::{
    Counts, SCRATCH_PREFIX, SYNC_STDERR_CAP_BYTES, SyncTarget, failed, operation_result,
};
use crate::exec::{StreamingIo, StreamingOutput};
use sandbox_core::{ProviderError, ProviderResult};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// One sync-in transfer: host `tar` of `entries` under `local_dir` into the exec of
/// `script(archive bytes)`, packed while it is sent ([`super::stream`]); when that diverges
/// (or there is nothing to pack), the original's way: packed into the file `archive`, then
/// sent. The archive's size.
#[allow(clippy::too_many_arguments)]
pub(super) async fn send_host_tarball(
    target: &SyncTarget,
    local_dir: &Path,
    entries: &[String],
    exclude: &[String],
    follow_symlinks: bool,
    archive: &Path,
    timeout_ms: u64,
    label: &str,
    script: impl Fn(u64) -> String,
) -> ProviderResult<u64> {
    if !entries.is_empty() {
        let sizing = tarball_args(
            local_dir,
            "/dev/null",
            entries,
            exclude,
            follow_symlinks,
            true,
        );
        if let Some(size) = stream::sized_archive(&sizing).await {
            let packing = tarball_args(local_dir, "-", entries, exclude, follow_symlinks, false);
            let sent =
                stream::send_packed(target, &packing, size, script(size), timeout_ms).await?;
            if let Sent::Done(output) = sent {
                if output.exit_code != 0 {
                    return Err(failed(label, &output));
                }
                return Ok(size);
            }
        }
    }
    create_host_tarball(local_dir, archive, entries, exclude, follow_symlinks).await?;
    let archive_bytes = std::fs::metadata(archive)
        .map_err(|e| fs_error(&e, "stat", archive))?
        .len();
    stream_file_to_pod(target, script(archive_bytes), archive, timeout_ms, label).await?;
    Ok(archive_bytes)
}

pub(super) fn scratch_stage(remote_dir: &str) -> String {
    js_compat::path::join(
        remote_dir,
        &format!("{SCRATCH_PREFIX}-{}", js_compat::uuid::random_uuid()),
    )
}

/// `streamFileToPodStdin`.
pub(super) async fn stream_file_to_pod(
    target: &SyncTarget,
    script: String,
    file: &Path,
    timeout_ms: u64,
    label: &str,
) -> ProviderResult<()> {
    let source = tokio::fs::File::open(file)
        .await
        .map_err(|e| fs_error(&e, "open", file))?;
    let output = target
        .run(
            &sh_argv(script),
            StreamingIo {
                stdin: Some(Box::new(source)),
                stdout: None,
                timeout_ms,
                max_stderr_bytes: Some(SYNC_STDERR_CAP_BYTES),
            },
        )
        .await?;
    if output.exit_code != 0 {
        return Err(failed(label, &output));
    }
    Ok(())
}

pub(super) async fn sync_in_files(
    target: &SyncTarget,
    mappings: &[&SyncMapping],
    remote_dir: &str,
    timeout_ms: u64,
) -> ProviderResult<Counts> {
    if mappings.is_empty() {
        return Ok(Counts::default());
    }
    for m in mappings {
        assert_confined_sandbox_path(remote_dir, &m.target_path, "target")
            .map_err(ProviderError::new)?;
    }
    let tmp = host_temp_dir()?;
    let stage = tmp.path().join("stage");
    std::fs::create_dir(&stage).map_err(|e| fs_error(&e, "mkdir", &stage))?;
    let mut bytes = 0;
    let mut names = Vec::new();
    for (i, m) in mappings.iter().enumerate() {
        let staged = stage.join(i.to_string());
        let source = PathBuf::from(&m.source_path);
        tokio::fs::copy(&source, &staged)
            .await
            .map_err(|e| copyfile_error(&e, &source, &staged))?;
        bytes += tokio::fs::metadata(&source)
            .await
            .map_err(|e| fs_error(&e, "stat", &source))?
            .len();
        names.push(i.to_string());
    }
    let archive = tmp.path().join("sync-in.tar");
    let files: Vec<InboundFile> = mappings
        .iter()
        .map(|m| InboundFile {
            target_path: m.target_path.clone(),
            mode: m.mode,
        })
        .collect();
    let remote_stage = scratch_stage(remote_dir);
    send_host_tarball(
        target,
        &stage,
        &names,
        &[],
        false,
        &archive,
        timeout_ms,
        "syncIn file transfer",
        |archive_bytes| script::sync_in_files(remote_dir, &remote_stage, &files, archive_bytes),
    )
    .await?;
    Ok(Counts {
        files: mappings.len() as u64,
        bytes,
    })
}

pub(super) async fn sync_in_directory(
    target: &SyncTarget,
    mapping: &SyncMapping,
    remote_dir: &str,
    timeout_ms: u64,
) -> ProviderResult<Counts> {
    assert_confined_sandbox_path(remote_dir, &mapping.target_path, "target")
        .map_err(ProviderError::new)?;
    let tmp = host_temp_dir()?;
    let archive = tmp.path().join("sync-in.tar");
    let source = PathBuf::from(&mapping.source_path);
    let entries = sorted_entries(&source).await?;
    if mapping.follow_symlinks {
        check_followed_source(&source, &mapping.exclude).await?;
    }
    let archive_bytes = send_host_tarball(
        target,
        &source,
        &entries,
        &mapping.exclude,
        mapping.follow_symlinks,
        &archive,
        timeout_ms,
        "syncIn directory transfer",
        |archive_bytes| script::sync_in_directory(remote_dir, &mapping.target_path, archive_bytes),
    )
    .await?;
    Ok(Counts {
        files: count_host_files(&source, &mapping.exclude),
        bytes: archive_bytes,
    })
}

/// The error of a post-upload command that exited non-zero, with its trimmed stderr if any (A46 in
/// the error reference).
pub(super) fn post_upload_failed(output: &StreamingOutput) -> ProviderError {
    let suffix = super::target::stderr_suffix(output);
    ProviderError::new(format!(
        "Kubernetes post-upload command failed (exit {}){suffix}",
        output.exit_code
    ))
}

pub(super) async fn run_post_upload_commands(
    target: &SyncTarget,
    commands: &[PostUploadCommand],
    remote_dir: &str,
    timeout_ms: u64,
) -> ProviderResult<()> {
    for command in commands {
        let cwd = command
            .cwd
            .clone()
            .unwrap_or_else(|| remote_dir.to_string());
        assert_confined_sandbox_path(remote_dir, &cwd, "post-upload command cwd")
            .map_err(ProviderError::new)?;
        let argv = vec![
            "/bin/sh".to_string(),
            "-c".into(),
            script::post_upload_wrapper(remote_dir),
            "pc-post-upload".into(),
            cwd,
            command.command.clone(),
        ];
        let output = target
            .run(
                &argv,
                StreamingIo {
                    stdin: None,
                    stdout: None,
                    timeout_ms: command.timeout_ms.unwrap_or(timeout_ms),
                    max_stderr_bytes: Some(SYNC_STDERR_CAP_BYTES),
                },
            )
            .await?;
        if output.exit_code != 0 {
            return Err(post_upload_failed(&output));
        }
    }
    Ok(())
}

/// `performSyncIn`: per operation, the file batch, each directory, then the post-upload
/// commands.
pub async fn perform_sync_in(
    target: &SyncTarget,
    operations: &[SyncOperation],
    remote_dir: &str,
    timeout_ms: u64,
) -> ProviderResult<Value> {
    let mut results = Vec::new();
    for op in operations {
        let mut counts = Counts::default();
        let files: Vec<&SyncMapping> = op.files.iter().filter(|m| m.kind == "file").collect();
        let r = sync_in_files(target, &files, remote_dir, timeout_ms).await?;
        counts.files += r.files;
        counts.bytes += r.bytes;
        for m in op.files.iter().filter(|m| m.kind == "directory") {
            let r = sync_in_directory(target, m, remote_dir, timeout_ms).await?;
            counts.files += r.files;
            counts.bytes += r.bytes;
        }
        run_post_upload_commands(target, &op.post_upload_commands, remote_dir, timeout_ms).await?;
        results.push(operation_result(op, &counts));
    }
    Ok(json!({ "operations": results }))
}
