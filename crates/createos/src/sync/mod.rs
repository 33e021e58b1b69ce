//! `onEnvironmentSyncIn` / `onEnvironmentSyncOut`: files and directories between the host and
//! the lease's workspace.
//!
//! Everything is validated before the first side effect. Then, per operation and per mapping
//! in order, with a scratch file `/tmp/paperclip-createos-transfer-<uuid>` in the sandbox:
//! - in, file: `PUT` the host file to the scratch path, then one command moves it into place
//!   with its mode (the host file's unless given);
//! - in, directory: pack it as node-tar did (`./` first, exclusions pruned), `PUT` it, then
//!   `tar -xf` it into place and set the directory's mode (0755 unless given);
//! - out, file: `cp` to the scratch path, `GET` it into an exclusive temp file beside the
//!   target, set its mode (0600 unless given), rename it over the target;
//! - out, directory: `tar -cf` to the scratch path, `GET` it, check every entry, create the
//!   target (0700 unless given; never a symlink), extract. With `followSymlinks`, a walk in the
//!   sandbox first refuses a tree whose links loop or reach one directory twice (`tar -h`
//!   would copy it again and again).
//!
//! Downloads are bounded as they stream (see `transfer::download_file`): 8 GiB for a file,
//! the 10 GiB extraction limit for an archive, whose member headers are checked on arrival.
//!
//! Every sandbox command runs through streaming exec as `/bin/bash -c` behind a `realpath`
//! guard. The host temp directory and the scratch file are removed whatever happens. After an
//! operation's files, its post-upload commands run in order; the first failure stops the call.

mod paths;
mod transfer;

use std::path::{Path, PathBuf};

use crate::params::lease_of;
use js_compat::value;
use reqwest::Method;
use sandbox_core::archive::{self, ArchiveError, PackSummary};
use sandbox_core::{ProviderError, ProviderResult};
use serde_json::{Map, Value, json};

use crate::client::{CreateOsClient, identifier};
use crate::exec::{execute_stream, shell_quote};
use crate::lease::state::{CWD, valid_timeout};
use crate::messages;
use crate::signal::Signal;
use js_compat::uuid::random_uuid;

use paths::path_arg;
pub(crate) use paths::{assert_remote_path, remote_guard};
pub use transfer::SYNC_OUT_FILE_LIMIT;
use transfer::{Download, download_file, fs_error, make_temp_dir, upload_file};

/// Which way the files go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Host to sandbox (`onEnvironmentSyncIn`).
    In,
    /// Sandbox to host (`onEnvironmentSyncOut`).
    Out,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    File,
    Directory,
}

/// One validated mapping.
struct Mapping {
    kind: Kind,
    local: PathBuf,
    remote: String,
    mode: Option<u32>,
    exclude: Vec<String>,
    follow_symlinks: bool,
}

struct PostUpload {
    command: Value,
    cwd: String,
    timeout_ms: Option<u64>,
}

struct Operation<'a> {
    id: Option<&'a Value>,
    mappings: Vec<Mapping>,
    commands: Vec<PostUpload>,
}

fn iterable<'a>(value: Option<&'a Value>, what: &str) -> ProviderResult<&'a [Value]> {
    match value {
        Some(Value::Array(items)) => Ok(items),
        _ => Err(ProviderError::new(format!("{what} is not iterable"))
            .with_class(sandbox_core::ErrorClass::TypeError)),
    }
}

/// `mode == null`, or a JS integer in 0..=0o777.
fn file_mode(value: Option<&Value>) -> ProviderResult<Option<u32>> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(v) if value::is_integer(v) => match v.as_f64() {
            Some(m) if (0.0..=511.0).contains(&m) => Ok(Some(m as u32)),
            _ => Err(ProviderError::new(messages::INVALID_FILE_MODE)),
        },
        Some(_) => Err(ProviderError::new(messages::INVALID_FILE_MODE)),
    }
}

/// Phase 1: every check of every operation, before anything happens.
fn validate(params: &Value, direction: Direction) -> ProviderResult<Vec<Operation<'_>>> {
    let mut operations = Vec::new();
    for operation in iterable(params.get("operations"), "params.operations")? {
        let mut mappings = Vec::new();
        for mapping in iterable(operation.get("files"), "operation.files")? {
            let kind = match mapping.get("kind").and_then(Value::as_str) {
                Some("file") => Kind::File,
                Some("directory") => Kind::Directory,
                _ => return Err(ProviderError::new(messages::TRANSFER_KIND_UNSUPPORTED)),
            };
            let (local_key, remote_key) = match direction {
                Direction::In => ("sourcePath", "targetPath"),
                Direction::Out => ("targetPath", "sourcePath"),
            };
            let local = path_arg(mapping.get(local_key))?;
            if !local.starts_with('/') {
                return Err(ProviderError::new(messages::TRANSFER_HOST_PATH_RELATIVE));
            }
            let mode = file_mode(mapping.get("mode"))?;
            let remote = assert_remote_path(mapping.get(remote_key))?;
            let exclude = match mapping.get("exclude") {
                Some(Value::Array(items)) => items
                    .iter()
                    .map(|p| p.as_str().unwrap_or_default().to_owned())
                    .collect(),
                _ => Vec::new(),
            };
            mappings.push(Mapping {
                kind,
                local: PathBuf::from(local),
                remote,
                mode,
                exclude,
                follow_symlinks: mapping.get("followSymlinks") == Some(&Value::Bool(true)),
            });
        }
        let mut commands = Vec::new();
        let listed = match operation.get("postUploadCommands") {
            None | Some(Value::Null) => &[][..],
            other => iterable(other, "operation.postUploadCommands")?,
        };
        for command in listed {
            let cwd = match command.get("cwd") {
                None | Some(Value::Null) => CWD.to_owned(),
                cwd => assert_remote_path(cwd)?,
            };
            let timeout_ms = match command.get("timeoutMs") {
                None | Some(Value::Null) => None,
                Some(value) => Some(
                    valid_timeout(value)
                        .ok_or_else(|| ProviderError::new(messages::INVALID_TRANSFER_TIMEOUT))?,
                ),
            };
            commands.push(PostUpload {
                command: command.get("command").cloned().unwrap_or(Value::Null),
                cwd,
                timeout_ms,
            });
        }
        if direction == Direction::Out && !commands.is_empty() {
            return Err(ProviderError::new(messages::OUTBOUND_POST_UPLOAD));
        }
        operations.push(Operation {
            id: operation.get("operationId"),
            mappings,
            commands,
        });
    }
    Ok(operations)
}

/// `syncFiles(client, params, direction, signal)`: `{operations: [{operationId,
/// filesTransferred, bytesTransferred}, …]}`.
pub(crate) async fn sync_files(
    client: &CreateOsClient,
    params: &Value,
    direction: Direction,
    signal: &Signal,
) -> ProviderResult<Value> {
    let id = identifier(lease_of(params)?.get("providerLeaseId"))?;
    let operations = validate(params, direction)?;
    let sync = Sync {
        client,
        params,
        id: &id,
        signal,
    };
    let mut results = Vec::new();
    for operation in &operations {
        let (mut files, mut bytes) = (0u64, 0u64);
        for mapping in &operation.mappings {
            signal.throw_if_aborted()?;
            let (f, b) = sync.mapping(mapping, direction).await?;
            files += f;
            bytes += b;
        }
        for command in &operation.commands {
            sync.run(&Value::from(remote_guard(&command.cwd)?), CWD, None)
                .await?;
            sync.run(&command.command, &command.cwd, command.timeout_ms)
                .await?;
        }
        let mut result = Map::new();
        value::insert_defined(&mut result, "operationId", operation.id);
        result.insert("filesTransferred".into(), json!(files));
        result.insert("bytesTransferred".into(), json!(bytes));
        results.push(Value::Object(result));
    }
    Ok(json!({ "operations": results }))
}

struct Sync<'a> {
    client: &'a CreateOsClient,
    params: &'a Value,
    id: &'a str,
    signal: &'a Signal,
}

fn archive_error(error: ArchiveError) -> ProviderError {
    match error {
        ArchiveError::Unsafe => ProviderError::new(messages::ARCHIVE_UNSAFE),
        ArchiveError::RepeatedDirectory { path } => {
            ProviderError::new(messages::sync_source_repeated_directory(&path))
        }
        ArchiveError::SymlinkTraversal { path } => {
            ProviderError::new(messages::archive_through_symlink(&path))
        }
        ArchiveError::ExtendedHeaderTooLarge { size } => {
            ProviderError::new(messages::archive_extended_header_too_large(size))
        }
        other => ProviderError::new(other.node_message()),
    }
}

/// Runs blocking archive work off the runtime.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ArchiveError> + Send + 'static,
) -> ProviderResult<T> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|_| ProviderError::new("CreateOS archive worker failed."))?
        .map_err(archive_error)
}

/// A `tar --exclude` wildcard (`*`, `?`, `[...]`) as a POSIX extended regular expression.
fn glob_to_ere(glob: &str) -> String {
    let chars: Vec<char> = glob.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '*' => out.push_str(".*"),
            '?' => out.push('.'),
            '[' => match chars[i + 1..].iter().skip(1).position(|&c| c == ']') {
                Some(end) => {
                    let class: String = chars[i + 1..i + 2 + end].iter().collect();
                    let class = class
                        .strip_prefix('!')
                        .map_or(class.clone(), |c| format!("^{c}"));
                    out.push('[');
                    out.push_str(&class);
                    out.push(']');
                    i += end + 2;
                }
                None => out.push_str("\\["),
            },
            c if "\\.^$+(){}|".contains(c) => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
        i += 1;
    }
    out
}

impl Sync<'_> {
    /// A sandbox command: `/bin/bash -c <command>` in `cwd` through streaming exec, with the
    /// call's env; fails unless it exits 0 in time.
    async fn run(&self, command: &Value, cwd: &str, timeout_ms: Option<u64>) -> ProviderResult<()> {
        let outcome = self.run_outcome(command, cwd, timeout_ms).await?;
        if !outcome.succeeded() {
            return Err(ProviderError::new(messages::TRANSFER_COMMAND_FAILED));
        }
        Ok(())
    }

    /// [`Sync::run`], returning how the command ended.
    async fn run_outcome(
        &self,
        command: &Value,
        cwd: &str,
        timeout_ms: Option<u64>,
    ) -> ProviderResult<crate::exec::ExecOutcome> {
        assert_remote_path(Some(&Value::from(cwd)))?;
        let mut params = self.params.clone();
        if let Some(map) = params.as_object_mut() {
            map.insert("command".into(), json!("/bin/bash"));
            map.insert("args".into(), json!(["-c", command]));
            map.insert("cwd".into(), json!(cwd));
        }
        let signal = match timeout_ms {
            Some(ms) => self.signal.with_timeout(ms),
            None => self.signal.clone(),
        };
        execute_stream(self.client, &params, &signal, None).await
    }

    /// One mapping: `(files, bytes)` transferred. The host temp directory and the scratch
    /// file are removed whatever happened.
    async fn mapping(&self, mapping: &Mapping, direction: Direction) -> ProviderResult<(u64, u64)> {
        let scratch = format!("/tmp/paperclip-createos-transfer-{}", random_uuid());
        // Outbound temp files live beside the target so the final rename is atomic.
        let parent = match direction {
            Direction::Out => mapping
                .local
                .parent()
                .map_or_else(|| PathBuf::from("/"), Path::to_path_buf),
            Direction::In => std::env::temp_dir(),
        };
        std::fs::create_dir_all(&parent).map_err(|e| fs_error(e, "mkdir", &parent))?;
        let temp = make_temp_dir(&parent)?;
        let result = match direction {
            Direction::In => self.send(mapping, &scratch, &temp).await,
            Direction::Out => self.receive(mapping, &scratch, &temp).await,
        };
        let _ = std::fs::remove_dir_all(&temp);
        let path = format!("/sandboxes/{}/exec", self.id);
        let _ = self
            .client
            .json(
                Method::POST,
                &path,
                Some(json!({ "cmd": "/bin/rm", "args": ["-f", "--", scratch] })),
                None,
            )
            .await;
        result
    }

    async fn send(
        &self,
        mapping: &Mapping,
        scratch: &str,
        temp: &Path,
    ) -> ProviderResult<(u64, u64)> {
        let guard = remote_guard(&mapping.remote)?;
        let quoted = shell_quote(scratch)?;
        match mapping.kind {
            Kind::File => {
                upload_file(self.client, self.id, &mapping.local, scratch, self.signal).await?;
                let stat = std::fs::metadata(&mapping.local)
                    .map_err(|e| fs_error(e, "stat", &mapping.local))?;
                let mode = mapping.mode.unwrap_or_else(|| {
                    std::os::unix::fs::PermissionsExt::mode(&stat.permissions()) & 0o777
                });
                let command = format!(
                    "{guard} && mkdir -p -- \"$(dirname -- \"$resolved\")\" && chmod {mode:o} -- {quoted} && mv -f -- {quoted} \"$resolved\""
                );
                self.run(&Value::from(command), CWD, None).await?;
                let size = std::fs::metadata(&mapping.local)
                    .map_err(|e| fs_error(e, "stat", &mapping.local))?
                    .len();
                Ok((1, size))
            }
            Kind::Directory => {
                let archive_path = temp.join("data");
                let summary = {
                    let (root, exclude, follow, out) = (
                        mapping.local.clone(),
                        mapping.exclude.clone(),
                        mapping.follow_symlinks,
                        archive_path.clone(),
                    );
                    blocking(move || -> Result<PackSummary, ArchiveError> {
                        let file = std::fs::File::create(&out).map_err(|e| ArchiveError::Fs {
                            error: e,
                            syscall: "open",
                            path: out.clone(),
                        })?;
                        let mut writer = std::io::BufWriter::new(file);
                        let keep = |name: &str| !archive::excluded(name, &exclude);
                        let summary = archive::pack_directory(&root, follow, &keep, &mut writer)?;
                        std::io::Write::flush(&mut writer).map_err(|e| ArchiveError::Fs {
                            error: e,
                            syscall: "write",
                            path: out.clone(),
                        })?;
                        Ok(summary)
                    })
                    .await?
                };
                upload_file(self.client, self.id, &archive_path, scratch, self.signal).await?;
                let mode = mapping.mode.unwrap_or(0o755);
                let command = format!(
                    "{guard} && mkdir -p -- \"$resolved\" && tar -xf {quoted} -C \"$resolved\" && chmod {mode:o} -- \"$resolved\""
                );
                self.run(&Value::from(command), CWD, None).await?;
                Ok((summary.files, summary.bytes))
            }
        }
    }

    /// `followSymlinks` on a directory sync-out: walks the sandbox tree as `tar -h` will (GNU
    /// `find -L`, excluded names pruned) and refuses it at the first directory reached twice:
    /// a link loop (`a -> .`, which `find` reports itself) or a second path to one directory
    /// (same device and inode). `tar -h` would copy such a tree again and again (until it
    /// crashes, hundreds of megabytes later, for `a -> .`). The walk stops at the first repeat
    /// and keeps one key per directory, so it is bounded by the tree; nothing the sandbox
    /// prints reaches the message. Where `find` or `awk` is missing, the walk passes and `tar`
    /// runs as before (exit status 3 is the walk's only verdict).
    async fn check_followed_tree(&self, mapping: &Mapping, guard: &str) -> ProviderResult<()> {
        let prune = mapping
            .exclude
            .iter()
            .map(|p| shell_quote(&format!("*/{p}")).map(|q| format!("-path {q}")))
            .collect::<Result<Vec<_>, _>>()?;
        let prune = if prune.is_empty() {
            String::new()
        } else {
            format!("\\( {} \\) -prune -o ", prune.join(" -o "))
        };
        // `find` reports a loop when it reaches the link, before `-prune` can skip it: a loop
        // at an excluded name is let through by the same patterns, as regular expressions.
        let excluded = mapping
            .exclude
            .iter()
            .map(|p| format!("(^|/){}$", glob_to_ere(p)))
            .collect::<Vec<_>>()
            .join("|");
        let command = format!(
            "{guard} && test -d \"$resolved\" && cd -- \"$resolved\" && LC_ALL=C find -L . {prune}-type d -printf 'D %D:%i\\n' 2>&1 | PAPERCLIP_EXCLUDED={} awk '/^D / {{ if (seen[$2]++) exit 3; next }} /File system loop detected; / {{ p = $0; sub(/^.*File system loop detected; ./, \"\", p); sub(/. is part of the same file system loop.*$/, \"\", p); if (ENVIRON[\"PAPERCLIP_EXCLUDED\"] != \"\" && p ~ ENVIRON[\"PAPERCLIP_EXCLUDED\"]) next; exit 3 }}'",
            shell_quote(&excluded)?
        );
        let outcome = self.run_outcome(&Value::from(command), CWD, None).await?;
        // Any other ending (the guard failed, a tool is missing) is left to `tar` to report.
        if outcome.exit_code.as_ref().and_then(Value::as_f64) == Some(3.0) {
            return Err(ProviderError::new(messages::sync_out_repeated_directory(
                &mapping.remote,
            )));
        }
        Ok(())
    }

    async fn receive(
        &self,
        mapping: &Mapping,
        scratch: &str,
        temp: &Path,
    ) -> ProviderResult<(u64, u64)> {
        let guard = remote_guard(&mapping.remote)?;
        let quoted = shell_quote(scratch)?;
        let command = match mapping.kind {
            Kind::File => {
                format!("{guard} && test -f \"$resolved\" && cp -- \"$resolved\" {quoted}")
            }
            Kind::Directory => {
                if mapping.follow_symlinks {
                    self.check_followed_tree(mapping, &guard).await?;
                }
                let h = if mapping.follow_symlinks { "-h " } else { "" };
                let excludes = mapping
                    .exclude
                    .iter()
                    .map(|p| shell_quote(p).map(|q| format!("--exclude={q}")))
                    .collect::<Result<Vec<_>, _>>()?
                    .join(" ");
                format!(
                    "{guard} && test -d \"$resolved\" && tar {h}{excludes} -cf {quoted} -C \"$resolved\" ."
                )
            }
        };
        self.run(&Value::from(command), CWD, None).await?;
        let transfer = temp.join("data");
        let download_mode = mapping.mode.unwrap_or(0o600);
        let bound = match mapping.kind {
            Kind::File => Download::File {
                remote: &mapping.remote,
            },
            Kind::Directory => Download::Archive,
        };
        let bytes = download_file(
            self.client,
            self.id,
            scratch,
            &transfer,
            download_mode,
            bound,
            self.signal,
        )
        .await?;
        let local = mapping.local.clone();
        match mapping.kind {
            Kind::File => {
                // The exact mode before the file appears at its final path.
                archive::chmod(&transfer, download_mode).map_err(archive_error)?;
                std::fs::rename(&transfer, &local).map_err(|e| fs_error(e, "rename", &local))?;
                Ok((1, bytes))
            }
            Kind::Directory => {
                let checked = transfer.clone();
                let files = blocking(move || archive::validate_archive(&checked)).await?;
                let dir_mode = mapping.mode.unwrap_or(0o700);
                std::os::unix::fs::DirBuilderExt::mode(
                    std::fs::DirBuilder::new().recursive(true),
                    dir_mode,
                )
                .create(&local)
                .map_err(|e| fs_error(e, "mkdir", &local))?;
                let meta =
                    std::fs::symlink_metadata(&local).map_err(|e| fs_error(e, "lstat", &local))?;
                if meta.file_type().is_symlink() {
                    return Err(ProviderError::new(messages::ARCHIVE_DESTINATION_SYMLINK));
                }
                let dest = local.clone();
                blocking(move || archive::extract_archive(&transfer, &dest)).await?;
                if let Some(mode) = mapping.mode {
                    archive::chmod(&local, mode).map_err(archive_error)?;
                }
                Ok((files, bytes))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::glob_to_ere;

    #[test]
    fn exclude_wildcards_become_extended_regular_expressions() {
        assert_eq!(glob_to_ere("a"), "a");
        assert_eq!(glob_to_ere("*.log"), ".*\\.log");
        assert_eq!(glob_to_ere("c[0-9]?"), "c[0-9].");
        assert_eq!(glob_to_ere("[!a]x"), "[^a]x");
        assert_eq!(glob_to_ere("a[b"), "a\\[b");
        assert_eq!(glob_to_ere("(x)|y+"), "\\(x\\)\\|y\\+");
    }
}
