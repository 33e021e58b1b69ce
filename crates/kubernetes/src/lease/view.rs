//! A lease as every hook reads it, and the cluster it lives on: [`LeaseView`] (the lease
//! metadata with the same fallbacks in every hook), [`connect`] (the hook's connection to the
//! config's cluster) and the Sandbox API version of a lease's cluster. Execute, sync, login and
//! the lease hooks all go through here.

use sandbox_core::ProviderResult;
use serde_json::{Map, Value, json};

use super::connection::{ClusterConnector, Connection};
use super::precheck::tenant_namespace;
use crate::builders::naming::run_secret_name;
use crate::builders::scoped_egress::{ScopedNetworkEgressGrant, parse_scoped_network_egress_grant};
use crate::cluster::{
    SandboxApiVersion, SandboxApiVersionCache, sandbox_api_version_from_metadata,
};
use crate::config::{Backend, KubernetesConfig};
use crate::error::Error;
use js_compat::string;

/// G-remoteCwd: the workspace dir recorded on every lease at acquire (the Sandbox's emptyDir),
/// so native sync works before (or without) a realized workspace.
pub const DEFAULT_REMOTE_CWD: &str = "/workspace";
/// The lease fields every hook reads the same way (the same fallbacks in every hook).
pub struct LeaseView<'a> {
    pub metadata: Option<&'a Map<String, Value>>,
}

impl<'a> LeaseView<'a> {
    pub fn new(metadata: Option<&'a Value>) -> Self {
        Self {
            metadata: metadata.and_then(Value::as_object),
        }
    }

    pub fn string(&self, key: &str) -> Option<&'a str> {
        self.metadata?.get(key)?.as_str()
    }

    pub fn namespace(
        &self,
        config: &KubernetesConfig,
        company_id: Option<&Value>,
    ) -> ProviderResult<String> {
        match self.string("namespace") {
            Some(ns) => Ok(ns.to_string()),
            None => tenant_namespace(config, company_id),
        }
    }

    /// The backend that created the lease; an unknown string is neither backend in the
    /// original's comparisons, which all test `=== "sandbox-cr"`, so it acts as the job backend.
    pub fn backend(&self, config: &KubernetesConfig) -> (Backend, String) {
        match self.string("backend") {
            Some("sandbox-cr") => (Backend::SandboxCr, "sandbox-cr".into()),
            Some(other) => (Backend::Job, other.to_string()),
            None => (config.backend, config.backend.as_str().to_string()),
        }
    }

    pub fn secret_name(&self, lease_id: &str) -> String {
        self.string("secretName")
            .map_or_else(|| run_secret_name(lease_id), str::to_string)
    }

    /// `metadata.sandboxApiVersion` when it is a version this provider can address.
    pub fn sandbox_api_version(&self) -> Option<SandboxApiVersion> {
        sandbox_api_version_from_metadata(self.metadata?.get("sandboxApiVersion"))
    }

    /// The lease's `remoteCwd` when it is a non-blank string, else [`DEFAULT_REMOTE_CWD`].
    pub fn remote_cwd(&self) -> String {
        self.string("remoteCwd")
            .filter(|dir| !string::trim(dir).is_empty())
            .unwrap_or(DEFAULT_REMOTE_CWD)
            .to_string()
    }

    pub fn grant(&self) -> ScopedNetworkEgressGrant {
        let network_egress = self
            .metadata
            .and_then(|m| m.get("scopedNetworkEgress"))
            .cloned()
            .unwrap_or(Value::Null);
        parse_scoped_network_egress_grant(Some(&json!({"networkEgress": network_egress})))
    }
}

/// The hook's connection to the config's cluster; a failure rejects the hook as the API error it is.
pub async fn connect(
    connector: &dyn ClusterConnector,
    config: &KubernetesConfig,
) -> ProviderResult<Connection> {
    Ok(connector.connect(config).await?)
}

/// `resolveSandboxApiVersion(clients, apiServerUrl(kc))` through the worker's cache.
pub async fn discover_sandbox_api_version(
    cache: &SandboxApiVersionCache,
    connection: &Connection,
) -> Result<SandboxApiVersion, Error> {
    let api = connection.api.as_ref();
    cache.resolve(api, api.server_url()).await
}

/// The Sandbox API version of an existing sandbox-cr lease: the one its metadata records,
/// else a discovery.
pub async fn lease_sandbox_api_version(
    cache: &SandboxApiVersionCache,
    connection: &Connection,
    lease: &LeaseView<'_>,
) -> ProviderResult<SandboxApiVersion> {
    match lease.sandbox_api_version() {
        Some(version) => Ok(version),
        None => Ok(discover_sandbox_api_version(cache, connection).await?),
    }
}

/// The versions to delete an existing lease's Sandbox under: the known one, or when it
/// cannot be learnt (discovery fails), every supported version in turn.
pub async fn sandbox_versions_to_delete(
    cache: &SandboxApiVersionCache,
    connection: &Connection,
    lease: &LeaseView<'_>,
) -> Vec<SandboxApiVersion> {
    if let Some(version) = lease.sandbox_api_version() {
        return vec![version];
    }
    match discover_sandbox_api_version(cache, connection).await {
        Ok(version) => vec![version],
        Err(_) => SandboxApiVersion::PREFERENCE.to_vec(),
    }
}
