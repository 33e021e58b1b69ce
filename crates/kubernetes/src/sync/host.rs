//! The host side of a sync: the temp dirs, `tar` runs, confined extraction and file counts.

use super::host_temp::HostTempDir;
use super::tar_list::{escaping_member_message, extract_confined};
use super::target::repeated_directory_message;
use sandbox_core::archive::node_fs_message;
use sandbox_core::{ProviderError, ProviderResult};
use std::io;
use std::path::Path;

pub(super) fn fs_error(err: &io::Error, syscall: &str, path: &Path) -> ProviderError {
    ProviderError::new(node_fs_message(err, syscall, path))
}

/// `fs.copyFile(source, dest)`'s rejection: Node names both paths (`… copyfile 'a' -> 'b'`), and
/// a directory source fails with EISDIR (std reports it without an errno).
pub(super) fn copyfile_error(err: &io::Error, source: &Path, dest: &Path) -> ProviderError {
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

/// A sync's temp dir, removed on every path ([`super::host_temp`]).
pub(super) fn host_temp_dir() -> ProviderResult<HostTempDir> {
    HostTempDir::new()
}

/// Runs host `tar` (env `COPYFILE_DISABLE=1`); a failure reads as `execFile`'s.
pub(super) async fn host_tar(args: Vec<String>) -> ProviderResult<String> {
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
pub(super) async fn create_host_tarball(
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

/// `tar -h` follows link loops (`a -> .`) and links to one directory, copying the tree again
/// and again until it fails with a bare `tar` error: walk the source first, as `tar -h` will
/// (excluded names pruned), and fail at the first directory reached twice, in bounded memory.
pub(super) async fn check_followed_source(source: &Path, exclude: &[String]) -> ProviderResult<()> {
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

/// `readdir` names sorted with `localeCompare` (approximated: case-insensitive, then by code
/// point).
pub(super) async fn sorted_entries(dir: &Path) -> ProviderResult<Vec<String>> {
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
pub(super) async fn extract_host_tarball(
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
pub(super) fn count_host_files(root: &Path, exclude: &[String]) -> u64 {
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
