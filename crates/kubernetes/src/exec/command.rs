//! Shell wrapping for exec'd commands (spec §14.3; `pod-exec.ts` of the G-login line, without
//! the later `cwd` argument).
//!
//! The Kubernetes exec API takes an argv and nothing else: no env. Env is given to a command by
//! running it under `/bin/sh -c` that exports the variables and then `exec`s the real argv.

use serde_json::{Map, Value};

use sandbox_core::json::js_entries;

/// `shQuote(segment)`: single quotes around the text, each embedded `'` written as `'\''`
/// (close, escaped quote, reopen). Safe for any text inside a `sh -c` script.
pub fn sh_quote(segment: &str) -> String {
    format!("'{}'", segment.replace('\'', "'\\''"))
}

/// A shell identifier: `[A-Za-z_][A-Za-z0-9_]*`.
fn is_shell_identifier(key: &str) -> bool {
    let mut chars = key.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `wrapCommandWithEnv(command, env)`: `["/bin/sh", "-c", "export K='v'; … exec 'argv0' …"]`,
/// or `command` unchanged when no variable qualifies. Only string values with identifier keys
/// are exported, and never `PATH`: the caller's PATH is the orchestrator's, not the image's, and
/// would break command lookup. Variables are exported in JS property order (`env` is the
/// original's object; anything but an object counts as no env).
pub fn wrap_command_with_env(command: &[String], env: Option<&Value>) -> Vec<String> {
    let empty = Map::new();
    let env = env.and_then(Value::as_object).unwrap_or(&empty);
    let exports: Vec<String> = js_entries(env)
        .into_iter()
        .filter(|(key, _)| key.as_str() != "PATH" && is_shell_identifier(key))
        .filter_map(|(key, value)| {
            value
                .as_str()
                .map(|v| format!("export {key}={};", sh_quote(v)))
        })
        .collect();
    if exports.is_empty() {
        return command.to_vec();
    }
    let argv: Vec<String> = command.iter().map(|arg| sh_quote(arg)).collect();
    vec![
        "/bin/sh".to_string(),
        "-c".to_string(),
        format!("{} exec {}", exports.join(" "), argv.join(" ")),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn argv(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn quoting() {
        assert_eq!(sh_quote("a'b''c"), r#"'a'\''b'\'''\''c'"#);
        assert_eq!(sh_quote(""), "''");
    }

    #[test]
    fn exports_then_execs() {
        let wrapped = wrap_command_with_env(
            &argv(&["claude", "--print", "it's done"]),
            Some(
                &json!({"ANTHROPIC_API_KEY": "sk-'x'", "PATH": "/bin", "BAD-KEY": "v", "_OK1": "", "N": 5}),
            ),
        );
        assert_eq!(
            wrapped,
            argv(&[
                "/bin/sh",
                "-c",
                r#"export ANTHROPIC_API_KEY='sk-'\''x'\'''; export _OK1=''; exec 'claude' '--print' 'it'\''s done'"#
            ])
        );
    }

    #[test]
    fn nothing_to_export_leaves_the_command_alone() {
        let command = argv(&["ls", "-la"]);
        assert_eq!(
            wrap_command_with_env(&command, Some(&json!({"PATH": "/x", "1BAD": "v"}))),
            command
        );
        assert_eq!(wrap_command_with_env(&command, None), command);
        assert_eq!(
            wrap_command_with_env(&command, Some(&json!("FOO=1"))),
            command
        );
        assert_eq!(
            wrap_command_with_env(&command, Some(&json!(["FOO"]))),
            command
        );
    }
}
