//! Parsing the command part shared by `/exec` and `/processes` bodies.

use serde_json::{Map, Value};

use super::envelope::ApiError;
use super::state::Sandbox;

/// What an `/exec` or `/processes` body says to run.
pub struct Command<'a> {
    pub argv: Vec<String>,
    pub cwd: Option<&'a str>,
    /// Environment overrides, checked against the sandbox.
    pub env: Vec<(String, String)>,
}

impl<'a> Command<'a> {
    /// `cmd`/`args`, `cwd` and `env` of `body` (validated in that order) for sandbox `sb`.
    pub fn parse(sb: &Sandbox, body: &'a Map<String, Value>) -> Result<Command<'a>, ApiError> {
        Ok(Command {
            argv: argv(body)?,
            cwd: opt_str(body, "cwd")?,
            env: sb.check_env_overrides(body.get("env"))?,
        })
    }
}

/// `cmd` plus `args` as an argv, rejecting what the service rejects (empty command, NUL).
pub fn argv(body: &Map<String, Value>) -> Result<Vec<String>, ApiError> {
    let cmd = match body.get("cmd") {
        Some(Value::String(s)) if !s.is_empty() && !s.contains('\0') => s.clone(),
        _ => return Err(ApiError::bad_request("cmd must be a non-empty string")),
    };
    let mut argv = vec![cmd];
    match body.get("args") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            for item in items {
                match item {
                    Value::String(s) if !s.contains('\0') => argv.push(s.clone()),
                    _ => return Err(ApiError::bad_request("args must be an array of strings")),
                }
            }
        }
        Some(_) => return Err(ApiError::bad_request("args must be an array of strings")),
    }
    Ok(argv)
}

/// Optional string field.
pub fn opt_str<'a>(body: &'a Map<String, Value>, key: &str) -> Result<Option<&'a str>, ApiError> {
    match body.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(ApiError::bad_request(format!("{key} must be a string"))),
    }
}
