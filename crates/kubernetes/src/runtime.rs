//! What the hooks run against: a connector that turns a parsed config into a cluster (API calls
//! and pod exec), and the per-worker state the original keeps in module scope (§11.0).
//!
//! Production uses [`KubeConnector`] (kube-rs, the per-credential client cache); tests plug in
//! scripted clusters and execs.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use sandbox_core::BoxFuture;

use crate::cluster::{ApiError, ClusterApi};
use crate::config::KubernetesConfig;
use crate::exec::upload_interceptor::{FastUploadInterceptor, UploadDecision};
use crate::exec::{ExecError, ExecOutput, ExecRequest, OutputTap, exec_in_pod};
use crate::kube_client::{ClientCache, KubeCluster};

/// Runs one buffered exec in a pod (`execInPod`).
pub trait PodExec: Send + Sync {
    fn exec(
        &self,
        request: ExecRequest,
        tap: Option<OutputTap>,
    ) -> BoxFuture<'_, Result<ExecOutput, ExecError>>;
}

impl PodExec for KubeCluster {
    fn exec(
        &self,
        request: ExecRequest,
        tap: Option<OutputTap>,
    ) -> BoxFuture<'_, Result<ExecOutput, ExecError>> {
        Box::pin(async move {
            exec_in_pod(self.client(), self.redactor(), &request, tap.as_ref()).await
        })
    }
}

/// A cluster as one hook call uses it.
#[derive(Clone)]
pub struct Connection {
    pub api: Arc<dyn ClusterApi>,
    pub exec: Arc<dyn PodExec>,
}

/// `createKubeConfig` + `makeKubeClients`.
pub trait ClusterConnector: Send + Sync {
    fn connect<'a>(
        &'a self,
        config: &'a KubernetesConfig,
    ) -> BoxFuture<'a, Result<Connection, ApiError>>;
}

/// The real connector: kube-rs clients from the worker's cache.
#[derive(Debug, Default, Clone, Copy)]
pub struct KubeConnector;

impl ClusterConnector for KubeConnector {
    fn connect<'a>(
        &'a self,
        config: &'a KubernetesConfig,
    ) -> BoxFuture<'a, Result<Connection, ApiError>> {
        Box::pin(async move {
            let handle = ClientCache::global().client_for(config).await?;
            let cluster = Arc::new(KubeCluster::new(handle));
            Ok(Connection {
                api: cluster.clone(),
                exec: cluster,
            })
        })
    }
}

/// `readySandboxesByLease`: leases whose Sandbox was seen Ready by this worker.
#[derive(Debug, Default)]
pub struct ReadySet {
    leases: Mutex<HashSet<String>>,
}

impl ReadySet {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.leases.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn contains(&self, lease: &str) -> bool {
        self.lock().contains(lease)
    }

    pub fn insert(&self, lease: &str) {
        self.lock().insert(lease.to_string());
    }

    pub fn remove(&self, lease: &str) {
        self.lock().remove(lease);
    }

    pub fn clear(&self) {
        self.lock().clear();
    }
}

/// `uploadInterceptorsByLease`: one fast-upload interceptor per lease, created on first use.
#[derive(Debug, Default)]
pub struct UploadInterceptors {
    leases: Mutex<HashMap<String, FastUploadInterceptor>>,
}

impl UploadInterceptors {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, FastUploadInterceptor>> {
        self.leases.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The lease's interceptor's decision on `script`.
    pub fn decide(&self, lease: &str, script: &str) -> UploadDecision {
        self.lock()
            .entry(lease.to_string())
            .or_default()
            .decide(script)
    }

    pub fn remove(&self, lease: &str) {
        self.lock().remove(lease);
    }

    pub fn clear(&self) {
        self.lock().clear();
    }

    pub fn contains(&self, lease: &str) -> bool {
        self.lock().contains_key(lease)
    }
}
