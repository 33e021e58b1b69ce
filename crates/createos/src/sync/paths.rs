//! Sandbox-side path rules of file sync: every sandbox path is absolute, free of NUL and `..`,
//! and inside `/paperclip-workspace`; the sandbox re-checks it with `realpath` right before use
//! (a symlink planted in the workspace cannot redirect a transfer).

use sandbox_core::{ErrorClass, ProviderError};
use serde_json::Value;

use crate::exec::shell_quote;
use crate::lease::state::CWD;
use crate::messages;

/// What Node's `path` functions throw for a non-string argument.
pub(crate) fn path_type_error(value: Option<&Value>) -> ProviderError {
    let received = match value {
        None => "undefined".to_owned(),
        Some(Value::Null) => "null".to_owned(),
        Some(Value::Bool(b)) => format!("type boolean ({b})"),
        Some(Value::Number(n)) => format!("type number ({n})"),
        Some(Value::Array(_)) => "an instance of Array".to_owned(),
        Some(Value::Object(_)) => "an instance of Object".to_owned(),
        Some(Value::String(_)) => "type string".to_owned(),
    };
    ProviderError::new(format!(
        "The \"path\" argument must be of type string. Received {received}"
    ))
    .with_class(ErrorClass::TypeError)
}

/// A string path argument, or Node's `TypeError` for anything else.
pub(crate) fn path_arg(value: Option<&Value>) -> Result<&str, ProviderError> {
    match value {
        Some(Value::String(path)) => Ok(path),
        other => Err(path_type_error(other)),
    }
}

/// `assertRemotePath`: absolute, no NUL, no `..` segment; normalised inside the workspace.
pub(crate) fn assert_remote_path(value: Option<&Value>) -> Result<String, ProviderError> {
    let path = path_arg(value)?;
    if !path.starts_with('/') || path.contains('\0') || path.split('/').any(|s| s == "..") {
        return Err(ProviderError::new(messages::TRANSFER_PATH_UNCONFINED));
    }
    let normalized = js_compat::path::normalize(path);
    if normalized != CWD && !normalized.starts_with(&format!("{CWD}/")) {
        return Err(ProviderError::new(messages::TRANSFER_PATH_ESCAPES));
    }
    Ok(path.to_owned())
}

/// The guard prefix of every transfer command: the workspace root must be itself (not a
/// symlink), and `$resolved` (the canonical candidate) must stay inside it.
pub(crate) fn remote_guard(candidate: &str) -> Result<String, ProviderError> {
    assert_remote_path(Some(&Value::from(candidate)))?;
    let root = shell_quote(CWD)?;
    Ok(format!(
        "root=$(realpath -- {root}) && test \"$root\" = {root} && resolved=$(realpath -m -- {}) && case \"$resolved\" in \"$root\"|\"$root\"/*) ;; *) exit 1 ;; esac",
        shell_quote(candidate)?
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn remote_paths_are_confined() {
        let check = |p: &str| assert_remote_path(Some(&json!(p))).map_err(|e| e.message);
        assert_eq!(
            check("/paperclip-workspace"),
            Ok("/paperclip-workspace".into())
        );
        assert_eq!(
            check("/paperclip-workspace/a/./b"),
            Ok("/paperclip-workspace/a/./b".into())
        );
        for bad in [
            "relative",
            "/paperclip-workspace/../secret",
            "/paperclip-workspace/a\0",
        ] {
            assert_eq!(
                check(bad),
                Err(messages::TRANSFER_PATH_UNCONFINED.to_owned())
            );
        }
        for bad in ["/etc/passwd", "/paperclip-workspace-other/file", "/"] {
            assert_eq!(check(bad), Err(messages::TRANSFER_PATH_ESCAPES.to_owned()));
        }
    }

    #[test]
    fn guard_is_byte_exact() {
        assert_eq!(
            remote_guard("/paperclip-workspace/a b").unwrap(),
            "root=$(realpath -- '/paperclip-workspace') && test \"$root\" = '/paperclip-workspace' && resolved=$(realpath -m -- '/paperclip-workspace/a b') && case \"$resolved\" in \"$root\"|\"$root\"/*) ;; *) exit 1 ;; esac"
        );
    }
}
