//! The execute and sync calls in flight in this worker, so that worker shutdown answers each of
//! them and ends what they run in the pods (issue #38).
//!
//! The host sends `shutdown` and, once it is answered, the worker exits (`process.exit` on the
//! SDK's next tick): a call still running then is never answered (the host reports "worker
//! stream closed before the reply"), and a command an execute started runs on in its pod, since
//! closing an exec stream ends nothing there. So shutdown ([`ActiveCalls::stop_all`]) refuses new
//! calls, stops every call where it is (each answers at once with its cancelled message, and
//! dropping its future drops its exec streams and removes its sync temp dirs), then ends every
//! command a stopped execute had started, with one kill exec per container (`TERM`, then `KILL`
//! after the grace period, [`group::kill_all_argv`]), and returns within its bound: the host
//! waits 10 s for the worker to exit after `shutdown`.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::exec::{AGENT_CONTAINER, ExecRequest, PodExec, group};

/// What an execute stopped by worker shutdown rejects with.
pub const EXECUTE_CANCELLED: &str =
    "Kubernetes command was cancelled: the plugin worker is shutting down.";
/// What a file sync stopped by worker shutdown rejects with.
pub const SYNC_CANCELLED: &str =
    "Kubernetes file sync was cancelled: the plugin worker is shutting down.";

/// How long shutdown waits for the calls to answer and their commands to end: within the
/// host's 10 s drain, with room for the reply.
pub const STOP_BOUND: Duration = Duration::from_millis(group::KILL_EXEC_TIMEOUT_MS + 3_000);

/// A command an execute runs in a pod, and what its kill exec needs.
#[derive(Clone)]
pub struct RunningCommand {
    pub exec: Arc<dyn PodExec>,
    pub namespace: String,
    pub pod: String,
    pub pid_file: String,
}

struct Call {
    stop: CancellationToken,
    done: CancellationToken,
    command: Option<RunningCommand>,
}

#[derive(Default)]
struct Inner {
    shutting_down: bool,
    next_id: u64,
    calls: HashMap<u64, Call>,
    /// The commands of calls that shutdown stopped, for it to end.
    stopped: Vec<RunningCommand>,
}

/// The worker's calls in flight.
#[derive(Default)]
pub struct ActiveCalls {
    inner: Mutex<Inner>,
    /// This worker's name in the pid files of the commands it starts (issue #38: a new worker
    /// resuming a lease ends the commands of the others, [`group::kill_left_argv`]).
    worker: std::sync::OnceLock<String>,
}

impl ActiveCalls {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The prefix of the pid files of this worker's commands: `/tmp/paperclip-exec-<worker>-`.
    pub fn pid_file_prefix(&self) -> String {
        let worker = self
            .worker
            .get_or_init(|| js_compat::uuid::random_uuid().replace('-', ""));
        format!("{}{worker}-", group::PID_FILE_PREFIX)
    }

    /// Registers a call; `None` once shutdown has begun.
    pub fn begin(&self) -> Option<ActiveCall<'_>> {
        let mut inner = self.lock();
        if inner.shutting_down {
            return None;
        }
        let id = inner.next_id;
        inner.next_id += 1;
        let (stop, done) = (CancellationToken::new(), CancellationToken::new());
        let call = Call {
            stop: stop.clone(),
            done: done.clone(),
            command: None,
        };
        inner.calls.insert(id, call);
        Some(ActiveCall {
            calls: self,
            id,
            stop,
            done,
        })
    }

    /// How many calls are in flight (tests, diagnostics).
    pub fn in_flight(&self) -> usize {
        self.lock().calls.len()
    }

    /// Worker shutdown: refuses new calls, stops every call in flight and waits until each has
    /// answered, then ends the commands the stopped executes had started, all within `bound`.
    pub async fn stop_all(&self, bound: Duration) {
        let deadline = tokio::time::Instant::now() + bound;
        let dones: Vec<CancellationToken> = {
            let mut inner = self.lock();
            inner.shutting_down = true;
            inner.calls.values().for_each(|c| c.stop.cancel());
            inner.calls.values().map(|c| c.done.clone()).collect()
        };
        let answered = futures::future::join_all(dones.iter().map(|d| d.cancelled()));
        let _ = tokio::time::timeout_at(deadline, answered).await;
        let stopped = std::mem::take(&mut self.lock().stopped);
        let kills = kill_requests(stopped)
            .into_iter()
            .map(|(exec, request)| async move {
                // Its outcome changes nothing: the calls are answered, the worker is exiting.
                let _ = exec.exec(request, None).await;
            });
        let _ = tokio::time::timeout_at(deadline, futures::future::join_all(kills)).await;
    }
}

/// One kill exec per container of the `stopped` commands.
fn kill_requests(stopped: Vec<RunningCommand>) -> Vec<(Arc<dyn PodExec>, ExecRequest)> {
    let mut by_pod: Vec<(RunningCommand, Vec<String>)> = Vec::new();
    for command in stopped {
        let same = |(c, _): &&mut (RunningCommand, Vec<String>)| {
            Arc::ptr_eq(&c.exec, &command.exec)
                && c.namespace == command.namespace
                && c.pod == command.pod
        };
        match by_pod.iter_mut().find(same) {
            Some((_, files)) => files.push(command.pid_file),
            None => {
                let file = command.pid_file.clone();
                by_pod.push((command, vec![file]));
            }
        }
    }
    by_pod
        .into_iter()
        .map(|(command, files)| {
            let mut request = ExecRequest::new(
                &command.namespace,
                &command.pod,
                group::kill_all_argv(&files),
            );
            request.container = AGENT_CONTAINER.to_string();
            request.timeout_ms = group::KILL_EXEC_TIMEOUT_MS;
            (command.exec, request)
        })
        .collect()
}

/// One call in flight; dropping it unregisters the call.
pub struct ActiveCall<'a> {
    calls: &'a ActiveCalls,
    id: u64,
    stop: CancellationToken,
    done: CancellationToken,
}

impl ActiveCall<'_> {
    /// Runs `work` to its end, or until shutdown stops the call (`None`; `work` is dropped
    /// where it is).
    pub async fn until_stopped<F: Future>(&self, work: F) -> Option<F::Output> {
        tokio::select! {
            biased;
            () = self.stop.cancelled() => None,
            output = work => Some(output),
        }
    }

    /// A new pid file for a command of this call: [`group::pid_file`] named after this worker.
    pub fn pid_file(&self) -> String {
        let worker = self.calls.pid_file_prefix();
        let worker = worker.trim_start_matches(group::PID_FILE_PREFIX);
        group::pid_file(&format!("{worker}{}", js_compat::uuid::random_uuid()))
    }

    /// The call's command is about to start in its pod: shutdown ends it if the call is
    /// stopped before [`ActiveCall::command_ended`].
    pub fn command_started(&self, command: RunningCommand) {
        if let Some(call) = self.calls.lock().calls.get_mut(&self.id) {
            call.command = Some(command);
        }
    }

    /// The call's command has ended (or its exec failed and ended it).
    pub fn command_ended(&self) {
        if let Some(call) = self.calls.lock().calls.get_mut(&self.id) {
            call.command = None;
        }
    }
}

impl Drop for ActiveCall<'_> {
    fn drop(&mut self) {
        let mut inner = self.calls.lock();
        let command = inner.calls.remove(&self.id).and_then(|c| c.command);
        if let Some(command) = command.filter(|_| self.stop.is_cancelled()) {
            inner.stopped.push(command);
        }
        drop(inner);
        self.done.cancel();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use crate::exec::{ExecOutput, OutputTap};
    use sandbox_core::BoxFuture;

    /// Records the kill execs it is asked for.
    #[derive(Default)]
    struct Kills(Mutex<Vec<ExecRequest>>);

    impl PodExec for Kills {
        fn exec(
            &self,
            r: ExecRequest,
            _: Option<OutputTap>,
        ) -> BoxFuture<'_, Result<ExecOutput, Error>> {
            self.0.lock().unwrap().push(r);
            Box::pin(async {
                Ok(ExecOutput {
                    exit_code: 0,
                    stdout: String::new(),
                    stderr: String::new(),
                    truncated: false,
                })
            })
        }
    }

    fn command(exec: &Arc<Kills>, pod: &str, file: &str) -> RunningCommand {
        RunningCommand {
            exec: exec.clone(),
            namespace: "ns".into(),
            pod: pod.into(),
            pid_file: file.into(),
        }
    }

    /// A call that never ends by itself, as an execute whose command runs on.
    async fn run_forever(call: ActiveCall<'_>) -> Option<()> {
        call.until_stopped(std::future::pending::<()>()).await
    }

    #[tokio::test]
    async fn shutdown_answers_every_call_and_ends_the_commands_of_the_stopped_ones_per_pod() {
        let calls = ActiveCalls::default();
        let kills = Arc::new(Kills::default());
        let (a, b, c, d) = (
            calls.begin().unwrap(),
            calls.begin().unwrap(),
            calls.begin().unwrap(),
            calls.begin().unwrap(),
        );
        a.command_started(command(&kills, "p1", "/tmp/a"));
        b.command_started(command(&kills, "p1", "/tmp/b"));
        c.command_started(command(&kills, "p2", "/tmp/c"));
        // Ended before shutdown: nothing to kill.
        d.command_started(command(&kills, "p2", "/tmp/d"));
        d.command_ended();
        assert_eq!(calls.in_flight(), 4);
        let running = futures::future::join4(
            run_forever(a),
            run_forever(b),
            run_forever(c),
            run_forever(d),
        );
        let (outcomes, ()) = tokio::join!(running, calls.stop_all(STOP_BOUND));
        assert_eq!(outcomes, (None, None, None, None));
        assert_eq!(calls.in_flight(), 0);
        assert!(calls.begin().is_none(), "no call starts after shutdown");
        let kills = kills.0.lock().unwrap();
        let argvs: Vec<(String, Vec<String>)> = kills
            .iter()
            .map(|r| (r.pod.clone(), r.argv.clone()))
            .collect();
        assert_eq!(
            argvs,
            [
                (
                    "p1".to_string(),
                    group::kill_all_argv(&["/tmp/a".into(), "/tmp/b".into()])
                ),
                ("p2".to_string(), group::kill_all_argv(&["/tmp/c".into()])),
            ]
        );
        assert!(
            kills
                .iter()
                .all(|r| r.timeout_ms == group::KILL_EXEC_TIMEOUT_MS)
        );
    }

    #[test]
    fn pid_files_are_named_after_the_worker() {
        let (one, two) = (ActiveCalls::default(), ActiveCalls::default());
        let prefix = one.pid_file_prefix();
        assert!(prefix.starts_with("/tmp/paperclip-exec-") && prefix.ends_with('-'));
        assert_eq!(prefix.len(), "/tmp/paperclip-exec-".len() + 32 + 1);
        assert_ne!(prefix, two.pid_file_prefix());
        let call = one.begin().unwrap();
        let (a, b) = (call.pid_file(), call.pid_file());
        assert!(a.starts_with(&prefix) && a.ends_with(".pid"), "{a}");
        assert_ne!(a, b);
        assert!(!two.begin().unwrap().pid_file().starts_with(&prefix));
    }

    #[test]
    fn the_messages_are_exact() {
        assert_eq!(
            EXECUTE_CANCELLED,
            "Kubernetes command was cancelled: the plugin worker is shutting down."
        );
        assert_eq!(
            SYNC_CANCELLED,
            "Kubernetes file sync was cancelled: the plugin worker is shutting down."
        );
    }

    #[tokio::test]
    async fn a_call_that_ends_by_itself_is_not_stopped() {
        let calls = ActiveCalls::default();
        let call = calls.begin().unwrap();
        assert_eq!(call.until_stopped(async { 7 }).await, Some(7));
        drop(call);
        assert_eq!(calls.in_flight(), 0);
        calls.stop_all(STOP_BOUND).await;
        assert!(calls.lock().stopped.is_empty());
    }
}
