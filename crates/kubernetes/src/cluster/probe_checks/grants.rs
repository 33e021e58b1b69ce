//! The permission check: every permission the config needs ([`crate::cluster::permissions`]),
//! asked one verb and resource at a time; one summary line for the whole list, one per
//! permission missing, one per distinct failure of the reviews themselves.

use super::report::{Check, Report, one_line};
use crate::cluster::ClusterApi;
use crate::cluster::access_review::{Reviewed, Verdict, review_all};
use crate::cluster::permissions::{Access, Scope, needed};
use crate::config::{Backend, EgressMode};
use crate::error::Error;

/// Where a permission applies, in words.
fn where_of(scope: Scope, namespace: &str) -> String {
    match scope {
        Scope::Tenant => format!("in namespace {namespace}"),
        Scope::Cluster | Scope::Url => "cluster-wide".into(),
    }
}

pub fn permissions_granted_line(count: usize) -> String {
    format!("Permissions: all {count} the config needs are granted.")
}

pub fn permissions_partly_granted_line(granted: usize, count: usize) -> String {
    format!(
        "Permissions: {granted} of {count} the config needs are granted; each one missing follows."
    )
}

pub fn permission_missing_line(verb: &str, resource: &str, place: &str, why: &str) -> String {
    format!("Permission missing: {verb} {resource} {place}, to {why}.")
}

pub fn permissions_unchecked_line(count: usize, error: &str) -> String {
    format!(
        "Permissions: {count} could not be checked: {}",
        one_line(error)
    )
}

/// Every permission the config needs, one review each; also the verdict on `create
/// namespaces` (for the tenant namespace check).
pub async fn permission_checks<C: ClusterApi + ?Sized>(
    cluster: &C,
    backend: Backend,
    egress: EgressMode,
    namespace: &str,
) -> (Report, Option<bool>) {
    let needs = needed(backend, egress);
    let reviewed = review_all(cluster, &needs, namespace).await;
    let may_create_namespace = reviewed
        .iter()
        .find(|r| r.access.resource == "namespaces" && r.access.verb == "create")
        .and_then(|r| r.verdict.as_ref().ok().map(|v| *v == Verdict::Allowed));
    (
        permission_report(&reviewed, namespace),
        may_create_namespace,
    )
}

fn permission_check(reviewed: &Reviewed, namespace: &str) -> Check {
    let Access {
        group,
        verb,
        subresource,
        ..
    } = reviewed.access;
    let scope = reviewed.permission.scope;
    let resource = reviewed.access.resource_name();
    let place = where_of(scope, namespace);
    let (ok, message) = match &reviewed.verdict {
        Ok(Verdict::Allowed) => (true, format!("{verb} {resource} {place}")),
        Ok(Verdict::Denied { .. }) => (
            false,
            permission_missing_line(verb, &resource, &place, reviewed.permission.why),
        ),
        Err(err) => (
            false,
            permission_unchecked_message(verb, &resource, &place, err),
        ),
    };
    let mut check = Check::new("permission", ok, message)
        .with("verb", verb)
        .with("group", group)
        .with("resource", reviewed.access.resource)
        .with("allowed", reviewed.verdict == Ok(Verdict::Allowed));
    if let Some(sub) = subresource {
        check = check.with("subresource", sub);
    }
    if scope == Scope::Tenant {
        check = check.with("namespace", namespace);
    }
    match &reviewed.verdict {
        Ok(Verdict::Denied {
            reason: Some(reason),
        }) => check.with("reason", reason.as_str()),
        Err(err) => check.with("error", err.to_string()),
        _ => check,
    }
}

fn permission_unchecked_message(verb: &str, resource: &str, place: &str, err: &Error) -> String {
    format!("{verb} {resource} {place}: {}", one_line(&err.to_string()))
}

fn permission_report(reviewed: &[Reviewed], namespace: &str) -> Report {
    let checks: Vec<Check> = reviewed
        .iter()
        .map(|r| permission_check(r, namespace))
        .collect();
    let granted = checks.iter().filter(|c| c.ok).count();
    let mut lines = Vec::new();
    if granted == checks.len() {
        lines.push(permissions_granted_line(checks.len()));
    } else {
        lines.push(permissions_partly_granted_line(granted, checks.len()));
    }
    for r in reviewed {
        if let Ok(Verdict::Denied { .. }) = r.verdict {
            lines.push(permission_missing_line(
                r.access.verb,
                &r.access.resource_name(),
                &where_of(r.permission.scope, namespace),
                r.permission.why,
            ));
        }
    }
    // One line per distinct failure of the reviews themselves (a server refusing them all).
    let mut errors: Vec<(String, usize)> = Vec::new();
    for err in reviewed.iter().filter_map(|r| r.verdict.as_ref().err()) {
        let text = err.to_string();
        match errors.iter_mut().find(|(e, _)| *e == text) {
            Some((_, count)) => *count += 1,
            None => errors.push((text, 1)),
        }
    }
    for (error, count) in errors {
        lines.push(permissions_unchecked_line(count, &error));
    }
    Report { checks, lines }
}
