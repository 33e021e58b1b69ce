//! An interactive tty exec in the agent container (`login-pty-exec.ts`, the login PTY's connector) over
//! kube-rs's websocket exec: stdin and stdout only (a tty merges stderr into stdout), stdin is
//! never closed, and the terminal can be resized (channel 4; the original never sends it).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
use kube::api::{Api, AttachParams, TerminalSize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::transport::AGENT_CONTAINER;
use crate::cluster::{Redactor, api_error_from_kube};
use crate::error::Error;

/// The write backlog at which the session is ended (`bufferedAmount` > 256 KiB).
pub const MAX_TTY_BACKLOG: usize = 256 * 1024;
/// How long a close lets queued input (the Ctrl-C of a terminate) reach the command and the
/// command end before the connection is cut.
pub const CLOSE_FLUSH: std::time::Duration = std::time::Duration::from_secs(2);

/// Where a tty session reports.
pub trait TtyEvents: Send + Sync {
    /// Raw bytes of the terminal output, in order.
    fn output(&self, data: &[u8]);
    /// The session ended: the exit code, or `None` when it is unknown. Called at most once.
    fn exit(&self, code: Option<i32>);
}

/// The exit code of a tty status frame: `Success` → 0; an `ExitCode` cause parsed as an
/// integer ≥ 0 (`parseInt`); anything else → `None`.
pub fn tty_exit_code(status: &Status) -> Option<i32> {
    if status.status.as_deref() == Some("Success") {
        return Some(0);
    }
    let cause = status
        .details
        .as_ref()?
        .causes
        .as_ref()?
        .iter()
        .find(|c| c.reason.as_deref() == Some("ExitCode"))?;
    parse_int_prefix(cause.message.as_deref().unwrap_or_default()).filter(|c| *c >= 0)
}

/// `Number.parseInt(text, 10)` for the values an exit code can take.
fn parse_int_prefix(text: &str) -> Option<i32> {
    let text = text.trim_start();
    let (negative, digits) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let end = digits
        .bytes()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(digits.len());
    let value: i64 = digits[..end].parse().ok()?;
    let value = if negative { -value } else { value };
    i32::try_from(value).ok()
}

struct Finish {
    done: AtomicBool,
    events: Arc<dyn TtyEvents>,
}

impl Finish {
    fn finish(&self, code: Option<i32>) {
        if !self.done.swap(true, Ordering::SeqCst) {
            self.events.exit(code);
        }
    }
}

/// A live tty exec.
pub struct TtySession {
    closed: AtomicBool,
    backlog: Arc<AtomicUsize>,
    input: Mutex<Option<mpsc::UnboundedSender<Vec<u8>>>>,
    resize: Mutex<Option<futures::channel::mpsc::Sender<TerminalSize>>>,
    finish: Arc<Finish>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
    process: Mutex<Option<kube::api::AttachedProcess>>,
}

impl std::fmt::Debug for TtySession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TtySession").finish_non_exhaustive()
    }
}

impl TtySession {
    /// Writes `data` to the terminal. Ignored once closed. A backlog over 256 KiB ends the
    /// session (exit `None`) and closes it.
    pub fn write(&self, data: &str) {
        if self.closed.load(Ordering::SeqCst) {
            return;
        }
        let len = data.len();
        if self.backlog.load(Ordering::SeqCst) + len + 1 > MAX_TTY_BACKLOG {
            self.finish.finish(None);
            self.close();
            return;
        }
        self.backlog.fetch_add(len, Ordering::SeqCst);
        let sent = self
            .input
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .is_some_and(|input| input.send(data.as_bytes().to_vec()).is_ok());
        if !sent {
            self.finish.finish(None);
            self.close();
        }
    }

    /// Sends a terminal size (channel 4). Ignored once closed.
    pub fn resize(&self, cols: u16, rows: u16) {
        if self.closed.load(Ordering::SeqCst) {
            return;
        }
        let sender = self
            .resize
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        if let Some(mut sender) = sender {
            let _ = sender.try_send(TerminalSize {
                width: cols,
                height: rows,
            });
        }
    }

    /// Idempotent: closes the websocket and stops the pumps. Input written before the close
    /// (the Ctrl-C of a terminate) is still delivered first, for at most [`CLOSE_FLUSH`]. No
    /// exit is reported by a close.
    pub fn close(&self) {
        if self.closed.swap(true, Ordering::SeqCst) {
            return;
        }
        drop(self.input.lock().unwrap_or_else(|p| p.into_inner()).take());
        let mut tasks: Vec<JoinHandle<()>> = self
            .tasks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain(..)
            .collect();
        let process = self
            .process
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        let stop = move |tasks: Vec<JoinHandle<()>>,
                         process: Option<kube::api::AttachedProcess>| {
            for task in tasks {
                task.abort();
            }
            if let Some(process) = process {
                process.abort();
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    // Tasks are [reader, writer]. The writer ends once the queued input is
                    // written; the reader ends when the command has ended (a Ctrl-C usually
                    // ends it). Both get the grace period, then everything is cut.
                    let deadline = tokio::time::Instant::now() + CLOSE_FLUSH;
                    for task in tasks.iter_mut().rev() {
                        let _ = tokio::time::timeout_at(deadline, task).await;
                    }
                    stop(tasks, process);
                });
            }
            Err(_) => stop(tasks, process),
        }
    }

    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }
}

impl Drop for TtySession {
    fn drop(&mut self) {
        self.close();
    }
}

/// Opens `argv` with a tty in the agent container of `pod`.
pub async fn open_tty_exec(
    client: &kube::Client,
    redactor: &Redactor,
    namespace: &str,
    pod: &str,
    argv: &[String],
    events: Arc<dyn TtyEvents>,
) -> Result<Arc<TtySession>, Error> {
    let params = AttachParams::default()
        .container(AGENT_CONTAINER)
        .stdin(true)
        .stdout(true)
        .stderr(false)
        .tty(true);
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let mut process = pods
        .exec(pod, argv.to_vec(), &params)
        .await
        .map_err(|err| api_error_from_kube(err, redactor))?;
    let finish = Arc::new(Finish {
        done: AtomicBool::new(false),
        events: events.clone(),
    });
    let stdout = process.stdout();
    let stdin = process.stdin();
    let resize = process.terminal_size();
    let status = process.take_status();
    let backlog = Arc::new(AtomicUsize::new(0));
    let (input, mut inputs) = mpsc::unbounded_channel::<Vec<u8>>();

    let reader = {
        let finish = finish.clone();
        tokio::spawn(async move {
            if let Some(mut stdout) = stdout {
                let mut buf = vec![0u8; 16 * 1024];
                loop {
                    match stdout.read(&mut buf).await {
                        Ok(0) => break,
                        Ok(n) => events.output(&buf[..n]),
                        Err(_) => {
                            finish.finish(None);
                            return;
                        }
                    }
                }
            }
            let code = match status {
                Some(status) => status.await.and_then(|s| tty_exit_code(&s)),
                None => None,
            };
            finish.finish(code);
        })
    };
    let writer = {
        let finish = finish.clone();
        let backlog = backlog.clone();
        tokio::spawn(async move {
            // Held until the session ends: stdin is never closed.
            let Some(mut stdin) = stdin else {
                return;
            };
            while let Some(chunk) = inputs.recv().await {
                let ok = stdin.write_all(&chunk).await.is_ok() && stdin.flush().await.is_ok();
                backlog.fetch_sub(chunk.len(), Ordering::SeqCst);
                if !ok {
                    finish.finish(None);
                    return;
                }
            }
        })
    };
    Ok(Arc::new(TtySession {
        closed: AtomicBool::new(false),
        backlog,
        input: Mutex::new(Some(input)),
        resize: Mutex::new(resize),
        finish,
        tasks: Mutex::new(vec![reader, writer]),
        process: Mutex::new(Some(process)),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tty_exit_codes() {
        let status = |v: serde_json::Value| serde_json::from_value::<Status>(v).unwrap();
        let failure = |m: &str| {
            status(json!({"status": "Failure",
                "details": {"causes": [{"reason": "ExitCode", "message": m}]}}))
        };
        assert_eq!(
            tty_exit_code(&status(json!({"status": "Success"}))),
            Some(0)
        );
        assert_eq!(tty_exit_code(&failure("7")), Some(7));
        assert_eq!(tty_exit_code(&failure(" 12abc")), Some(12));
        assert_eq!(tty_exit_code(&failure("x")), None);
        assert_eq!(tty_exit_code(&failure("-1")), None);
        assert_eq!(tty_exit_code(&status(json!({"status": "Failure"}))), None);
    }
}
