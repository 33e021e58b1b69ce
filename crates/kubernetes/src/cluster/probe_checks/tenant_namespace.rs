//! The tenant namespace check: present, or missing and creatable by these credentials (the
//! permission check's verdict on `create namespaces`), or being deleted.

use serde_json::json;

use super::report::{Check, Report, one_line};
use crate::cluster::ClusterApi;
use crate::error::Error;

pub fn tenant_namespace_exists_line(namespace: &str) -> String {
    format!("Tenant namespace {namespace}: exists.")
}

pub fn tenant_namespace_creatable_line(namespace: &str) -> String {
    format!("Tenant namespace {namespace}: does not exist yet; the first lease creates it.")
}

pub fn tenant_namespace_not_creatable_line(namespace: &str) -> String {
    format!(
        "Tenant namespace {namespace}: does not exist, and these credentials may not create it; create it, or grant create on namespaces."
    )
}

pub fn tenant_namespace_terminating_line(namespace: &str) -> String {
    format!(
        "Tenant namespace {namespace}: is being deleted; leases fail until it is gone, then the next lease creates it again."
    )
}

pub fn tenant_namespace_unreadable_line(namespace: &str, error: &str) -> String {
    format!(
        "Tenant namespace {namespace}: could not be read: {}",
        one_line(error)
    )
}

/// What reading the tenant namespace found.
#[derive(Debug, Clone, PartialEq)]
pub enum NamespaceState {
    Exists,
    Terminating,
    Missing,
    Unreadable(Error),
}

pub async fn read_tenant_namespace<C: ClusterApi + ?Sized>(
    cluster: &C,
    namespace: &str,
) -> NamespaceState {
    match cluster.read_namespace(json!({"name": namespace})).await {
        Ok(found) if found["status"]["phase"] == "Terminating" => NamespaceState::Terminating,
        Ok(_) => NamespaceState::Exists,
        Err(err) if err.is_not_found() => NamespaceState::Missing,
        Err(err) => NamespaceState::Unreadable(err),
    }
}

/// The tenant namespace: present, or missing and creatable (`may_create`: the verdict on
/// `create namespaces`, `None` when it could not be asked).
pub fn tenant_namespace_report(
    namespace: &str,
    state: &NamespaceState,
    may_create: Option<bool>,
) -> Report {
    let (ok, line, exists) = match state {
        NamespaceState::Exists => (true, tenant_namespace_exists_line(namespace), true),
        NamespaceState::Terminating => (false, tenant_namespace_terminating_line(namespace), true),
        NamespaceState::Missing if may_create == Some(true) => {
            (true, tenant_namespace_creatable_line(namespace), false)
        }
        NamespaceState::Missing => (false, tenant_namespace_not_creatable_line(namespace), false),
        NamespaceState::Unreadable(err) => (
            false,
            tenant_namespace_unreadable_line(namespace, &err.to_string()),
            false,
        ),
    };
    let mut check = Check::new("tenantNamespace", ok, line)
        .with("namespace", namespace)
        .with("exists", exists);
    if let NamespaceState::Unreadable(err) = state {
        check = check.with("error", err.to_string());
    }
    Report::single(check)
}
