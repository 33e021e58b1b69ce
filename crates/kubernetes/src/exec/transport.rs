//! `execInPod` and `execInPodStreaming` (the original's `pod-exec.ts`) over kube-rs's websocket exec.
//!
//! stdin is never closed: every command that reads stdin is wrapped in `head -c <bytes>`, so it
//! ends on its own, and the stdin writer is kept open until the command's status frame arrives
//! (closing it would close the whole socket on the v4 protocol and lose the tail of the output).
//! All `<bytes>` are read in the pod even when the command exits first (see
//! [`ExecRequest::command_argv`]): a real node answers no status while its stdin copy is stuck.

use futures::future::{BoxFuture, try_join, try_join3};
use sandbox_core::OutputStream;
use tokio::io::AsyncWriteExt;

use super::group;
pub use super::wire::exit_code_from_status;
use super::wire::{
    attach_params, collect_stream, collect_tail, complete, connect, copy_into_stdin,
    exec_refused_by_status, with_input, with_watchdog,
};
use crate::cluster::Redactor;
use crate::error::Error;

// The types and texts of an exec, where its callers have always found them.
pub use super::request::{
    AGENT_CONTAINER, ExecOutput, ExecRequest, OUTPUT_TAP_CAPACITY, OutputTap, OutputTapReceiver,
    READ_CHUNK_BYTES, RESULT_TAIL_BYTES, StreamingIo, StreamingOutput, decode_output,
    exec_cap_message, exec_closed_message, exec_refused_message, exec_timeout_message,
    exec_unreachable_message, output_tap, streaming_closed_message, streaming_stderr_cap_message,
    streaming_timeout_message,
};
#[cfg(feature = "testing")]
pub use super::wire::probe;

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
        // A connection that ends (or fails) before the status frame answers at once, naming
        // it (issue #38: the original waits for its watchdog and reports a timeout).
        let closed_message = exec_closed_message(pod, container, &cmd0);
        let closed = || std::future::ready(Error::Transport(closed_message.clone()));
        let status = process.take_status();
        // The exit status counts as soon as it arrives, whether or not the command read all of
        // its stdin (one that exits early never will): the write is not awaited after it.
        let ((stdout, stderr), status) =
            complete(status, with_input(write, try_join(stdout, stderr)), closed)
                .await
                .map_err(|err| match err {
                    Error::Transport(_) => Error::Transport(closed_message.clone()),
                    other => other,
                })?;
        drop(stdin);
        let produced = !stdout.0.is_empty() || !stderr.0.is_empty() || stdout.1 || stderr.1;
        if let Some(refused) = exec_refused_by_status(&status, produced) {
            return Err(refused);
        }
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

/// `execInPodStreaming`: the argv is sent as it is (the callers' scripts carry their own
/// `head -c`). A stdin source error or a stdout sink error fails the exec closed. A connection
/// that ends before the status frame fails it at once with [`streaming_closed_message`]: the
/// original waits for its watchdog, which for a sync is the pod's whole activity deadline
/// (docs/wire-parity.md). A stdin write that fails (the connection went away, or the command
/// stopped reading) fails nothing by itself: the status, or its absence, says which.
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
    let on_timeout = move || Error::Timeout(timeout_message);
    let closed_message = streaming_closed_message(pod, container, &cmd0);
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
            (Some(source), Some(writer)) => Box::pin(copy_into_stdin(source, writer)),
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
        let closed = || std::future::ready(Error::Transport(closed_message));
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

#[cfg(test)]
mod tests {
    use js_compat::utf8::Utf8Decoder;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
    use tokio::io::AsyncRead;

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
    fn a_failure_status_without_an_exit_code_is_a_refusal_when_nothing_was_said() {
        let status = |v: serde_json::Value| serde_json::from_value::<Status>(v).unwrap();
        let gone = status(
            json!({"status": "Failure", "reason": "InternalError", "code": 500,
            "message": "Internal error occurred: error executing command in container: container not found"}),
        );
        let err = exec_refused_by_status(&gone, false).unwrap();
        assert_eq!(err.http_status(), Some(500));
        assert_eq!(
            err.to_string(),
            "HTTP-Code: 500\nMessage: Internal error occurred: error executing command in container: container not found"
        );
        assert_eq!(err.status_body().unwrap()["reason"], "InternalError");
        // A command that said something had started: its exit, as before.
        assert!(exec_refused_by_status(&gone, true).is_none());
        for exit in [
            json!({"status": "Success"}),
            json!({"status": "Failure", "reason": "NonZeroExitCode"}),
            json!({"status": "Failure", "details": {"causes": [{"reason": "ExitCode", "message": "3"}]}}),
        ] {
            assert!(exec_refused_by_status(&status(exit), false).is_none());
        }
        let bare = exec_refused_by_status(&status(json!({"status": "Failure"})), false).unwrap();
        assert_eq!(bare.http_status(), Some(500));
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
            streaming_closed_message("p", "agent", "/bin/sh"),
            "execInPodStreaming connection closed before the command's exit status (pod=p, container=agent, cmd0=/bin/sh): the API server or the connection to it went away in the middle of the transfer, which did not finish; retry the sync once the cluster answers."
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
