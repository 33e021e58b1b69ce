//! The lease hooks of [`KubernetesProvider`]: probe, acquire, resume,
//! release, destroy, realize workspace and shutdown, plus what they share with the other hook
//! families (the lease metadata as every hook reads it, the connection and the Sandbox API
//! version of a lease's cluster).
//!
//! Acquire does not wait for the Sandbox; it discovers the Sandbox API version first
//! (G-apiversion, sandbox-cr only), undoes what it created when a step after the workload claim
//! fails (G-sync/egress cleanup) and records `remoteCwd: /workspace` (G-remoteCwd). Every API
//! request of these hooks is bounded ([`crate::cluster::api_bound`]).

use std::time::{SystemTime, UNIX_EPOCH};

use sandbox_core::{HostSink, LogLevel, ProviderError, ProviderResult};
use serde_json::{Map, Value, json};

use super::{
    ConfigStage, INVALID_CONFIG_SUMMARY, cluster_err, config_stage_of_destroy,
    config_stage_of_release, parse_config_for_hook,
};
use crate::builders::images::resolve_image;
use crate::builders::sandbox_cr::{HardStop, SandboxCrManifestInput, build_sandbox_cr_manifest};
use crate::builders::scoped_egress::{
    ADAPTER_EGRESS_POLICY_SUFFIX, NETWORK_EGRESS_GRANT_PATH, ScopedEgressPolicyInput,
    ScopedNetworkEgressGrant, ScopedPolicyBaseRules, parse_scoped_network_egress_grant,
};
use crate::builders::string_map::assign;
use crate::builders::{
    ContainerResources, JobManifestInput, LabelsInput, TENANT_SERVICE_ACCOUNT,
    build_adapter_env_from_process, build_job_manifest, new_run_name, paperclip_labels,
    run_secret_name,
};
use crate::cluster::api_bound;
use crate::cluster::{
    DestroyLease, PerRunSecret, ResumeCheck, ResumeCheckResult, SandboxApiVersion, TenantInput,
    TenantResourceQuota, WorkloadOrchestrator, check_lease_resumable, create_per_run_secret,
    create_scoped_network_egress_policy_or_release_workload, delete_sandbox_cr_trying_versions,
    destroy_lease_resources, destroy_lease_resources_trying_versions, ensure_tenant,
};
use crate::config::{Backend, KubernetesConfig};
use crate::error::Error;
use crate::lease::precheck::{prepare_acquire, tenant_namespace};
use crate::lease::{DEFAULT_REMOTE_CWD, LeaseView};
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

fn wall_now_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_millis() as f64)
}

fn random_below_32() -> u32 {
    let mut byte = [0u8; 1];
    getrandom::fill(&mut byte).expect("OS randomness");
    u32::from(byte[0] & 0x1f)
}

/// 32 random bytes as 64 lower-case hex characters.
pub fn generate_bootstrap_token() -> String {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("OS randomness");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Deletes what a failed acquire created (the G-sync/egress acquire cleanup): the workload, and the per-run Secret
/// by name (it may exist without its owner having been recorded anywhere); the scoped egress
/// policies go with the workload through their ownerReferences. Returns the error the hook
/// rejects with: the original one, or [`ACQUIRE_CLEANUP_INCOMPLETE`] if cleaning up failed.
async fn undo_failed_acquire(
    api: &dyn crate::cluster::ClusterApi,
    created: &DestroyLease,
    err: Error,
) -> ProviderError {
    // A fresh bound: the acquire's own may be spent (a hung step), and the cleanup must run.
    match crate::cluster::api_bound::with_fresh_bound(destroy_lease_resources(api, created)).await {
        Ok(()) => err.into(),
        Err(_) => ProviderError::new(ACQUIRE_CLEANUP_INCOMPLETE),
    }
}

impl KubernetesProvider {
    /// `onEnvironmentProbe({config, companyId})`: never throws for cluster errors. Its API
    /// requests are bounded ([`crate::cluster::api_bound`]).
    pub async fn probe(&self, params: &Value, sink: &dyn HostSink) -> ProviderResult<Value> {
        let ms = api_bound::bound_ms(params, api_bound::PROBE);
        api_bound::with_api_bound(ms, self.probe_unbounded(params, sink)).await
    }

    async fn probe_unbounded(&self, params: &Value, _sink: &dyn HostSink) -> ProviderResult<Value> {
        let config = match KubernetesConfig::parse_input(params.get("config")) {
            Ok(config) => config,
            Err(issues) => {
                return Ok(json!({
                    "ok": false,
                    "summary": INVALID_CONFIG_SUMMARY,
                    "metadata": { "errors": issues.messages() },
                }));
            }
        };
        let namespace = tenant_namespace(&config, params.get("companyId"))?;
        let reached = async {
            let connection = self.connect(&config).await?;
            match connection
                .api
                .list_namespaced_pod(json!({"namespace": namespace}))
                .await
            {
                Ok(_) => Ok(()),
                Err(err) if err.is_not_found() => Ok(()),
                Err(err) => Err(cluster_err(err)),
            }
        };
        Ok(match reached.await {
            Ok(()) => json!({
                "ok": true,
                "summary": probe_ok_summary(&namespace),
                "metadata": {"namespace": namespace, "provider": "kubernetes"},
            }),
            Err(err) => json!({
                "ok": false,
                "summary": PROBE_FAILED_SUMMARY,
                "metadata": {"namespace": namespace, "provider": "kubernetes", "error": err.message},
            }),
        })
    }

    /// `onEnvironmentAcquireLease`, its API requests bounded ([`crate::cluster::api_bound`]); a step cut
    /// at the bound fails like any other, through the partial-failure cleanup.
    pub async fn acquire_lease(
        &self,
        params: &Value,
        sink: &dyn HostSink,
    ) -> ProviderResult<Value> {
        let ms = api_bound::bound_ms(params, api_bound::ACQUIRE);
        api_bound::with_api_bound(ms, self.acquire_unbounded(params, sink)).await
    }

    async fn acquire_unbounded(
        &self,
        params: &Value,
        sink: &dyn HostSink,
    ) -> ProviderResult<Value> {
        let plan = prepare_acquire(params, wall_now_ms(), &mut |line| {
            sink.log(LogLevel::Warn, line)
        })?;
        let config = &plan.config;
        let namespace = plan.namespace.as_str();
        let connection = self.connect(config).await?;
        let api = connection.api.as_ref();
        let company_id = params
            .get("companyId")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let run_id = params
            .get("runId")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let is_sandbox = config.backend == Backend::SandboxCr;
        // G-apiversion: before anything is provisioned, so a cluster without the Sandbox API
        // is left untouched. The job backend never asks.
        let sandbox_api_version = if is_sandbox {
            Some(
                self.discover_sandbox_api_version(&connection)
                    .await
                    .map_err(cluster_err)?,
            )
        } else {
            None
        };
        let version = sandbox_api_version.unwrap_or_default();

        let tenant = TenantInput {
            namespace: namespace.to_string(),
            company_id: company_id.to_string(),
            paperclip_server_namespace: PAPERCLIP_SERVER_NAMESPACE.into(),
            paperclip_server_pod_selector: Some(config.paperclip_server_pod_selector.clone())
                .filter(|s| !s.is_empty()),
            service_account_annotations: config.service_account_annotations.clone(),
            egress_mode: config.egress_mode,
            egress_allow_fqdns: Vec::new(),
            egress_allow_cidrs: Vec::new(),
            resource_quota: TenantResourceQuota::default(),
        };
        ensure_tenant(api, &tenant).await?;

        let job_name = new_run_name(wall_now_ms(), random_below_32);
        let secret_name = run_secret_name(&job_name);
        let labels = paperclip_labels(&LabelsInput {
            run_id: run_id.into(),
            agent_id: run_id.into(),
            company_id: company_id.into(),
            adapter_type: plan.effective_adapter_type.clone(),
        });
        let image = resolve_image(
            None,
            &plan.adapter_defaults.runtime_image,
            &config.image_allow_list,
            config.image_registry.as_deref(),
        )?;
        let resources = ContainerResources::from_config(config.default_resources.as_ref());
        let image_pull_secrets = Some(config.image_pull_secrets.clone());
        let manifest = if is_sandbox {
            build_sandbox_cr_manifest(&SandboxCrManifestInput {
                namespace: namespace.into(),
                sandbox_name: job_name.clone(),
                adapter_type: plan.effective_adapter_type.clone(),
                image,
                env_secret_name: secret_name.clone(),
                service_account_name: TENANT_SERVICE_ACCOUNT.into(),
                labels,
                resources,
                runtime_class_name: config.runtime_class_name.clone(),
                image_pull_secrets,
                hard_stop: plan.bounded_deadline.as_ref().map(|d| HardStop {
                    at_epoch_sec: d.hard_stop_at_epoch_sec,
                    active_deadline_seconds: d.active_deadline_sec,
                }),
                api_version: version,
            })?
        } else {
            build_job_manifest(&JobManifestInput {
                namespace: namespace.into(),
                job_name: job_name.clone(),
                adapter_type: plan.effective_adapter_type.clone(),
                image,
                env_secret_name: secret_name.clone(),
                service_account_name: TENANT_SERVICE_ACCOUNT.into(),
                labels,
                resources,
                runtime_class_name: config.runtime_class_name.clone(),
                active_deadline_sec: config.pod_activity_deadline_sec,
                ttl_seconds_after_finished: config.job_ttl_seconds_after_finished,
                image_pull_secrets,
            })
        };
        let orchestrator = WorkloadOrchestrator::for_backend(config.backend, version);
        let created = DestroyLease {
            namespace: namespace.to_string(),
            name: job_name.clone(),
            backend: config.backend,
            pod_name: None,
            secret_name: Some(secret_name.clone()),
            sandbox_api_version: version,
        };
        let owner_uid = match orchestrator.claim(api, namespace, manifest).await {
            Ok(uid) => uid,
            // A claim cut at the bound may have created the workload all the same.
            Err(err) if api_bound::is_timeout(&err.to_string()) => {
                return Err(undo_failed_acquire(api, &created, err).await);
            }
            Err(err) => return Err(err.into()),
        };
        let (owner_api_version, owner_kind) = if is_sandbox {
            (version.api_version(), "Sandbox")
        } else {
            ("batch/v1", "Job")
        };
        let owner_reference = json!({
            "apiVersion": owner_api_version,
            "kind": owner_kind,
            "name": job_name,
            "uid": owner_uid,
            "controller": false,
            "blockOwnerDeletion": false,
        });
        // G-sync/egress: from here on a failure deletes what this acquire created, since the host
        // gets no lease id to clean up with.
        let provisioned = async {
            let release = || orchestrator.release(api, namespace, &job_name);

            let mut adapter_fqdns: Vec<String> = Vec::new();
            for fqdn in plan
                .adapter_defaults
                .allow_fqdns
                .iter()
                .chain(&config.egress_allow_fqdns)
            {
                if !adapter_fqdns.contains(fqdn) {
                    adapter_fqdns.push(fqdn.clone());
                }
            }
            let policy_base = ScopedEgressPolicyInput {
                namespace: namespace.into(),
                mode: config.egress_mode,
                run_id: run_id.into(),
                workload_name: job_name.clone(),
                owner_reference,
                grant: ScopedNetworkEgressGrant {
                    allow_fqdns: adapter_fqdns,
                    allow_cidrs: config.egress_allow_cidrs.clone(),
                },
                suffix: Some(ADAPTER_EGRESS_POLICY_SUFFIX.into()),
                base_rules: Some(ScopedPolicyBaseRules {
                    paperclip_server_namespace: PAPERCLIP_SERVER_NAMESPACE.into(),
                    paperclip_server_pod_selector: Some(
                        config.paperclip_server_pod_selector.clone(),
                    )
                    .filter(|s| !s.is_empty()),
                }),
            };
            create_scoped_network_egress_policy_or_release_workload(api, &policy_base, release)
                .await?;
            let scoped_grant =
                parse_scoped_network_egress_grant(params.get("executionWorkspaceSettings"));
            let task_policy = ScopedEgressPolicyInput {
                grant: scoped_grant.clone(),
                suffix: None,
                base_rules: None,
                ..policy_base
            };
            let scoped_policy_name =
                create_scoped_network_egress_policy_or_release_workload(api, &task_policy, release)
                    .await?;

            let mut adapter_env = build_adapter_env_from_process(&plan.adapter_defaults);
            assign(
                &mut adapter_env,
                "PAPERCLIP_NETWORK_EGRESS_POLICY",
                "kubernetes-default-deny".into(),
            );
            assign(
                &mut adapter_env,
                "PAPERCLIP_NETWORK_EGRESS_GRANT_PATH",
                NETWORK_EGRESS_GRANT_PATH.into(),
            );
            assign(
                &mut adapter_env,
                "PAPERCLIP_NETWORK_EGRESS_ALLOW_FQDNS",
                scoped_grant.allow_fqdns.join(","),
            );
            assign(
                &mut adapter_env,
                "PAPERCLIP_NETWORK_EGRESS_ALLOW_CIDRS",
                scoped_grant.allow_cidrs.join(","),
            );
            create_per_run_secret(
                api,
                &PerRunSecret {
                    namespace: namespace.into(),
                    secret_name: secret_name.clone(),
                    run_id: run_id.into(),
                    owner_kind: owner_kind.into(),
                    owner_api_version: owner_api_version.into(),
                    owner_name: job_name.clone(),
                    owner_uid,
                    bootstrap_token: generate_bootstrap_token(),
                    adapter_env,
                },
            )
            .await?;

            let pod_name = orchestrator.find_pod(api, namespace, &job_name).await?;
            Ok::<_, Error>((scoped_policy_name, scoped_grant, pod_name))
        };
        let (scoped_policy_name, scoped_grant, pod_name) = match provisioned.await {
            Ok(provisioned) => provisioned,
            Err(err) => return Err(undo_failed_acquire(api, &created, err).await),
        };
        let mut metadata = Map::new();
        metadata.insert("namespace".into(), json!(namespace));
        metadata.insert("jobName".into(), json!(job_name));
        metadata.insert("podName".into(), json!(pod_name));
        metadata.insert("secretName".into(), json!(secret_name));
        metadata.insert("phase".into(), json!("Pending"));
        metadata.insert("backend".into(), json!(config.backend.as_str()));
        metadata.insert("scopedNetworkPolicyName".into(), json!(scoped_policy_name));
        metadata.insert("scopedNetworkEgress".into(), scoped_grant.to_json());
        metadata.insert("nativeFileSyncUnsupported".into(), json!(!is_sandbox));
        if let Some(deadline) = &plan.bounded_deadline {
            metadata.insert("expiresAt".into(), json!(deadline.expires_at));
        }
        metadata.insert("remoteCwd".into(), json!(DEFAULT_REMOTE_CWD));
        if let Some(version) = sandbox_api_version {
            metadata.insert("sandboxApiVersion".into(), json!(version.version()));
        }
        if is_sandbox {
            self.login().remember(
                &job_name,
                LoginLeaseScope {
                    company_id: params.get("companyId").cloned().unwrap_or(Value::Null),
                    environment_id: params.get("environmentId").cloned().unwrap_or(Value::Null),
                    lease_id: job_name.clone(),
                    namespace: namespace.to_string(),
                    pod_name: pod_name.clone(),
                    expires_at: plan.bounded_deadline.as_ref().map(|d| d.expires_at.clone()),
                    sandbox_api_version: version,
                    config: config.clone(),
                },
            );
        }
        let mut result = Map::new();
        result.insert("providerLeaseId".into(), json!(job_name));
        result.insert("metadata".into(), Value::Object(metadata));
        if let Some(deadline) = &plan.bounded_deadline {
            result.insert("expiresAt".into(), json!(deadline.expires_at));
        }
        Ok(Value::Object(result))
    }

    /// `onEnvironmentResumeLease`: never deletes anything. Its API requests are bounded
    /// ([`crate::cluster::api_bound`]).
    pub async fn resume_lease(&self, params: &Value, sink: &dyn HostSink) -> ProviderResult<Value> {
        let ms = api_bound::bound_ms(params, api_bound::RESUME);
        api_bound::with_api_bound(ms, self.resume_unbounded(params, sink)).await
    }

    async fn resume_unbounded(
        &self,
        params: &Value,
        _sink: &dyn HostSink,
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
        let check = ResumeCheck {
            namespace: namespace.clone(),
            name: lease_id.clone(),
            backend,
            ready_wait: ResumeCheck::DEFAULT_READY_WAIT,
            sandbox_api_version: sandbox_api_version.unwrap_or_default(),
        };
        let result = check_lease_resumable(connection.api.as_ref(), self.clock(), &check).await?;
        let (pod_name, phase) = match result {
            ResumeCheckResult::NotResumable { reason } => {
                self.login().forget(&lease_id);
                return Ok(
                    json!({"providerLeaseId": null, "metadata": {"expired": true, "reason": reason}}),
                );
            }
            ResumeCheckResult::Resumable { pod_name, phase } => (pod_name, phase),
        };
        self.uploads().remove(&lease_id);
        if backend == Backend::SandboxCr {
            self.ready().insert(&lease_id);
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
        self.ready().remove(&lease_id);
        self.login().forget(&lease_id);
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
        self.ready().remove(&lease_id);
        self.login().forget(&lease_id);
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

    /// `onEnvironmentShutdown`: forgets the worker's in-memory state.
    pub async fn shutdown(&self, _params: &Value, _sink: &dyn HostSink) -> ProviderResult<Value> {
        self.login().shutdown();
        self.ready().clear();
        self.uploads().clear();
        Ok(Value::Null)
    }
}
