//! Managed processes: long-lived commands whose output is journaled for replay and whose
//! stdin, signals and lifetime are driven through separate requests.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use nix::sys::signal::Signal;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::ChildStdin;
use tokio::sync::watch;

use super::envelope::ApiError;
use super::journal::{Chunk, Evicted, Journal};
use super::util::{new_id, rfc3339};
use crate::sandbox_runner::{ExitInfo, IoMode, Launched, LaunchedIo, ProcessTree, PtyMaster};

/// How long a kill may take before the tree is declared "not exited".
const KILL_CONFIRM: Duration = Duration::from_secs(5);

enum Input {
    /// `None` once stdin was closed.
    Pipe(Option<ChildStdin>),
    Pty(Arc<PtyMaster>),
}

pub struct ManagedProcess {
    pub id: String,
    pub pty: bool,
    argv: Vec<String>,
    created_at: SystemTime,
    pub tree: Arc<ProcessTree>,
    journal: Mutex<Journal>,
    /// Bumped on every journal append and on exit; connect/wait streams watch it.
    changed: watch::Sender<u64>,
    exit: Mutex<Option<ExitInfo>>,
    input: tokio::sync::Mutex<Input>,
}

impl ManagedProcess {
    /// The I/O a process of this kind is launched with.
    pub fn io_mode(pty: Option<(u16, u16)>) -> IoMode {
        match pty {
            Some((cols, rows)) => IoMode::Pty { cols, rows },
            None => IoMode::Pipes { stdin: true },
        }
    }

    /// Takes over a launched process: its output is journaled (at most `journal_limit` bytes
    /// kept, read in pieces of `chunk`) until the tree has exited, then `guard` (whatever keeps
    /// the tree registered with its sandbox) is dropped. The caller registers the process with
    /// its sandbox, so this module needs nothing of the sandbox's.
    pub fn adopt(
        launched: Launched,
        guard: impl Send + 'static,
        argv: Vec<String>,
        pty: bool,
        journal_limit: usize,
        chunk: usize,
    ) -> Arc<ManagedProcess> {
        let Launched { tree, io, child } = launched;
        let (input, outputs) = match io {
            LaunchedIo::Pipes {
                stdin,
                stdout,
                stderr,
            } => (Input::Pipe(stdin), Outputs::Pipes(stdout, stderr)),
            LaunchedIo::Pty(master) => {
                let master = Arc::new(master);
                (Input::Pty(master.clone()), Outputs::Pty(master))
            }
        };
        let process = Arc::new(ManagedProcess {
            id: new_id("proc"),
            pty,
            argv,
            created_at: SystemTime::now(),
            tree,
            journal: Mutex::new(Journal::new(journal_limit)),
            changed: watch::Sender::new(0),
            exit: Mutex::new(None),
            input: tokio::sync::Mutex::new(input),
        });
        let p = process.clone();
        tokio::spawn(async move {
            match outputs {
                Outputs::Pipes(out, err) => {
                    tokio::join!(p.pump(out, "stdout", chunk), p.pump(err, "stderr", chunk));
                }
                Outputs::Pty(master) => p.pump_pty(&master, chunk).await,
            }
            let mut child = child;
            let info = p.tree.wait(&mut child).await;
            drop(guard);
            *p.exit.lock().unwrap() = Some(info);
            p.changed.send_modify(|v| *v += 1);
        });
        process
    }

    fn append(&self, stream: &'static str, data: Bytes) {
        self.journal.lock().unwrap().push(stream, data);
        self.changed.send_modify(|v| *v += 1);
    }

    async fn pump(&self, mut pipe: impl AsyncRead + Unpin, stream: &'static str, chunk: usize) {
        let mut buf = vec![0u8; chunk.max(1)];
        while let Ok(n @ 1..) = pipe.read(&mut buf).await {
            self.append(stream, Bytes::copy_from_slice(&buf[..n]));
        }
    }

    async fn pump_pty(&self, master: &PtyMaster, chunk: usize) {
        let mut buf = vec![0u8; chunk.max(1)];
        while let Ok(n @ 1..) = master.read(&mut buf).await {
            self.append("pty", Bytes::copy_from_slice(&buf[..n]));
        }
    }

    pub fn exit_info(&self) -> Option<ExitInfo> {
        self.exit.lock().unwrap().clone()
    }

    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    pub fn output_after(&self, after: u64) -> Result<Vec<Chunk>, Evicted> {
        self.journal.lock().unwrap().after(after)
    }

    fn output_view(&self) -> Value {
        let j = self.journal.lock().unwrap();
        json!({ "newest_seq": j.newest_seq(), "oldest_seq": j.oldest_seq() })
    }

    pub fn view(&self) -> Value {
        let exit = self.exit_info();
        json!({
            "process_id": self.id,
            "status": if exit.is_some() { "exited" } else { "running" },
            "pty": self.pty,
            "cmd": self.argv[0],
            "args": &self.argv[1..],
            "exit_code": exit.as_ref().and_then(|e| e.code),
            "signal": exit.as_ref().and_then(|e| e.signal.clone()),
            "output": self.output_view(),
            "created_at": rfc3339(self.created_at),
        })
    }

    /// Waits until the process has exited (and all its output is journaled) or `limit` passes.
    pub async fn wait_exit(&self, limit: Duration) -> Option<ExitInfo> {
        let mut rx = self.subscribe();
        let deadline = tokio::time::sleep(limit);
        tokio::pin!(deadline);
        loop {
            rx.borrow_and_update();
            if let Some(exit) = self.exit_info() {
                return Some(exit);
            }
            tokio::select! {
                r = rx.changed() => if r.is_err() { return self.exit_info(); },
                _ = &mut deadline => return None,
            }
        }
    }

    /// SIGTERM, `grace`, then SIGKILL of the whole tree; true once it is confirmed gone.
    pub async fn terminate(&self, grace: Duration) -> bool {
        if self.exit_info().is_some() {
            return true;
        }
        self.tree.freeze(false);
        self.tree.signal(Signal::SIGTERM);
        if self.wait_exit(grace).await.is_some() {
            return true;
        }
        self.tree.kill();
        self.wait_exit(KILL_CONFIRM).await.is_some()
    }

    /// Writes terminal or stdin input.
    pub async fn write_input(&self, data: &[u8]) -> Result<(), ApiError> {
        if self.exit_info().is_some() {
            return Err(ApiError::conflict("process_exited", "process has exited"));
        }
        let mut input = self.input.lock().await;
        let result = match &mut *input {
            Input::Pipe(Some(stdin)) => match stdin.write_all(data).await {
                Ok(()) => stdin.flush().await,
                Err(e) => Err(e),
            },
            Input::Pipe(None) => {
                return Err(ApiError::conflict("stdin_closed", "stdin is closed"));
            }
            Input::Pty(master) => master.write_all(data).await,
        };
        result.map_err(|_| ApiError::conflict("process_exited", "process is not reading input"))
    }

    /// Closes stdin (pipe mode only).
    pub async fn close_stdin(&self) -> Result<(), ApiError> {
        let mut input = self.input.lock().await;
        match &mut *input {
            Input::Pipe(stdin @ Some(_)) => {
                *stdin = None;
                Ok(())
            }
            Input::Pipe(None) => Err(ApiError::conflict(
                "stdin_closed",
                "stdin is already closed",
            )),
            Input::Pty(_) => Err(ApiError::conflict(
                "pty_process",
                "a PTY process has no separate stdin to close",
            )),
        }
    }

    pub async fn resize(&self, cols: u16, rows: u16) -> Result<(), ApiError> {
        match &*self.input.lock().await {
            Input::Pty(master) => master.resize(cols, rows).map_err(ApiError::from),
            Input::Pipe(_) => Err(ApiError::conflict("not_pty", "process has no terminal")),
        }
    }
}

enum Outputs {
    Pipes(tokio::process::ChildStdout, tokio::process::ChildStderr),
    Pty(Arc<PtyMaster>),
}
