//! The sync operations a hook is asked for (`PluginSyncOperation`), read from its params.

use js_compat::value;
use serde_json::Value;

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

pub(super) fn string_of(value: Option<&Value>) -> String {
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
