//! What the lifecycle tests on the real node share: a recording [`HostSink`] (every
//! `ctx.execution.log` chunk, with the order they came in) and [`RealLease`], a lease acquired on
//! the node with the hook parameters built for it and the check, by listing, that nothing of it
//! is left after destroy.

use kube::Client;
use kubernetes::KubernetesProvider;
pub use sandbox_core::recording_sink::RecordingSink;
use sandbox_core::{HostSink, NullSink};
use serde_json::{Value, json};

use crate::node::node;
use crate::support::{client, get, items, unique, until};

pub const COMPANY: &str = "company-real-node";

/// A lease on the real node: its provider, config, and the `lease` reference hooks take.
pub struct RealLease {
    pub provider: KubernetesProvider,
    pub admin: Client,
    pub config: Value,
    /// `{providerLeaseId, metadata}` as the host passes it back.
    pub lease: Value,
    pub namespace: String,
    pub name: String,
}

impl RealLease {
    /// Acquires a lease on `backend` for a company slug of its own (so its own namespace).
    pub async fn acquire(prefix: &str, backend: &'static str, extra: Value) -> RealLease {
        let config = node()
            .await
            .provider_config(&unique(prefix), backend, extra);
        Self::acquire_with(KubernetesProvider::new(), config, &format!("run-{prefix}")).await
    }

    /// Acquires a lease with `config` through `provider` for the run `run_id`.
    pub async fn acquire_with(
        provider: KubernetesProvider,
        config: Value,
        run_id: &str,
    ) -> RealLease {
        let admin = client(&node().await.kubeconfig).await;
        let acquired = provider
            .acquire_lease(
                &json!({"config": config, "companyId": COMPANY, "environmentId": "env-real",
                    "runId": run_id}),
                &NullSink,
            )
            .await
            .unwrap_or_else(|e| panic!("acquire refused: {}", e.message));
        RealLease {
            namespace: acquired["metadata"]["namespace"]
                .as_str()
                .unwrap()
                .to_string(),
            name: acquired["providerLeaseId"].as_str().unwrap().to_string(),
            lease: json!({"providerLeaseId": acquired["providerLeaseId"],
                "metadata": acquired["metadata"]}),
            provider,
            admin,
            config,
        }
    }

    /// Execute params: the lease and `extra` (command, args, stdin, timeoutMs...).
    pub fn exec_params(&self, extra: Value) -> Value {
        let mut params = json!({"config": self.config, "companyId": COMPANY, "lease": self.lease,
            "timeoutMs": 120_000});
        for (k, v) in extra.as_object().unwrap() {
            params[k] = v.clone();
        }
        params
    }

    pub async fn execute(&self, extra: Value, sink: &dyn HostSink) -> Value {
        self.provider
            .execute(&self.exec_params(extra), sink)
            .await
            .unwrap_or_else(|e| panic!("execute refused: {}", e.message))
    }

    /// `sh -c script`, its result asserted to exit 0; its stdout.
    pub async fn sh(&self, script: &str) -> String {
        let result = self
            .execute(json!({"command": "sh", "args": ["-c", script]}), &NullSink)
            .await;
        assert_eq!(result["exitCode"], 0, "{script}: {result}");
        result["stdout"].as_str().unwrap().to_string()
    }

    /// Release / destroy / resume params.
    pub fn lease_params(&self) -> Value {
        json!({"config": self.config, "companyId": COMPANY, "environmentId": "env-real",
            "providerLeaseId": self.lease["providerLeaseId"],
            "leaseMetadata": self.lease["metadata"]})
    }

    /// Destroys the lease and waits until the tenant namespace holds nothing of it: no Sandbox,
    /// Job or pod at all, no Secret or NetworkPolicy named after it.
    pub async fn destroy_and_check_gone(&self) {
        assert_eq!(
            self.provider
                .destroy_lease(&self.lease_params(), &NullSink)
                .await
                .unwrap_or_else(|e| panic!("destroy refused: {}", e.message)),
            None
        );
        self.check_gone().await;
    }

    pub async fn check_gone(&self) {
        let ns = &self.namespace;
        let version = self.lease["metadata"]["sandboxApiVersion"]
            .as_str()
            .unwrap_or("v1beta1");
        for (list, whole) in [
            (
                format!("/apis/agents.x-k8s.io/{version}/namespaces/{ns}/sandboxes"),
                true,
            ),
            (format!("/apis/batch/v1/namespaces/{ns}/jobs"), true),
            (format!("/api/v1/namespaces/{ns}/pods"), true),
            (format!("/api/v1/namespaces/{ns}/secrets"), false),
            (
                format!("/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies"),
                false,
            ),
        ] {
            until(
                &format!("{list} to hold nothing of {}", self.name),
                || async {
                    let (status, body) = get(&self.admin, &list).await;
                    assert_eq!(status, 200, "GET {list}: {body}");
                    let left: Vec<String> = items(&body)
                        .iter()
                        .map(|item| item["metadata"]["name"].as_str().unwrap_or("").to_string())
                        .filter(|n| whole || n.starts_with(&self.name))
                        .collect();
                    left.is_empty().then_some(())
                },
            )
            .await;
        }
    }
}
