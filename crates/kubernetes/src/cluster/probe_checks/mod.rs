//! What the probe asks a reachable cluster (an addition: the original's probe only lists pods):
//! whether it serves the Sandbox API, whether the credentials hold every permission the config
//! needs ([`crate::cluster::permissions`], each asked with a SelfSubjectAccessReview), and
//! whether the tenant namespace exists or may be created, one module each. The three run at
//! once; each yields its checks (the probe's `metadata.checks`, [`Check`]) and its summary
//! lines: one per check, except the permissions, which take one line for the whole list and one
//! per permission missing.

mod grants;
mod report;
mod sandbox_api;
mod tenant_namespace;
#[cfg(test)]
mod tests;

pub use grants::{
    permission_checks, permission_missing_line, permissions_granted_line,
    permissions_partly_granted_line, permissions_unchecked_line,
};
pub use report::{Check, Report, one_line};
pub use sandbox_api::{
    SANDBOX_API_NOT_USED_BY_JOBS, sandbox_api_check, sandbox_api_not_installed_line,
    sandbox_api_served_line, sandbox_api_unknown_line,
};
pub use tenant_namespace::{
    NamespaceState, read_tenant_namespace, tenant_namespace_creatable_line,
    tenant_namespace_exists_line, tenant_namespace_not_creatable_line, tenant_namespace_report,
    tenant_namespace_terminating_line, tenant_namespace_unreadable_line,
};

use crate::cluster::ClusterApi;
use crate::config::{Backend, EgressMode};

/// The three cluster checks at once, reported in a fixed order: Sandbox API, permissions,
/// tenant namespace.
pub async fn cluster_checks<C: ClusterApi + ?Sized>(
    cluster: &C,
    backend: Backend,
    egress: EgressMode,
    namespace: &str,
) -> Report {
    let (sandbox_api, (permissions, may_create), state) = tokio::join!(
        sandbox_api_check(cluster, backend),
        permission_checks(cluster, backend, egress, namespace),
        read_tenant_namespace(cluster, namespace),
    );
    let mut report = sandbox_api;
    report.extend(permissions);
    report.extend(tenant_namespace_report(namespace, &state, may_create));
    report
}
