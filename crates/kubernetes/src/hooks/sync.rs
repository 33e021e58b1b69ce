//! `onEnvironmentSyncIn` / `onEnvironmentSyncOut`: find the lease's Sandbox pod
//! (waiting for it to be Ready once per lease and worker), then hand the operations to the sync
//! engine ([`crate::sync`]). Only the sandbox-cr backend syncs.

use sandbox_core::{HostSink, ProviderError, ProviderResult};
use serde_json::Value;

use super::{EXECUTE_POLL_MS, LeaseView, parse_config_for_hook};
use crate::cluster::api_bound;
use crate::cluster::{PollOptions, ReadinessLimits, WorkloadOrchestrator};
use crate::config::Backend;
use crate::error::Error;
use crate::lease::calls::SYNC_CANCELLED;
use crate::lease::lease_end::idle_ms;
use crate::provider::KubernetesProvider;
use crate::sync::{SyncOperation, SyncTarget, perform_sync_in, perform_sync_out};
use js_compat::{string, value};

/// A file sync on a lease whose metadata has no workspace remote dir (A1 in the error reference).
pub const SYNC_REQUIRES_REMOTE_DIR: &str =
    "Kubernetes file sync requires a workspace remote dir on the lease metadata.";
/// A file sync called without a provider lease id (A2 in the error reference).
pub const SYNC_REQUIRES_LEASE_ID: &str = "Kubernetes file sync requires a provider lease ID.";
/// A file sync whose Sandbox has no pod name to exec in (A4 in the error reference).
pub const SYNC_POD_UNRESOLVED: &str =
    "Kubernetes file sync could not resolve the Sandbox pod name.";

/// The message of a file sync on a lease of a backend other than `sandbox-cr` (A3 in the error
/// reference).
pub fn sync_backend_unsupported_message(lease_backend: &str) -> String {
    format!(
        "Kubernetes file sync is only supported on the sandbox-cr backend (lease backend: {lease_backend})."
    )
}

impl KubernetesProvider {
    /// `resolveSyncRemoteDir` + `resolveSyncPodExec`: the remote dir, the pod and the timeout.
    async fn resolve_sync(
        &self,
        params: &Value,
        sink: &dyn HostSink,
    ) -> ProviderResult<(String, SyncTarget, u64)> {
        let lease = params.get("lease");
        let remote_dir = lease
            .and_then(|l| l.get("metadata"))
            .and_then(|m| m.get("remoteCwd"))
            .and_then(Value::as_str)
            .map(|d| string::trim(d).to_string())
            .filter(|d| !d.is_empty())
            .ok_or_else(|| ProviderError::new(SYNC_REQUIRES_REMOTE_DIR))?;
        let lease_id_value = lease.and_then(|l| l.get("providerLeaseId"));
        if !value::truthy(lease_id_value) {
            return Err(ProviderError::new(SYNC_REQUIRES_LEASE_ID));
        }
        let lease_id = value::to_string_or_undefined(lease_id_value);
        let config = parse_config_for_hook(params)?;
        let view = LeaseView::new(lease.and_then(|l| l.get("metadata")));
        let namespace = view.namespace(&config, params.get("companyId"))?;
        let (backend, backend_name) = view.backend(&config);
        if backend != Backend::SandboxCr {
            return Err(ProviderError::new(sync_backend_unsupported_message(
                &backend_name,
            )));
        }
        let timeout_ms = (config.pod_activity_deadline_sec * 1000.0) as u64;
        let connection = self.connect(&config).await?;
        // A hung API server cannot hang the sync: each lookup is bounded ([`api_bound::LOOKUP`]);
        // the readiness wait as a whole by its timeout, a hung poll ending as the contract's
        // readiness timeout.
        let lookup_ms = api_bound::bound_ms(params, api_bound::LOOKUP);
        let version = self.lease_sandbox_api_version(&connection, &view);
        let version = api_bound::with_api_bound(lookup_ms, version).await?;
        let orchestrator = WorkloadOrchestrator::SandboxCr(version);
        // Issue #38: the lease is in use for up to the sync's timeout; its end moves first.
        let lease_ref = (namespace.as_str(), lease_id.as_str());
        let bounds = (idle_ms(&config), timeout_ms);
        self.keep_lease_alive(&connection, version, lease_ref, bounds, sink)
            .await;
        if !self.ready().contains(&lease_id) {
            let wait = orchestrator.wait_for_completion(
                connection.api.as_ref(),
                self.clock(),
                &namespace,
                &lease_id,
                PollOptions {
                    timeout_ms,
                    poll_ms: EXECUTE_POLL_MS,
                },
                ReadinessLimits::of(&config),
            );
            let ready_timeout = || Error::SandboxReadyTimeout {
                namespace: namespace.clone(),
                name: lease_id.clone(),
                timeout_ms,
            };
            api_bound::wait_within(timeout_ms, wait, ready_timeout).await?;
            self.ready().insert(&lease_id);
        }
        let mut pod = view
            .metadata
            .and_then(|m| m.get("podName"))
            .filter(|p| value::truthy(Some(p)))
            .map(|p| value::to_string_or_undefined(Some(p)));
        if pod.is_none() {
            let find = orchestrator.find_pod(connection.api.as_ref(), &namespace, &lease_id);
            pod = api_bound::with_api_bound(lookup_ms, find).await?;
        }
        let pod = pod
            .filter(|p| !p.is_empty())
            .ok_or_else(|| ProviderError::new(SYNC_POD_UNRESOLVED))?;
        Ok((
            remote_dir,
            SyncTarget {
                exec: connection.exec.clone(),
                namespace,
                pod,
            },
            timeout_ms,
        ))
    }

    /// `onEnvironmentSyncIn({config, companyId, lease, operations})` →
    /// `{operations: [{operationId, filesTransferred, bytesTransferred}]}`.
    /// Worker shutdown stops either direction where it is ([`stoppable`]).
    pub async fn sync_in(&self, params: &Value, sink: &dyn HostSink) -> ProviderResult<Value> {
        stoppable(
            self,
            Box::pin(async {
                let (remote_dir, target, timeout_ms) = self.resolve_sync(params, sink).await?;
                let operations = SyncOperation::parse_all(params.get("operations"));
                perform_sync_in(&target, &operations, &remote_dir, timeout_ms).await
            }),
        )
        .await
    }

    /// `onEnvironmentSyncOut({config, companyId, lease, operations})`.
    pub async fn sync_out(&self, params: &Value, sink: &dyn HostSink) -> ProviderResult<Value> {
        stoppable(
            self,
            Box::pin(async {
                let (remote_dir, target, timeout_ms) = self.resolve_sync(params, sink).await?;
                let operations = SyncOperation::parse_all(params.get("operations"));
                perform_sync_out(&target, &operations, &remote_dir, timeout_ms, None).await
            }),
        )
        .await
    }
}

/// Runs a sync as a call worker shutdown can stop: stopped, it rejects with [`SYNC_CANCELLED`]
/// at once (its exec streams close, and its host temp dirs go with its future). The callers
/// box the sync: its future is large, and each caller would otherwise carry it twice.
async fn stoppable(
    provider: &KubernetesProvider,
    sync: impl Future<Output = ProviderResult<Value>>,
) -> ProviderResult<Value> {
    let call = provider
        .calls()
        .begin()
        .ok_or_else(|| ProviderError::new(SYNC_CANCELLED))?;
    call.until_stopped(sync)
        .await
        .unwrap_or_else(|| Err(ProviderError::new(SYNC_CANCELLED)))
}
