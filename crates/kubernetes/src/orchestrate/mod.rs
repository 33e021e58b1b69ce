//! The cluster-facing steps of the provider, over [`ClusterApi`](crate::cluster::ClusterApi):
//! tenant provisioning, the per-run Secret, scoped egress policies, both workload backends
//! (claim, status, pod lookup, logs, release, waits), Sandbox API version discovery, and the
//! resume check and destroy of a lease.
//!
//! Each function makes the same API calls, in the same order, with the same request objects as
//! the original, and absorbs 404/409 exactly where it does; everything else is returned as a
//! [`ClusterError`]. Waits poll on an injected [`Clock`].

mod clock;
mod error;
pub mod job;
mod js_value;
pub mod lease_lifecycle;
pub mod pod_log;
mod response;
pub mod sandbox_api_version;
pub mod sandbox_cr;
pub mod scoped_egress;
pub mod secret;
mod status;
pub mod tenant;
mod workload;

pub use clock::{Clock, PollOptions, SystemClock};
pub use error::{
    ClusterError, DESTROY_LEASE_FAILED, JOB_CREATED_WITHOUT_UID, SANDBOX_CREATED_WITHOUT_UID,
    SCOPED_POLICY_AND_RELEASE_FAILED,
};
pub use job::{find_pod_for_job, get_job_status, wait_for_job_completion};
pub use lease_lifecycle::{
    DestroyLease, ResumeCheck, ResumeCheckResult, check_lease_resumable,
    delete_sandbox_cr_trying_versions, destroy_lease_resources,
    destroy_lease_resources_trying_versions,
};
pub use sandbox_api_version::{
    SandboxApiVersion, SandboxApiVersionCache, discover_sandbox_api_version,
    sandbox_api_version_from_metadata,
};
pub use sandbox_cr::{
    find_pod_for_sandbox, get_sandbox_cr_status, map_sandbox_phase, wait_for_sandbox_ready,
};
pub use scoped_egress::{
    create_scoped_network_egress_policy, create_scoped_network_egress_policy_or_release_workload,
};
pub use secret::{PerRunSecret, create_per_run_secret};
pub use status::{SandboxStatus, WorkloadPhase};
pub use tenant::{TenantInput, TenantResourceQuota, ensure_tenant};
pub use workload::WorkloadOrchestrator;
