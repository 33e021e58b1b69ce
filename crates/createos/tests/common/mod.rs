//! Test bed: a real CreateOS emulator on loopback, a provider pointed at it, a recording host
//! sink, and readers for the emulator's request log.
#![allow(dead_code)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use createos::{CreateOsProvider, HostApiKey, Pacer, ProviderOptions};
use emulator::createos::{
    CreateOsEmulator, EmulatorOptions, FaultAction, FaultRule, RequestRecord,
};
use sandbox_core::{BoxFuture, HostSink, LogLevel, OutputStream, ProviderError};
use serde_json::{Value, json};

/// The API key every test uses. It must never show up in an error, a log line or a result.
pub const CANARY: &str = "canary-secret-4b1d9e07c3a2";
pub const SHAPE: &str = "s-1vcpu-1gb";
pub const COMPANY: &str = "co_test";
pub const ENVIRONMENT: &str = "env_test";

pub struct Harness {
    pub emu: CreateOsEmulator,
    pub provider: CreateOsProvider,
    pub sink: Arc<Recorder>,
}

/// One logged API request: method, path with its query, and the JSON body if any.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub method: String,
    pub path: String,
    pub body: Option<Value>,
}

impl Call {
    pub fn is(&self, method: &str, path: &str) -> bool {
        self.method == method && self.path == path
    }
}

impl std::fmt::Display for Call {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.method, self.path)?;
        if let Some(body) = &self.body {
            write!(f, " {body}")?;
        }
        Ok(())
    }
}

impl Harness {
    /// An emulator and a provider whose pacer does not space requests (FIFO only).
    pub async fn start() -> Self {
        Self::with_pacer(Pacer::new(Duration::ZERO)).await
    }

    pub async fn with_pacer(pacer: Arc<Pacer>) -> Self {
        Self::with(pacer, Duration::ZERO).await
    }

    /// `transition` is how long creating/pausing/resuming/forking last in the emulator; zero
    /// makes every call sequence deterministic (no transitional state is ever observed).
    pub async fn with(pacer: Arc<Pacer>, transition: Duration) -> Self {
        let emu = CreateOsEmulator::start(EmulatorOptions {
            api_key: Some(CANARY.into()),
            transition_delay: transition,
            ..EmulatorOptions::for_tests()
        })
        .await
        .expect("the CreateOS emulator starts (bwrap installed?)");
        let provider = CreateOsProvider::with_options(ProviderOptions {
            pacer,
            host_api_key: HostApiKey::Fixed(None),
        });
        Self {
            emu,
            provider,
            sink: Arc::new(Recorder::default()),
        }
    }

    pub fn config(&self) -> Value {
        json!({ "apiUrl": self.emu.base_url(), "apiKey": CANARY, "shape": SHAPE, "timeoutMs": 60_000 })
    }

    /// Base hook params with `config` merged over the default config, then `extra` on top.
    pub fn params_with(&self, config: Value, extra: Value) -> Value {
        let mut merged = self.config();
        merge(&mut merged, config);
        let mut params = json!({
            "driverKey": "createos",
            "companyId": COMPANY,
            "environmentId": ENVIRONMENT,
            "config": merged,
        });
        merge(&mut params, extra);
        params
    }

    pub fn params(&self, extra: Value) -> Value {
        self.params_with(json!({}), extra)
    }

    /// Acquire params for a reusable run (issue and workspace present).
    pub fn run_params(&self, config: Value) -> Value {
        self.params_with(
            config,
            json!({ "runId": "run_1", "issueId": "iss_1", "executionWorkspaceId": "ew_1" }),
        )
    }

    /// Execute params for `lease` (the acquire/resume result).
    pub fn exec_params(&self, lease: &Value, command: &str, args: &[&str], extra: Value) -> Value {
        self.exec_params_with(json!({}), lease, command, args, extra)
    }

    pub fn exec_params_with(
        &self,
        config: Value,
        lease: &Value,
        command: &str,
        args: &[&str],
        extra: Value,
    ) -> Value {
        let mut params = self.params_with(
            config,
            json!({
                "lease": { "providerLeaseId": lease["providerLeaseId"], "metadata": lease["metadata"], "expiresAt": null },
                "command": command,
                "args": args,
            }),
        );
        merge(&mut params, extra);
        params
    }

    /// Release/destroy/resume params for `lease`.
    pub fn lease_params(&self, config: Value, lease: &Value) -> Value {
        self.params_with(
            config,
            json!({ "providerLeaseId": lease["providerLeaseId"], "leaseMetadata": lease["metadata"] }),
        )
    }

    /// The API calls logged so far, `/v1` stripped, query appended.
    pub fn calls(&self) -> Vec<Call> {
        self.records().into_iter().map(to_call).collect()
    }

    pub fn records(&self) -> Vec<RequestRecord> {
        let records = self.emu.request_log();
        for record in &records {
            assert!(
                record.authorized,
                "request without the right X-Api-Key: {} {}",
                record.method, record.path
            );
        }
        records
    }

    pub fn clear_log(&self) {
        self.emu.clear_request_log();
    }

    pub fn fault(&self, rule: Value) -> u64 {
        let rule: FaultRule = serde_json::from_value(rule).expect("a valid fault rule");
        self.emu.add_fault(rule)
    }

    pub fn fault_action(&self, method: &str, path: &str, action: FaultAction) -> u64 {
        self.emu.add_fault(FaultRule {
            method: Some(method.into()),
            path: path.into(),
            query: None,
            nth: 1,
            times: 1,
            action,
        })
    }

    pub async fn acquire(&self, params: &Value) -> Value {
        let lease = self.provider.acquire_lease(params, &*self.sink).await;
        no_canary(&format!("{lease:?}"));
        lease.expect("acquire succeeds")
    }

    pub async fn destroy(&self, lease: &Value) {
        let params = self.lease_params(json!({}), lease);
        let result = self.provider.destroy_lease(&params, &*self.sink).await;
        assert_eq!(result, Ok(None));
    }

    /// Destroys sandbox `id`, as an operator would with the ID an error named: through a fresh
    /// provider (this one may be shut down), with no faults armed.
    pub async fn destroy_named(&self, id: &str) {
        self.emu.clear_faults();
        let lease = json!({ "providerLeaseId": id, "metadata": {
            "provider": "createos", "apiUrl": self.emu.base_url(),
            "companyId": COMPANY, "environmentId": ENVIRONMENT } });
        let params = self.lease_params(json!({}), &lease);
        let operator = CreateOsProvider::with_options(ProviderOptions {
            pacer: Pacer::new(Duration::ZERO),
            host_api_key: HostApiKey::Fixed(None),
        });
        assert_eq!(operator.destroy_lease(&params, &*self.sink).await, Ok(None));
    }

    /// Ends the test: nothing may be left running in the emulator, no canary anywhere the host
    /// could see it.
    pub async fn finish(self) {
        self.finish_keeping(0).await;
    }

    /// Ends the test with `sandboxes` deliberately left (kept warm), which are then removed.
    pub async fn finish_keeping(self, sandboxes: usize) {
        let counts = self.emu.counts();
        assert_eq!(counts.sandboxes, sandboxes, "sandboxes left: {counts:?}");
        if sandboxes == 0 {
            assert_eq!(counts.live_processes, 0, "processes left: {counts:?}");
        }
        self.sink.assert_no_canary();
        self.emu.shutdown().await;
    }
}

fn to_call(record: RequestRecord) -> Call {
    let path = record
        .path
        .strip_prefix("/v1")
        .unwrap_or(&record.path)
        .to_owned();
    let path = match record.query {
        Some(query) if !query.is_empty() => format!("{path}?{query}"),
        _ => path,
    };
    Call {
        method: record.method,
        path,
        body: record.body_json,
    }
}

pub fn merge(target: &mut Value, extra: Value) {
    if let (Some(target), Value::Object(extra)) = (target.as_object_mut(), extra) {
        for (key, value) in extra {
            target.insert(key, value);
        }
    }
}

/// Fails if the canary key occurs in `text`.
pub fn no_canary(text: &str) {
    assert!(!text.contains(CANARY), "the API key leaked: {text}");
}

/// The message of a failed hook, checked for the canary.
pub fn message<T: std::fmt::Debug>(result: Result<T, ProviderError>) -> String {
    let error = result.expect_err("the hook fails");
    no_canary(&error.message);
    error.message
}

/// Renders calls one per line for readable assertion failures.
pub fn show(calls: &[Call]) -> String {
    calls
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Checks the method and path of each call (bodies are asserted where they matter).
#[track_caller]
pub fn assert_route(calls: &[Call], expected: &[(&str, &str)]) {
    let got: Vec<(String, String)> = calls
        .iter()
        .map(|c| (c.method.clone(), c.path.clone()))
        .collect();
    let want: Vec<(String, String)> = expected
        .iter()
        .map(|(m, p)| (m.to_string(), p.to_string()))
        .collect();
    assert_eq!(got, want, "calls were:\n{}", show(calls));
}

/// A host that records everything and can be awaited on.
#[derive(Default)]
pub struct Recorder {
    pub logs: Mutex<Vec<(LogLevel, String)>>,
    pub chunks: Mutex<Vec<(OutputStream, String)>>,
    changed: tokio::sync::Notify,
}

impl Recorder {
    pub fn stdout(&self) -> String {
        self.text(OutputStream::Stdout)
    }

    pub fn stderr(&self) -> String {
        self.text(OutputStream::Stderr)
    }

    fn text(&self, stream: OutputStream) -> String {
        self.chunks
            .lock()
            .unwrap()
            .iter()
            .filter(|(s, _)| *s == stream)
            .map(|(_, c)| c.as_str())
            .collect()
    }

    /// Resolves once the streamed stdout contains `needle`.
    pub async fn wait_for_stdout(&self, needle: &str) {
        loop {
            let changed = self.changed.notified();
            if self.stdout().contains(needle) {
                return;
            }
            changed.await;
        }
    }

    /// Whether the worker log has `line` at `level`.
    pub fn has_logged(&self, level: LogLevel, line: &str) -> bool {
        self.logs
            .lock()
            .unwrap()
            .iter()
            .any(|(l, logged)| *l == level && logged == line)
    }

    pub fn assert_no_canary(&self) {
        for (_, line) in self.logs.lock().unwrap().iter() {
            no_canary(line);
        }
        for (_, chunk) in self.chunks.lock().unwrap().iter() {
            no_canary(chunk);
        }
    }
}

impl HostSink for Recorder {
    fn log(&self, level: LogLevel, message: &str) {
        self.logs.lock().unwrap().push((level, message.to_owned()));
    }

    fn execution_log(&self, stream: OutputStream, chunk: String) -> BoxFuture<'_, ()> {
        self.chunks.lock().unwrap().push((stream, chunk));
        self.changed.notify_waiters();
        Box::pin(async {})
    }

    fn login_output(&self, _: &str, _: &str, _: String) {}
    fn login_exit(&self, _: &str, _: &str, _: Option<i32>) {}
    fn duplex_data(&self, _: &str, _: &str, _: Vec<u8>) {}
    fn duplex_exit(&self, _: &str, _: &str, _: Option<i32>, _: bool) {}
}

/// A create body with its ownership name checked and taken out: the name must be `pc-` and 16
/// lower-case hex digits, and it comes last.
pub fn without_ownership_name(body: &Option<Value>) -> Option<Value> {
    let mut body = body.clone().expect("a JSON body");
    let map = body.as_object_mut().expect("a JSON object body");
    assert_eq!(
        map.keys().next_back().map(String::as_str),
        Some("name"),
        "the name comes last: {map:?}"
    );
    let name = map.remove("name").expect("name");
    assert!(is_ownership_name(&name), "{name}");
    Some(body)
}

/// `pc-` and 16 lower-case hex digits.
pub fn is_ownership_name(name: &Value) -> bool {
    name.as_str()
        .and_then(|n| n.strip_prefix(createos::client::OWNERSHIP_NAME_PREFIX))
        .is_some_and(|hex| {
            hex.len() == 16 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        })
}
