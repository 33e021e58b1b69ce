//! What the tests against the Kubernetes emulator share: the tenant namespace, a provider config
//! for an emulator, a lease to sync and execute in, and what a lease left behind. Each test
//! target includes this file with `#[path]` and uses what it needs.

use std::collections::BTreeMap;
use std::time::Duration;

use emulator::kubernetes::KubernetesEmulator;
use kubernetes::KubernetesProvider;
use sandbox_core::NullSink;
use sandbox_core::poll::poll;
use serde_json::{Value, json};

/// The tenant namespace of company `acme`.
pub const NS: &str = "paperclip-acme";

/// The emulator's pods have no agent shim: the Job backend's `paperclip-agent-shim` runs as a
/// command that prints `job-output` (for `KubeEmulatorOptions::command_overrides`).
pub fn job_shim_override() -> BTreeMap<String, Vec<String>> {
    BTreeMap::from([(
        "/usr/local/bin/paperclip-agent-shim".to_string(),
        vec!["/bin/sh".into(), "-c".into(), "echo job-output".into()],
    )])
}

/// An emulator with the test options and the Job backend's shim ([`job_shim_override`]).
pub async fn start_with_job_shim() -> KubernetesEmulator {
    let mut opts = emulator::kubernetes::KubeEmulatorOptions::for_tests();
    opts.command_overrides = job_shim_override();
    KubernetesEmulator::start(opts)
        .await
        .expect("emulator starts")
}

/// A provider config for `emu`: company `acme`, `backend`, Cilium egress.
pub fn config(emu: &KubernetesEmulator, backend: &str) -> Value {
    json!({"kubeconfig": emu.kubeconfig_yaml(), "companySlug": "acme", "backend": backend,
        "egressMode": "cilium"})
}

/// Lease-scoped objects left in the tenant namespace, by plural; the tenant's own two policies
/// belong to the namespace, not to a lease, and are not counted.
pub fn leaked_objects(emu: &KubernetesEmulator) -> Vec<(String, usize)> {
    let counts = emu.counts();
    [
        "pods",
        "sandboxes",
        "jobs",
        "secrets",
        "ciliumnetworkpolicies",
        "networkpolicies",
    ]
    .iter()
    .map(|plural| {
        let tenant = usize::from(plural.ends_with("networkpolicies"));
        (
            plural.to_string(),
            counts.count(NS, plural).saturating_sub(tenant),
        )
    })
    .filter(|(_, n)| *n > 0)
    .collect()
}

/// [`leaked_objects`], and the emulator's live processes if any.
pub fn leaked(emu: &KubernetesEmulator) -> Vec<(String, usize)> {
    let mut left = leaked_objects(emu);
    let live = emu.counts().live_processes;
    if live > 0 {
        left.push(("live processes".into(), live));
    }
    left
}

/// Waits (at most `limit`) until deletion and garbage collection leave nothing ([`leaked`]).
pub async fn until_clean(emu: &KubernetesEmulator, what: &str, limit: Duration) {
    poll(format!("{what}: nothing left"), limit)
        .until(|| {
            let left = leaked(emu);
            if left.is_empty() {
                Ok(())
            } else {
                Err(format!("leaked {left:?}; faults {:?}", emu.faults()))
            }
        })
        .await;
}

/// A Sandbox-backed lease in `/workspace`, for sync and execute params.
pub struct Lease {
    pub config: Value,
    pub lease: Value,
}

impl Lease {
    pub async fn acquire(
        emu: &KubernetesEmulator,
        provider: &KubernetesProvider,
        run: &str,
    ) -> Lease {
        let config = config(emu, "sandbox-cr");
        let acquired = provider
            .acquire_lease(
                &json!({"config": config, "companyId": "c-1", "environmentId": "e-1", "runId": run}),
                &NullSink,
            )
            .await
            .unwrap();
        let mut metadata = acquired["metadata"].clone();
        metadata["remoteCwd"] = json!("/workspace");
        Lease {
            config,
            lease: json!({"providerLeaseId": acquired["providerLeaseId"], "metadata": metadata}),
        }
    }

    /// Sync params for `operations`.
    pub fn params(&self, operations: Value) -> Value {
        json!({"config": self.config, "companyId": "c-1", "lease": self.lease,
            "operations": operations})
    }

    /// Execute params for `sh -c script` in the lease, with `timeout_ms`.
    pub fn exec_params(&self, script: &str, timeout_ms: u64) -> Value {
        json!({"config": self.config, "companyId": "c-1", "lease": self.lease,
            "command": "sh", "args": ["-c", script], "timeoutMs": timeout_ms})
    }

    /// The result of `sh -c script` in the lease (30 s timeout).
    pub async fn sh(&self, provider: &KubernetesProvider, script: &str) -> Value {
        provider
            .execute(&self.exec_params(script, 30000), &NullSink)
            .await
            .unwrap()
    }

    pub async fn destroy(&self, provider: &KubernetesProvider) {
        provider
            .destroy_lease(
                &json!({"config": self.config, "companyId": "c-1",
                    "providerLeaseId": self.lease["providerLeaseId"],
                    "leaseMetadata": self.lease["metadata"]}),
                &NullSink,
            )
            .await
            .unwrap();
    }
}
