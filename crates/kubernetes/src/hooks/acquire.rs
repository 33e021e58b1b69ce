//! `onEnvironmentAcquireLease`: the prechecks, the tenant, the workload claim, then (undone
//! if any of it fails, G-sync/egress) the scoped egress policies, the per-run Secret and the
//! pod lookup; the lease's metadata records `remoteCwd: /workspace` (G-remoteCwd) and, on the
//! sandbox-cr backend, the Sandbox API version discovered first (G-apiversion).

use std::time::{SystemTime, UNIX_EPOCH};

use sandbox_core::{HostSink, LogLevel, ProviderError, ProviderResult};
use serde_json::{Map, Value, json};

use super::cluster_err;
use super::lifecycle::{ACQUIRE_CLEANUP_INCOMPLETE, PAPERCLIP_SERVER_NAMESPACE};
use crate::builders::sandbox_cr::{
    HardStop, SandboxCrManifestInput, build_sandbox_cr_manifest, shutdown_time_text,
};
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
    ClusterApi, DestroyLease, PerRunSecret, SandboxApiVersion, TenantInput, TenantResourceQuota,
    WorkloadOrchestrator, create_per_run_secret,
    create_scoped_network_egress_policy_or_release_workload, destroy_lease_resources,
    ensure_tenant, unconfirmed_create,
};
use crate::config::{Backend, KubernetesConfig};
use crate::error::Error;
use crate::lease::AcquirePlan;
use crate::lease::DEFAULT_REMOTE_CWD;
use crate::lease::lease_end::{end_to_write, idle_ms};
use crate::lease::precheck::prepare_acquire;
use crate::login::LoginLeaseScope;
use crate::provider::KubernetesProvider;

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

/// What an acquire keeps of its bound for deleting what it created when a step fails: its steps
/// are cut that much earlier (never below the bound's floor), and the cleanup gets this bound
/// of its own, so that the whole hook ends within its bound (25 s without a `timeoutMs`).
pub const ACQUIRE_CLEANUP_MS: u64 = 5_000;

/// Deletes what a failed acquire created (the G-sync/egress acquire cleanup): the workload, and the per-run Secret
/// by name (it may exist without its owner having been recorded anywhere); the scoped egress
/// policies go with the workload through their ownerReferences. Returns the error the hook
/// rejects with: the original one, or [`ACQUIRE_CLEANUP_INCOMPLETE`] if cleaning up failed.
async fn undo_failed_acquire(
    api: &dyn ClusterApi,
    created: &DestroyLease,
    err: Error,
) -> ProviderError {
    // A bound of its own: the acquire's may be spent (a hung step), and the cleanup must run.
    let cleanup = destroy_lease_resources(api, created);
    match api_bound::with_api_bound(ACQUIRE_CLEANUP_MS, cleanup).await {
        Ok(()) => err.into(),
        Err(_) => ProviderError::new(ACQUIRE_CLEANUP_INCOMPLETE),
    }
}

/// After a workload create whose outcome is unknown ([`unconfirmed_create`]): the workload is
/// looked up by its name and deleted if this acquire made it, and the hook rejects with the
/// create's own error; when that lookup or delete fails too, with a message naming the object.
async fn undo_unconfirmed_claim(
    api: &dyn ClusterApi,
    orchestrator: WorkloadOrchestrator,
    run: &Run<'_>,
    labels: &Value,
    err: Error,
) -> ProviderError {
    let (namespace, name) = (run.namespace, run.job_name.as_str());
    let cleanup =
        unconfirmed_create::delete_unconfirmed_workload(api, orchestrator, namespace, name, labels);
    match api_bound::with_api_bound(ACQUIRE_CLEANUP_MS, cleanup).await {
        Ok(()) => err.into(),
        Err(_) => ProviderError::new(unconfirmed_create::unconfirmed_create_message(
            orchestrator,
            namespace,
            name,
        )),
    }
}

/// The tenant an acquire provisions (`ensureTenant`'s input).
fn tenant_input(config: &KubernetesConfig, namespace: &str, company_id: &str) -> TenantInput {
    TenantInput {
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
    }
}

/// What one acquire names and claims: its run, its workload and the workload's owner fields.
struct Run<'a> {
    plan: &'a AcquirePlan,
    namespace: &'a str,
    run_id: &'a str,
    job_name: String,
    secret_name: String,
    version: SandboxApiVersion,
    /// Issue #38: when the Sandbox ends by itself unless a hook moves it
    /// ([`crate::lease::lease_end`]); Unix milliseconds. Unused on the job backend.
    end_ms: u64,
}

impl Run<'_> {
    fn is_sandbox(&self) -> bool {
        self.plan.config.backend == Backend::SandboxCr
    }

    /// `(apiVersion, kind)` of the workload, as its ownerReferences name it.
    fn owner(&self) -> (&'static str, &'static str) {
        if self.is_sandbox() {
            (self.version.api_version(), "Sandbox")
        } else {
            ("batch/v1", "Job")
        }
    }

    /// The workload's manifest: a Sandbox custom resource or a Job.
    fn manifest(&self, company_id: &str) -> ProviderResult<Value> {
        let (plan, config) = (self.plan, &self.plan.config);
        let labels = paperclip_labels(&LabelsInput {
            run_id: self.run_id.into(),
            agent_id: self.run_id.into(),
            company_id: company_id.into(),
            adapter_type: plan.effective_adapter_type.clone(),
        });
        let image = plan.image.clone();
        let resources = ContainerResources::from_config(config.default_resources.as_ref());
        let image_pull_secrets = Some(config.image_pull_secrets.clone());
        Ok(if self.is_sandbox() {
            build_sandbox_cr_manifest(&SandboxCrManifestInput {
                namespace: self.namespace.into(),
                sandbox_name: self.job_name.clone(),
                adapter_type: plan.effective_adapter_type.clone(),
                image,
                env_secret_name: self.secret_name.clone(),
                service_account_name: TENANT_SERVICE_ACCOUNT.into(),
                labels,
                resources,
                runtime_class_name: config.runtime_class_name.clone(),
                image_pull_secrets,
                hard_stop: plan.bounded_deadline.as_ref().map(|d| HardStop {
                    at_epoch_sec: d.hard_stop_at_epoch_sec,
                    active_deadline_seconds: d.active_deadline_sec,
                }),
                api_version: self.version,
                shutdown_time: shutdown_time_text(self.end_ms),
            })?
        } else {
            build_job_manifest(&JobManifestInput {
                namespace: self.namespace.into(),
                job_name: self.job_name.clone(),
                adapter_type: plan.effective_adapter_type.clone(),
                image,
                env_secret_name: self.secret_name.clone(),
                service_account_name: TENANT_SERVICE_ACCOUNT.into(),
                labels,
                resources,
                runtime_class_name: config.runtime_class_name.clone(),
                active_deadline_sec: config.pod_activity_deadline_sec,
                ttl_seconds_after_finished: config.job_ttl_seconds_after_finished,
                image_pull_secrets,
            })
        })
    }

    /// What a failed acquire deletes.
    fn created(&self) -> DestroyLease {
        DestroyLease {
            namespace: self.namespace.to_string(),
            name: self.job_name.clone(),
            backend: self.plan.config.backend,
            pod_name: None,
            secret_name: Some(self.secret_name.clone()),
            sandbox_api_version: self.version,
        }
    }

    /// The steps after the claim: the adapter's and the task's scoped egress policies, the
    /// per-run Secret, the pod lookup. Returns the task policy's name, its grant and the pod.
    async fn provision(
        &self,
        api: &dyn ClusterApi,
        orchestrator: &WorkloadOrchestrator,
        params: &Value,
        owner_uid: String,
    ) -> Result<(Option<String>, ScopedNetworkEgressGrant, Option<String>), Error> {
        let (plan, config, namespace) = (self.plan, &self.plan.config, self.namespace);
        let job_name = &self.job_name;
        let (owner_api_version, owner_kind) = self.owner();
        let owner_reference = json!({
            "apiVersion": owner_api_version,
            "kind": owner_kind,
            "name": job_name,
            "uid": owner_uid,
            "controller": false,
            "blockOwnerDeletion": false,
        });
        let release = || orchestrator.release(api, namespace, job_name);

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
            run_id: self.run_id.into(),
            workload_name: job_name.clone(),
            owner_reference,
            grant: ScopedNetworkEgressGrant {
                allow_fqdns: adapter_fqdns,
                allow_cidrs: config.egress_allow_cidrs.clone(),
            },
            suffix: Some(ADAPTER_EGRESS_POLICY_SUFFIX.into()),
            base_rules: Some(ScopedPolicyBaseRules {
                paperclip_server_namespace: PAPERCLIP_SERVER_NAMESPACE.into(),
                paperclip_server_pod_selector: Some(config.paperclip_server_pod_selector.clone())
                    .filter(|s| !s.is_empty()),
            }),
        };
        create_scoped_network_egress_policy_or_release_workload(api, &policy_base, release).await?;
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
                secret_name: self.secret_name.clone(),
                run_id: self.run_id.into(),
                owner_kind: owner_kind.into(),
                owner_api_version: owner_api_version.into(),
                owner_name: job_name.clone(),
                owner_uid,
                bootstrap_token: generate_bootstrap_token(),
                adapter_env,
            },
        )
        .await?;

        let pod_name = orchestrator.find_pod(api, namespace, job_name).await?;
        Ok((scoped_policy_name, scoped_grant, pod_name))
    }

    /// The lease's metadata.
    fn metadata(
        &self,
        scoped_policy_name: Option<String>,
        scoped_grant: &ScopedNetworkEgressGrant,
        pod_name: &Option<String>,
        sandbox_api_version: Option<SandboxApiVersion>,
    ) -> Map<String, Value> {
        let config = &self.plan.config;
        let mut metadata = Map::new();
        metadata.insert("namespace".into(), json!(self.namespace));
        metadata.insert("jobName".into(), json!(self.job_name));
        metadata.insert("podName".into(), json!(pod_name));
        metadata.insert("secretName".into(), json!(self.secret_name));
        metadata.insert("phase".into(), json!("Pending"));
        metadata.insert("backend".into(), json!(config.backend.as_str()));
        metadata.insert("scopedNetworkPolicyName".into(), json!(scoped_policy_name));
        metadata.insert("scopedNetworkEgress".into(), scoped_grant.to_json());
        metadata.insert(
            "nativeFileSyncUnsupported".into(),
            json!(!self.is_sandbox()),
        );
        if let Some(deadline) = &self.plan.bounded_deadline {
            metadata.insert("expiresAt".into(), json!(deadline.expires_at));
        }
        metadata.insert("remoteCwd".into(), json!(DEFAULT_REMOTE_CWD));
        if let Some(version) = sandbox_api_version {
            metadata.insert("sandboxApiVersion".into(), json!(version.version()));
        }
        metadata
    }
}

impl KubernetesProvider {
    /// `onEnvironmentAcquireLease`, its API requests bounded ([`crate::cluster::api_bound`]); a step cut
    /// at the bound fails like any other, through the partial-failure cleanup.
    pub async fn acquire_lease(
        &self,
        params: &Value,
        sink: &dyn HostSink,
    ) -> ProviderResult<Value> {
        let ms = api_bound::bound_ms(params, api_bound::ACQUIRE);
        let steps_ms = api_bound::remaining_ms(ms, ACQUIRE_CLEANUP_MS, api_bound::ACQUIRE.floor_ms);
        api_bound::with_api_bound(steps_ms, self.acquire_unbounded(params, sink)).await
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
        ensure_tenant(api, &tenant_input(config, namespace, company_id)).await?;

        let job_name = new_run_name(wall_now_ms(), random_below_32);
        let run = Run {
            plan: &plan,
            namespace,
            run_id,
            secret_name: run_secret_name(&job_name),
            job_name,
            version,
            end_ms: end_to_write(
                self.clock().unix_ms(),
                api_bound::bound_ms(params, api_bound::ACQUIRE),
                idle_ms(config),
            ),
        };
        let manifest = run.manifest(company_id)?;
        let labels = manifest
            .pointer("/metadata/labels")
            .cloned()
            .unwrap_or(Value::Null);
        let orchestrator = WorkloadOrchestrator::for_backend(config.backend, version);
        let created = run.created();
        let owner_uid = match orchestrator.claim(api, namespace, manifest).await {
            Ok(uid) => uid,
            // A create that failed may have made the workload all the same (a 5xx after the
            // effect, a dropped connection, a reply cut at the bound).
            Err(err) if unconfirmed_create::outcome_unknown(&err) => {
                return Err(undo_unconfirmed_claim(api, orchestrator, &run, &labels, err).await);
            }
            Err(err) => return Err(err.into()),
        };
        // G-sync/egress: from here on a failure deletes what this acquire created, since the host
        // gets no lease id to clean up with.
        let provisioned = run.provision(api, &orchestrator, params, owner_uid);
        let (scoped_policy_name, scoped_grant, pod_name) = match provisioned.await {
            Ok(provisioned) => provisioned,
            Err(err) => return Err(undo_failed_acquire(api, &created, err).await),
        };
        let metadata = run.metadata(
            scoped_policy_name,
            &scoped_grant,
            &pod_name,
            sandbox_api_version,
        );
        let job_name = run.job_name.clone();
        if is_sandbox {
            // The end the Sandbox was created with: its next hooks need not write it again.
            self.lease_ends().remember(&job_name, run.end_ms).await;
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
}
