//! The per-run Secret: the bootstrap token and the adapter environment the workload's
//! container reads through `envFrom`.

use js_compat::json;
use serde_json::{Map, Value, json};

use crate::cluster::ClusterApi;
use crate::config::adapters::StringMap;
use crate::error::Error;

/// `CreatePerRunSecretInput`.
#[derive(Debug, Clone, PartialEq)]
pub struct PerRunSecret {
    pub namespace: String,
    /// `<run>-env`.
    pub secret_name: String,
    pub run_id: String,
    /// The workload that owns the Secret: `Sandbox` or `Job`.
    pub owner_kind: String,
    /// `agents.x-k8s.io/<version>` or `batch/v1`.
    pub owner_api_version: String,
    pub owner_name: String,
    pub owner_uid: String,
    /// 64 lower-case hex characters.
    pub bootstrap_token: String,
    /// Adapter env plus the `PAPERCLIP_NETWORK_EGRESS_*` keys, in insertion order.
    pub adapter_env: StringMap,
}

impl PerRunSecret {
    /// The Secret manifest. Its owner is the workload as controller, so garbage collection
    /// deletes the Secret with it.
    pub fn manifest(&self) -> Value {
        json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "Opaque",
            "metadata": {
                "name": self.secret_name,
                "namespace": self.namespace,
                "labels": {
                    "paperclip.io/run-id": self.run_id,
                    "paperclip.io/managed-by": "paperclip-k8s-plugin",
                },
                "ownerReferences": [{
                    "apiVersion": self.owner_api_version,
                    "kind": self.owner_kind,
                    "name": self.owner_name,
                    "uid": self.owner_uid,
                    "controller": true,
                    "blockOwnerDeletion": true,
                }],
            },
            "stringData": self.string_data(),
        })
    }

    /// `{BOOTSTRAP_TOKEN, ...adapterEnv}`: the adapter env is spread after the token, so an
    /// adapter key named `BOOTSTRAP_TOKEN` replaces its value while the key keeps first place.
    fn string_data(&self) -> Value {
        let mut data = Map::new();
        data.insert("BOOTSTRAP_TOKEN".into(), json!(self.bootstrap_token));
        for (key, value) in &self.adapter_env {
            data.insert(key.clone(), json!(value));
        }
        Value::Object(json::ordered(data))
    }
}

/// `createPerRunSecret`: a plain create, so an existing Secret (409) is an error.
pub async fn create_per_run_secret<C: ClusterApi + ?Sized>(
    cluster: &C,
    secret: &PerRunSecret,
) -> Result<(), Error> {
    cluster
        .create_namespaced_secret(json!({
            "namespace": secret.namespace,
            "body": secret.manifest(),
        }))
        .await?;
    Ok(())
}
