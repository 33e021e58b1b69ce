//! `execInPod` and `execInPodStreaming` (spec §14) over kube-rs's websocket exec.
//!
//! stdin is never closed: every command that reads stdin is wrapped in `head -c <bytes>`, so it
//! ends on its own, and the stdin writer is kept open until the command's status frame arrives
//! (closing it would close the whole socket on the v4 protocol and lose the tail of the output).

use std::time::Duration;

use futures::future::{BoxFuture, try_join3};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
use kube::api::{Api, AttachParams, AttachedProcess};
use sandbox_core::OutputStream;
use sandbox_core::utf8::Utf8Decoder;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc::UnboundedSender;

use super::command::sh_quote;
use crate::cluster::ApiError;
use crate::kube_client::{Redactor, api_error_from_kube};

/// The container every exec targets.
pub const AGENT_CONTAINER: &str = "agent";

/// How an exec failed. Every variant is a rejection of `execInPod` in the original; the execute
/// hook turns all of them into a timed-out result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ExecError {
    /// The watchdog fired (A32/A35).
    #[error("{0}")]
    Timeout(String),
    /// An output cap was exceeded (A33/A34/A36).
    #[error("{0}")]
    Cap(String),
    /// The websocket handshake was rejected (403, 404 pod not found, ...).
    #[error("{0}")]
    Setup(ApiError),
    /// The connection failed or closed before a status frame, or a local stream failed.
    #[error("{0}")]
    Transport(String),
}

/// One buffered exec (`execInPod`).
#[derive(Debug, Clone, PartialEq)]
pub struct ExecRequest {
    pub namespace: String,
    pub pod: String,
    pub container: String,
    pub argv: Vec<String>,
    /// No stdin channel at all when empty.
    pub stdin: Vec<u8>,
    /// `0`: no watchdog.
    pub timeout_ms: u64,
    pub max_stdout_bytes: Option<u64>,
    pub max_stderr_bytes: Option<u64>,
}

impl ExecRequest {
    pub fn new(namespace: &str, pod: &str, argv: Vec<String>) -> Self {
        Self {
            namespace: namespace.into(),
            pod: pod.into(),
            container: AGENT_CONTAINER.into(),
            argv,
            stdin: Vec::new(),
            timeout_ms: 0,
            max_stdout_bytes: None,
            max_stderr_bytes: None,
        }
    }

    /// The argv sent to the pod: with stdin, `/bin/sh -c "head -c <bytes> | <quoted argv>"`.
    pub fn effective_argv(&self) -> Vec<String> {
        if self.stdin.is_empty() {
            return self.argv.clone();
        }
        let quoted: Vec<String> = self.argv.iter().map(|a| sh_quote(a)).collect();
        vec![
            "/bin/sh".into(),
            "-c".into(),
            format!("head -c {} | {}", self.stdin.len(), quoted.join(" ")),
        ]
    }
}

/// `{exitCode, stdout, stderr}`.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecOutput {
    pub exit_code: i64,
    pub stdout: String,
    pub stderr: String,
}

/// Where live output goes: each decoded chunk, in order. The concatenation of the chunks of a
/// stream is exactly the returned text of that stream.
pub type OutputTap = UnboundedSender<(OutputStream, String)>;

/// A32.
pub fn exec_timeout_message(timeout_ms: u64, pod: &str, container: &str, cmd0: &str) -> String {
    format!(
        "execInPod timed out after {timeout_ms}ms (pod={pod}, container={container}, cmd0={cmd0}). The WebSocket likely dropped before the command produced a status frame."
    )
}

/// A35.
pub fn streaming_timeout_message(
    timeout_ms: u64,
    pod: &str,
    container: &str,
    cmd0: &str,
) -> String {
    format!(
        "execInPodStreaming timed out after {timeout_ms}ms (pod={pod}, container={container}, cmd0={cmd0}). The WebSocket likely dropped before the command produced a status frame."
    )
}

/// A33 / A34.
pub fn exec_cap_message(stream: OutputStream, cap: u64, pod: &str, container: &str) -> String {
    format!(
        "execInPod {} exceeded the {cap}-byte cap (pod={pod}, container={container}); the sandbox produced more output than the buffer allows.",
        stream.as_str()
    )
}

/// A36.
pub fn streaming_stderr_cap_message(cap: u64, pod: &str, container: &str) -> String {
    format!(
        "execInPodStreaming stderr exceeded the {cap}-byte cap (pod={pod}, container={container}); the sandbox produced more diagnostics than the buffer allows."
    )
}

/// The connection ended without a status frame (the original only noticed this through its
/// watchdog; kube-rs reports it at once).
pub fn connection_closed_message(pod: &str, container: &str, cmd0: &str) -> String {
    format!(
        "execInPod connection closed before the command produced a status frame (pod={pod}, container={container}, cmd0={cmd0}). The command was not re-run and may still be running."
    )
}

/// The exit code of a status frame: `Success` → 0; an `ExitCode` cause → its number (1 when
/// it is not a number); anything else → 1.
pub fn exit_code_from_status(status: &Status) -> i64 {
    if status.status.as_deref() == Some("Success") {
        return 0;
    }
    status
        .details
        .as_ref()
        .and_then(|d| d.causes.as_ref())
        .and_then(|causes| {
            causes
                .iter()
                .find(|c| c.reason.as_deref() == Some("ExitCode"))
        })
        .map_or(1, |cause| {
            let message = cause.message.as_deref().unwrap_or_default();
            message.trim().parse::<i64>().unwrap_or(1)
        })
}

/// Reads one output stream to its end: counts bytes against `cap`, decodes, taps and
/// accumulates.
async fn collect_stream<R: AsyncRead + Unpin>(
    reader: Option<R>,
    stream: OutputStream,
    cap: Option<u64>,
    cap_error: impl Fn(u64) -> ExecError,
    tap: Option<&OutputTap>,
) -> Result<String, ExecError> {
    let Some(mut reader) = reader else {
        return Ok(String::new());
    };
    let mut text = String::new();
    let mut total: u64 = 0;
    let mut chunker = Utf8Decoder::keeping_bom();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = reader
            .read(&mut buf)
            .await
            .map_err(|e| ExecError::Transport(e.to_string()))?;
        let chunk = if n == 0 {
            chunker.finish()
        } else {
            total += n as u64;
            if let Some(cap) = cap
                && total > cap
            {
                return Err(cap_error(cap));
            }
            chunker.decode(&buf[..n])
        };
        if !chunk.is_empty() {
            if let Some(tap) = tap {
                let _ = tap.send((stream, chunk.clone()));
            }
            text.push_str(&chunk);
        }
        if n == 0 {
            return Ok(text);
        }
    }
}

/// Runs `fut` under the watchdog (`0` = none).
async fn with_watchdog<T>(
    timeout_ms: u64,
    on_timeout: impl FnOnce() -> ExecError,
    fut: impl Future<Output = Result<T, ExecError>>,
) -> Result<T, ExecError> {
    if timeout_ms == 0 {
        return fut.await;
    }
    match tokio::time::timeout(Duration::from_millis(timeout_ms), fut).await {
        Ok(result) => result,
        Err(_) => Err(on_timeout()),
    }
}

fn attach_params(container: &str, stdin: bool) -> AttachParams {
    AttachParams::default()
        .container(container)
        .stdin(stdin)
        .stdout(true)
        .stderr(true)
        .tty(false)
        .max_stdin_buf_size(64 * 1024)
        .max_stdout_buf_size(64 * 1024)
        .max_stderr_buf_size(64 * 1024)
}

async fn connect(
    client: &kube::Client,
    redactor: &Redactor,
    namespace: &str,
    pod: &str,
    argv: &[String],
    params: &AttachParams,
) -> Result<AttachedProcess, ExecError> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    pods.exec(pod, argv.to_vec(), params)
        .await
        .map_err(|err| ExecError::Setup(api_error_from_kube(err, redactor)))
}

/// The status frame, or the connection-closed error.
/// Waits for the I/O to finish and the status frame. The status channel also tells when the
/// connection ended without a status (kube-rs then drops its sender): that fails at once, as the
/// output streams may never see their end in that case.
async fn complete<T>(
    status: Option<impl Future<Output = Option<Status>>>,
    io: impl Future<Output = Result<T, ExecError>>,
    closed: impl Fn() -> ExecError,
) -> Result<(T, Status), ExecError> {
    let Some(status) = status else {
        return Err(closed());
    };
    tokio::pin!(status);
    tokio::pin!(io);
    tokio::select! {
        biased;
        result = &mut io => {
            let value = result?;
            let status = status.await.ok_or_else(&closed)?;
            Ok((value, status))
        }
        status = &mut status => {
            let status = status.ok_or_else(&closed)?;
            Ok((io.await?, status))
        }
    }
}

/// `execInPod`: runs `request` to completion (status frame and both streams ended) and returns
/// the exit code and the whole output. `tap` receives output chunks as they arrive.
pub async fn exec_in_pod(
    client: &kube::Client,
    redactor: &Redactor,
    request: &ExecRequest,
    tap: Option<&OutputTap>,
) -> Result<ExecOutput, ExecError> {
    let argv = request.effective_argv();
    let cmd0 = argv.first().cloned().unwrap_or_default();
    let (pod, container) = (request.pod.as_str(), request.container.as_str());
    let on_timeout = || {
        ExecError::Timeout(exec_timeout_message(
            request.timeout_ms,
            pod,
            container,
            &cmd0,
        ))
    };
    with_watchdog(request.timeout_ms, on_timeout, async {
        let has_stdin = !request.stdin.is_empty();
        let params = attach_params(container, has_stdin);
        let mut process =
            connect(client, redactor, &request.namespace, pod, &argv, &params).await?;
        // Kept alive (never shut down) until the command has finished.
        let mut stdin = if has_stdin { process.stdin() } else { None };
        let write = async {
            if let Some(writer) = stdin.as_mut() {
                writer
                    .write_all(&request.stdin)
                    .await
                    .map_err(|e| ExecError::Transport(e.to_string()))?;
                writer
                    .flush()
                    .await
                    .map_err(|e| ExecError::Transport(e.to_string()))?;
            }
            Ok::<_, ExecError>(())
        };
        let stdout = collect_stream(
            process.stdout(),
            OutputStream::Stdout,
            request.max_stdout_bytes,
            |cap| ExecError::Cap(exec_cap_message(OutputStream::Stdout, cap, pod, container)),
            tap,
        );
        let stderr = collect_stream(
            process.stderr(),
            OutputStream::Stderr,
            request.max_stderr_bytes,
            |cap| ExecError::Cap(exec_cap_message(OutputStream::Stderr, cap, pod, container)),
            tap,
        );
        let closed = || ExecError::Transport(connection_closed_message(pod, container, &cmd0));
        let status = process.take_status();
        let (((), stdout, stderr), status) =
            complete(status, try_join3(write, stdout, stderr), closed).await?;
        drop(stdin);
        Ok(ExecOutput {
            exit_code: exit_code_from_status(&status),
            stdout,
            stderr,
        })
    })
    .await
}

/// The I/O of one streaming exec (`execInPodStreaming`).
pub struct StreamingIo<'a> {
    /// Piped into the exec's stdin; its end is not signalled to the pod.
    pub stdin: Option<Box<dyn AsyncRead + Send + Unpin + 'a>>,
    /// Receives stdout; flushed and shut down before the exec completes. `None` drains it.
    pub stdout: Option<Box<dyn AsyncWrite + Send + Unpin + 'a>>,
    pub timeout_ms: u64,
    pub max_stderr_bytes: Option<u64>,
}

/// `{exitCode, stderr}` of a streaming exec.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamingOutput {
    pub exit_code: i64,
    pub stderr: String,
}

/// `execInPodStreaming`: the argv is sent as it is (the callers' scripts carry their own
/// `head -c`). A stdin source error or a stdout sink error fails the exec closed.
pub async fn exec_in_pod_streaming(
    client: &kube::Client,
    redactor: &Redactor,
    namespace: &str,
    pod: &str,
    container: &str,
    argv: &[String],
    io: StreamingIo<'_>,
) -> Result<StreamingOutput, ExecError> {
    let cmd0 = argv.first().cloned().unwrap_or_default();
    let timeout_ms = io.timeout_ms;
    let timeout_message = streaming_timeout_message(timeout_ms, pod, container, &cmd0);
    let on_timeout = move || ExecError::Timeout(timeout_message);
    let StreamingIo {
        stdin: source,
        stdout: sink,
        max_stderr_bytes,
        ..
    } = io;
    with_watchdog(timeout_ms, on_timeout, async move {
        let params = attach_params(container, source.is_some());
        let mut process = connect(client, redactor, namespace, pod, argv, &params).await?;
        let mut stdin = if source.is_some() {
            process.stdin()
        } else {
            None
        };
        let pump_in: BoxFuture<'_, Result<(), ExecError>> = match (source, stdin.as_mut()) {
            (Some(mut source), Some(writer)) => Box::pin(async move {
                tokio::io::copy(&mut source, writer)
                    .await
                    .map_err(|e| ExecError::Transport(e.to_string()))?;
                writer
                    .flush()
                    .await
                    .map_err(|e| ExecError::Transport(e.to_string()))
            }),
            _ => Box::pin(async { Ok(()) }),
        };
        let reader = process.stdout();
        let pump_out = async move {
            let Some(mut reader) = reader else {
                return Ok(());
            };
            match sink {
                Some(mut sink) => {
                    tokio::io::copy(&mut reader, &mut sink)
                        .await
                        .map_err(|e| ExecError::Transport(e.to_string()))?;
                    sink.flush()
                        .await
                        .map_err(|e| ExecError::Transport(e.to_string()))?;
                    sink.shutdown()
                        .await
                        .map_err(|e| ExecError::Transport(e.to_string()))
                }
                None => tokio::io::copy(&mut reader, &mut tokio::io::sink())
                    .await
                    .map(drop)
                    .map_err(|e| ExecError::Transport(e.to_string())),
            }
        };
        let stderr = collect_stream(
            process.stderr(),
            OutputStream::Stderr,
            max_stderr_bytes,
            |cap| ExecError::Cap(streaming_stderr_cap_message(cap, pod, container)),
            None,
        );
        let closed = || ExecError::Transport(connection_closed_message(pod, container, &cmd0));
        let status = process.take_status();
        let (((), (), stderr), status) =
            complete(status, try_join3(pump_in, pump_out, stderr), closed).await?;
        drop(stdin);
        Ok(StreamingOutput {
            exit_code: exit_code_from_status(&status),
            stderr,
        })
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn stdin_wraps_in_head_c_with_the_byte_length() {
        let mut request = ExecRequest::new("ns", "pod", vec!["cat".into(), "it's".into()]);
        assert_eq!(request.effective_argv(), vec!["cat", "it's"]);
        request.stdin = "héllo".as_bytes().to_vec();
        assert_eq!(
            request.effective_argv(),
            vec!["/bin/sh", "-c", "head -c 6 | 'cat' 'it'\\''s'"]
        );
    }

    #[test]
    fn exit_codes_from_status_frames() {
        let status = |v: serde_json::Value| serde_json::from_value::<Status>(v).unwrap();
        assert_eq!(
            exit_code_from_status(&status(json!({"status": "Success"}))),
            0
        );
        let failure = |message: &str| {
            status(json!({"status": "Failure", "reason": "NonZeroExitCode",
                "details": {"causes": [{"reason": "ExitCode", "message": message}]}}))
        };
        assert_eq!(exit_code_from_status(&failure("42")), 42);
        assert_eq!(exit_code_from_status(&failure("x")), 1);
        assert_eq!(
            exit_code_from_status(&status(json!({"status": "Failure"}))),
            1
        );
    }

    #[test]
    fn messages_are_exact() {
        assert_eq!(
            exec_timeout_message(5000, "pc-1", "agent", "/bin/sh"),
            "execInPod timed out after 5000ms (pod=pc-1, container=agent, cmd0=/bin/sh). The WebSocket likely dropped before the command produced a status frame."
        );
        assert_eq!(
            exec_cap_message(OutputStream::Stdout, 10, "p", "agent"),
            "execInPod stdout exceeded the 10-byte cap (pod=p, container=agent); the sandbox produced more output than the buffer allows."
        );
        assert_eq!(
            exec_cap_message(OutputStream::Stderr, 10, "p", "agent"),
            "execInPod stderr exceeded the 10-byte cap (pod=p, container=agent); the sandbox produced more output than the buffer allows."
        );
        assert_eq!(
            streaming_timeout_message(7, "p", "agent", "sh"),
            "execInPodStreaming timed out after 7ms (pod=p, container=agent, cmd0=sh). The WebSocket likely dropped before the command produced a status frame."
        );
        assert_eq!(
            streaming_stderr_cap_message(1048576, "p", "agent"),
            "execInPodStreaming stderr exceeded the 1048576-byte cap (pod=p, container=agent); the sandbox produced more diagnostics than the buffer allows."
        );
    }

    #[test]
    fn chunker_keeps_split_characters_whole() {
        let bytes = "aé€😀".as_bytes();
        let mut chunker = Utf8Decoder::keeping_bom();
        let mut out = String::new();
        for b in bytes {
            out.push_str(&chunker.decode(std::slice::from_ref(b)));
        }
        out.push_str(&chunker.finish());
        assert_eq!(out, "aé€😀");
        let mut chunker = Utf8Decoder::keeping_bom();
        assert_eq!(chunker.decode(&[b'a', 0xff, b'b']), "a\u{FFFD}b");
        assert_eq!(chunker.decode(&[0xe2, 0x82]), "");
        assert_eq!(chunker.finish(), "\u{FFFD}");
    }

    #[tokio::test]
    async fn collect_taps_exactly_what_it_returns_and_enforces_caps() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let data: &[u8] = "line one\nzwei — drei\n".as_bytes();
        let text = collect_stream(
            Some(data),
            OutputStream::Stdout,
            None,
            |_| unreachable!(),
            Some(&tx),
        )
        .await
        .unwrap();
        drop(tx);
        let mut streamed = String::new();
        while let Some((stream, chunk)) = rx.recv().await {
            assert_eq!(stream, OutputStream::Stdout);
            streamed.push_str(&chunk);
        }
        assert_eq!(streamed, text);
        assert_eq!(text, "line one\nzwei — drei\n");
        let err = collect_stream(
            Some(data),
            OutputStream::Stderr,
            Some(4),
            |cap| ExecError::Cap(exec_cap_message(OutputStream::Stderr, cap, "p", "agent")),
            None,
        )
        .await
        .unwrap_err();
        assert!(
            matches!(err, ExecError::Cap(m) if m.starts_with("execInPod stderr exceeded the 4-byte cap"))
        );
    }
}
