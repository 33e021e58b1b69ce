//! Streaming exec: `POST /sandboxes/{id}/exec?stream=true` with the wrapper script in the body,
//! then NDJSON frames until the exit code.
//!
//! Stdin is staged as a file first (`PUT …/files?path=/tmp/paperclip-stdin-<uuid>`), which the
//! script opens as its stdin and removes before the command starts. The exec request has no
//! stdin field: the service drops one it is sent (the original sent it there, so its commands
//! never saw their stdin; see docs/wire-parity.md).
//!
//! Cancellation is the signal: it aborts the HTTP stream. A deadline makes the call *return*
//! `{exitCode: null, timedOut: true, …}` with the output so far; any other abort fails with
//! `CreateOS command was cancelled.`. The original sends nothing more; an execute hook's command
//! ([`execute_command`]) is run so that one more request can end it after its deadline
//! ([`super::end`]), and that request is sent before the call answers.

use crate::params::lease_of;
use js_compat::uuid::random_uuid;
use js_compat::{number, value};
use reqwest::Method;
use sandbox_core::{HostSink, OutputStream, ProviderError};
use serde_json::{Value, json};

use super::end;
use super::script::{script_for_params, with_staged_stdin};
use super::tail::Output;
use crate::client::{Body, CreateOsClient, identifier};
use crate::error::{Error, Result};
use crate::messages;
use crate::ndjson::NdjsonReader;
use crate::signal::Signal;

/// How a command ended.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecOutcome {
    /// The exit code (a JSON number as the service sent it), `None` when timed out.
    pub exit_code: Option<Value>,
    pub timed_out: bool,
    pub stdout: String,
    pub stderr: String,
    pub output_truncated: bool,
}

impl ExecOutcome {
    /// The hook result. A timed-out result has no `signal` key; every other has `signal: null`.
    pub fn to_json(&self) -> Value {
        let metadata = json!({ "outputTruncated": self.output_truncated });
        if self.timed_out {
            json!({
                "exitCode": null,
                "timedOut": true,
                "stdout": self.stdout,
                "stderr": self.stderr,
                "metadata": metadata,
            })
        } else {
            json!({
                "exitCode": self.exit_code,
                "signal": null,
                "timedOut": false,
                "stdout": self.stdout,
                "stderr": self.stderr,
                "metadata": metadata,
            })
        }
    }

    /// Whether the command ran to exit code 0.
    pub fn succeeded(&self) -> bool {
        !self.timed_out && self.exit_code.as_ref().and_then(Value::as_f64) == Some(0.0)
    }
}

/// `executeStream(client, params, signal, log)`: the command of an execute call's params
/// (`lease.providerLeaseId`, `command`, `args`, `cwd`, `env`, `stdin`). The lease ID and the
/// script are checked before any request.
pub async fn execute_stream(
    client: &CreateOsClient,
    params: &Value,
    signal: &Signal,
    log: Option<&dyn HostSink>,
) -> std::result::Result<ExecOutcome, ProviderError> {
    let (id, script, stdin) = command_of(params)?;
    execute_script(client, &id, script, stdin, signal, log).await
}

/// [`execute_stream`] for the execute hook: the script runs in [`end::wrap`]'s wrapper, and when
/// the deadline passes the request that ends the command ([`end::end_command`], bounded by its
/// own deadline) is sent before the timed-out result, unchanged, is returned.
pub async fn execute_command(
    client: &CreateOsClient,
    params: &Value,
    signal: &Signal,
    log: Option<&dyn HostSink>,
) -> std::result::Result<ExecOutcome, ProviderError> {
    let (id, script, stdin) = command_of(params)?;
    let control = end::control_path(&random_uuid());
    let script = end::wrap(&script, &control)?;
    let outcome = execute_script(client, &id, script, stdin, signal, log).await?;
    if outcome.timed_out {
        end::end_command(client, &id, &control).await;
    }
    Ok(outcome)
}

/// The sandbox, the script and the stdin of an execute call's params, checked in the
/// original's order (the lease ID first).
fn command_of(
    params: &Value,
) -> std::result::Result<(String, String, Option<String>), ProviderError> {
    let id = identifier(lease_of(params)?.get("providerLeaseId"))?;
    let script = script_for_params(params)?;
    let stdin = match params.get("stdin") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => Some(text.clone()),
        // `String(value)`, as a JS template or fetch body would have written it.
        Some(other) => Some(value::to_string(other)),
    };
    Ok((id, script, stdin))
}

/// Runs an already built wrapper script in sandbox `id` (an identifier) as `/bin/bash -lc`.
/// `stdin`, when there is one, is staged as a file that the script reads and removes.
pub async fn execute_script(
    client: &CreateOsClient,
    id: &str,
    script: String,
    stdin: Option<String>,
    signal: &Signal,
    log: Option<&dyn HostSink>,
) -> std::result::Result<ExecOutcome, ProviderError> {
    let path = format!("/sandboxes/{id}/exec?stream=true");
    let mut output = Output::new(log);
    let outcome = {
        let frames = async {
            let script = match stdin {
                Some(stdin) => {
                    let staged = format!("/tmp/paperclip-stdin-{}", random_uuid());
                    client
                        .upload(id, &staged, reqwest::Body::from(stdin), signal)
                        .await?;
                    with_staged_stdin(&script, &staged)?
                }
                None => script,
            };
            let body = json!({ "cmd": "/bin/bash", "args": ["-lc", script], "stream": true });
            read_frames(client, &path, body, signal, &mut output).await
        };
        tokio::select! {
            biased;
            outcome = frames => outcome,
            reason = signal.aborted() => Err(reason.to_error().into()),
        }
    };
    match outcome {
        Ok(exit_code) => Ok(ExecOutcome {
            exit_code: Some(exit_code),
            timed_out: false,
            stdout: output.stdout(),
            stderr: output.stderr(),
            output_truncated: output.truncated(),
        }),
        Err(error) => match signal.reason() {
            Some(reason) if reason.is_timeout() => Ok(ExecOutcome {
                exit_code: None,
                timed_out: true,
                stdout: output.stdout(),
                stderr: output.stderr(),
                output_truncated: output.truncated(),
            }),
            Some(_) => Err(ProviderError::new(messages::COMMAND_CANCELLED)),
            None => Err(error.into()),
        },
    }
}

/// Sends the request and consumes frames until the exit code.
async fn read_frames(
    client: &CreateOsClient,
    path: &str,
    body: Value,
    signal: &Signal,
    output: &mut Output<'_>,
) -> Result<Value> {
    let response = client
        .request(Method::POST, path, Body::Json(body), Some(signal))
        .await?;
    let mut frames = NdjsonReader::from_response(response)?;
    while let Some(mut frame) = frames.next().await? {
        if frame.get("hb") == Some(&Value::Bool(true)) {
            continue;
        }
        // A `stdout` string, else a `stderr` string: its text is moved out of the frame and
        // handed on, not copied.
        let text = [
            ("stdout", OutputStream::Stdout),
            ("stderr", OutputStream::Stderr),
        ]
        .into_iter()
        .find_map(|(key, stream)| match frame.get_mut(key) {
            Some(Value::String(text)) => Some((stream, std::mem::take(text))),
            _ => None,
        });
        if let Some((stream, text)) = text {
            output.append(stream, text).await;
            continue;
        }
        if let Some(Value::String(_)) = frame.get("error") {
            return Err(Error::msg(messages::COMMAND_STREAM_ERROR));
        }
        match frame.get("exit_code") {
            Some(code) if value::is_integer(code) => return Ok(number::normalized(code)),
            _ => return Err(Error::msg(messages::INVALID_COMMAND_EVENT)),
        }
    }
    Err(Error::msg(messages::COMMAND_STREAM_NO_EXIT))
}
