//! Ending the commands that earlier plugin workers left running in a lease's pod (issue #38).
//!
//! A worker killed during an execute (the host restarts a crashed worker) leaves that execute's
//! command running in the pod: closing an exec stream ends nothing there, and the dead worker's
//! shutdown never ran ([`super::calls`]). Every command an execute starts records its process
//! group in a pid file named after the worker that started it, so the new worker that resumes
//! the lease ends the groups recorded by any other worker ([`group::kill_left_argv`]: `TERM`,
//! then `KILL` after the grace period), and spares its own. The host runs one plugin worker at a
//! time, so another worker's command in the pod belongs to a worker that is gone
//! (docs/limits.md). Release needs nothing of the sort: it deletes the Sandbox, and its pod and
//! everything running in it go with it.
//!
//! The kill exec is bounded ([`group::KILL_EXEC_TIMEOUT_MS`], less when resume's own bound is
//! nearer) and its failure only logged: resume answers as it would have.

use sandbox_core::{HostSink, LogLevel};

use super::Connection;
use crate::exec::{AGENT_CONTAINER, ExecRequest, group};

/// The worker-log line of a resume that ended commands an earlier worker had left running.
pub fn left_commands_ended_message(count: usize, namespace: &str, pod: &str) -> String {
    format!(
        "[plugin-kubernetes] Ended {count} command(s) that an earlier plugin worker had left running in pod {namespace}/{pod} (its process group got TERM, then KILL after 2 s)."
    )
}

/// The worker-log warning of a resume whose kill exec failed.
pub fn left_commands_not_ended_message(namespace: &str, pod: &str, error: &str) -> String {
    format!(
        "[plugin-kubernetes] Could not end the commands an earlier plugin worker may have left running in pod {namespace}/{pod} ({error}); they run until they finish or the pod ends."
    )
}

/// Ends the commands other workers left in `namespace/pod`, sparing the pid files that start
/// with `keep_prefix` (this worker's), within `bound_ms`. Logs what it did; never fails.
pub async fn end_left_commands(
    connection: &Connection,
    namespace: &str,
    pod: &str,
    keep_prefix: &str,
    bound_ms: u64,
    sink: &dyn HostSink,
) {
    let mut request = ExecRequest::new(namespace, pod, group::kill_left_argv(keep_prefix));
    request.container = AGENT_CONTAINER.to_string();
    request.timeout_ms = bound_ms.clamp(1, group::KILL_EXEC_TIMEOUT_MS);
    match connection.exec.exec(request, None).await {
        Ok(output) if output.exit_code == 0 => {
            let count = output.stdout.split_whitespace().count();
            if count > 0 {
                sink.log(
                    LogLevel::Info,
                    &left_commands_ended_message(count, namespace, pod),
                );
            }
        }
        Ok(output) => {
            let error = format!("exit {}", output.exit_code);
            sink.log(
                LogLevel::Warn,
                &left_commands_not_ended_message(namespace, pod, &error),
            );
        }
        Err(err) => sink.log(
            LogLevel::Warn,
            &left_commands_not_ended_message(namespace, pod, &err.to_string()),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_messages_are_exact() {
        assert_eq!(
            left_commands_ended_message(2, "ns", "p"),
            "[plugin-kubernetes] Ended 2 command(s) that an earlier plugin worker had left running in pod ns/p (its process group got TERM, then KILL after 2 s)."
        );
        assert_eq!(
            left_commands_not_ended_message("ns", "p", "exit 1"),
            "[plugin-kubernetes] Could not end the commands an earlier plugin worker may have left running in pod ns/p (exit 1); they run until they finish or the pod ends."
        );
    }
}
