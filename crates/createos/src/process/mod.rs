//! Managed processes (the original's `process-session.ts`): long-lived commands behind the login
//! PTY and duplex hooks.
//!
//! A process is created with `POST /sandboxes/{id}/processes` and followed through
//! `connect?after=N` ([`follow::follow_process`]) until it exits or is stopped; the follower has
//! no deadline of its own. Input goes through `POST …/input` in 256 KiB chunks, one call at a
//! time in call order; a failed call fails every later write with the same error. `stop` waits
//! for pending input, sends SIGTERM (errors ignored), deletes the process tree (`grace_ms=1000`,
//! `tree_exited` must be `true`, 404 counts as gone) and then aborts the follower. `close` first
//! closes stdin of a pipe process (404 and 409 ignored) unless a stop came first.

pub mod follow;
pub mod frames;
pub mod messages;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use reqwest::Method;
use sandbox_core::{BoxFuture, ProviderError, ProviderResult};
use serde_json::{Value, json};
use tokio::sync::{Mutex, OnceCell};
use tokio_util::sync::CancellationToken;

pub use frames::{OutputKind, ProcessExit};

use crate::client::{CreateOsClient, identifier, identifier_str};
use crate::lease::state::LeaseSession;
use crate::signal::{AbortReason, Signal};

/// Largest input sent in one `input` call (256 KiB).
pub const MAX_INPUT_BYTES: usize = 256 * 1024;

/// How the process was started: which output is forwarded, and whether stdin is closed first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Plain pipes: only stdout is forwarded (stderr is dropped).
    Pipe,
    /// A pseudo-terminal: only PTY output is forwarded.
    Pty,
}

pub struct ManagedProcess {
    client: CreateOsClient,
    /// `/sandboxes/{id}/processes/{pid}`.
    path: String,
    sandbox_id: String,
    process_id: String,
    mode: Mode,
    /// The follower's own abort signal (no deadline).
    follower: Signal,
    follow_started: AtomicBool,
    /// Fired once the follower has finished and reported the end.
    followed: CancellationToken,
    /// Serialises input calls; holds the error of the first failed one.
    input: Mutex<Option<ProviderError>>,
    stop_requested: AtomicBool,
    close_requested: AtomicBool,
    stopped: OnceCell<ProviderResult<()>>,
    closed: OnceCell<ProviderResult<()>>,
}

impl std::fmt::Debug for ManagedProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ManagedProcess")
            .field("process_id", &self.process_id)
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

impl ManagedProcess {
    /// `openManagedProcess`: creates the process from `body` (sent verbatim) with its own
    /// `timeoutMs` deadline. Call [`ManagedProcess::follow`] to start following its output.
    pub async fn create(
        client: CreateOsClient,
        sandbox_id: &str,
        body: Value,
        mode: Mode,
    ) -> crate::error::Result<Arc<Self>> {
        let id = identifier_str(sandbox_id)?.to_owned();
        let deadline = Signal::timeout(client.config().timeout_ms);
        let created = client
            .json(
                Method::POST,
                &format!("/sandboxes/{id}/processes"),
                Some(body),
                Some(&deadline),
            )
            .await?;
        let process_id = identifier(created.get("process_id"))?;
        Ok(Arc::new(Self {
            path: format!("/sandboxes/{id}/processes/{process_id}"),
            sandbox_id: id,
            client,
            process_id,
            mode,
            follower: Signal::new(),
            follow_started: AtomicBool::new(false),
            followed: CancellationToken::new(),
            input: Mutex::new(None),
            stop_requested: AtomicBool::new(false),
            close_requested: AtomicBool::new(false),
            stopped: OnceCell::new(),
            closed: OnceCell::new(),
        }))
    }

    pub fn process_id(&self) -> &str {
        &self.process_id
    }

    /// Follows the output on a task of its own: each forwarded chunk goes to `on_data`, and the
    /// end (the exit, or the failure that ended following, a stop included) to `on_end`, once.
    pub fn follow(
        self: &Arc<Self>,
        mut on_data: impl FnMut(Vec<u8>) + Send + 'static,
        on_end: impl FnOnce(Result<ProcessExit, ProviderError>) + Send + 'static,
    ) {
        if self.follow_started.swap(true, Ordering::SeqCst) {
            return;
        }
        let process = self.clone();
        tokio::spawn(async move {
            // Marks the follower finished however the task ends (a panicking sink included).
            let _finished = process.followed.clone().drop_guard();
            let wanted = match process.mode {
                Mode::Pty => OutputKind::Pty,
                Mode::Pipe => OutputKind::Stdout,
            };
            let result = follow::follow_process(
                &process.client,
                &process.sandbox_id,
                &process.process_id,
                &process.follower,
                |kind, bytes| {
                    if kind == wanted {
                        on_data(bytes);
                    }
                },
            )
            .await
            .map_err(ProviderError::from);
            on_end(result);
        });
    }

    fn deadline(&self) -> Signal {
        Signal::timeout(self.client.config().timeout_ms)
    }

    /// Writes `bytes` as input, after every earlier write. Nothing is sent once a stop or close
    /// was requested, or for no bytes.
    pub async fn write(&self, bytes: &[u8]) -> ProviderResult<()> {
        if self.close_requested.load(Ordering::SeqCst)
            || self.stop_requested.load(Ordering::SeqCst)
            || bytes.is_empty()
        {
            return Ok(());
        }
        let mut failed = self.input.lock().await;
        if let Some(error) = failed.as_ref() {
            return Err(error.clone());
        }
        let path = format!("{}/input", self.path);
        for chunk in bytes.chunks(MAX_INPUT_BYTES) {
            let body = json!({ "data_base64": js_compat::base64::encode(chunk) });
            if let Err(error) = self
                .client
                .json(Method::POST, &path, Some(body), Some(&self.deadline()))
                .await
            {
                let error = ProviderError::from(error);
                *failed = Some(error.clone());
                return Err(error);
            }
        }
        Ok(())
    }

    /// Stops the process tree (idempotent; concurrent callers share one stop).
    pub async fn stop(&self) -> ProviderResult<()> {
        self.stop_requested.store(true, Ordering::SeqCst);
        self.stopped.get_or_init(|| self.run_stop()).await.clone()
    }

    async fn run_stop(&self) -> ProviderResult<()> {
        // Pending input goes first; its failure is not the stop's.
        drop(self.input.lock().await);
        // DELETE is what stops the whole tree; a failed SIGTERM does not skip it.
        let _ = self
            .client
            .json(
                Method::POST,
                &format!("{}/signal", self.path),
                Some(json!({ "signal": "SIGTERM" })),
                Some(&self.deadline()),
            )
            .await;
        let deleted = self
            .client
            .json(
                Method::DELETE,
                &format!("{}?grace_ms=1000", self.path),
                None,
                Some(&self.deadline()),
            )
            .await;
        let result = match deleted {
            Ok(receipt) if receipt.get("tree_exited") == Some(&Value::Bool(true)) => Ok(()),
            Ok(_) => Err(ProviderError::new(messages::TREE_TERMINATION_UNCONFIRMED)),
            Err(error) if error.is_status(404) => Ok(()),
            Err(error) => Err(error.into()),
        };
        self.follower
            .abort_with(AbortReason::Error(ProviderError::new(
                messages::MANAGED_PROCESS_STOPPED,
            )));
        if self.follow_started.load(Ordering::SeqCst) {
            self.followed.cancelled().await;
        }
        result
    }

    /// Closes stdin of a pipe process (unless a stop came first), then stops it (idempotent).
    pub async fn close(&self) -> ProviderResult<()> {
        self.close_requested.store(true, Ordering::SeqCst);
        self.closed
            .get_or_init(|| async {
                if self.mode == Mode::Pipe && !self.stop_requested.load(Ordering::SeqCst) {
                    let closed = self
                        .client
                        .json(
                            Method::POST,
                            &format!("{}/stdin/close", self.path),
                            None,
                            Some(&self.deadline()),
                        )
                        .await;
                    match closed {
                        Err(error) if !error.is_status(404) && !error.is_status(409) => {
                            return Err(error.into());
                        }
                        _ => {}
                    }
                }
                self.stop().await
            })
            .await
            .clone()
    }
}

impl LeaseSession for ManagedProcess {
    fn close(&self) -> BoxFuture<'_, ProviderResult<()>> {
        Box::pin(ManagedProcess::close(self))
    }

    fn write<'a>(&'a self, bytes: &'a [u8]) -> BoxFuture<'a, ProviderResult<()>> {
        Box::pin(ManagedProcess::write(self, bytes))
    }

    fn stop(&self) -> BoxFuture<'_, ProviderResult<()>> {
        Box::pin(ManagedProcess::stop(self))
    }
}
