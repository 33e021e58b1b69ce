//! The wrapper script of a sandbox command. Env and cwd are never passed through the API: the
//! service only accepts env keys declared at sandbox creation, so everything is quoted into one
//! `bash -lc` script, byte-exact as the original built it:
//!
//! ```text
//! [until [ -e '<gate>' ]; do sleep 0.01; done
//!  rm -f -- '<gate>']
//! [cd -- '<cwd>' || exit]
//! exec env <K='v' …> '<command>' '<arg>' …[ < '<stdin path>']
//! ```
//!
//! With no variables the last line reads `exec env  'cmd'` (two spaces).

use js_compat::{json, value};
use sandbox_core::ProviderError;
use serde_json::Value;

use crate::error::{Error, Result};
use crate::messages;

/// `'value'` with every `'` written as `'"'"'`. NUL cannot be passed to a process at all.
pub fn shell_quote(value: &str) -> Result<String> {
    if value.contains('\0') {
        return Err(Error::msg(messages::COMMAND_VALUE_NUL));
    }
    Ok(format!("'{}'", value.replace('\'', "'\"'\"'")))
}

/// A command to wrap, already in typed form (file sync and the probe build these directly).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommandSpec {
    pub command: String,
    pub args: Vec<String>,
    pub cwd: Option<String>,
    /// Variables in the order they are exported.
    pub env: Vec<(String, String)>,
}

impl CommandSpec {
    pub fn new(command: impl Into<String>) -> Self {
        Self {
            command: command.into(),
            ..Self::default()
        }
    }
}

/// The script for `spec`; `stdin_path` redirects stdin from a staged file, `start_gate` makes
/// the script wait for that file to appear (managed processes).
pub fn command_script(
    spec: &CommandSpec,
    stdin_path: Option<&str>,
    start_gate: Option<&str>,
) -> Result<String> {
    if spec.command.is_empty() {
        return Err(Error::msg(messages::COMMAND_REQUIRED));
    }
    let mut env = Vec::with_capacity(spec.env.len());
    for (key, value) in &spec.env {
        if !is_env_name(key) {
            return Err(Error::msg(messages::INVALID_ENV));
        }
        env.push(format!("{key}={}", shell_quote(value)?));
    }
    let mut words = vec![shell_quote(&spec.command)?];
    for arg in &spec.args {
        words.push(shell_quote(arg)?);
    }
    render(&env, &words, spec.cwd.as_deref(), stdin_path, start_gate)
}

fn render(
    env: &[String],
    words: &[String],
    cwd: Option<&str>,
    stdin_path: Option<&str>,
    start_gate: Option<&str>,
) -> Result<String> {
    let mut lines = Vec::new();
    if let Some(gate) = start_gate.filter(|g| !g.is_empty()) {
        let gate = shell_quote(gate)?;
        lines.push(format!("until [ -e {gate} ]; do sleep 0.01; done"));
        lines.push(format!("rm -f -- {gate}"));
    }
    if let Some(cwd) = cwd.filter(|c| !c.is_empty()) {
        lines.push(format!("cd -- {} || exit", shell_quote(cwd)?));
    }
    let redirect = match stdin_path.filter(|p| !p.is_empty()) {
        Some(path) => format!(" < {}", shell_quote(path)?),
        None => String::new(),
    };
    lines.push(format!(
        "exec env {} {}{redirect}",
        env.join(" "),
        words.join(" ")
    ));
    Ok(lines.join("\n"))
}

/// `script` with its stdin read from the staged file at `path`, which is removed before the
/// script goes on: the first line makes the file the shell's stdin (the command inherits it)
/// and unlinks it, so nothing of it stays in the sandbox whatever the command does.
pub fn with_staged_stdin(script: &str, path: &str) -> Result<String> {
    let path = shell_quote(path)?;
    Ok(format!(
        "exec < {path} && rm -f -- {path} || exit\n{script}"
    ))
}

/// `^[A-Za-z_][A-Za-z0-9_]*$`.
fn is_env_name(key: &str) -> bool {
    let mut bytes = key.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// The script for the hook params of an execute call (`command`, `args`, `cwd`, `env`), with
/// the original's checks in its order: a command at all, then each variable, then NUL in the
/// command words, then NUL in the cwd.
///
/// The host sends typed params; for values of the wrong JS type the original failed inside its
/// quoting with a V8 `TypeError`, reproduced here with the same text.
pub fn script_for_params(params: &Value) -> Result<String> {
    let command = params.get("command");
    if !value::truthy(command) {
        return Err(Error::msg(messages::COMMAND_REQUIRED));
    }
    let env = env_entries(params.get("env"))?;
    let mut words = vec![quote_value(command)?];
    match params.get("args") {
        None | Some(Value::Null) => {}
        Some(Value::Array(args)) => {
            for arg in args {
                words.push(quote_value(Some(arg))?);
            }
        }
        // Spreading a string spreads its characters (code points).
        Some(Value::String(args)) => {
            for c in args.chars() {
                words.push(shell_quote(c.encode_utf8(&mut [0; 4]))?);
            }
        }
        Some(_) => return Err(ProviderError::not_iterable("params.args").into()),
    }
    let cwd = match params.get("cwd") {
        cwd if !value::truthy(cwd) => None,
        Some(Value::String(cwd)) => Some(cwd.as_str()),
        _ => return Err(ProviderError::not_a_function("value.includes").into()),
    };
    render(&env, &words, cwd, None, None)
}

/// `shellQuote(value)` on an arbitrary JS value: only strings have `.includes`/`.replace`.
fn quote_value(value: Option<&Value>) -> Result<String> {
    match value {
        Some(Value::String(text)) => shell_quote(text),
        _ => Err(ProviderError::not_a_function("value.includes").into()),
    }
}

/// `Object.entries(params.env ?? {})` rendered as `KEY='value'`.
fn env_entries(env: Option<&Value>) -> Result<Vec<String>> {
    let render = |key: &str, value: &Value| -> Result<String> {
        match value {
            Value::String(value) if is_env_name(key) => {
                Ok(format!("{key}={}", shell_quote(value)?))
            }
            _ => Err(Error::msg(messages::INVALID_ENV)),
        }
    };
    match env {
        Some(Value::Object(map)) => json::entries(map)
            .into_iter()
            .map(|(key, value)| render(key, value))
            .collect(),
        // Arrays and strings have index keys ("0", ...), which are not variable names.
        Some(Value::Array(items)) if !items.is_empty() => Err(Error::msg(messages::INVALID_ENV)),
        Some(Value::String(text)) if !text.is_empty() => Err(Error::msg(messages::INVALID_ENV)),
        _ => Ok(Vec::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sandbox_core::ProviderError;
    use serde_json::json;

    fn message(result: Result<String>) -> String {
        ProviderError::from(result.unwrap_err()).message
    }

    #[test]
    fn staged_stdin_opens_and_removes_the_file_before_anything_else() {
        assert_eq!(
            with_staged_stdin("exec env  'cat'", "/tmp/in 'x'").unwrap(),
            "exec < '/tmp/in '\"'\"'x'\"'\"'' && rm -f -- '/tmp/in '\"'\"'x'\"'\"'' || exit\nexec env  'cat'"
        );
        assert!(with_staged_stdin("true", "/tmp/\0").is_err());
    }

    #[test]
    fn quoting_is_byte_exact() {
        assert_eq!(shell_quote("it's").unwrap(), r#"'it'"'"'s'"#);
        assert_eq!(message(shell_quote("a\0")), messages::COMMAND_VALUE_NUL);
    }

    #[test]
    fn scripts_match_the_original() {
        assert_eq!(
            script_for_params(&json!({"command": "echo", "args": ["hello"]})).unwrap(),
            "exec env  'echo' 'hello'"
        );
        assert_eq!(
            script_for_params(&json!({
                "command": "printf", "args": ["%s", "a'b"], "cwd": "/paperclip-workspace/x y",
                "env": {"B": "2", "A_1": "o'k", "10": "x"}
            }))
            .map_err(ProviderError::from)
            .unwrap_err()
            .message,
            messages::INVALID_ENV
        );
        assert_eq!(
            script_for_params(&json!({
                "command": "printf", "args": ["%s", "a'b"], "cwd": "/paperclip-workspace/x y",
                "env": {"B": "2", "A_1": "o'k"}
            }))
            .unwrap(),
            "cd -- '/paperclip-workspace/x y' || exit\nexec env B='2' A_1='o'\"'\"'k' 'printf' '%s' 'a'\"'\"'b'"
        );
        let spec = CommandSpec {
            command: "cat".into(),
            args: vec![],
            cwd: Some("/w".into()),
            env: vec![],
        };
        assert_eq!(
            command_script(&spec, Some("/tmp/in"), Some("/tmp/gate")).unwrap(),
            "until [ -e '/tmp/gate' ]; do sleep 0.01; done\nrm -f -- '/tmp/gate'\ncd -- '/w' || exit\nexec env  'cat' < '/tmp/in'"
        );
    }

    #[test]
    fn check_order() {
        assert_eq!(
            message(script_for_params(&json!({"command": ""}))),
            messages::COMMAND_REQUIRED
        );
        assert_eq!(
            message(script_for_params(&json!({}))),
            messages::COMMAND_REQUIRED
        );
        assert_eq!(
            message(script_for_params(
                &json!({"command": "a\0", "env": {"1X": "v"}})
            )),
            messages::INVALID_ENV
        );
        assert_eq!(
            message(script_for_params(
                &json!({"command": "a\0", "env": {"X": 1}})
            )),
            messages::INVALID_ENV
        );
        assert_eq!(
            message(script_for_params(
                &json!({"command": "a", "env": {"X": "\0"}})
            )),
            messages::COMMAND_VALUE_NUL
        );
        assert_eq!(
            message(script_for_params(&json!({"command": "a", "cwd": "/\0"}))),
            messages::COMMAND_VALUE_NUL
        );
        assert_eq!(
            message(script_for_params(&json!({"command": 5}))),
            "value.includes is not a function"
        );
    }
}
