//! The archive streams of native file sync, overlapped with the transfer.
//!
//! **Sync in.** The pod's script must name the archive's byte length up front (`head -c N`), so
//! the original packed the whole archive into a host file, then sent it. Here host `tar` sizes
//! the archive first without reading a file (GNU tar writing to `/dev/null` only stats the
//! members, and `--totals` reports the bytes it would have written), then packs it a second
//! time straight into the exec's stdin while the pod unpacks it: reading, packing, sending and
//! the pod's extraction all overlap, and no archive is written on the host. The pod receives
//! exactly N bytes whatever happens: a pack that ends early is padded with zero blocks (the end
//! of a tar archive). When the packed stream is not the sized archive (the tree changed between
//! the two passes), `tar` failed, or the sizing could not be read (not GNU tar), the caller
//! falls back to the original's way: a host archive file, then the transfer, with the
//! original's results and messages (a second exec only in that case; what the pod extracted of
//! the diverged stream is overwritten by it).
//!
//! **Sync out.** The received archive must be checked whole before anything is extracted (a
//! refusal leaves the destination as it was), so it still lands in a host file first; but the
//! member check now reads the bytes as they arrive, on a blocking thread that also writes them
//! to the file, instead of reading the finished file again. Its verdict is used only once the
//! exec has succeeded, in the original's order (exec errors and exit codes first). The disk
//! guard counts every byte before it is queued.

use std::future::Future;
use std::io::{self, Read, Write};
use std::pin::Pin;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::PollSender;

use super::tar_list::{assert_stream_confined, escaping_member_message};
use super::target::{SYNC_STDERR_CAP_BYTES, SyncTarget, disk_guard_message};
use crate::exec::{StreamingIo, StreamingOutput};
use sandbox_core::ProviderResult;

/// Bytes queued per chunk between the exec's stdout and the receiving thread.
const CHUNK_BYTES: usize = 256 * 1024;
/// Chunks in flight between the exec's stdout and the receiving thread (4 MiB).
const CHUNKS_IN_FLIGHT: usize = 16;

/// The archive size host `tar` reports for `args` (which write to `/dev/null` with
/// `--totals`), or `None` when it fails or says nothing readable.
pub(super) async fn sized_archive(args: &[String]) -> Option<u64> {
    let output = tokio::process::Command::new("tar")
        .args(args)
        .env("COPYFILE_DISABLE", "1")
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .output()
        .await
        .ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&output.stderr);
    text.lines()
        .find_map(|line| line.strip_prefix("Total bytes written: "))?
        .split(' ')
        .next()?
        .parse()
        .ok()
        .filter(|&n| n > 0)
}

/// How a streamed sync-in ended.
pub(super) enum Sent {
    /// The pod received the sized archive as `tar` packed it; the exec's outcome.
    Done(StreamingOutput),
    /// The pack was not the sized archive, or `tar` failed: send it again the original way.
    Diverged,
}

/// Packs with host `tar` (`args` write to stdout) straight into the exec of `script`, which
/// reads exactly `size` bytes.
pub(super) async fn send_packed(
    target: &SyncTarget,
    args: &[String],
    size: u64,
    script: String,
    timeout_ms: u64,
) -> ProviderResult<Sent> {
    let spawned = tokio::process::Command::new("tar")
        .args(args)
        .env("COPYFILE_DISABLE", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn();
    let Ok(mut child) = spawned else {
        return Ok(Sent::Diverged);
    };
    let Some(stdout) = child.stdout.take() else {
        return Ok(Sent::Diverged);
    };
    let mut exact = Exactly {
        inner: stdout,
        remaining: size,
        packed: 0,
        ended: false,
    };
    // An exec error ends here; `tar` is killed with `child`.
    let output = target
        .run(
            &sh_argv(script),
            StreamingIo {
                stdin: Some(Box::new(&mut exact)),
                stdout: None,
                timeout_ms,
                max_stderr_bytes: Some(SYNC_STDERR_CAP_BYTES),
            },
        )
        .await?;
    // What the pod did not take (it stopped reading, or the pack is longer than sized) is read
    // to the end, so that `tar` finishes and the pack's length is known.
    let mut packed = exact.packed;
    if !exact.ended {
        let mut rest = vec![0u8; 64 * 1024];
        loop {
            match exact.inner.read(&mut rest).await {
                Ok(0) => break,
                Ok(n) => packed += n as u64,
                Err(_) => return Ok(Sent::Diverged),
            }
        }
    }
    let status = child.wait().await;
    if packed != size || !status.is_ok_and(|s| s.success()) {
        return Ok(Sent::Diverged);
    }
    Ok(Sent::Done(output))
}

pub(super) fn sh_argv(script: String) -> Vec<String> {
    vec!["/bin/sh".into(), "-c".into(), script]
}

/// Exactly `remaining` bytes: the reader's, then zeros if it ends first.
struct Exactly<R> {
    inner: R,
    remaining: u64,
    /// Bytes taken from `inner`.
    packed: u64,
    /// `inner` has ended.
    ended: bool,
}

impl<R: AsyncRead + Unpin> AsyncRead for Exactly<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let max = (buf.remaining() as u64).min(this.remaining) as usize;
        if max == 0 {
            return Poll::Ready(Ok(()));
        }
        if !this.ended {
            let mut limited = ReadBuf::new(buf.initialize_unfilled_to(max));
            ready!(Pin::new(&mut this.inner).poll_read(cx, &mut limited))?;
            let n = limited.filled().len();
            if n > 0 {
                buf.advance(n);
                this.remaining -= n as u64;
                this.packed += n as u64;
                return Poll::Ready(Ok(()));
            }
            this.ended = true;
        }
        // The pack ended short: zero blocks, which end a tar archive, up to the sized length.
        buf.initialize_unfilled_to(max).fill(0);
        buf.advance(max);
        this.remaining -= max as u64;
        Poll::Ready(Ok(()))
    }
}

/// Runs the exec of `script` with its stdout written to the new file `file` (at most
/// `max_output_bytes`, else the disk guard's error) and checked as it arrives; the exec's
/// outcome and, for when it succeeded, the check's verdict on the archive.
pub(super) async fn receive_checked(
    target: &SyncTarget,
    script: String,
    file: std::fs::File,
    max_output_bytes: u64,
    timeout_ms: u64,
    label: &str,
) -> ProviderResult<(StreamingOutput, Result<(), String>)> {
    let (tx, rx) = mpsc::channel::<Vec<u8>>(CHUNKS_IN_FLIGHT);
    let (done_tx, done_rx) = oneshot::channel();
    let write_error = Arc::new(Mutex::new(None));
    let receiver = {
        let write_error = write_error.clone();
        tokio::task::spawn_blocking(move || {
            let mut tee = Tee {
                rx,
                file,
                chunk: Vec::new(),
                at: 0,
                write_error,
            };
            let verdict = assert_stream_confined(&mut tee);
            // The bytes past the archive's end (or past a refusal) still land in the file.
            while tee.next_chunk().is_ok_and(|more| more) {}
            let _ = done_tx.send(());
            verdict
        })
    };
    let sink = ChannelSink {
        tx: PollSender::new(tx),
        pending: Vec::with_capacity(CHUNK_BYTES),
        written: 0,
        max: max_output_bytes,
        label: label.to_string(),
        done: Some(done_rx),
        write_error: write_error.clone(),
    };
    let output = target
        .run(
            &sh_argv(script),
            StreamingIo {
                stdin: None,
                stdout: Some(Box::new(sink)),
                timeout_ms,
                max_stderr_bytes: Some(SYNC_STDERR_CAP_BYTES),
            },
        )
        .await;
    // The sink is gone with the exec: the receiver drains what is queued and ends.
    let verdict = receiver
        .await
        .unwrap_or_else(|_| Err(escaping_member_message("archive check did not finish")));
    Ok((output?, verdict))
}

/// The receiving thread's reader: each chunk is written to the file as the check takes it.
struct Tee {
    rx: mpsc::Receiver<Vec<u8>>,
    file: std::fs::File,
    chunk: Vec<u8>,
    at: usize,
    write_error: Arc<Mutex<Option<String>>>,
}

impl Tee {
    /// Takes the next chunk and writes it to the file; `false` at the end of the stream.
    fn next_chunk(&mut self) -> io::Result<bool> {
        let Some(chunk) = self.rx.blocking_recv() else {
            return Ok(false);
        };
        if let Err(error) = self.file.write_all(&chunk) {
            // The sink fails with this error; nothing more is taken.
            *self.write_error.lock().unwrap_or_else(|e| e.into_inner()) = Some(error.to_string());
            self.rx.close();
            return Err(error);
        }
        self.chunk = chunk;
        self.at = 0;
        Ok(true)
    }
}

impl Read for Tee {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.at == self.chunk.len() {
            if !self.next_chunk()? {
                return Ok(0);
            }
        }
        let n = out.len().min(self.chunk.len() - self.at);
        out[..n].copy_from_slice(&self.chunk[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// The exec's stdout sink: the disk guard, then chunks queued for the receiving thread; shut
/// down once every byte is in the file.
struct ChannelSink {
    tx: PollSender<Vec<u8>>,
    pending: Vec<u8>,
    written: u64,
    max: u64,
    label: String,
    done: Option<oneshot::Receiver<()>>,
    write_error: Arc<Mutex<Option<String>>>,
}

impl ChannelSink {
    fn stopped(&self) -> io::Error {
        let text = self
            .write_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        // Without a write error, the receiving thread died: the check did not finish.
        io::Error::other(
            text.unwrap_or_else(|| escaping_member_message("archive check did not finish")),
        )
    }

    fn poll_send_pending(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.pending.is_empty() {
            return Poll::Ready(Ok(()));
        }
        if ready!(self.tx.poll_reserve(cx)).is_err() {
            return Poll::Ready(Err(self.stopped()));
        }
        let chunk = std::mem::replace(&mut self.pending, Vec::with_capacity(CHUNK_BYTES));
        if self.tx.send_item(chunk).is_err() {
            return Poll::Ready(Err(self.stopped()));
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for ChannelSink {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        if this.written + buf.len() as u64 > this.max {
            return Poll::Ready(Err(io::Error::other(disk_guard_message(
                &this.label,
                this.max,
            ))));
        }
        if this.pending.len() >= CHUNK_BYTES {
            ready!(this.poll_send_pending(cx))?;
        }
        let n = buf.len().min(CHUNK_BYTES);
        this.pending.extend_from_slice(&buf[..n]);
        this.written += n as u64;
        Poll::Ready(Ok(n))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.poll_send_pending(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        ready!(this.poll_send_pending(cx))?;
        this.tx.close();
        if let Some(done) = this.done.as_mut() {
            let _ = ready!(Pin::new(done).poll(cx));
            this.done = None;
        }
        match this
            .write_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
        {
            Some(text) => Poll::Ready(Err(io::Error::other(text))),
            None => Poll::Ready(Ok(())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use crate::exec::PodExec;
    use crate::exec::{ExecOutput, ExecRequest, OutputTap};
    use sandbox_core::BoxFuture;
    use tokio::io::AsyncWriteExt;

    /// A pod exec that keeps the script and every stdin byte, and answers with `stdout`.
    #[derive(Default)]
    struct Recorder {
        stdout: Vec<u8>,
        script: Mutex<String>,
        stdin: Mutex<Vec<u8>>,
    }

    impl PodExec for Recorder {
        fn exec(
            &self,
            _: ExecRequest,
            _: Option<OutputTap>,
        ) -> BoxFuture<'_, Result<ExecOutput, Error>> {
            Box::pin(async { unreachable!() })
        }
        fn exec_streaming<'a>(
            &'a self,
            _: &'a str,
            _: &'a str,
            argv: &'a [String],
            io: StreamingIo<'a>,
        ) -> BoxFuture<'a, Result<StreamingOutput, Error>> {
            Box::pin(async move {
                *self.script.lock().unwrap() = argv[2].clone();
                if let Some(mut stdin) = io.stdin {
                    let mut all = Vec::new();
                    stdin.read_to_end(&mut all).await.unwrap();
                    *self.stdin.lock().unwrap() = all;
                }
                if let Some(mut out) = io.stdout {
                    // Written in pieces, as the exec's copy writes.
                    for piece in self.stdout.chunks(8 * 1024) {
                        out.write_all(piece)
                            .await
                            .map_err(|e| Error::Transport(e.to_string()))?;
                    }
                    out.flush()
                        .await
                        .map_err(|e| Error::Transport(e.to_string()))?;
                    out.shutdown()
                        .await
                        .map_err(|e| Error::Transport(e.to_string()))?;
                }
                Ok(StreamingOutput {
                    exit_code: 0,
                    stderr: String::new(),
                })
            })
        }
    }

    fn target(exec: Arc<Recorder>) -> SyncTarget {
        SyncTarget {
            exec,
            namespace: "ns".into(),
            pod: "pod".into(),
        }
    }

    /// Files (one past a ustar name), a hard link, a symbolic link, an empty directory.
    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("sub/empty")).unwrap();
        std::fs::write(root.join("a.txt"), vec![7u8; 70_000]).unwrap();
        std::fs::write(root.join(format!("sub/{}", "n".repeat(150))), b"long").unwrap();
        std::fs::hard_link(root.join("a.txt"), root.join("sub/hard")).unwrap();
        std::os::unix::fs::symlink("../a.txt", root.join("sub/link")).unwrap();
        dir
    }

    fn args(root: &Path, archive: &str, totals: bool) -> Vec<String> {
        let entries = vec!["a.txt".to_string(), "sub".to_string()];
        super::super::host::tarball_args(root, archive, &entries, &[], false, totals)
    }

    use std::path::Path;

    #[tokio::test]
    async fn the_sized_archive_is_the_packed_one_and_the_pod_gets_it_whole() {
        let tree = tree();
        let file = tree.path().join("..").join(format!(
            "{}.tar",
            tree.path().file_name().unwrap().to_string_lossy()
        ));
        let status = std::process::Command::new("tar")
            .args(args(tree.path(), &file.display().to_string(), false))
            .status()
            .unwrap();
        assert!(status.success());
        let archive = std::fs::read(&file).unwrap();
        std::fs::remove_file(&file).unwrap();
        let size = sized_archive(&args(tree.path(), "/dev/null", true))
            .await
            .expect("GNU tar reports the size");
        assert_eq!(size, archive.len() as u64);

        let exec = Arc::new(Recorder::default());
        let sent = send_packed(
            &target(exec.clone()),
            &args(tree.path(), "-", false),
            size,
            format!("head -c {size} | tar -xf -"),
            10_000,
        )
        .await
        .unwrap();
        assert!(matches!(sent, Sent::Done(ref o) if o.exit_code == 0));
        assert_eq!(*exec.stdin.lock().unwrap(), archive);
        assert_eq!(
            *exec.script.lock().unwrap(),
            format!("head -c {size} | tar -xf -")
        );
    }

    #[tokio::test]
    async fn a_pack_that_is_not_the_sized_archive_diverges_after_exactly_the_sized_bytes() {
        let tree = tree();
        let size = sized_archive(&args(tree.path(), "/dev/null", true))
            .await
            .unwrap();
        // Sized larger than the pack: the pod still gets every byte it waits for, zeros last.
        let exec = Arc::new(Recorder::default());
        let sent = send_packed(
            &target(exec.clone()),
            &args(tree.path(), "-", false),
            size + 4096,
            String::new(),
            10_000,
        )
        .await
        .unwrap();
        assert!(matches!(sent, Sent::Diverged));
        let got = exec.stdin.lock().unwrap().clone();
        assert_eq!(got.len() as u64, size + 4096);
        assert!(got[size as usize..].iter().all(|&b| b == 0));
        // Sized smaller: the pod gets no more than it asked for.
        let exec = Arc::new(Recorder::default());
        let sent = send_packed(
            &target(exec.clone()),
            &args(tree.path(), "-", false),
            size - 512,
            String::new(),
            10_000,
        )
        .await
        .unwrap();
        assert!(matches!(sent, Sent::Diverged));
        assert_eq!(exec.stdin.lock().unwrap().len() as u64, size - 512);
        // A failing `tar` diverges too (the caller's fallback reports the original's error).
        let exec = Arc::new(Recorder::default());
        let mut missing = args(tree.path(), "-", false);
        missing.push("no-such-entry".into());
        let sent = send_packed(&target(exec), &missing, size, String::new(), 10_000)
            .await
            .unwrap();
        assert!(matches!(sent, Sent::Diverged));
    }

    use crate::sync::tar_list::tests::file as member;

    #[tokio::test]
    async fn a_received_archive_lands_whole_and_is_checked_on_the_way() {
        let mut builder = tar::Builder::new(Vec::new());
        member(&mut builder, "big", &vec![1u8; 3 * CHUNK_BYTES + 5]);
        let mut link = tar::Header::new_gnu();
        link.set_entry_type(tar::EntryType::Symlink);
        link.set_size(0);
        link.set_mode(0o777);
        link.set_cksum();
        builder.append_link(&mut link, "l", "/etc/passwd").unwrap();
        let mut hostile = builder.into_inner().unwrap();
        // Bytes past the archive's end still land in the file, as they did.
        hostile.extend_from_slice(&[9u8; 700]);
        let exec = Arc::new(Recorder {
            stdout: hostile.clone(),
            ..Recorder::default()
        });
        let file = tempfile::NamedTempFile::new().unwrap();
        let (output, verdict) = receive_checked(
            &target(exec.clone()),
            String::new(),
            file.reopen().unwrap(),
            u64::MAX,
            10_000,
            "syncOut directory transfer",
        )
        .await
        .unwrap();
        assert_eq!(output.exit_code, 0);
        assert_eq!(std::fs::read(file.path()).unwrap(), hostile);
        let on_file = super::super::tar_list::assert_archive_confined(file.path());
        assert_eq!(verdict, on_file);
        assert_eq!(
            verdict.unwrap_err(),
            super::super::tar_list::escaping_link_message("l", "/etc/passwd")
        );
        // The disk guard stops the stream at its bound, with its message.
        let file = tempfile::NamedTempFile::new().unwrap();
        let err = receive_checked(
            &target(exec),
            String::new(),
            file.reopen().unwrap(),
            4096,
            10_000,
            "syncOut directory transfer",
        )
        .await
        .err()
        .unwrap();
        assert_eq!(
            err.message,
            disk_guard_message("syncOut directory transfer", 4096)
        );
    }
}
