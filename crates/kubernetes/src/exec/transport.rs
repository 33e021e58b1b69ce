//! `execInPod` and `execInPodStreaming` (the original's `pod-exec.ts`) over kube-rs's websocket exec.
//!
//! stdin is never closed: every command that reads stdin is wrapped in `head -c <bytes>`, so it
//! ends on its own, and the stdin writer is kept open until the command's status frame arrives
//! (closing it would close the whole socket on the v4 protocol and lose the tail of the output).
//! All `<bytes>` are read in the pod even when the command exits first (see
//! [`ExecRequest::command_argv`]): a real node answers no status while its stdin copy is stuck.

use std::time::Duration;

use futures::future::{BoxFuture, try_join, try_join3};
use js_compat::utf8::Utf8Decoder;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
use kube::api::{Api, AttachParams, AttachedProcess};
use sandbox_core::OutputStream;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

use super::command::sh_quote;
use super::group;
use super::tail::OutputTail;
use crate::cluster::{Redactor, api_error_from_kube};
use crate::error::Error;

/// The container every exec targets.
pub const AGENT_CONTAINER: &str = "agent";

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
    /// Keep only the last this-many bytes of each output stream (cut at a character boundary);
    /// the live tap still gets every chunk. `None`: keep everything.
    pub keep_tail_bytes: Option<usize>,
    /// Run the command in a process group of its own recorded in this pid file, and end that
    /// group when the exec fails after it started (see [`super::group`]). `None`: the argv
    /// runs as it is, and a command that outlives its exec runs on.
    pub pid_file: Option<String>,
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
            keep_tail_bytes: None,
            pid_file: None,
        }
    }

    /// The argv sent to the pod: with stdin, `/bin/sh -c "head -c <bytes> | { <quoted argv>; … }"`
    /// ([`command_argv`](Self::command_argv));
    /// with a [`pid_file`](Self::pid_file), that argv after [`group::group_argv`]'s wrapper.
    pub fn effective_argv(&self) -> Vec<String> {
        let argv = self.command_argv();
        match &self.pid_file {
            Some(file) => group::group_argv(file, &argv),
            None => argv,
        }
    }

    /// The argv of the command itself (the original's whole argv): with stdin,
    /// `/bin/sh -c "head -c <bytes> | { <quoted argv>; s=$?; cat >/dev/null; exit $s; }"`.
    ///
    /// The original's is `head -c <bytes> | <quoted argv>`. The `cat` after the command reads
    /// whatever of the `<bytes>` it left (bounded: `head -c` ends the pipe after them), and the
    /// exit status is the command's. Without it, a command that exits before reading all of its
    /// stdin makes `head -c` die of `SIGPIPE`, nothing reads the rest, and on a real node
    /// (containerd) the exec's stdin copy blocks and the status frame never comes: the execute
    /// hangs until its timeout (docs/wire-parity.md).
    fn command_argv(&self) -> Vec<String> {
        if self.stdin.is_empty() {
            return self.argv.clone();
        }
        let quoted: Vec<String> = self.argv.iter().map(|a| sh_quote(a)).collect();
        vec![
            "/bin/sh".into(),
            "-c".into(),
            format!(
                "head -c {} | {{ {}; s=$?; cat >/dev/null; exit $s; }}",
                self.stdin.len(),
                quoted.join(" ")
            ),
        ]
    }
}

/// `{exitCode, stdout, stderr}`.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecOutput {
    pub exit_code: i64,
    pub stdout: String,
    pub stderr: String,
    /// Whether [`ExecRequest::keep_tail_bytes`] cut the head off either stream.
    pub truncated: bool,
}

/// Where live output goes: each decoded chunk, in order. The concatenation of the chunks of a
/// stream is exactly the returned text of that stream.
///
/// The channel is bounded ([`OUTPUT_TAP_CAPACITY`]): when its receiver falls behind, the reader
/// waits for room before it reads more, so a slow host slows the exec's stream (kube-rs's
/// 64 KiB pipe fills, the websocket stops being read, TCP pushes back on the pod) instead of
/// output piling up in memory. A dropped receiver only stops the tap.
pub type OutputTap = mpsc::Sender<(OutputStream, String)>;

/// The receiving end of an [`OutputTap`].
pub type OutputTapReceiver = mpsc::Receiver<(OutputStream, String)>;

/// How many chunks (each at most [`READ_CHUNK_BYTES`]) an [`OutputTap`] holds.
pub const OUTPUT_TAP_CAPACITY: usize = 8;

/// The most bytes of each output stream an execute result keeps: the tail, as CreateOS keeps
/// it. The host drops a reply line over 128 Mi characters (its JSON-RPC line limit), and JSON can
/// write one byte of output as six characters (`\u0001`), so two streams of 8 MiB stay under
/// it whatever they hold. The live output still carries every byte; a cut result says
/// `metadata.outputTruncated: true`.
pub const RESULT_TAIL_BYTES: usize = 8 * 1024 * 1024;

/// The most bytes one read of an output stream takes (kube-rs's pipe holds no more either).
pub const READ_CHUNK_BYTES: usize = 64 * 1024;

/// A bounded tap and its receiver.
pub fn output_tap() -> (OutputTap, OutputTapReceiver) {
    mpsc::channel(OUTPUT_TAP_CAPACITY)
}

/// Test-visible progress of the output readers (feature `testing`): the bytes they have taken
/// from exec streams, and how often a full tap made one wait. Process-wide counters.
#[cfg(feature = "testing")]
pub mod probe {
    use std::sync::atomic::{AtomicU64, Ordering};

    use tokio::sync::Notify;

    static BYTES_TAKEN: AtomicU64 = AtomicU64::new(0);
    static TAP_WAITS: AtomicU64 = AtomicU64::new(0);
    static CHANGED: Notify = Notify::const_new();

    /// Bytes read from the stdout/stderr of buffered execs so far.
    pub fn bytes_taken() -> u64 {
        BYTES_TAKEN.load(Ordering::SeqCst)
    }

    /// How many times a reader found its tap full and waited for the receiver.
    pub fn tap_waits() -> u64 {
        TAP_WAITS.load(Ordering::SeqCst)
    }

    /// Resolves after the next change of either counter (enable it before checking them).
    pub fn changed() -> tokio::sync::futures::Notified<'static> {
        CHANGED.notified()
    }

    pub(super) fn took(n: usize) {
        BYTES_TAKEN.fetch_add(n as u64, Ordering::SeqCst);
        CHANGED.notify_waiters();
    }

    pub(super) fn waited() {
        TAP_WAITS.fetch_add(1, Ordering::SeqCst);
        CHANGED.notify_waiters();
    }
}

/// The message of an `execInPod` whose watchdog fired before the status frame came (A32 in the
/// error reference).
pub fn exec_timeout_message(timeout_ms: u64, pod: &str, container: &str, cmd0: &str) -> String {
    format!(
        "execInPod timed out after {timeout_ms}ms (pod={pod}, container={container}, cmd0={cmd0}). The WebSocket likely dropped before the command produced a status frame."
    )
}

/// The message of an `execInPodStreaming` whose watchdog fired before the status frame came (A35 in
/// the error reference).
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

/// The message of an `execInPod` whose stdout or stderr outgrew its buffer cap (A33 / A34 in the
/// error reference).
pub fn exec_cap_message(stream: OutputStream, cap: u64, pod: &str, container: &str) -> String {
    format!(
        "execInPod {} exceeded the {cap}-byte cap (pod={pod}, container={container}); the sandbox produced more output than the buffer allows.",
        stream.as_str()
    )
}

/// The message of an `execInPodStreaming` whose stderr outgrew its buffer cap (A36 in the error
/// reference).
pub fn streaming_stderr_cap_message(cap: u64, pod: &str, container: &str) -> String {
    format!(
        "execInPodStreaming stderr exceeded the {cap}-byte cap (pod={pod}, container={container}); the sandbox produced more diagnostics than the buffer allows."
    )
}

/// What an exec whose connection ended without a status frame fails with. The original attaches
/// no close listener, so it notices a dropped socket only when its watchdog fires, and reports
/// the watchdog's message (A32/A35): this waits for the watchdog too (kube-rs would tell at once),
/// so the host sees the same message at the same time. Without a watchdog (`timeout_ms` 0) there
/// is nothing to wait for: the timeout message comes at once.
async fn until_watchdog(timeout_ms: u64, timed_out: impl FnOnce() -> Error) -> Error {
    if timeout_ms > 0 {
        // `with_watchdog` around the exec ends this wait with its own error.
        std::future::pending::<()>().await;
    }
    timed_out()
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

/// Sends one chunk to the tap, waiting while it is full (backpressure).
async fn tap_send(tap: &OutputTap, item: (OutputStream, String)) {
    #[cfg(feature = "testing")]
    let item = match tap.try_send(item) {
        Ok(()) | Err(mpsc::error::TrySendError::Closed(_)) => return,
        Err(mpsc::error::TrySendError::Full(item)) => {
            probe::waited();
            item
        }
    };
    // A closed tap (the receiver is gone) only stops the live output.
    let _ = tap.send(item).await;
}

/// Reads one output stream to its end: counts bytes against `cap` and accumulates them; with
/// a tap, each read is also decoded (keeping split characters whole) and sent, before the next
/// read. The bytes are kept once; [`decode_output`] turns them into the returned text.
async fn collect_stream<R: AsyncRead + Unpin>(
    reader: Option<R>,
    stream: OutputStream,
    cap: Option<u64>,
    cap_error: impl Fn(u64) -> Error,
    tap: Option<&OutputTap>,
) -> Result<Vec<u8>, Error> {
    collect_tail(reader, stream, cap, cap_error, tap, None)
        .await
        .map(|(bytes, _)| bytes)
}

/// [`collect_stream`], keeping only the last `keep_tail` bytes (if given) in memory, in one
/// [`OutputTail`]: the head is dropped as reading goes (the tap has already had it), so a 1 GiB
/// output costs the tail and one read chunk. Returns the bytes and whether a head was dropped; a
/// kept tail starts at a character boundary.
async fn collect_tail<R: AsyncRead + Unpin>(
    reader: Option<R>,
    stream: OutputStream,
    cap: Option<u64>,
    cap_error: impl Fn(u64) -> Error,
    tap: Option<&OutputTap>,
    keep_tail: Option<usize>,
) -> Result<(Vec<u8>, bool), Error> {
    let Some(mut reader) = reader else {
        return Ok((Vec::new(), false));
    };
    let mut taken: u64 = 0;
    // The whole stream without a tail; with one, each read, before it goes into the tail.
    let mut bytes: Vec<u8> = Vec::new();
    let mut tail = keep_tail.map(OutputTail::new);
    let mut chunker = tap.map(|_| Utf8Decoder::keeping_bom());
    loop {
        if tail.is_some() {
            bytes.clear();
        }
        let start = bytes.len();
        if bytes.capacity() - start < READ_CHUNK_BYTES {
            bytes.reserve(READ_CHUNK_BYTES);
        }
        // At most one chunk per read, straight into the buffer.
        let n = (&mut reader)
            .take(READ_CHUNK_BYTES as u64)
            .read_buf(&mut bytes)
            .await
            .map_err(|e| Error::Transport(e.to_string()))?;
        #[cfg(feature = "testing")]
        probe::took(n);
        taken += n as u64;
        if let Some(cap) = cap
            && taken > cap
        {
            return Err(cap_error(cap));
        }
        if let (Some(tap), Some(chunker)) = (tap, chunker.as_mut()) {
            let chunk = if n == 0 {
                chunker.finish()
            } else {
                chunker.decode(&bytes[start..])
            };
            if !chunk.is_empty() {
                tap_send(tap, (stream, chunk)).await;
            }
        }
        if let Some(tail) = tail.as_mut() {
            tail.push(&bytes[start..]);
        }
        if n == 0 {
            return Ok(match tail {
                Some(tail) => tail.finish(),
                None => {
                    bytes.shrink_to_fit();
                    (bytes, false)
                }
            });
        }
    }
}

/// The text of a whole output stream: its bytes decoded once, as [`Utf8Decoder::keeping_bom`]
/// decodes them (so it is exactly the concatenation of the tapped chunks). Valid UTF-8, the
/// usual case, becomes the string without a copy.
pub fn decode_output(bytes: Vec<u8>) -> String {
    match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(err) => {
            let bytes = err.into_bytes();
            let mut decoder = Utf8Decoder::keeping_bom();
            let mut text = String::with_capacity(bytes.len() + 16);
            for piece in bytes.chunks(READ_CHUNK_BYTES) {
                text.push_str(&decoder.decode(piece));
            }
            text.push_str(&decoder.finish());
            text
        }
    }
}

/// Runs `fut` under the watchdog (`0` = none).
async fn with_watchdog<T>(
    timeout_ms: u64,
    on_timeout: impl FnOnce() -> Error,
    fut: impl Future<Output = Result<T, Error>>,
) -> Result<T, Error> {
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
        .max_stdout_buf_size(READ_CHUNK_BYTES)
        .max_stderr_buf_size(READ_CHUNK_BYTES)
}

async fn connect(
    client: &kube::Client,
    redactor: &Redactor,
    namespace: &str,
    pod: &str,
    argv: &[String],
    params: &AttachParams,
) -> Result<AttachedProcess, Error> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    pods.exec(pod, argv.to_vec(), params)
        .await
        .map_err(|err| api_error_from_kube(err, redactor))
}

/// The status frame, or the connection-closed error.
/// Waits for the I/O to finish and the status frame. The status channel also tells when the
/// connection ended without a status (kube-rs then drops its sender): that fails at once, as the
/// output streams may never see their end in that case.
async fn complete<T, Closed: Future<Output = Error>>(
    status: Option<impl Future<Output = Option<Status>>>,
    io: impl Future<Output = Result<T, Error>>,
    closed: impl FnOnce() -> Closed,
) -> Result<(T, Status), Error> {
    let Some(status) = status else {
        return Err(closed().await);
    };
    tokio::pin!(status);
    tokio::pin!(io);
    tokio::select! {
        biased;
        result = &mut io => {
            let value = result?;
            match status.await {
                Some(status) => Ok((value, status)),
                None => Err(closed().await),
            }
        }
        status = &mut status => {
            match status {
                Some(status) => Ok((io.await?, status)),
                None => Err(closed().await),
            }
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
) -> Result<ExecOutput, Error> {
    let argv = request.effective_argv();
    // The command's own first word (the group wrapper's is always `/bin/sh`).
    let cmd0 = request.command_argv().first().cloned().unwrap_or_default();
    let (pod, container) = (request.pod.as_str(), request.container.as_str());
    let on_timeout = || {
        Error::Timeout(exec_timeout_message(
            request.timeout_ms,
            pod,
            container,
            &cmd0,
        ))
    };
    let outcome = with_watchdog(request.timeout_ms, on_timeout, async {
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
                    .map_err(|e| Error::Transport(e.to_string()))?;
                writer
                    .flush()
                    .await
                    .map_err(|e| Error::Transport(e.to_string()))?;
            }
            Ok::<_, Error>(())
        };
        let keep = request.keep_tail_bytes;
        let stdout = collect_tail(
            process.stdout(),
            OutputStream::Stdout,
            request.max_stdout_bytes,
            |cap| Error::Cap(exec_cap_message(OutputStream::Stdout, cap, pod, container)),
            tap,
            keep,
        );
        let stderr = collect_tail(
            process.stderr(),
            OutputStream::Stderr,
            request.max_stderr_bytes,
            |cap| Error::Cap(exec_cap_message(OutputStream::Stderr, cap, pod, container)),
            tap,
            keep,
        );
        let closed = || until_watchdog(request.timeout_ms, on_timeout);
        let status = process.take_status();
        // The exit status counts as soon as it arrives, whether or not the command read all of
        // its stdin (one that exits early never will): the write is not awaited after it.
        let ((stdout, stderr), status) =
            complete(status, with_input(write, try_join(stdout, stderr)), closed).await?;
        drop(stdin);
        Ok(ExecOutput {
            exit_code: exit_code_from_status(&status),
            stdout: decode_output(stdout.0),
            stderr: decode_output(stderr.0),
            truncated: stdout.1 || stderr.1,
        })
    })
    .await;
    match (outcome, request.pid_file.as_deref()) {
        // The command may have started (the handshake was accepted) and may run on.
        (Err(err), Some(file)) if !matches!(err, Error::Api { .. }) => {
            end_group(client, redactor, request, file).await;
            Err(err)
        }
        (outcome, _) => outcome,
    }
}

/// The kill exec: signals the group recorded in `pid_file` ([`group::kill_argv`]), bounded
/// by [`group::KILL_EXEC_TIMEOUT_MS`]. Its own outcome changes nothing: the exec it cleans up
/// after has already failed, and it has no message of its own to log, so a failed kill exec is
/// ignored (docs/limits.md).
async fn end_group(client: &kube::Client, redactor: &Redactor, failed: &ExecRequest, file: &str) {
    let mut kill = ExecRequest::new(&failed.namespace, &failed.pod, group::kill_argv(file));
    kill.container = failed.container.clone();
    kill.timeout_ms = group::KILL_EXEC_TIMEOUT_MS;
    let _ = Box::pin(exec_in_pod(client, redactor, &kill, None)).await;
}

/// Runs the output readers while the stdin `write` goes on beside them: the output decides when
/// this is done. A stdin write that fails while the output still flows ends nothing either (the
/// command may well have stopped reading); a connection that closed shows in the status.
async fn with_input<T>(
    write: impl Future<Output = Result<(), Error>>,
    output: impl Future<Output = Result<T, Error>>,
) -> Result<T, Error> {
    tokio::pin!(write);
    tokio::pin!(output);
    let mut writing = true;
    loop {
        tokio::select! {
            result = &mut output => return result,
            _ = &mut write, if writing => writing = false,
        }
    }
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
) -> Result<StreamingOutput, Error> {
    let cmd0 = argv.first().cloned().unwrap_or_default();
    let timeout_ms = io.timeout_ms;
    let timeout_message = streaming_timeout_message(timeout_ms, pod, container, &cmd0);
    let on_timeout = {
        let message = timeout_message.clone();
        move || Error::Timeout(message)
    };
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
        let pump_in: BoxFuture<'_, Result<(), Error>> = match (source, stdin.as_mut()) {
            (Some(mut source), Some(writer)) => Box::pin(async move {
                tokio::io::copy(&mut source, writer)
                    .await
                    .map_err(|e| Error::Transport(e.to_string()))?;
                writer
                    .flush()
                    .await
                    .map_err(|e| Error::Transport(e.to_string()))
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
                        .map_err(|e| Error::Transport(e.to_string()))?;
                    sink.flush()
                        .await
                        .map_err(|e| Error::Transport(e.to_string()))?;
                    sink.shutdown()
                        .await
                        .map_err(|e| Error::Transport(e.to_string()))
                }
                None => tokio::io::copy(&mut reader, &mut tokio::io::sink())
                    .await
                    .map(drop)
                    .map_err(|e| Error::Transport(e.to_string())),
            }
        };
        let stderr = collect_stream(
            process.stderr(),
            OutputStream::Stderr,
            max_stderr_bytes,
            |cap| Error::Cap(streaming_stderr_cap_message(cap, pod, container)),
            None,
        );
        let closed = || until_watchdog(timeout_ms, || Error::Timeout(timeout_message));
        let status = process.take_status();
        let (((), (), stderr), status) =
            complete(status, try_join3(pump_in, pump_out, stderr), closed).await?;
        drop(stdin);
        Ok(StreamingOutput {
            exit_code: exit_code_from_status(&status),
            stderr: decode_output(stderr),
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
            vec![
                "/bin/sh",
                "-c",
                "head -c 6 | { 'cat' 'it'\\''s'; s=$?; cat >/dev/null; exit $s; }"
            ]
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
        let (tx, mut rx) = output_tap();
        let data: &[u8] = "line one\nzwei — drei\n".as_bytes();
        let bytes = collect_stream(
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
        let text = decode_output(bytes);
        assert_eq!(streamed, text);
        assert_eq!(text, "line one\nzwei — drei\n");
        let err = collect_stream(
            Some(data),
            OutputStream::Stderr,
            Some(4),
            |cap| Error::Cap(exec_cap_message(OutputStream::Stderr, cap, "p", "agent")),
            None,
        )
        .await
        .unwrap_err();
        assert!(
            matches!(err, Error::Cap(m) if m.starts_with("execInPod stderr exceeded the 4-byte cap"))
        );
        // Exactly at the cap is fine.
        let at_cap = collect_stream(
            Some(data),
            OutputStream::Stdout,
            Some(data.len() as u64),
            |_| unreachable!(),
            None,
        )
        .await
        .unwrap();
        assert_eq!(at_cap, data);
    }

    #[tokio::test]
    async fn a_tail_keeps_the_last_bytes_from_a_character_and_taps_everything() {
        // 300 KiB of `é` (2 bytes each) then `!`: more than a read chunk, cut to a 1000-byte
        // tail, whose first byte would be inside an `é`: it starts at the next character.
        let mut data = "é".repeat(150 * 1024).into_bytes();
        data.push(b'!');
        let (tx, mut rx) = output_tap();
        let collect = collect_tail(
            Some(&data[..]),
            OutputStream::Stdout,
            None,
            |_| unreachable!(),
            Some(&tx),
            Some(1000),
        );
        let (collected, streamed) = tokio::join!(collect, async {
            let mut streamed = String::new();
            while streamed.len() < data.len() {
                streamed.push_str(&rx.recv().await.unwrap().1);
            }
            streamed
        });
        let (tail, truncated) = collected.unwrap();
        assert!(truncated);
        assert_eq!(streamed.as_bytes(), &data[..], "the tap has every byte");
        let text = decode_output(tail);
        assert_eq!(text.len(), 999);
        assert!(text.ends_with("éé!"));
        assert!(text.chars().all(|c| c == 'é' || c == '!'));
        // Within the tail: whole, not flagged; caps still count every byte.
        let (all, truncated) = collect_tail(
            Some(&b"short"[..]),
            OutputStream::Stdout,
            None,
            |_| unreachable!(),
            None,
            Some(1001),
        )
        .await
        .unwrap();
        assert_eq!((all.as_slice(), truncated), (&b"short"[..], false));
        let capped = collect_tail(
            Some(&data[..]),
            OutputStream::Stdout,
            Some(200_000),
            |cap| Error::Cap(exec_cap_message(OutputStream::Stdout, cap, "p", "agent")),
            None,
            Some(1001),
        )
        .await;
        assert!(matches!(capped, Err(Error::Cap(_))));
    }

    /// An in-memory reader that counts what was taken from it.
    struct Counting<'a> {
        data: &'a [u8],
        taken: &'a std::sync::atomic::AtomicUsize,
    }

    impl AsyncRead for Counting<'_> {
        fn poll_read(
            mut self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
            buf: &mut tokio::io::ReadBuf<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            let before = buf.filled().len();
            let poll = std::pin::Pin::new(&mut self.data).poll_read(cx, buf);
            let n = buf.filled().len() - before;
            self.taken.fetch_add(n, std::sync::atomic::Ordering::SeqCst);
            poll
        }
    }

    #[tokio::test]
    async fn a_full_tap_stops_the_reader_until_the_receiver_takes_chunks() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        // Output that is always ready: only the tap can hold the reader back.
        let data: Vec<u8> = (0..4 * 1024 * 1024)
            .map(|i| b'a' + (i % 26) as u8)
            .collect();
        let taken = AtomicUsize::new(0);
        let reader = Counting {
            data: &data,
            taken: &taken,
        };
        let (tx, mut rx) = output_tap();
        let collect = collect_stream(
            Some(reader),
            OutputStream::Stdout,
            None,
            |_| unreachable!(),
            Some(&tx),
        );
        tokio::pin!(collect);
        // Nobody receives: the reader fills the tap, reads one more chunk and waits.
        assert!(futures::poll!(collect.as_mut()).is_pending());
        let bound = (OUTPUT_TAP_CAPACITY + 1) * READ_CHUNK_BYTES;
        assert_eq!(taken.load(Ordering::SeqCst), bound);
        assert!(futures::poll!(collect.as_mut()).is_pending());
        assert_eq!(taken.load(Ordering::SeqCst), bound);
        // One chunk taken makes room for exactly one more read.
        let (_, first) = rx.recv().await.unwrap();
        assert_eq!(first.len(), READ_CHUNK_BYTES);
        assert!(futures::poll!(collect.as_mut()).is_pending());
        assert_eq!(taken.load(Ordering::SeqCst), bound + READ_CHUNK_BYTES);
        // Draining lets it finish; the chunks are the output, in order.
        let mut streamed = first;
        let (bytes, ()) = tokio::join!(collect, async {
            while streamed.len() < data.len() {
                let (_, chunk) = rx.recv().await.unwrap();
                assert!(chunk.len() <= READ_CHUNK_BYTES);
                streamed.push_str(&chunk);
            }
        });
        let bytes = bytes.unwrap();
        assert_eq!(bytes, data);
        assert_eq!(streamed.as_bytes(), &data[..]);
        assert_eq!(decode_output(bytes), streamed);
    }

    #[test]
    fn decoding_once_equals_the_concatenated_chunks() {
        // Split characters, invalid bytes, truncated sequences and a BOM, cut at every point
        // into two and three pieces.
        let mut input: Vec<u8> = "\u{feff}aé€😀".as_bytes().to_vec();
        input.extend_from_slice(&[0xff, b'b', 0xe2, 0x82, b'c', 0xed, 0xa0, 0x80, 0xf0, 0x9f]);
        input.extend_from_slice("😀z".as_bytes());
        input.extend_from_slice(&[0xf0, 0x9f, 0x98]);
        let once = decode_output(input.clone());
        assert_eq!(once, String::from_utf8_lossy(&input));
        assert!(once.starts_with('\u{feff}'));
        for i in 0..=input.len() {
            for j in i..=input.len() {
                let mut d = Utf8Decoder::keeping_bom();
                let mut streamed = d.decode(&input[..i]);
                streamed.push_str(&d.decode(&input[i..j]));
                streamed.push_str(&d.decode(&input[j..]));
                streamed.push_str(&d.finish());
                assert_eq!(streamed, once, "cut at {i} and {j}");
            }
        }
        let valid = "ünïcode".repeat(40_000).into_bytes();
        assert_eq!(decode_output(valid.clone()).as_bytes(), &valid[..]);
        let mut long_invalid = valid.clone();
        long_invalid.insert(READ_CHUNK_BYTES - 1, 0xc3);
        assert_eq!(
            decode_output(long_invalid.clone()),
            String::from_utf8_lossy(&long_invalid)
        );
    }
}
