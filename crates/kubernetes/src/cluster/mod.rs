//! Everything that talks to the Kubernetes API, and nothing else does.
//!
//! - The boundary: [`ClusterApi`] (`api`), the calls the original makes, with request and
//!   response bodies as JSON; its errors are the crate's [`Error`](crate::Error) (an API failure keeps its
//!   HTTP status); and a [`Connection`] (`connector`): the API and pod
//!   exec of one cluster, as one hook call uses them.
//! - The real cluster: [`KubeCluster`] (`client`), every API call as a kube-rs request;
//!   `credentials`, the client built from the provider config's credentials and cached per
//!   credential, whose secrets never leave it (the kubeconfig text is only hashed and parsed, and
//!   every client-side error message is scrubbed of it); [`api_bound`], the per-hook deadline every
//!   request runs under.
//! - The steps the hooks take over a [`ClusterApi`]: tenant provisioning ([`tenant`]), the
//!   per-run Secret ([`secret`]), scoped egress policies ([`grant_egress`]), both workload
//!   backends behind [`WorkloadOrchestrator`] ([`sandbox_backend`], [`job_backend`]: claim, status, pod
//!   lookup, logs, release, waits), Sandbox API version discovery ([`sandbox_api_version`]), and
//!   the resume check and destroy of a lease ([`resume_and_destroy`]). Each makes the same API
//!   calls, in the same order, with the same request objects as the original, and absorbs
//!   404/409 exactly where it does; beyond the original, [`unconfirmed_create`] looks up and
//!   deletes a workload whose create had an unknown outcome, and [`sandbox_end`] moves a
//!   Sandbox's end (`shutdownTime`) forward while it is used (issue #38), and [`pod_fate`]
//!   reads what became of the pod a failed exec ran in (deleted, replaced, not running). Waits run on an
//!   injected [`Clock`]; the Sandbox ready-wait
//!   ([`readiness`]) follows watches ([`ClusterApi::watch`]) where the original polls, and
//!   reads the pod to name why it cannot become Ready.
//! - `testing` (unit tests, or the `testing` feature): a scripted cluster that replays the
//!   golden recordings, and a manual clock.

pub mod access_review;
mod api;
pub mod api_bound;
mod client;
mod client_watch;
mod clock;
mod credentials;
pub mod grant_egress;
pub mod job_backend;
pub mod permissions;
pub mod pod_fate;
pub mod pod_log;
pub mod probe_checks;
pub mod rbac_yaml;
pub mod readiness;
mod response;
pub mod resume_and_destroy;
pub mod sandbox_api_version;
pub mod sandbox_backend;
pub mod sandbox_end;
pub mod secret;
mod status;
pub mod tenant;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod unconfirmed_create;
mod workload;

pub use crate::error::{
    ApiResult, CONFLICT, DESTROY_LEASE_FAILED, JOB_CREATED_WITHOUT_UID, NOT_FOUND,
    SANDBOX_CREATED_WITHOUT_UID, SCOPED_POLICY_AND_RELEASE_FAILED,
};
/// The crate's [`Error`](crate::Error) under the names the boundary's callers and tests know
/// it by: what an API call fails with and what an orchestration step fails with are one type.
pub use crate::error::{Error as ApiError, Error as ClusterError};
pub use api::{ApiGroup, ApiMethod, ClusterApi, WATCH_NOT_SERVED, WatchEvent, WatchStream};
pub use client::{KubeCluster, api_error_from_kube};
pub use clock::{Clock, PollOptions, SystemClock};
pub use credentials::{
    CREATE_KUBE_CONFIG_REQUIRES_CREDENTIALS, ClientCache, CredentialSource, KubeClientHandle,
    Redactor,
};
pub use grant_egress::{
    create_scoped_network_egress_policy, create_scoped_network_egress_policy_or_release_workload,
};
pub use job_backend::{find_pod_for_job, get_job_status, wait_for_job_completion};
pub use readiness::{ReadinessLimits, wait_for_sandbox_ready, wait_for_sandbox_ready_with};
pub use resume_and_destroy::{
    DestroyLease, ResumeCheck, ResumeCheckResult, check_lease_resumable,
    delete_sandbox_cr_trying_versions, destroy_lease_resources,
    destroy_lease_resources_trying_versions,
};
pub use sandbox_api_version::{
    SandboxApiVersion, SandboxApiVersionCache, discover_sandbox_api_version,
    sandbox_api_version_from_metadata,
};
pub use sandbox_backend::{find_pod_for_sandbox, get_sandbox_cr_status, map_sandbox_phase};
pub use secret::{PerRunSecret, create_per_run_secret};
pub use status::{SandboxStatus, WorkloadPhase};
pub use tenant::{TenantInput, TenantResourceQuota, ensure_tenant};
pub use workload::WorkloadOrchestrator;
