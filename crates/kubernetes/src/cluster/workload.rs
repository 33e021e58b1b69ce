//! `SandboxOrchestrator`: the one interface acquire, execute, release and resume use for either
//! backend.

use serde_json::Value;

use super::clock::{Clock, PollOptions};
use super::readiness::{ReadinessLimits, wait_for_sandbox_ready_with};
use super::sandbox_api_version::SandboxApiVersion;
use super::status::SandboxStatus;
use super::{job_backend, pod_log, sandbox_backend};
use crate::cluster::ClusterApi;
use crate::config::Backend;
use crate::error::Error;

/// The backend a lease's workload runs on; a Sandbox CR backend is bound to one API version, so
/// every Sandbox request it makes carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkloadOrchestrator {
    SandboxCr(SandboxApiVersion),
    Job,
}

impl WorkloadOrchestrator {
    /// The orchestrator of `backend`; `version` only matters for the Sandbox CR backend.
    pub fn for_backend(backend: Backend, version: SandboxApiVersion) -> Self {
        match backend {
            Backend::SandboxCr => WorkloadOrchestrator::SandboxCr(version),
            Backend::Job => WorkloadOrchestrator::Job,
        }
    }

    /// `claim`: creates the workload and returns its UID.
    pub async fn claim<C: ClusterApi + ?Sized>(
        self,
        cluster: &C,
        namespace: &str,
        manifest: Value,
    ) -> Result<String, Error> {
        match self {
            Self::SandboxCr(v) => {
                sandbox_backend::create_sandbox_cr(cluster, v, namespace, manifest).await
            }
            Self::Job => job_backend::create_job(cluster, namespace, manifest).await,
        }
    }

    /// `getStatus`.
    pub async fn get_status<C: ClusterApi + ?Sized>(
        self,
        cluster: &C,
        namespace: &str,
        name: &str,
    ) -> Result<SandboxStatus, Error> {
        match self {
            Self::SandboxCr(v) => {
                sandbox_backend::get_sandbox_cr_status(cluster, v, namespace, name).await
            }
            Self::Job => job_backend::get_job_status(cluster, namespace, name).await,
        }
    }

    /// `findPod`.
    pub async fn find_pod<C: ClusterApi + ?Sized>(
        self,
        cluster: &C,
        namespace: &str,
        name: &str,
    ) -> Result<Option<String>, Error> {
        match self {
            Self::SandboxCr(v) => {
                sandbox_backend::find_pod_for_sandbox(cluster, v, namespace, name).await
            }
            Self::Job => job_backend::find_pod_for_job(cluster, namespace, name).await,
        }
    }

    /// `streamLogs`: the whole log of `pod_name`, as one stdout chunk when non-empty.
    pub async fn read_logs<C: ClusterApi + ?Sized>(
        self,
        cluster: &C,
        namespace: &str,
        pod_name: &str,
    ) -> Result<Option<String>, Error> {
        pod_log::read_whole_pod_log(cluster, namespace, pod_name).await
    }

    /// `release`: deletes the workload with Foreground propagation. A 404 is an error here;
    /// the release hook is what ignores it.
    pub async fn release<C: ClusterApi + ?Sized>(
        self,
        cluster: &C,
        namespace: &str,
        name: &str,
    ) -> Result<(), Error> {
        match self {
            Self::SandboxCr(v) => {
                sandbox_backend::delete_sandbox_cr(cluster, v, namespace, name).await
            }
            Self::Job => job_backend::delete_job(cluster, namespace, name).await,
        }
    }

    /// `waitForCompletion`: a Ready pod for a Sandbox (within `limits`), a finished Job for a
    /// Job.
    pub async fn wait_for_completion<C: ClusterApi + ?Sized>(
        self,
        cluster: &C,
        clock: &dyn Clock,
        namespace: &str,
        name: &str,
        options: PollOptions,
        limits: ReadinessLimits,
    ) -> Result<SandboxStatus, Error> {
        match self {
            Self::SandboxCr(v) => {
                wait_for_sandbox_ready_with(cluster, clock, v, namespace, name, options, limits)
                    .await
            }
            Self::Job => {
                job_backend::wait_for_job_completion(cluster, clock, namespace, name, options).await
            }
        }
    }
}
