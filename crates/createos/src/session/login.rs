//! `onLoginPtyOpen/Input/Stop/Close`: a fixed login command per `loginCommandKey` in a 120x30
//! PTY, its output streamed to `ctx.loginPty.output` as text that never splits a character.

use std::sync::{Arc, Mutex};

use sandbox_core::{ErrorClass, HostSink, LogLevel, ProviderError, ProviderResult};
use serde_json::{Value, json};

use super::{echo, id_key};
use crate::exec::shell_quote;
use crate::lease::acquire::is_zero;
use crate::lease::state::{CWD, SessionKind};
use crate::process::messages;
use crate::process::{ManagedProcess, Mode};
use crate::provider::CreateOsProvider;
use crate::signal::Signal;
use js_compat::utf8::Utf8Decoder;
use js_compat::uuid::random_uuid;

/// The properties every JS object literal inherits from `Object.prototype`: looking one of them
/// up as a login command finds a function (or the prototype), not a command.
const INHERITED: &[&str] = &[
    "constructor",
    "__proto__",
    "hasOwnProperty",
    "isPrototypeOf",
    "propertyIsEnumerable",
    "toLocaleString",
    "toString",
    "valueOf",
    "__defineGetter__",
    "__defineSetter__",
    "__lookupGetter__",
    "__lookupSetter__",
];

/// The argv and the extra home variable of a login command key. Keys outside the three fail
/// with the TypeError the original's lookup ran into.
fn login_command(
    key: Option<&Value>,
) -> ProviderResult<(&'static [&'static str], Option<&'static str>)> {
    match key.and_then(Value::as_str) {
        Some("claude") => Ok((&["claude", "setup-token"], None)),
        Some("codex") => Ok((&["codex", "login", "--device-auth"], Some("CODEX_HOME"))),
        Some("grok") => Ok((&["grok", "login", "--device-auth"], Some("GROK_HOME"))),
        Some(name) if INHERITED.contains(&name) => Err(ProviderError::cannot_read_properties(
            "undefined",
            "includes",
        )),
        _ => Err(ProviderError::cannot_read_properties("undefined", "0")),
    }
}

/// `/tmp/paperclip-adapter-login/<uuid v1-5, variant 8-b>`, case-insensitive.
fn valid_home(home: &str) -> bool {
    let Some(uuid) = home.strip_prefix("/tmp/paperclip-adapter-login/") else {
        return false;
    };
    let bytes = uuid.as_bytes();
    bytes.len() == 36
        && bytes.iter().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => *b == b'-',
            14 => (b'1'..=b'5').contains(b),
            19 => b"89abAB".contains(b),
            _ => b.is_ascii_hexdigit(),
        })
}

/// The login script: resolve the executable (through asdf when it is a shim, while the normal
/// HOME still applies), then exec it with the isolated environment.
fn login_script(command: &[&str], environment: &[String]) -> ProviderResult<String> {
    let executable = shell_quote(command[0])?;
    let args = command[1..]
        .iter()
        .map(|a| shell_quote(a))
        .collect::<Result<Vec<_>, _>>()?;
    let args = if args.is_empty() {
        String::new()
    } else {
        format!(" {}", args.join(" "))
    };
    Ok([
        format!(r#"login_command="$(command -v {executable})" || exit 127"#),
        r#"login_path="$PATH""#.to_owned(),
        format!(
            r#"case "$login_command" in */.asdf/shims/*) login_command="$(asdf which {executable})" || exit 127; login_path="${{login_command%/*}}:$login_path" ;; esac"#
        ),
        r#"[ -x "$login_command" ] || exit 126"#.to_owned(),
        format!(
            r#"exec env {} PATH="$login_path" "$login_command"{args}"#,
            environment.join(" ")
        ),
    ]
    .join("; "))
}

/// `Buffer.from(data)` of the input hook: the UTF-8 bytes of a string.
fn input_bytes(data: Option<&Value>) -> ProviderResult<Vec<u8>> {
    let received = match data {
        Some(Value::String(text)) => return Ok(text.as_bytes().to_vec()),
        // An array is array-like: each element becomes one byte.
        Some(Value::Array(items)) => {
            return Ok(items
                .iter()
                .map(|v| v.as_f64().map_or(0, |n| (n as i64 & 0xff) as u8))
                .collect());
        }
        None => "Received undefined".to_owned(),
        Some(Value::Null) => "Received null".to_owned(),
        Some(Value::Number(n)) => format!("Received type number ({n})"),
        Some(Value::Bool(b)) => format!("Received type boolean ({b})"),
        Some(Value::Object(_)) => "Received an instance of Object".to_owned(),
    };
    Err(ProviderError::new(format!(
        "The first argument must be of type string or an instance of Buffer, ArrayBuffer, or Array or an Array-like Object. {received}"
    ))
    .with_class(ErrorClass::TypeError))
}

impl CreateOsProvider {
    /// `onLoginPtyOpen`: `{workerSessionId}`. `sink` receives the logger lines and, for as long
    /// as the process runs, `loginPty.output` and (exactly once) `loginPty.exit`.
    pub async fn login_pty_open(
        &self,
        params: &Value,
        sink: Arc<dyn HostSink>,
    ) -> ProviderResult<Value> {
        sink.log(LogLevel::Info, messages::LOG_LOGIN_REQUESTED);
        if self
            .session_by_route(SessionKind::LoginPty, params)
            .is_some()
        {
            return Err(ProviderError::new(messages::LOGIN_ROUTE_OPEN));
        }
        let home = match params.get("sessionHome") {
            Some(Value::String(home)) if valid_home(home) => home.as_str(),
            _ => return Err(ProviderError::new(messages::LOGIN_HOME_INVALID)),
        };
        let lease = self.state().resolve_lease(params)?;
        let lease_id = params
            .get("providerLeaseId")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let client = self.clients().client(&lease.config)?;
        let deadline = Signal::timeout(lease.config.timeout_ms);
        let prepared = client
            .exec(lease_id, "/bin/mkdir", &["-p", "--", home], Some(&deadline))
            .await?;
        if !is_zero(prepared.get("exit_code")) {
            return Err(ProviderError::new(messages::LOGIN_HOME_FAILED));
        }
        sink.log(LogLevel::Info, messages::LOG_LOGIN_HOME_PREPARED);
        let (command, home_variable) = login_command(params.get("loginCommandKey"))?;
        let quoted_home = shell_quote(home)?;
        let mut environment = vec![
            format!("HOME={quoted_home}"),
            format!("TERM={}", shell_quote("xterm-256color")?),
        ];
        if let Some(variable) = home_variable {
            environment.push(format!("{variable}={quoted_home}"));
        }
        let script = login_script(command, &environment)?;
        let worker_session_id = format!("pty-{}", random_uuid());
        let body = json!({
            "cmd": "/bin/bash",
            "args": ["-lc", script],
            "cwd": CWD,
            "pty": { "cols": 120, "rows": 30 },
        });
        let process = match ManagedProcess::create(client, lease_id, body, Mode::Pty).await {
            Ok(process) => process,
            Err(error) => {
                let line = match error.status() {
                    Some(status) => messages::log_login_creation_failed(status),
                    None => messages::LOG_LOGIN_CREATION_BEFORE_BINDING.to_owned(),
                };
                sink.log(LogLevel::Info, &line);
                return Err(error.into());
            }
        };
        sink.log(LogLevel::Info, messages::LOG_LOGIN_OPENED);
        let route = id_key(params.get("hostRouteId"));
        let (entry, forget) = self.register(
            SessionKind::LoginPty,
            &route,
            &worker_session_id,
            lease_id,
            &process,
        );
        let decoder = Arc::new(Mutex::new(Utf8Decoder::keeping_bom()));
        let (data_sink, data_decoder, data_route, data_id) = (
            sink.clone(),
            decoder.clone(),
            route.clone(),
            worker_session_id.clone(),
        );
        let end_id = worker_session_id.clone();
        process.follow(
            move |bytes| {
                let text = data_decoder
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .decode(&bytes);
                // Called for every chunk, even when it completes no character yet.
                data_sink.login_output(&data_route, &data_id, text);
            },
            move |result| {
                // Forgotten first: once the host has the exit, the session is gone for it.
                forget();
                let exit_code = match &result {
                    Ok(exit) => {
                        sink.log(
                            LogLevel::Info,
                            &messages::log_login_exited(&exit.code_text()),
                        );
                        exit.host_exit_code()
                    }
                    Err(_) => {
                        sink.log(LogLevel::Info, messages::LOG_LOGIN_STREAM_FAILED);
                        None
                    }
                };
                let tail = decoder.lock().unwrap_or_else(|e| e.into_inner()).finish();
                if !tail.is_empty() {
                    sink.login_output(&route, &end_id, tail);
                }
                sink.login_exit(&route, &end_id, exit_code);
            },
        );
        self.close_if_shutting_down(&entry, &process).await;
        Ok(json!({ "workerSessionId": worker_session_id }))
    }

    /// `onLoginPtyInput`: the UTF-8 bytes of `data` to the session `workerSessionId` (unknown
    /// sessions are ignored). Resolves with nothing.
    pub async fn login_pty_input(&self, params: &Value) -> ProviderResult<Option<Value>> {
        if let Some(entry) = self.session_by_id(SessionKind::LoginPty, params) {
            let bytes = input_bytes(params.get("data"))?;
            entry.session.write(&bytes).await?;
        }
        Ok(None)
    }

    /// `onLoginPtyStop`: stops the session `workerSessionId` (unknown sessions are ignored).
    pub async fn login_pty_stop(&self, params: &Value) -> ProviderResult<Option<Value>> {
        if let Some(entry) = self.session_by_id(SessionKind::LoginPty, params) {
            entry.session.stop().await?;
        }
        Ok(None)
    }

    /// `onLoginPtyClose`: closes the session of route `hostRouteId`; always `{hostRouteId}`.
    pub async fn login_pty_close(&self, params: &Value) -> ProviderResult<Value> {
        if let Some(entry) = self.session_by_route(SessionKind::LoginPty, params) {
            entry.session.close().await?;
            self.forget_session(&entry);
        }
        Ok(Value::Object(echo(params, &["hostRouteId"])))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_homes() {
        let ok = "/tmp/paperclip-adapter-login/0f8fad5b-d9cb-469f-a165-70867728950e";
        assert!(valid_home(ok));
        assert!(valid_home(&ok.to_uppercase().replace(
            "/TMP/PAPERCLIP-ADAPTER-LOGIN/",
            "/tmp/paperclip-adapter-login/"
        )));
        for bad in [
            "/tmp/paperclip-adapter-login/0f8fad5b-d9cb-669f-a165-70867728950e",
            "/tmp/paperclip-adapter-login/0f8fad5b-d9cb-469f-c165-70867728950e",
            "/tmp/paperclip-adapter-login/0f8fad5b-d9cb-469f-a165-70867728950e/",
            "/tmp/paperclip-adapter-login/0f8fad5b-d9cb-469f-a165-70867728950e\n",
            "/tmp/paperclip-adapter-login/../0f8fad5b-d9cb-469f-a165-7086772895",
            "/TMP/paperclip-adapter-login/0f8fad5b-d9cb-469f-a165-70867728950e",
            "",
        ] {
            assert!(!valid_home(bad), "{bad}");
        }
    }

    #[test]
    fn login_scripts_are_verbatim() {
        let (command, variable) = login_command(Some(&json!("codex"))).unwrap();
        assert_eq!(variable, Some("CODEX_HOME"));
        let env = [
            "HOME='/h'".to_owned(),
            "TERM='xterm-256color'".to_owned(),
            "CODEX_HOME='/h'".to_owned(),
        ];
        assert_eq!(
            login_script(command, &env).unwrap(),
            r#"login_command="$(command -v 'codex')" || exit 127; login_path="$PATH"; case "$login_command" in */.asdf/shims/*) login_command="$(asdf which 'codex')" || exit 127; login_path="${login_command%/*}:$login_path" ;; esac; [ -x "$login_command" ] || exit 126; exec env HOME='/h' TERM='xterm-256color' CODEX_HOME='/h' PATH="$login_path" "$login_command" 'login' '--device-auth'"#
        );
        assert_eq!(
            login_command(Some(&json!("claude"))).unwrap().0,
            &["claude", "setup-token"]
        );
        assert_eq!(
            login_command(Some(&json!("grok"))).unwrap().1,
            Some("GROK_HOME")
        );
        let err = login_command(Some(&json!("gemini"))).unwrap_err();
        assert_eq!(
            err.message,
            "Cannot read properties of undefined (reading '0')"
        );
        assert_eq!(err.class, ErrorClass::TypeError);
        assert_eq!(
            login_command(Some(&json!("toString"))).unwrap_err().message,
            "Cannot read properties of undefined (reading 'includes')"
        );
        assert_eq!(
            login_command(None).unwrap_err().message,
            "Cannot read properties of undefined (reading '0')"
        );
    }

    #[test]
    fn login_input_is_utf8_of_a_string() {
        assert_eq!(input_bytes(Some(&json!("é\n"))).unwrap(), "é\n".as_bytes());
        assert_eq!(input_bytes(Some(&json!([104, 105]))).unwrap(), b"hi");
        assert_eq!(
            input_bytes(None).unwrap_err().message,
            "The first argument must be of type string or an instance of Buffer, ArrayBuffer, or Array or an Array-like Object. Received undefined"
        );
    }
}
