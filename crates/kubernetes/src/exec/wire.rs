//! The websocket mechanics both exec variants share: attaching to the pod, reading output in
//! chunks under caps and into the tap, writing stdin, the watchdog, the status frame's exit
//! code, and ending a failed exec's process group.

use std::time::Duration;

use js_compat::utf8::Utf8Decoder;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
use kube::api::{Api, AttachParams, AttachedProcess};
use sandbox_core::OutputStream;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
#[cfg(feature = "testing")]
use tokio::sync::mpsc;

use super::request::{OutputTap, READ_CHUNK_BYTES};
use super::tail::OutputTail;
use crate::cluster::{Redactor, api_error_from_kube};
use crate::error::Error;

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

/// A status frame that fails the exec itself rather than reporting the command's exit: a
/// `Failure` that is not `NonZeroExitCode` and carries no `ExitCode` cause (on a real node,
/// `container not found` or a container that has stopped, in a pod being deleted or replaced;
/// or an image without `/bin/sh`). It is the API error it carries, as if the upgrade had been
/// refused (issue #38: the original reports it as exit 1 with empty output). Only for an exec
/// that produced no output: a command that said something had started.
pub(super) fn exec_refused_by_status(status: &Status, produced_output: bool) -> Option<Error> {
    let is_exit = status.status.as_deref() == Some("Success")
        || status.reason.as_deref() == Some("NonZeroExitCode")
        || status
            .details
            .as_ref()
            .and_then(|d| d.causes.as_ref())
            .is_some_and(|c| c.iter().any(|c| c.reason.as_deref() == Some("ExitCode")));
    if is_exit || produced_output {
        return None;
    }
    let code = status
        .code
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| *c >= 400)
        .unwrap_or(500);
    let said = status.message.clone().unwrap_or_default();
    let body = serde_json::to_value(status).unwrap_or_default();
    Some(Error::new(code, format!("HTTP-Code: {code}\nMessage: {said}")).with_status(body))
}

/// Sends one chunk to the tap, waiting while it is full (backpressure).
pub(super) async fn tap_send(tap: &OutputTap, item: (OutputStream, String)) {
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
pub(super) async fn collect_stream<R: AsyncRead + Unpin>(
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
pub(super) async fn collect_tail<R: AsyncRead + Unpin>(
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

/// Runs `fut` under the watchdog (`0` = none).
pub(super) async fn with_watchdog<T>(
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

pub(super) fn attach_params(container: &str, stdin: bool) -> AttachParams {
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

pub(super) async fn connect(
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
pub(super) async fn complete<T, Closed: Future<Output = Error>>(
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

/// Copies `source` into a streaming exec's stdin. A source that fails to read fails the exec
/// (its error, as the original's pipe reports it); a write that fails does not: the connection
/// went away, or the command stopped reading, and the status frame (or its absence) tells
/// which, so the copy just stops.
pub(super) async fn copy_into_stdin<R, W>(mut source: R, writer: &mut W) -> Result<(), Error>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + ?Sized,
{
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let n = source
            .read(&mut buffer)
            .await
            .map_err(|e| Error::Transport(e.to_string()))?;
        if n == 0 {
            let _ = writer.flush().await;
            return Ok(());
        }
        if writer.write_all(&buffer[..n]).await.is_err() {
            return Ok(());
        }
    }
}

/// Runs the output readers while the stdin `write` goes on beside them: the output decides when
/// this is done. A stdin write that fails while the output still flows ends nothing either (the
/// command may well have stopped reading); a connection that closed shows in the status.
pub(super) async fn with_input<T>(
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
