//! What a lease is made of before and besides the cluster: the checks acquire runs before any
//! cluster access ([`precheck`]: everything that can refuse a lease without side effects), a
//! requested lease deadline bounded by the provider ([`expiry`]), the tenant namespace of a
//! company ([`namespace`]), the warnings of `egressMode: standard` ([`egress_warnings`]), the
//! per-worker lease state the hooks share ([`state`], and [`calls`]: the execute and sync
//! calls in flight, which worker shutdown answers and ends), and each Sandbox's own end, moved
//! forward while hooks use it ([`lease_end`], issue #38).

pub mod calls;
pub mod connection;
pub mod egress_warnings;
pub mod expiry;
pub mod lease_end;
pub mod left_commands;
pub mod namespace;
pub mod precheck;
pub mod state;
pub mod view;

pub use connection::{ClusterConnector, Connection, KubeConnector};
pub use expiry::{BoundedLeaseDeadline, compute_bounded_lease_deadline};
pub use namespace::{derive_company_slug, derive_tenant_namespace};
pub use precheck::{AcquirePlan, JOB_BACKEND_CANNOT_HONOR_DEADLINE, prepare_acquire};
pub use state::{ReadySet, UploadInterceptors};
pub use view::{DEFAULT_REMOTE_CWD, LeaseView, connect};
