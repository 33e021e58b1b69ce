//! `onEnvironmentExecute`: a command in the lease's Sandbox pod, its output
//! streamed to the host as it arrives, or on the job backend the Job's whole log once it is done.
//!
//! The sandbox-cr path waits for the Sandbox to be Ready once per lease and worker, answers the
//! fast-upload chunk protocol without running anything until a flush, and otherwise runs the
//! command through the env/cwd wrapper. G-exec2: `cwd` is honoured, every result carries
//! `signal: null`, and exits 137/143 get an explanatory note on stderr. The command's exec, what
//! its result says when the exec fails or the pod is deleted under it, and the wait for a pod
//! being replaced are `execute_run`'s (issue #38); the call's state is `execute_call`'s.

use sandbox_core::{HostSink, OutputStream, ProviderError, ProviderResult};
use serde_json::{Value, json};

use crate::builders::scoped_egress::append_network_egress_deny_hint;
use crate::cluster::api_bound;
use crate::cluster::{PollOptions, ReadinessLimits, WorkloadOrchestrator};
use crate::config::{Backend, KubernetesConfig};
use crate::error::Error;
use crate::exec::ExecRequest;
use crate::exec::command::wrap_command_with_env;
use crate::exec::upload_interceptor::{UploadDecision, flush_script};
use crate::hooks::{ConfigStage, config_stage_of_execute};
use crate::lease::LeaseView;
use crate::lease::calls::{ActiveCall, EXECUTE_CANCELLED};
use crate::lease::lease_end::idle_ms;
use crate::provider::KubernetesProvider;
use js_compat::{string, value};

/// An execute whose Sandbox turned Ready without a resolvable pod name (B7 in the error reference).
pub const SANDBOX_POD_UNRESOLVED: &str = "Sandbox pod is Ready but podName could not be resolved.";
pub use super::execute_call::EXECUTE_POLL_MS;
use super::execute_call::{Call, execute_result};

pub use super::execute_call::sandbox_not_ready_message;

/// The params' `timeoutMs` (rounded up) when positive, else the config's pod activity deadline.
fn effective_timeout_ms(params: &Value, config: &KubernetesConfig) -> u64 {
    match params.get("timeoutMs").and_then(Value::as_f64) {
        Some(ms) if ms > 0.0 => ms.ceil() as u64,
        _ => (config.pod_activity_deadline_sec * 1000.0) as u64,
    }
}

/// The command as asked: `command` trimmed, and `args` each as JS's `String(v)`.
struct CommandLine {
    command: String,
    args: Vec<String>,
}

impl CommandLine {
    fn of(params: &Value) -> Self {
        let command = params
            .get("command")
            .and_then(Value::as_str)
            .map(|c| string::trim(c).to_string())
            .unwrap_or_default();
        let args: Vec<String> = params
            .get("args")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|v| value::to_string_or_undefined(Some(v)))
                    .collect()
            })
            .unwrap_or_default();
        Self { command, args }
    }

    /// The script of an `sh -c <script>` call (the fast-upload protocol's only form), read from
    /// the raw args: a script that is not a string is not one.
    fn shell_script<'p>(&self, params: &'p Value) -> Option<&'p str> {
        let raw_args = params.get("args").and_then(Value::as_array);
        match raw_args.map(Vec::as_slice) {
            Some([flag, Value::String(script), ..]) if self.command == "sh" && flag == "-c" => {
                Some(script.as_str())
            }
            _ => None,
        }
    }

    /// The argv before the env/cwd wrapper: the command with its args, a command line alone
    /// through a login shell, or a login shell when there is no command.
    fn into_argv(self) -> Vec<String> {
        match (self.command.is_empty(), self.args.is_empty()) {
            (false, false) => std::iter::once(self.command).chain(self.args).collect(),
            (false, true) => vec!["/bin/sh".into(), "-lc".into(), self.command],
            (true, _) => vec!["/bin/sh".into(), "-l".into()],
        }
    }
}

impl KubernetesProvider {
    /// `onEnvironmentExecute`. Output is streamed to `sink.execution_log` as it arrives; the
    /// streamed text equals the returned stdout/stderr (before the egress hint is appended).
    /// Worker shutdown stops it where it is: it rejects with [`EXECUTE_CANCELLED`] at once, and
    /// shutdown ends the command it had started ([`crate::lease::calls`]).
    pub async fn execute(&self, params: &Value, sink: &dyn HostSink) -> ProviderResult<Value> {
        let cancelled = || ProviderError::new(EXECUTE_CANCELLED);
        let active = self.calls().begin().ok_or_else(cancelled)?;
        // Boxed: the execute's future is large, and every caller would carry it twice.
        let call = Box::pin(self.execute_call(params, sink, &active));
        active
            .until_stopped(call)
            .await
            .unwrap_or_else(|| Err(cancelled()))
    }

    async fn execute_call(
        &self,
        params: &Value,
        sink: &dyn HostSink,
        active: &ActiveCall<'_>,
    ) -> ProviderResult<Value> {
        let config = match config_stage_of_execute(params)? {
            ConfigStage::Return(result) => return Ok(result),
            ConfigStage::Proceed(config) => config,
        };
        let lease_value = params.get("lease");
        let lease = LeaseView::new(lease_value.and_then(|l| l.get("metadata")));
        let lease_id =
            value::to_string_or_undefined(lease_value.and_then(|l| l.get("providerLeaseId")));
        let grant = lease.grant();
        let namespace = lease.namespace(&config, params.get("companyId"))?;
        let (backend, _) = lease.backend(&config);
        let connection = self.connect(&config).await?;
        let call = Call {
            params,
            connection: &connection,
            lease: &lease,
            lease_id: &lease_id,
            namespace: &namespace,
            grant: &grant,
            timeout_ms: effective_timeout_ms(params, &config),
            idle_ms: idle_ms(&config),
            readiness: ReadinessLimits::of(&config),
            sink,
            active,
        };
        match backend {
            Backend::Job => self.execute_job(&call).await,
            Backend::SandboxCr => self.execute_in_sandbox(&call).await,
        }
    }

    /// The sandbox-cr backend's execute: the Sandbox Ready (once per lease and worker), its pod,
    /// then a fast-upload answer or the command itself.
    async fn execute_in_sandbox(&self, call: &Call<'_>) -> ProviderResult<Value> {
        // A hung API server cannot outlast the call: the lookups before the exec are bounded by the
        // call's budget left (never below the original's exec floor), the readiness wait by its own
        // timeout.
        let version = self.lease_sandbox_api_version(call.connection, call.lease);
        let version = api_bound::with_api_bound(call.budget_left_ms(0), version).await?;
        let orchestrator = WorkloadOrchestrator::SandboxCr(version);
        let started = self.clock().now_ms();
        // Issue #38: the lease is in use for up to the call's timeout; its end moves first.
        let lease_ref = (call.namespace, call.lease_id);
        let bounds = (call.idle_ms, call.timeout_ms);
        self.keep_lease_alive(call.connection, version, lease_ref, bounds, call.sink)
            .await;
        let base_metadata = json!({
            "provider": "kubernetes", "backend": "sandbox-cr",
            "namespace": call.namespace, "sandboxName": call.lease_id,
        });
        if !self
            .wait_until_ready(call, &orchestrator, call.timeout_ms)
            .await?
        {
            return Ok(execute_result(
                Value::Null,
                true,
                String::new(),
                sandbox_not_ready_message(call.timeout_ms),
                base_metadata,
            ));
        }
        let Some(pod_name) = self.resolve_pod(call, &orchestrator, started).await? else {
            return Ok(execute_result(
                json!(1),
                false,
                String::new(),
                SANDBOX_POD_UNRESOLVED.into(),
                base_metadata,
            ));
        };
        let mut metadata = base_metadata;
        metadata["podName"] = json!(pod_name);

        let command = CommandLine::of(call.params);
        if let Some(script) = command.shell_script(call.params) {
            let elapsed_ms = || self.clock().now_ms().saturating_sub(started);
            let answered = self
                .answer_fast_upload(call, &pod_name, script, elapsed_ms, &mut metadata)
                .await;
            if let Some(result) = answered {
                return Ok(result);
            }
        }
        let argv = wrap_command_with_env(
            &command.into_argv(),
            call.params.get("env"),
            call.params.get("cwd"),
        );
        let run = (pod_name, argv, started);
        self.run_in_sandbox(call, &orchestrator, run, metadata)
            .await
    }

    /// The pod the command runs in: the lease's recorded `podName` when truthy, else the
    /// Sandbox's pod looked up within the budget left; `None` when neither names one.
    async fn resolve_pod(
        &self,
        call: &Call<'_>,
        orchestrator: &WorkloadOrchestrator,
        started: u64,
    ) -> ProviderResult<Option<String>> {
        let mut pod_name = call
            .lease
            .metadata
            .and_then(|m| m.get("podName"))
            .filter(|p| value::truthy(Some(p)))
            .map(|p| value::to_string_or_undefined(Some(p)));
        if pod_name.is_none() {
            let elapsed = self.clock().now_ms().saturating_sub(started);
            let api = call.connection.api.as_ref();
            let find = orchestrator.find_pod(api, call.namespace, call.lease_id);
            pod_name = api_bound::with_api_bound(call.budget_left_ms(elapsed), find).await?;
        }
        Ok(pod_name.filter(|p| !p.is_empty()))
    }

    /// The fast-upload protocol's answer to an `sh -c` script: `Some` result for a chunk (acked
    /// without running anything) or a flush (the assembled file written in one exec); `None`
    /// when the command is to run as asked.
    async fn answer_fast_upload(
        &self,
        call: &Call<'_>,
        pod_name: &str,
        script: &str,
        elapsed_ms: impl Fn() -> u64,
        metadata: &mut Value,
    ) -> Option<Value> {
        match self.uploads().decide(call.lease_id, script) {
            UploadDecision::Ack { .. } => {
                metadata["fastUpload"] = json!("ack");
                Some(execute_result(
                    json!(0),
                    false,
                    String::new(),
                    String::new(),
                    std::mem::take(metadata),
                ))
            }
            UploadDecision::Flush {
                target_path,
                payload,
            } => {
                metadata["fastUpload"] = json!("flush");
                let mut metadata = std::mem::take(metadata);
                let body = js_compat::base64::encode(&payload);
                let script = flush_script(&target_path, body.len());
                let argv = vec!["/bin/sh".to_string(), "-c".to_string(), script];
                let mut request = ExecRequest::new(call.namespace, pod_name, argv);
                request.stdin = body.into_bytes();
                request.timeout_ms = call.budget_left_ms(elapsed_ms());
                Some(match call.connection.exec.exec(request, None).await {
                    Ok(output) => {
                        metadata["uploadedBytes"] = json!(payload.len());
                        execute_result(
                            json!(output.exit_code),
                            false,
                            output.stdout,
                            output.stderr,
                            metadata,
                        )
                    }
                    // Issue #38: only the exec's watchdog is a timeout.
                    Err(err) => execute_result(
                        Value::Null,
                        matches!(err, Error::Timeout(_)),
                        String::new(),
                        format!("fast-upload flush failed: {err}"),
                        metadata,
                    ),
                })
            }
            // 1bbb5810 does not branch on an over-cap `error`: the chunk command runs in
            // the pod like any other.
            UploadDecision::Error { .. } | UploadDecision::Passthrough { .. } => None,
        }
    }

    /// The job backend's execute: waits for the Job and reports its whole log as stdout.
    async fn execute_job(&self, call: &Call<'_>) -> ProviderResult<Value> {
        let api = call.connection.api.as_ref();
        let orchestrator = WorkloadOrchestrator::Job;
        let options = PollOptions {
            timeout_ms: call.timeout_ms,
            poll_ms: EXECUTE_POLL_MS,
        };
        // A hung status poll ends the wait on its timeout like a Job still running;
        // the pod lookup and the log read after it share what is left (at least the exec floor).
        let started = self.clock().now_ms();
        let wait = orchestrator.wait_for_completion(
            api,
            self.clock(),
            call.namespace,
            call.lease_id,
            options,
            call.readiness,
        );
        let job_timeout = || Error::JobTimeout {
            namespace: call.namespace.to_string(),
            name: call.lease_id.to_string(),
            timeout_ms: call.timeout_ms,
        };
        let status = match api_bound::wait_within(call.timeout_ms, wait, job_timeout).await {
            Ok(status) => Some(status),
            Err(Error::JobTimeout { .. }) => None,
            Err(err) => return Err(err.into()),
        };
        let elapsed = self.clock().now_ms().saturating_sub(started);
        let (pod_name, log) = api_bound::with_api_bound(call.budget_left_ms(elapsed), async {
            let pod_name = match call.lease.metadata.and_then(|m| m.get("podName")) {
                Some(Value::String(name)) => Some(name.clone()),
                _ => {
                    orchestrator
                        .find_pod(api, call.namespace, call.lease_id)
                        .await?
                }
            };
            let log = match pod_name.as_deref().filter(|p| !p.is_empty()) {
                Some(pod) => orchestrator.read_logs(api, call.namespace, pod).await?,
                None => None,
            };
            Ok::<_, Error>((pod_name, log))
        })
        .await?;
        let mut stdout = String::new();
        if let Some(log) = log {
            call.sink
                .execution_log(OutputStream::Stdout, log.clone())
                .await;
            stdout = log;
        }
        let timed_out = status.is_none();
        let phase = status.as_ref().map(|s| s.phase.as_str());
        let exit_code = match &status {
            None => Value::Null,
            Some(s) if s.phase.as_str() == "Succeeded" => json!(0),
            Some(_) => json!(1),
        };
        Ok(execute_result(
            exit_code,
            timed_out,
            stdout,
            append_network_egress_deny_hint("", call.grant),
            json!({
                "provider": "kubernetes", "backend": "job", "namespace": call.namespace,
                "jobName": call.lease_id, "podName": pod_name, "phase": phase,
            }),
        ))
    }
}
