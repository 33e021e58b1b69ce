//! What an exec is asked and answers: [`ExecRequest`], [`ExecOutput`], the streaming
//! variant's [`StreamingIo`] and [`StreamingOutput`], the live output tap, the output limits,
//! and the exec's timeout and cap messages.

use js_compat::utf8::Utf8Decoder;
use sandbox_core::OutputStream;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;

use super::command::sh_quote;
use super::group;

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
    pub(super) fn command_argv(&self) -> Vec<String> {
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

/// The message of an `execInPodStreaming` whose connection ended before the status frame (the
/// API server, the node or the network went away mid-stream): it answers at once, instead of
/// at the watchdog, which for a sync is the pod's whole activity deadline (issue #38).
pub fn streaming_closed_message(pod: &str, container: &str, cmd0: &str) -> String {
    format!(
        "execInPodStreaming connection closed before the command's exit status (pod={pod}, container={container}, cmd0={cmd0}): the API server or the connection to it went away in the middle of the transfer, which did not finish; retry the sync once the cluster answers."
    )
}

/// The message of an `execInPod` whose connection ended before the status frame while the
/// command ran (the API server, the node or the network went away): it answers at once, where
/// the original waits for its watchdog and reports a timeout (issue #38, docs/wire-parity.md).
pub fn exec_closed_message(pod: &str, container: &str, cmd0: &str) -> String {
    format!(
        "execInPod connection closed before the command's exit status (pod={pod}, container={container}, cmd0={cmd0}): the API server, the node or the connection to them went away while the command ran; it was not re-run, and it was ended if the pod could still be reached."
    )
}

/// The message of an `execInPod` whose websocket upgrade the API server answered with an HTTP
/// error status (`api_message` is the API server's own Status message): the command never
/// started (issue #38; the original reports it as a timed-out result).
pub fn exec_refused_message(code: u16, pod: &str, container: &str, api_message: &str) -> String {
    let detail = api_message.replace('\n', " ");
    format!(
        "execInPod was refused by the API server with HTTP {code} (pod={pod}, container={container}); the command did not start: {detail}"
    )
}

/// The message of an `execInPod` that got no HTTP answer to its websocket upgrade (connection
/// refused, reset, TLS): the command never started (issue #38).
pub fn exec_unreachable_message(pod: &str, container: &str, cause: &str) -> String {
    format!(
        "execInPod could not reach the API server (pod={pod}, container={container}); the command did not start: {cause}"
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
