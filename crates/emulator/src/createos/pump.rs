//! Drives a piped command to completion and turns it into an ordered event channel:
//! output chunks as they arrive, then exactly one exit event after all output.

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

use super::state::TreeGuard;
use crate::sandbox_runner::{ExitInfo, Launched, LaunchedIo};

#[derive(Debug)]
pub enum Event {
    Stdout(Bytes),
    Stderr(Bytes),
    Exit { info: ExitInfo },
}

/// What the end of the events' reader (the client gone) does to the command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnClose {
    /// Kill the tree: what the emulator does unless a fault says otherwise.
    Kill,
    /// Nothing: the command runs on to its exit, its output read and dropped
    /// (`FaultAction::KeepRunning`).
    RunOn,
}

/// Feeds `stdin` (then closes it), reads both output pipes in `chunk`-sized pieces, and, as
/// `on_close` says, kills the tree when the receiver is dropped (client gone). No deadline: the
/// API has none for exec, and file transfers end with their data.
pub fn run_piped(
    launched: Launched,
    guard: TreeGuard,
    stdin: Option<Bytes>,
    chunk: usize,
    on_close: OnClose,
) -> mpsc::Receiver<Event> {
    let (tx, rx) = mpsc::channel(32);
    let Launched {
        tree,
        io,
        mut child,
    } = launched;
    let LaunchedIo::Pipes {
        stdin: pipe,
        stdout,
        stderr,
    } = io
    else {
        unreachable!("run_piped needs pipes");
    };
    if let (Some(mut pipe), Some(data)) = (pipe, stdin) {
        // A command that exits without reading its input just breaks this pipe; ignore that.
        tokio::spawn(async move {
            let _ = pipe.write_all(&data).await;
        });
    }
    tokio::spawn(async move {
        let readers = async {
            tokio::join!(
                forward(stdout, chunk, tx.clone(), Event::Stdout),
                forward(stderr, chunk, tx.clone(), Event::Stderr)
            )
        };
        tokio::pin!(readers);
        let (mut readers_done, mut gone) = (false, false);
        let wait = tree.wait(&mut child);
        tokio::pin!(wait);
        let info = loop {
            tokio::select! {
                _ = &mut readers, if !readers_done => readers_done = true,
                status = &mut wait => break status,
                _ = tx.closed(), if !gone => {
                    gone = true;
                    if on_close == OnClose::Kill {
                        tree.kill();
                    }
                }
            }
        };
        // bwrap is gone, so the namespace is too: the pipes reach EOF promptly.
        if !readers_done {
            readers.await;
        }
        drop(guard);
        let _ = tx.send(Event::Exit { info }).await;
    });
    rx
}

/// Reads `pipe` to its end into `tx`. Once `tx` has no receiver the rest is read and dropped,
/// so that a command left running (`OnClose::RunOn`) never blocks on a full pipe or dies of a
/// broken one; a killed command's pipe ends at once.
async fn forward(
    mut pipe: impl AsyncRead + Unpin,
    chunk: usize,
    tx: mpsc::Sender<Event>,
    wrap: fn(Bytes) -> Event,
) {
    let mut buf = vec![0u8; chunk.max(1)];
    let mut receiver = true;
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) if receiver => {
                receiver = tx
                    .send(wrap(Bytes::copy_from_slice(&buf[..n])))
                    .await
                    .is_ok();
            }
            Ok(_) => {}
        }
    }
}
