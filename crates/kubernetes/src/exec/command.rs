//! Shell wrapping for exec'd commands (`wrapCommandWithEnv` of `pod-exec.ts` with the G-exec2 `cwd`
//! argument).
//!
//! The Kubernetes exec API takes an argv and nothing else: no env, no working directory. Both are
//! given to a command by running it under `/bin/sh -c` that changes directory, exports the
//! variables and then `exec`s the real argv.

use serde_json::{Map, Value};

use js_compat::{json, string};

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

/// `wrapCommandWithEnv(command, env, cwd)`: `["/bin/sh", "-c", "cd 'dir' && export K='v'; …
/// exec 'argv0' …"]`, or `command` unchanged when there is neither a usable `cwd` nor a variable
/// that qualifies. Only string values with identifier keys are exported, and never `PATH`: the
/// caller's PATH is the orchestrator's, not the image's, and would break command lookup.
/// Variables are exported in JS property order (`env` is the original's object; anything but an
/// object counts as no env). `cwd` counts when it is a string that is not blank (JS `trim`); it
/// is quoted as given, untrimmed.
pub fn wrap_command_with_env(
    command: &[String],
    env: Option<&Value>,
    cwd: Option<&Value>,
) -> Vec<String> {
    let empty = Map::new();
    let env = env.and_then(Value::as_object).unwrap_or(&empty);
    let exports: Vec<String> = json::entries(env)
        .into_iter()
        .filter(|(key, _)| key.as_str() != "PATH" && is_shell_identifier(key))
        .filter_map(|(key, value)| {
            value
                .as_str()
                .map(|v| format!("export {key}={};", sh_quote(v)))
        })
        .collect();
    let cwd = cwd
        .and_then(Value::as_str)
        .filter(|dir| !string::trim(dir).is_empty());
    if exports.is_empty() && cwd.is_none() {
        return command.to_vec();
    }
    let mut script = String::new();
    if let Some(dir) = cwd {
        script.push_str(&format!("cd {} && ", sh_quote(dir)));
    }
    if !exports.is_empty() {
        script.push_str(&exports.join(" "));
        script.push(' ');
    }
    let argv: Vec<String> = command.iter().map(|arg| sh_quote(arg)).collect();
    script.push_str("exec ");
    script.push_str(&argv.join(" "));
    vec!["/bin/sh".to_string(), "-c".to_string(), script]
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
            None,
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
            wrap_command_with_env(&command, Some(&json!({"PATH": "/x", "1BAD": "v"})), None),
            command
        );
        assert_eq!(wrap_command_with_env(&command, None, None), command);
        assert_eq!(
            wrap_command_with_env(&command, Some(&json!("FOO=1")), None),
            command
        );
        assert_eq!(
            wrap_command_with_env(&command, Some(&json!(["FOO"])), None),
            command
        );
    }

    #[test]
    fn cwd_changes_directory_before_the_exports() {
        let ls = argv(&["ls", "-la"]);
        assert_eq!(
            wrap_command_with_env(&ls, None, Some(&json!("/workspace/repo"))),
            argv(&["/bin/sh", "-c", "cd '/workspace/repo' && exec 'ls' '-la'"])
        );
        let node = argv(&["node", "run.js"]);
        assert_eq!(
            wrap_command_with_env(
                &node,
                Some(&json!({"FOO": "bar"})),
                Some(&json!("/workspace"))
            )[2],
            "cd '/workspace' && export FOO='bar'; exec 'node' 'run.js'"
        );
        assert_eq!(
            wrap_command_with_env(&argv(&["ls"]), None, Some(&json!("/tmp/a'b")))[2],
            r"cd '/tmp/a'\''b' && exec 'ls'"
        );
        // Quoted as given: surrounding blanks stay part of the directory.
        assert_eq!(
            wrap_command_with_env(&argv(&["ls"]), None, Some(&json!(" /w ")))[2],
            "cd ' /w ' && exec 'ls'"
        );
    }

    #[test]
    fn a_blank_or_non_string_cwd_is_no_cwd() {
        let ls = argv(&["ls"]);
        for cwd in [
            json!(null),
            json!("   "),
            json!(""),
            json!(5),
            json!(["/w"]),
        ] {
            assert_eq!(wrap_command_with_env(&ls, None, Some(&cwd)), ls, "{cwd}");
        }
        assert_eq!(wrap_command_with_env(&ls, Some(&json!({})), None), ls);
    }
}
