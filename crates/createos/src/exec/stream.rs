//! Streaming exec: `POST /sandboxes/{id}/exec?stream=true` with the wrapper script and any stdin
//! in the body, then NDJSON frames until the exit code.
//!
//! Cancellation is the signal: it aborts the HTTP stream (no remote kill). A deadline makes the
//! call *return* `{exitCode: null, timedOut: true, …}` with the output so far; any other abort
//! fails with `CreateOS command was cancelled.`.

use crate::lease::lease_of;
use js_compat::{number, value};
use reqwest::Method;
use sandbox_core::{HostSink, OutputStream, ProviderError};
use serde_json::{Value, json};

use super::script::script_for_params;
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
    let id = identifier(lease_of(params)?.get("providerLeaseId"))?;
    let script = script_for_params(params)?;
    let stdin = params.get("stdin").filter(|v| !v.is_null()).cloned();
    execute_script(client, &id, script, stdin, signal, log).await
}

/// Runs an already built wrapper script in sandbox `id` (an identifier) as `/bin/bash -lc`.
/// `stdin` is sent whole in the request body.
pub async fn execute_script(
    client: &CreateOsClient,
    id: &str,
    script: String,
    stdin: Option<Value>,
    signal: &Signal,
    log: Option<&dyn HostSink>,
) -> std::result::Result<ExecOutcome, ProviderError> {
    let mut body = json!({ "cmd": "/bin/bash", "args": ["-lc", script], "stream": true });
    if let (Some(stdin), Some(map)) = (stdin, body.as_object_mut()) {
        map.insert("stdin".into(), stdin);
    }
    let path = format!("/sandboxes/{id}/exec?stream=true");
    let mut output = Output::new(log);
    let outcome = {
        let frames = read_frames(client, &path, body, signal, &mut output);
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
