//! The command of a sandbox-cr execute in its pod, and what its result says when the exec does
//! not end normally (issue #38):
//!
//! - Only the exec's watchdog makes a timed-out result (`timedOut: true`, the original's
//!   `execInPod timed out …`). An upgrade the API server refuses, an API server that cannot be
//!   reached, and a connection that closes before the exit status are results with
//!   `exitCode: null` and `timedOut: false`, their stderr saying what happened (the original
//!   reports every one of them as timed out). The result's shape is the original's: the host
//!   gets a failed command's result, not a rejected call.
//! - A command that ends with 137 or 143, or whose connection closes, is followed by one bounded
//!   read of its pod ([`pod_fate`](crate::cluster::pod_fate)): a pod that is gone, terminating
//!   or replaced was deleted under the command, and the result says so
//!   ([`pod_deleted_note`]) in place of the exit code's usual note; the lease's ready mark is
//!   forgotten, so the next execute waits for the new pod.
//! - An exec refused while the pod is gone, terminating or not running yet (the controller is
//!   replacing it: `404`, `500 container not found`) never started the command: the call waits,
//!   within its own budget, for the Sandbox to be Ready again and its pod to run, and runs the
//!   command there, once. A command that may have started is never run again.

use sandbox_core::{OutputStream, ProviderResult};
use serde_json::{Value, json};

use super::execute_call::{Call, EXECUTE_POLL_MS, execute_result, sandbox_not_ready_message};
use crate::builders::scoped_egress::append_network_egress_deny_hint;
use crate::cluster::pod_fate::{PodFate, read_pod_fate};
use crate::cluster::{PollOptions, WorkloadOrchestrator, api_bound};
use crate::error::Error;
use crate::exec::exit_hints::{append_exit_status_hint, append_pod_deleted_note, pod_deleted_note};
use crate::exec::transport::{exec_refused_message, exec_unreachable_message};
use crate::exec::{AGENT_CONTAINER, ExecOutput, ExecRequest};
use crate::lease::calls::RunningCommand;
use crate::provider::KubernetesProvider;

/// How soon the wait for a replaced pod reads the Sandbox and the pod again when the Sandbox
/// still says Ready about the pod that was deleted (the controller has not caught up yet).
const REPLACEMENT_POLL_MS: u64 = 250;

impl KubernetesProvider {
    /// Waits for the lease's Sandbox to be Ready unless this worker has seen it so: `false` when
    /// it did not turn Ready within `timeout_ms`.
    pub(super) async fn wait_until_ready(
        &self,
        call: &Call<'_>,
        orchestrator: &WorkloadOrchestrator,
        timeout_ms: u64,
    ) -> ProviderResult<bool> {
        if self.ready().contains(call.lease_id) {
            return Ok(true);
        }
        let options = PollOptions {
            timeout_ms,
            poll_ms: EXECUTE_POLL_MS,
        };
        let api = call.connection.api.as_ref();
        // The deadline holds even while one of the polls hangs (an API server
        // that accepts the request and never answers): same result as a readiness timeout.
        let wait = orchestrator.wait_for_completion(
            api,
            self.clock(),
            call.namespace,
            call.lease_id,
            options,
            call.readiness,
        );
        let not_ready = || Error::SandboxReadyTimeout {
            namespace: call.namespace.to_string(),
            name: call.lease_id.to_string(),
            timeout_ms,
        };
        match api_bound::wait_within(timeout_ms, wait, not_ready).await {
            Ok(_) => {
                self.ready().insert(call.lease_id);
                Ok(true)
            }
            Err(Error::SandboxReadyTimeout { .. }) => Ok(false),
            Err(err) => Err(err.into()),
        }
    }

    /// Runs the wrapped `argv` in pod `pod` (`started`: when the call began, on the clock), and
    /// once more in the Sandbox's new pod when the first exec was refused because the pod was
    /// being replaced.
    pub(super) async fn run_in_sandbox(
        &self,
        call: &Call<'_>,
        orchestrator: &WorkloadOrchestrator,
        (pod, argv, started): (String, Vec<String>, u64),
        mut metadata: Value,
    ) -> ProviderResult<Value> {
        self.learn_pod_uid(call, &pod).await;
        let elapsed = self.clock().now_ms().saturating_sub(started);
        let request = command_request(call, &pod, argv.clone(), call.budget_left_ms(elapsed));
        let outcome = exec_command(call, request).await;
        let refused = matches!(&outcome, Err(Error::Api { code, .. }) if *code != 0);
        if !refused || !self.pod_being_replaced(call, &pod).await {
            return Ok(self.finish(call, &pod, outcome, metadata).await);
        }
        let Some(new_pod) = self.wait_for_new_pod(call, orchestrator, started).await? else {
            return Ok(execute_result(
                Value::Null,
                true,
                String::new(),
                sandbox_not_ready_message(call.timeout_ms),
                metadata,
            ));
        };
        metadata["podName"] = json!(new_pod);
        let elapsed = self.clock().now_ms().saturating_sub(started);
        let request = command_request(call, &new_pod, argv, call.budget_left_ms(elapsed));
        let outcome = exec_command(call, request).await;
        Ok(self.finish(call, &new_pod, outcome, metadata).await)
    }

    /// Reads the `uid` of the lease's pod once per lease and worker (bounded; a failed read is
    /// tried again next time), so that a pod replaced under a command by one of the same name is
    /// told apart: the controller can bring the new one up before the old one's command has
    /// answered (the emulator does, within milliseconds).
    async fn learn_pod_uid(&self, call: &Call<'_>, pod: &str) {
        if self.ready().pod_uid(call.lease_id).is_some() {
            return;
        }
        let api = call.connection.api.as_ref();
        if let Some(fate) = read_pod_fate(api, call.namespace, pod, None).await {
            let uid = fate.uid().map(str::to_string);
            self.ready().set_pod_uid(call.lease_id, uid);
        }
    }

    /// After a refused exec: whether pod `pod` is gone, terminating or not running (then the
    /// lease's ready mark is forgotten).
    async fn pod_being_replaced(&self, call: &Call<'_>, pod: &str) -> bool {
        let known = self.ready().pod_uid(call.lease_id);
        let api = call.connection.api.as_ref();
        match read_pod_fate(api, call.namespace, pod, known.as_deref()).await {
            Some(PodFate::Deleted | PodFate::NotRunning { .. }) => {
                self.ready().remove(call.lease_id);
                true
            }
            Some(PodFate::Running { uid }) => {
                self.ready().set_pod_uid(call.lease_id, uid);
                false
            }
            None => false,
        }
    }

    /// After a command ended as a deletion would end it: whether its pod was deleted (then the
    /// lease's ready mark is forgotten, so the next execute waits for the new pod).
    async fn pod_deleted(&self, call: &Call<'_>, pod: &str) -> bool {
        let known = self.ready().pod_uid(call.lease_id);
        let api = call.connection.api.as_ref();
        match read_pod_fate(api, call.namespace, pod, known.as_deref()).await {
            Some(PodFate::Deleted) => {
                self.ready().remove(call.lease_id);
                true
            }
            Some(PodFate::NotRunning { .. }) => {
                self.ready().remove(call.lease_id);
                false
            }
            Some(PodFate::Running { uid }) => {
                self.ready().set_pod_uid(call.lease_id, uid);
                false
            }
            None => false,
        }
    }

    /// The Sandbox's pod once it runs again, within the call's budget (`started` on the clock):
    /// `None` when the budget ran out first. A Sandbox that fails, goes away or cannot be read
    /// rejects, as the first readiness wait does.
    async fn wait_for_new_pod(
        &self,
        call: &Call<'_>,
        orchestrator: &WorkloadOrchestrator,
        started: u64,
    ) -> ProviderResult<Option<String>> {
        let deadline = started.saturating_add(call.timeout_ms);
        let api = call.connection.api.as_ref();
        loop {
            let left = deadline.saturating_sub(self.clock().now_ms());
            if left == 0 || !self.wait_until_ready(call, orchestrator, left).await? {
                return Ok(None);
            }
            let left = deadline.saturating_sub(self.clock().now_ms()).max(1);
            let find = orchestrator.find_pod(api, call.namespace, call.lease_id);
            let found = api_bound::with_api_bound(left, find).await?;
            if let Some(pod) = found.filter(|p| !p.is_empty()) {
                let fate = read_pod_fate(api, call.namespace, &pod, None).await;
                if let Some(PodFate::Running { uid }) = fate {
                    self.ready().set_pod_uid(call.lease_id, uid);
                    return Ok(Some(pod));
                }
            }
            // The Sandbox still speaks of the deleted pod, or the new one is not running yet.
            self.ready().remove(call.lease_id);
            let left = deadline.saturating_sub(self.clock().now_ms());
            self.clock().sleep(REPLACEMENT_POLL_MS.min(left)).await;
        }
    }

    /// The execute result of the exec of pod `pod`.
    async fn finish(
        &self,
        call: &Call<'_>,
        pod: &str,
        outcome: Result<ExecOutput, Error>,
        metadata: Value,
    ) -> Value {
        let failed = |stderr: String, timed_out: bool| {
            let stderr = append_network_egress_deny_hint(&stderr, call.grant);
            execute_result(
                Value::Null,
                timed_out,
                String::new(),
                stderr,
                metadata.clone(),
            )
        };
        match outcome {
            Ok(output) => {
                let deleted =
                    matches!(output.exit_code, 137 | 143) && self.pod_deleted(call, pod).await;
                completed(call, output, metadata, deleted.then_some(pod)).await
            }
            Err(Error::Timeout(message)) => failed(message, true),
            Err(Error::Transport(message)) => match self.pod_deleted(call, pod).await {
                true => failed(pod_deleted_note(call.namespace, pod), false),
                false => failed(message, false),
            },
            Err(err) => failed(exec_failure_message(&err, pod), false),
        }
    }
}

/// The stderr of an exec that failed before its command started, or otherwise than by its
/// watchdog or its connection.
fn exec_failure_message(err: &Error, pod: &str) -> String {
    match err {
        Error::Api {
            code: 0, message, ..
        } => exec_unreachable_message(pod, AGENT_CONTAINER, message),
        Error::Api { code, message, .. } => {
            // The API server's own Status message, without the client's `HTTP-Code:` prefix.
            let said = err
                .status_body()
                .and_then(|s| s.get("message"))
                .and_then(Value::as_str)
                .filter(|m| !m.is_empty())
                .unwrap_or(message);
            exec_refused_message(*code, pod, AGENT_CONTAINER, said)
        }
        other => other.to_string(),
    }
}

/// The result of a command that ended with an exit status: stderr with the exit-status (or the
/// pod-deleted, when `deleted_pod` names it) and egress notes, the notes streamed too.
async fn completed(
    call: &Call<'_>,
    output: ExecOutput,
    mut metadata: Value,
    deleted_pod: Option<&str>,
) -> Value {
    let explained = match deleted_pod {
        Some(pod) => append_pod_deleted_note(output.stderr.clone(), call.namespace, pod),
        None => append_exit_status_hint(output.stderr.clone(), output.exit_code),
    };
    let stderr = append_network_egress_deny_hint(&explained, call.grant);
    // The notes are part of the result's stderr: stream them too, so the streamed
    // text stays the returned text.
    if let Some(hint) = stderr.strip_prefix(output.stderr.as_str())
        && !hint.is_empty()
    {
        call.sink
            .execution_log(OutputStream::Stderr, hint.to_string())
            .await;
    }
    // Only a cut result says so (the original's metadata has no such key).
    if output.truncated {
        metadata["outputTruncated"] = json!(true);
    }
    execute_result(
        json!(output.exit_code),
        false,
        output.stdout,
        stderr,
        metadata,
    )
}

/// The command's exec: the wrapped argv, the params' `stdin`, the budget left, a pid file so a
/// command past its deadline is ended (named after this worker, so that a later worker resuming
/// the lease can tell the commands of earlier workers, [`crate::lease::calls`]), and the
/// result's tail cap.
fn command_request(
    call: &Call<'_>,
    pod_name: &str,
    argv: Vec<String>,
    timeout_ms: u64,
) -> ExecRequest {
    let mut request = ExecRequest::new(call.namespace, pod_name, argv);
    request.stdin = call
        .params
        .get("stdin")
        .and_then(Value::as_str)
        .map(|s| s.as_bytes().to_vec())
        .unwrap_or_default();
    request.timeout_ms = timeout_ms;
    // Ended (TERM, then KILL) when the deadline passes, instead of running on in the pod.
    request.pid_file = Some(call.active.pid_file());
    // The result must fit the host's reply line (128 MiB); the live output has it all.
    request.keep_tail_bytes = Some(crate::exec::RESULT_TAIL_BYTES);
    request
}

/// Runs the command, forwarding its output to the host as it arrives.
async fn exec_command(call: &Call<'_>, request: ExecRequest) -> Result<ExecOutput, Error> {
    // Bounded: a host that takes chunks slower than the pod writes them slows the exec's
    // stream down instead of letting output queue up here.
    let (tap, mut chunks) = crate::exec::output_tap();
    if let Some(pid_file) = &request.pid_file {
        call.active.command_started(RunningCommand {
            exec: call.connection.exec.clone(),
            namespace: request.namespace.clone(),
            pod: request.pod.clone(),
            pid_file: pid_file.clone(),
        });
    }
    let run = call.connection.exec.exec(request, Some(tap));
    let forward = async {
        while let Some((stream, chunk)) = chunks.recv().await {
            call.sink.execution_log(stream, chunk).await;
        }
    };
    let (outcome, ()) = tokio::join!(run, forward);
    // Ended, or ended by the exec's own kill when it failed.
    call.active.command_ended();
    outcome
}
