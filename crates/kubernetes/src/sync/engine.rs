//! `performSyncIn` / `performSyncOut` against one pod.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sandbox_core::archive::node_fs_message;
use sandbox_core::{ProviderError, ProviderResult};
use serde_json::{Value, json};

use super::paths::assert_confined_sandbox_path;
use super::script::{self, InboundFile};
use super::stream::{self, Sent, sh_argv};
use super::tar_list::{escaping_member_message, extract_confined};
use crate::error::Error;
use crate::exec::PodExec;
use crate::exec::{StreamingIo, StreamingOutput};
use js_compat::value;

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
fn exec_error(err: Error) -> ProviderError {
    ProviderError::from(err)
}

/// `PluginSyncFileMapping`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SyncMapping {
    pub source_path: String,
    pub target_path: String,
    pub kind: String,
    pub mode: Option<f64>,
    pub exclude: Vec<String>,
    pub follow_symlinks: bool,
}

/// `PluginPostUploadCommand`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PostUploadCommand {
    pub command: String,
    pub cwd: Option<String>,
    pub timeout_ms: Option<u64>,
}

/// `PluginSyncOperation`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SyncOperation {
    pub operation_id: Value,
    pub files: Vec<SyncMapping>,
    pub post_upload_commands: Vec<PostUploadCommand>,
}

fn string_of(value: Option<&Value>) -> String {
    value
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

impl SyncOperation {
    /// The operations of the hook params (`params.operations`).
    pub fn parse_all(operations: Option<&Value>) -> Vec<SyncOperation> {
        let Some(items) = operations.and_then(Value::as_array) else {
            return Vec::new();
        };
        items
            .iter()
            .map(|op| SyncOperation {
                operation_id: op.get("operationId").cloned().unwrap_or(Value::Null),
                files: op
                    .get("files")
                    .and_then(Value::as_array)
                    .map(|files| {
                        files
                            .iter()
                            .map(|f| SyncMapping {
                                source_path: string_of(f.get("sourcePath")),
                                target_path: string_of(f.get("targetPath")),
                                kind: string_of(f.get("kind")),
                                mode: f.get("mode").and_then(Value::as_f64),
                                exclude: f
                                    .get("exclude")
                                    .and_then(Value::as_array)
                                    .map(|e| {
                                        e.iter()
                                            .filter_map(Value::as_str)
                                            .map(str::to_string)
                                            .collect()
                                    })
                                    .unwrap_or_default(),
                                follow_symlinks: value::truthy(f.get("followSymlinks")),
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
                post_upload_commands: op
                    .get("postUploadCommands")
                    .and_then(Value::as_array)
                    .map(|cmds| {
                        cmds.iter()
                            .map(|c| PostUploadCommand {
                                command: string_of(c.get("command")),
                                cwd: c.get("cwd").and_then(Value::as_str).map(str::to_string),
                                timeout_ms: c
                                    .get("timeoutMs")
                                    .and_then(Value::as_f64)
                                    .map(|ms| ms.max(0.0) as u64),
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
            })
            .collect()
    }
}

fn fs_error(err: &io::Error, syscall: &str, path: &Path) -> ProviderError {
    ProviderError::new(node_fs_message(err, syscall, path))
}

/// `fs.copyFile(source, dest)`'s rejection: Node names both paths (`… copyfile 'a' -> 'b'`), and
/// a directory source fails with EISDIR (std reports it without an errno).
fn copyfile_error(err: &io::Error, source: &Path, dest: &Path) -> ProviderError {
    use std::os::unix::ffi::OsStrExt;
    if source.as_os_str().as_bytes().contains(&0) {
        // Argument validation (ERR_INVALID_ARG_VALUE) names no paths.
        return ProviderError::new(node_fs_message(err, "copyfile", source));
    }
    let message = if err.raw_os_error().is_none() && source.is_dir() {
        format!(
            "EISDIR: illegal operation on a directory, copyfile '{}'",
            source.display()
        )
    } else {
        node_fs_message(err, "copyfile", source)
    };
    ProviderError::new(format!("{message} -> '{}'", dest.display()))
}

fn host_temp_dir() -> ProviderResult<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix("paperclip-k8s-sync-")
        .tempdir()
        .map_err(|e| fs_error(&e, "mkdtemp", &std::env::temp_dir()))
}

/// Runs host `tar` (env `COPYFILE_DISABLE=1`); a failure reads as `execFile`'s.
async fn host_tar(args: Vec<String>) -> ProviderResult<String> {
    let output = tokio::process::Command::new("tar")
        .args(&args)
        .env("COPYFILE_DISABLE", "1")
        .kill_on_drop(true)
        .output()
        .await
        .map_err(|e| ProviderError::new(format!("spawn tar {e}")))?;
    if !output.status.success() {
        return Err(ProviderError::new(format!(
            "Command failed: tar {}\n{}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr)
        )));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Host `tar`'s arguments of `createHostTarball` writing to `archive`: the named top-level
/// entries, `--exclude ._*` plus `exclude`, `-h` when following symlinks; `totals` adds
/// `--totals` (the sizing pass of [`super::stream`]).
pub(super) fn tarball_args(
    local_dir: &Path,
    archive: &str,
    entries: &[String],
    exclude: &[String],
    follow_symlinks: bool,
    totals: bool,
) -> Vec<String> {
    let mut args: Vec<String> = vec!["-c".into(), "--no-xattrs".into()];
    if follow_symlinks {
        args.push("-h".into());
    }
    if totals {
        args.push("--totals".into());
    }
    args.extend([
        "-f".into(),
        archive.to_string(),
        "-C".into(),
        local_dir.display().to_string(),
    ]);
    for e in std::iter::once("._*".to_string()).chain(exclude.iter().cloned()) {
        args.push("--exclude".into());
        args.push(e);
    }
    args.push("--".into());
    args.extend(entries.iter().cloned());
    args
}

/// `createHostTarball`: [`tarball_args`] into the file `archive`; no entries → 1024 zero bytes.
async fn create_host_tarball(
    local_dir: &Path,
    archive: &Path,
    entries: &[String],
    exclude: &[String],
    follow_symlinks: bool,
) -> ProviderResult<()> {
    if entries.is_empty() {
        return tokio::fs::write(archive, [0u8; 1024])
            .await
            .map_err(|e| fs_error(&e, "open", archive));
    }
    let archive = archive.display().to_string();
    let args = tarball_args(
        local_dir,
        &archive,
        entries,
        exclude,
        follow_symlinks,
        false,
    );
    host_tar(args).await.map(drop)
}

/// One sync-in transfer: host `tar` of `entries` under `local_dir` into the exec of
/// `script(archive bytes)`, packed while it is sent ([`super::stream`]); when that diverges
/// (or there is nothing to pack), the original's way: packed into the file `archive`, then
/// sent. The archive's size.
#[allow(clippy::too_many_arguments)]
async fn send_host_tarball(
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

/// `tar -h` follows link loops (`a -> .`) and links to one directory, copying the tree again
/// and again until it fails with a bare `tar` error: walk the source first, as `tar -h` will
/// (excluded names pruned), and fail at the first directory reached twice, in bounded memory.
async fn check_followed_source(source: &Path, exclude: &[String]) -> ProviderResult<()> {
    let (source, mut patterns) = (source.to_path_buf(), exclude.to_vec());
    patterns.push("._*".to_owned());
    let outcome = tokio::task::spawn_blocking(move || {
        let skip = |name: &str| sandbox_core::archive::excluded(name, &patterns);
        sandbox_core::archive::check_followed_tree(&source, &skip)
    })
    .await;
    // Any other failure (an unreadable entry, a dangling link) is left to `tar` to report.
    if let Ok(Err(sandbox_core::archive::ArchiveError::RepeatedDirectory { path })) = outcome {
        return Err(ProviderError::new(repeated_directory_message(
            path.display(),
        )));
    }
    Ok(())
}

fn repeated_directory_message(path: impl std::fmt::Display) -> String {
    format!(
        "Kubernetes sync source repeats a directory through symbolic links at {path}; followSymlinks needs a tree without link loops or two links to one directory."
    )
}

/// The sandbox path a sync-out's in-pod walk reported as reached twice
/// ([`script::REPEATED_DIRECTORY_EXIT`]): one line, control characters replaced, at most 1 KiB
/// (it is a name the sandbox chose).
fn repeated_in_pod(output: &StreamingOutput) -> Option<String> {
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

/// `readdir` names sorted with `localeCompare` (approximated: case-insensitive, then by code
/// point).
async fn sorted_entries(dir: &Path) -> ProviderResult<Vec<String>> {
    let mut reader = tokio::fs::read_dir(dir)
        .await
        .map_err(|e| fs_error(&e, "scandir", dir))?;
    let mut names = Vec::new();
    while let Some(entry) = reader
        .next_entry()
        .await
        .map_err(|e| fs_error(&e, "scandir", dir))?
    {
        names.push(entry.file_name().to_string_lossy().into_owned());
    }
    names.sort_by(|a, b| {
        a.to_lowercase()
            .cmp(&b.to_lowercase())
            .then_with(|| a.cmp(b))
    });
    Ok(names)
}

/// `extractHostTarball`: every member checked (`verdict`: the check of the archive as it
/// arrived, [`super::stream::receive_checked`]), then a confined extraction into `dir` (see
/// [`super::tar_list`]); blocking work runs off the runtime.
async fn extract_host_tarball(
    archive: &Path,
    dir: &Path,
    verdict: Result<(), String>,
) -> ProviderResult<()> {
    verdict.map_err(ProviderError::new)?;
    let (archive, dir) = (archive.to_path_buf(), dir.to_path_buf());
    tokio::task::spawn_blocking(move || {
        std::fs::create_dir_all(&dir).map_err(|e| node_fs_message(&e, "mkdir", &dir))?;
        extract_confined(&archive, &dir)
    })
    .await
    .map_err(|_| ProviderError::new(escaping_member_message("archive check did not finish")))?
    .map_err(ProviderError::new)
}

/// `countHostFiles`: non-directory entries, skipping excluded names at any depth.
fn count_host_files(root: &Path, exclude: &[String]) -> u64 {
    let Ok(entries) = std::fs::read_dir(root) else {
        return 0;
    };
    let mut total = 0;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if exclude.contains(&name) {
            continue;
        }
        match entry.file_type() {
            Ok(t) if t.is_dir() => total += count_host_files(&entry.path(), exclude),
            _ => total += 1,
        }
    }
    total
}

fn scratch_stage(remote_dir: &str) -> String {
    js_compat::path::join(
        remote_dir,
        &format!("{SCRATCH_PREFIX}-{}", js_compat::uuid::random_uuid()),
    )
}

fn failed(label: &str, output: &StreamingOutput) -> ProviderError {
    if let Some(path) = repeated_in_pod(output) {
        return ProviderError::new(repeated_directory_message(path));
    }
    let detail = output.stderr.trim();
    let suffix = if detail.is_empty() {
        String::new()
    } else {
        format!(": {detail}")
    };
    ProviderError::new(format!(
        "Kubernetes {label} failed (exit {}){suffix}",
        output.exit_code
    ))
}

/// `streamFileToPodStdin`.
async fn stream_file_to_pod(
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

/// The message of a streamed sync payload that grew past its on-disk size guard (A40 in the error
/// reference).
pub fn disk_guard_message(label: &str, max: u64) -> String {
    format!(
        "Kubernetes {label} payload exceeded the {max}-byte streamed-output disk guard; the sandbox emitted more bytes than allowed."
    )
}

/// `streamPodStdoutToFile`, with the member check of `extractHostTarball` run on the bytes as
/// they arrive ([`super::stream::receive_checked`]): its verdict, for the extraction.
async fn stream_pod_to_file(
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

#[derive(Default)]
struct Counts {
    files: u64,
    bytes: u64,
}

async fn sync_in_files(
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

async fn sync_in_directory(
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
fn post_upload_failed(output: &StreamingOutput) -> ProviderError {
    let detail = output.stderr.trim();
    let suffix = if detail.is_empty() {
        String::new()
    } else {
        format!(": {detail}")
    };
    ProviderError::new(format!(
        "Kubernetes post-upload command failed (exit {}){suffix}",
        output.exit_code
    ))
}

async fn run_post_upload_commands(
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

fn operation_result(op: &SyncOperation, counts: &Counts) -> Value {
    json!({"operationId": op.operation_id, "filesTransferred": counts.files,
        "bytesTransferred": counts.bytes})
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

async fn sync_out_files(
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

async fn sync_out_directory(
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
