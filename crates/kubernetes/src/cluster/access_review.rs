//! Asking the API server what the provider's credentials may do: one SelfSubjectAccessReview
//! (`POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews`) per verb and resource of
//! [`super::permissions`], made by the probe. The server answers with its authorizer's verdict
//! for the caller, as a real request would be judged (RBAC or any other authorizer), without
//! touching the resource.

use serde_json::{Value, json};

use crate::cluster::ClusterApi;
use crate::cluster::permissions::{Access, Permission, Scope};
use crate::error::Error;

/// How many reviews are in flight at once (a probe asks about 20 to 30).
const CONCURRENT_REVIEWS: usize = 8;

/// The review of one access: granted, or not and the server's reason if it gave one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Allowed,
    Denied { reason: Option<String> },
}

/// The SelfSubjectAccessReview asking for `access` (in `namespace` when the access is
/// namespaced).
pub fn review_body(access: &Access, scope: Scope, namespace: &str) -> Value {
    let spec = match scope {
        Scope::Url => {
            json!({"nonResourceAttributes": {"path": access.resource, "verb": access.verb}})
        }
        Scope::Cluster | Scope::Tenant => {
            let mut attributes = json!({"verb": access.verb, "group": access.group,
                "resource": access.resource});
            if let Some(sub) = access.subresource {
                attributes["subresource"] = json!(sub);
            }
            if scope == Scope::Tenant {
                attributes["namespace"] = json!(namespace);
            }
            json!({"resourceAttributes": attributes})
        }
    };
    json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
        "spec": spec})
}

/// The verdict in a review's answer: `status.allowed`, else denied with `status.reason`.
pub fn verdict_of(answer: &Value) -> Verdict {
    let status = &answer["status"];
    if status["allowed"] == json!(true) {
        return Verdict::Allowed;
    }
    let reason = status["reason"]
        .as_str()
        .or(status["evaluationError"].as_str())
        .filter(|r| !r.is_empty())
        .map(str::to_string);
    Verdict::Denied { reason }
}

/// One review.
pub async fn review<C: ClusterApi + ?Sized>(
    cluster: &C,
    access: &Access,
    scope: Scope,
    namespace: &str,
) -> Result<Verdict, Error> {
    let answer = cluster
        .create_self_subject_access_review(json!({"body": review_body(access, scope, namespace)}))
        .await?;
    Ok(verdict_of(&answer))
}

/// A review of one needed access, with the permission it comes from.
#[derive(Debug, Clone)]
pub struct Reviewed {
    pub access: Access,
    pub permission: &'static Permission,
    pub verdict: Result<Verdict, Error>,
}

/// Reviews every access, a few at a time, in the order given.
pub async fn review_all<C: ClusterApi + ?Sized>(
    cluster: &C,
    needed: &[(Access, &'static Permission)],
    namespace: &str,
) -> Vec<Reviewed> {
    let slots = tokio::sync::Semaphore::new(CONCURRENT_REVIEWS);
    let reviews = needed.iter().map(|&(access, permission)| {
        let slots = &slots;
        async move {
            let _slot = slots.acquire().await;
            let verdict = review(cluster, &access, permission.scope, namespace).await;
            Reviewed {
                access,
                permission,
                verdict,
            }
        }
    });
    futures::future::join_all(reviews).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::permissions::{PERMISSIONS, needed};
    use crate::cluster::testing::{ScriptedCluster, ScriptedReply};
    use crate::cluster::{ApiMethod, ApiResult};
    use crate::config::{Backend, EgressMode};
    use sandbox_core::BoxFuture;

    #[test]
    fn bodies_ask_in_the_tenant_namespace_cluster_wide_or_for_a_url() {
        let exec = PERMISSIONS
            .iter()
            .find(|p| p.subresource == Some("exec"))
            .unwrap();
        let create = exec.accesses().next().unwrap();
        assert_eq!(
            review_body(&create, Scope::Tenant, "paperclip-acme"),
            json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                "spec": {"resourceAttributes": {"verb": "create", "group": "", "resource": "pods",
                    "subresource": "exec", "namespace": "paperclip-acme"}}})
        );
        let namespaces = PERMISSIONS[0].accesses().nth(1).unwrap();
        assert_eq!(
            review_body(&namespaces, Scope::Cluster, "ignored")["spec"],
            json!({"resourceAttributes": {"verb": "create", "group": "", "resource": "namespaces"}})
        );
        let apis = PERMISSIONS.iter().find(|p| p.scope == Scope::Url).unwrap();
        assert_eq!(
            review_body(&apis.accesses().next().unwrap(), Scope::Url, "x")["spec"],
            json!({"nonResourceAttributes": {"path": "/apis", "verb": "get"}})
        );
    }

    #[test]
    fn verdicts() {
        assert_eq!(
            verdict_of(&json!({"status": {"allowed": true}})),
            Verdict::Allowed
        );
        assert_eq!(
            verdict_of(&json!({"status": {"allowed": false}})),
            Verdict::Denied { reason: None }
        );
        assert_eq!(
            verdict_of(&json!({"status": {"allowed": false, "denied": true, "reason": "policy"}})),
            Verdict::Denied {
                reason: Some("policy".into())
            }
        );
        assert_eq!(verdict_of(&json!({})), Verdict::Denied { reason: None });
    }

    /// Grants everything but the accesses named, by reading each review's body.
    struct Denying(&'static [(&'static str, &'static str)]);

    impl ClusterApi for Denying {
        fn call(&self, method: ApiMethod, request: Value) -> BoxFuture<'_, ApiResult> {
            assert_eq!(method, ApiMethod::CreateSelfSubjectAccessReview);
            let attributes = &request["body"]["spec"]["resourceAttributes"];
            let denied = self.0.iter().any(|(verb, resource)| {
                attributes["verb"] == *verb && attributes["resource"] == *resource
            });
            Box::pin(async move { Ok(json!({"status": {"allowed": !denied}})) })
        }
    }

    #[tokio::test]
    async fn every_needed_access_is_reviewed_in_order() {
        let needs = needed(Backend::SandboxCr, EgressMode::Standard);
        let reviewed = review_all(&Denying(&[("list", "pods")]), &needs, "ns").await;
        assert_eq!(reviewed.len(), needs.len());
        let denied: Vec<String> = reviewed
            .iter()
            .filter(|r| r.verdict != Ok(Verdict::Allowed))
            .map(|r| format!("{} {}", r.access.verb, r.access.resource_name()))
            .collect();
        assert_eq!(denied, ["list pods"]);
        for (r, (access, _)) in reviewed.iter().zip(&needs) {
            assert_eq!(r.access, *access);
        }

        let failing = ScriptedCluster::new().script(
            ApiMethod::CreateSelfSubjectAccessReview,
            vec![ScriptedReply::Throws(Error::new(403, "forbidden"))],
        );
        let reviewed = review_all(&failing, &needs[..2], "ns").await;
        assert_eq!(reviewed[1].verdict, Err(Error::new(403, "forbidden")));
        assert_eq!(failing.calls().len(), 2);
    }
}
