//! The lease hooks of [`KubernetesProvider`] other than acquire (in `acquire.rs`) and the probe
//! (in `probe.rs`, with the probe's summaries here): resume, release, destroy, realize
//! workspace and shutdown. Every API request of these hooks is
//! bounded ([`crate::cluster::api_bound`]); release and destroy try every Sandbox API version
//! when the lease's cannot be learnt.

use sandbox_core::{HostSink, ProviderError, ProviderResult};
use serde_json::{Map, Value, json};

use super::{ConfigStage, config_stage_of_destroy, config_stage_of_release, parse_config_for_hook};
use crate::cluster::api_bound;
use crate::cluster::{
    DestroyLease, ReadinessLimits, ResumeCheck, ResumeCheckResult, SandboxApiVersion,
    WorkloadOrchestrator, check_lease_resumable, delete_sandbox_cr_trying_versions,
    destroy_lease_resources_trying_versions,
};
use crate::config::Backend;
use crate::lease::LeaseView;
use crate::lease::lease_end::idle_ms;
use crate::lease::left_commands::end_left_commands;
use crate::login::LoginLeaseScope;
use crate::provider::KubernetesProvider;
use js_compat::{string, value};

/// The namespace paperclip-server runs in (callback rules).
pub const PAPERCLIP_SERVER_NAMESPACE: &str = "paperclip";
/// Probe summary when the cluster cannot be reached.
pub const PROBE_FAILED_SUMMARY: &str = "Kubernetes cluster probe failed.";
/// G1 (G-sync/egress): an acquire failed after its workload was created, and deleting what it
/// had created failed too. Deliberately without the underlying messages: a Secret create error
/// may echo the Secret's contents.
pub const ACQUIRE_CLEANUP_INCOMPLETE: &str =
    "Kubernetes sandbox lease acquisition failed and cleanup was incomplete.";

/// The probe's success summary.
pub fn probe_ok_summary(namespace: &str) -> String {
    format!("Kubernetes cluster reachable. Tenant namespace: {namespace}.")
}

/// What resume keeps of its bound for the pod lookups after its ready-wait.
const RESUME_LOOKUP_RESERVE_MS: u64 = 4_000;
/// What resume keeps of its bound after ending the commands earlier workers left, to answer.
const RESUME_REPLY_RESERVE_MS: u64 = 500;

impl KubernetesProvider {
    /// `onEnvironmentResumeLease`: never deletes anything. Its API requests are bounded
    /// ([`crate::cluster::api_bound`]).
    pub async fn resume_lease(&self, params: &Value, sink: &dyn HostSink) -> ProviderResult<Value> {
        let ms = api_bound::bound_ms(params, api_bound::RESUME);
        let ends_at = self.clock().now_ms().saturating_add(ms);
        api_bound::with_api_bound(ms, self.resume_unbounded(params, ends_at, sink)).await
    }

    /// Resume within its bound, which ends at `ends_at` on the provider's clock.
    async fn resume_unbounded(
        &self,
        params: &Value,
        ends_at: u64,
        sink: &dyn HostSink,
    ) -> ProviderResult<Value> {
        let config = parse_config_for_hook(params)?;
        let lease = LeaseView::new(params.get("leaseMetadata"));
        let namespace = lease.namespace(&config, params.get("companyId"))?;
        let (backend, backend_name) = lease.backend(&config);
        let lease_id = params
            .get("providerLeaseId")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let secret_name = lease.secret_name(&lease_id);
        let connection = self.connect(&config).await?;
        let sandbox_api_version = match backend {
            Backend::SandboxCr => Some(self.lease_sandbox_api_version(&connection, &lease).await?),
            Backend::Job => None,
        };
        if let Some(version) = sandbox_api_version {
            // Issue #38: the resumed lease is in use again; its end moves before the check.
            let hook_ms = ends_at.saturating_sub(self.clock().now_ms());
            let lease_ref = (namespace.as_str(), lease_id.as_str());
            let bounds = (idle_ms(&config), hook_ms);
            self.keep_lease_alive(&connection, version, lease_ref, bounds, sink)
                .await;
        }
        // The ready-wait leaves the pod lookups after it what it keeps of the bound.
        let mut ready_wait = ResumeCheck::DEFAULT_READY_WAIT;
        let left_ms = ends_at.saturating_sub(self.clock().now_ms());
        ready_wait.timeout_ms = ready_wait
            .timeout_ms
            .min(left_ms.saturating_sub(RESUME_LOOKUP_RESERVE_MS));
        let check = ResumeCheck {
            namespace: namespace.clone(),
            name: lease_id.clone(),
            backend,
            ready_wait,
            readiness: ReadinessLimits::of(&config),
            sandbox_api_version: sandbox_api_version.unwrap_or_default(),
        };
        let result = check_lease_resumable(connection.api.as_ref(), self.clock(), &check).await?;
        let (pod_name, phase) = match result {
            ResumeCheckResult::NotResumable { reason } => {
                self.login().forget(&lease_id);
                self.lease_ends().forget(&lease_id);
                return Ok(
                    json!({"providerLeaseId": null, "metadata": {"expired": true, "reason": reason}}),
                );
            }
            ResumeCheckResult::Resumable { pod_name, phase } => (pod_name, phase),
        };
        self.uploads().remove(&lease_id);
        if backend == Backend::SandboxCr {
            self.ready().insert(&lease_id);
            // Issue #38: what a dead worker's executes left running in the pod ends now.
            if let Some(pod) = pod_name.as_deref().filter(|p| !p.is_empty()) {
                let left_ms = ends_at.saturating_sub(self.clock().now_ms());
                let keep = self.calls().pid_file_prefix();
                let bound = left_ms.saturating_sub(RESUME_REPLY_RESERVE_MS);
                if bound > 0 {
                    end_left_commands(&connection, &namespace, pod, &keep, bound, sink).await;
                }
            }
        }
        let mut metadata = Map::new();
        metadata.insert("namespace".into(), json!(namespace));
        metadata.insert("jobName".into(), json!(lease_id));
        metadata.insert("podName".into(), json!(pod_name));
        metadata.insert("secretName".into(), json!(secret_name));
        metadata.insert("phase".into(), json!(phase.as_str()));
        metadata.insert("backend".into(), json!(backend_name));
        metadata.insert(
            "scopedNetworkPolicyName".into(),
            json!(lease.string("scopedNetworkPolicyName")),
        );
        metadata.insert("scopedNetworkEgress".into(), lease.grant().to_json());
        metadata.insert(
            "nativeFileSyncUnsupported".into(),
            json!(backend_name != "sandbox-cr"),
        );
        if let Some(expires_at) = lease.string("expiresAt").filter(|s| !s.is_empty()) {
            metadata.insert("expiresAt".into(), json!(expires_at));
        }
        metadata.insert("remoteCwd".into(), json!(lease.remote_cwd()));
        if let Some(version) = sandbox_api_version {
            metadata.insert("sandboxApiVersion".into(), json!(version.version()));
        }
        metadata.insert("resumedLease".into(), json!(true));
        if backend == Backend::SandboxCr
            && let Some(pod) = pod_name.as_ref().filter(|p| !p.is_empty())
        {
            self.login().remember(
                &lease_id,
                LoginLeaseScope {
                    company_id: params.get("companyId").cloned().unwrap_or(Value::Null),
                    environment_id: params.get("environmentId").cloned().unwrap_or(Value::Null),
                    lease_id: lease_id.clone(),
                    namespace: namespace.clone(),
                    pod_name: Some(pod.clone()),
                    expires_at: lease
                        .string("expiresAt")
                        .filter(|s| !s.is_empty())
                        .map(str::to_string),
                    sandbox_api_version: check.sandbox_api_version,
                    config: config.clone(),
                },
            );
        }
        Ok(json!({"providerLeaseId": lease_id, "metadata": metadata}))
    }

    /// `onEnvironmentReleaseLease`: deletes the workload (Foreground, 404 ignored); the pod and
    /// Secret go by cascade. `None` is the original's `undefined`.
    /// Its API requests are bounded ([`crate::cluster::api_bound`]).
    pub async fn release_lease(
        &self,
        params: &Value,
        sink: &dyn HostSink,
    ) -> ProviderResult<Option<Value>> {
        let ms = api_bound::bound_ms(params, api_bound::RELEASE);
        api_bound::with_api_bound(ms, self.release_unbounded(params, sink)).await
    }

    async fn release_unbounded(
        &self,
        params: &Value,
        _sink: &dyn HostSink,
    ) -> ProviderResult<Option<Value>> {
        let config = match config_stage_of_release(params)? {
            ConfigStage::Return(_) => return Ok(None),
            ConfigStage::Proceed(config) => config,
        };
        let lease = LeaseView::new(params.get("leaseMetadata"));
        let namespace = lease.namespace(&config, params.get("companyId"))?;
        let connection = self.connect(&config).await?;
        let (backend, _) = lease.backend(&config);
        let lease_id = value::to_string_or_undefined(params.get("providerLeaseId"));
        self.uploads().remove(&lease_id);
        self.ready().forget(&lease_id);
        self.login().forget(&lease_id);
        self.lease_ends().forget(&lease_id);
        let api = connection.api.as_ref();
        let released = match backend {
            Backend::Job => {
                WorkloadOrchestrator::Job
                    .release(api, &namespace, &lease_id)
                    .await
            }
            Backend::SandboxCr => {
                let versions = self.sandbox_versions_to_delete(&connection, &lease).await;
                delete_sandbox_cr_trying_versions(api, &versions, &namespace, &lease_id).await
            }
        };
        match released {
            Ok(()) => Ok(None),
            Err(err) if err.is_not_found() => Ok(None),
            Err(err) => Err(err.into()),
        }
    }

    /// `onEnvironmentDestroyLease`: deletes the workload, the pod and the Secret.
    /// Its API requests are bounded ([`crate::cluster::api_bound`]).
    pub async fn destroy_lease(
        &self,
        params: &Value,
        sink: &dyn HostSink,
    ) -> ProviderResult<Option<Value>> {
        let ms = api_bound::bound_ms(params, api_bound::RELEASE);
        api_bound::with_api_bound(ms, self.destroy_unbounded(params, sink)).await
    }

    async fn destroy_unbounded(
        &self,
        params: &Value,
        _sink: &dyn HostSink,
    ) -> ProviderResult<Option<Value>> {
        let config = match config_stage_of_destroy(params)? {
            ConfigStage::Return(_) => return Ok(None),
            ConfigStage::Proceed(config) => config,
        };
        let lease = LeaseView::new(params.get("leaseMetadata"));
        let namespace = lease.namespace(&config, params.get("companyId"))?;
        let (backend, _) = lease.backend(&config);
        let lease_id = value::to_string_or_undefined(params.get("providerLeaseId"));
        let secret_name = lease.secret_name(&lease_id);
        let pod_name = lease
            .string("podName")
            .filter(|p| !p.is_empty())
            .map(str::to_string);
        self.uploads().remove(&lease_id);
        self.ready().forget(&lease_id);
        self.login().forget(&lease_id);
        self.lease_ends().forget(&lease_id);
        let connection = self.connect(&config).await?;
        let versions = match backend {
            Backend::SandboxCr => self.sandbox_versions_to_delete(&connection, &lease).await,
            Backend::Job => vec![SandboxApiVersion::default()],
        };
        let resources = DestroyLease {
            namespace,
            name: lease_id,
            backend,
            pod_name,
            secret_name: Some(secret_name),
            sandbox_api_version: versions[0],
        };
        destroy_lease_resources_trying_versions(connection.api.as_ref(), &resources, &versions)
            .await?;
        Ok(None)
    }

    /// `onEnvironmentRealizeWorkspace({workspace})`: no cluster call.
    pub async fn realize_workspace(
        &self,
        params: &Value,
        _sink: &dyn HostSink,
    ) -> ProviderResult<Value> {
        let workspace = match params.get("workspace") {
            None => {
                return Err(ProviderError::cannot_read_properties(
                    "undefined",
                    "remotePath",
                ));
            }
            Some(Value::Null) => {
                return Err(ProviderError::cannot_read_properties("null", "remotePath"));
            }
            Some(workspace) => workspace,
        };
        let remote_path = workspace
            .get("remotePath")
            .and_then(Value::as_str)
            .map(string::trim)
            .filter(|p| !p.is_empty());
        let cwd = remote_path.unwrap_or("/workspace");
        Ok(json!({"cwd": cwd, "metadata": {"provider": "kubernetes", "remoteCwd": cwd}}))
    }

    /// `onEnvironmentShutdown`: answers every execute and sync in flight as cancelled and ends
    /// their commands in the pods, within the host's 10 s drain ([`crate::lease::calls`]), then
    /// forgets the worker's in-memory state.
    pub async fn shutdown(&self, _params: &Value, _sink: &dyn HostSink) -> ProviderResult<Value> {
        self.calls().stop_all(crate::lease::calls::STOP_BOUND).await;
        self.login().shutdown();
        self.ready().clear();
        self.uploads().clear();
        self.lease_ends().clear();
        Ok(Value::Null)
    }
}
