//! What one execute call carries through its steps ([`Call`]: the params, the lease, the
//! connection, the budget), and the result every execute past the lease-id check returns.

use sandbox_core::HostSink;
use serde_json::{Map, Value};

use crate::builders::scoped_egress::ScopedNetworkEgressGrant;
use crate::cluster::ReadinessLimits;
use crate::cluster::api_bound;
use crate::exec::EXEC_FLOOR_MS;
use crate::lease::calls::ActiveCall;
use crate::lease::{Connection, LeaseView};

/// The Job completion poll of execute, and its Sandbox readiness poll where the API server
/// refuses to let the Sandbox be watched (the original polls every 2 s).
pub const EXECUTE_POLL_MS: u64 = 2_000;

/// The message of an execute whose Sandbox pod did not turn Ready in time (B6 in the error
/// reference).
pub fn sandbox_not_ready_message(timeout_ms: u64) -> String {
    format!("Sandbox pod did not become Ready within {timeout_ms}ms")
}

/// `{exitCode, signal: null, timedOut, stdout, stderr, metadata}`: every execute result past
/// the lease-id check (G-exec2: Kubernetes exec reports no signal, so none is ever claimed). The
/// output strings are moved in (`json!` would copy them, and stdout can be tens of MiB).
pub(super) fn execute_result(
    exit_code: Value,
    timed_out: bool,
    stdout: String,
    stderr: String,
    metadata: Value,
) -> Value {
    let mut result = Map::new();
    result.insert("exitCode".into(), exit_code);
    result.insert("signal".into(), Value::Null);
    result.insert("timedOut".into(), timed_out.into());
    result.insert("stdout".into(), Value::String(stdout));
    result.insert("stderr".into(), Value::String(stderr));
    result.insert("metadata".into(), metadata);
    Value::Object(result)
}

/// One execute call past its config stage: the params, the lease it runs in, the connection and
/// the call's budget. Both backends' steps read it.
pub(super) struct Call<'a> {
    pub(super) params: &'a Value,
    pub(super) connection: &'a Connection,
    pub(super) lease: &'a LeaseView<'a>,
    pub(super) lease_id: &'a str,
    pub(super) namespace: &'a str,
    pub(super) grant: &'a ScopedNetworkEgressGrant,
    /// The params' `timeoutMs`, or the config's pod activity deadline.
    pub(super) timeout_ms: u64,
    /// The config's pod activity deadline, the lease's idle time before it ends (issue #38).
    pub(super) idle_ms: u64,
    /// The config's limits of the Sandbox ready-wait.
    pub(super) readiness: ReadinessLimits,
    pub(super) sink: &'a dyn HostSink,
    /// The call as worker shutdown sees it: the command it runs is recorded there.
    pub(super) active: &'a ActiveCall<'a>,
}

impl Call<'_> {
    /// What is left of the call's budget `elapsed_ms` into it, never below the exec floor.
    pub(super) fn budget_left_ms(&self, elapsed_ms: u64) -> u64 {
        api_bound::remaining_ms(self.timeout_ms, elapsed_ms, EXEC_FLOOR_MS)
    }
}
