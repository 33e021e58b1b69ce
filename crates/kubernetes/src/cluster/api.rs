//! The calls the provider makes against a Kubernetes API server, named as the original names
//! them (`@kubernetes/client-node` 1.x: `clients.<api>.<method>(request)`).

use sandbox_core::BoxFuture;
use serde_json::Value;

use crate::error::{ApiResult, Error};

/// The client object a call goes through in the original (`makeKubeClients`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ApiGroup {
    /// `CoreV1Api`.
    Core,
    /// `BatchV1Api`.
    Batch,
    /// `CustomObjectsApi`: Sandbox CRs and CiliumNetworkPolicies.
    Custom,
    /// `NetworkingV1Api`.
    Networking,
    /// `RbacAuthorizationV1Api`.
    Rbac,
    /// `ApisApi`: `GET /apis` discovery.
    Apis,
    /// `AuthorizationV1Api`: the probe's access reviews (not a call of the original).
    Authorization,
}

impl ApiGroup {
    pub fn as_str(self) -> &'static str {
        match self {
            ApiGroup::Core => "core",
            ApiGroup::Batch => "batch",
            ApiGroup::Custom => "custom",
            ApiGroup::Networking => "networking",
            ApiGroup::Rbac => "rbac",
            ApiGroup::Apis => "apis",
            ApiGroup::Authorization => "authorization",
        }
    }
}

/// Declares [`ApiMethod`] and its names from one table, so a variant, its API group and its
/// client-node method name cannot drift apart.
macro_rules! api_methods {
    ($($variant:ident => $group:ident, $name:literal, $request:literal;)*) => {
        /// One API call the provider makes. The doc of each variant is its request object.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ApiMethod {
            $(#[doc = $request] $variant,)*
        }

        impl ApiMethod {
            /// Every method, in declaration order.
            pub const ALL: &'static [ApiMethod] = &[$(ApiMethod::$variant,)*];

            /// The client the original calls it on.
            pub fn group(self) -> ApiGroup {
                match self {
                    $(ApiMethod::$variant => ApiGroup::$group,)*
                }
            }

            /// The client-node method name, e.g. `readNamespacedPod`.
            pub fn name(self) -> &'static str {
                match self {
                    $(ApiMethod::$variant => $name,)*
                }
            }
        }
    };
}

api_methods! {
    ReadNamespace => Core, "readNamespace", "`{name}`";
    CreateNamespace => Core, "createNamespace", "`{body}`";
    ReadNamespacedServiceAccount => Core, "readNamespacedServiceAccount", "`{name, namespace}`";
    CreateNamespacedServiceAccount => Core, "createNamespacedServiceAccount", "`{namespace, body}`";
    ReadNamespacedResourceQuota => Core, "readNamespacedResourceQuota", "`{name, namespace}`";
    CreateNamespacedResourceQuota => Core, "createNamespacedResourceQuota", "`{namespace, body}`";
    ReadNamespacedLimitRange => Core, "readNamespacedLimitRange", "`{name, namespace}`";
    CreateNamespacedLimitRange => Core, "createNamespacedLimitRange", "`{namespace, body}`";
    CreateNamespacedSecret => Core, "createNamespacedSecret", "`{namespace, body}`";
    DeleteNamespacedSecret => Core, "deleteNamespacedSecret", "`{namespace, name}`";
    ReadNamespacedPod => Core, "readNamespacedPod", "`{namespace, name}`";
    ListNamespacedPod => Core, "listNamespacedPod", "`{namespace, labelSelector?}`";
    DeleteNamespacedPod => Core, "deleteNamespacedPod", "`{namespace, name}`";
    ReadNamespacedPodLog => Core, "readNamespacedPodLog", "`{namespace, name}`; resolves with the whole log as a JSON string";
    CreateNamespacedJob => Batch, "createNamespacedJob", "`{namespace, body}`";
    ReadNamespacedJobStatus => Batch, "readNamespacedJobStatus", "`{namespace, name}`";
    DeleteNamespacedJob => Batch, "deleteNamespacedJob", "`{namespace, name, propagationPolicy}`";
    CreateNamespacedCustomObject => Custom, "createNamespacedCustomObject", "`{group, version, namespace, plural, body}`";
    GetNamespacedCustomObject => Custom, "getNamespacedCustomObject", "`{group, version, namespace, plural, name}`";
    DeleteNamespacedCustomObject => Custom, "deleteNamespacedCustomObject", "`{group, version, namespace, plural, name, propagationPolicy}`";
    PatchNamespacedCustomObject => Custom, "patchNamespacedCustomObject", "`{group, version, namespace, plural, name, body}`, `body` sent as a JSON merge patch: moves a Sandbox's `shutdownTime` (an addition, issue #38: the original never patches)";
    ReadNamespacedNetworkPolicy => Networking, "readNamespacedNetworkPolicy", "`{name, namespace}`";
    CreateNamespacedNetworkPolicy => Networking, "createNamespacedNetworkPolicy", "`{namespace, body}`";
    ReadNamespacedRole => Rbac, "readNamespacedRole", "`{name, namespace}`";
    CreateNamespacedRole => Rbac, "createNamespacedRole", "`{namespace, body}`";
    ReadNamespacedRoleBinding => Rbac, "readNamespacedRoleBinding", "`{name, namespace}`";
    CreateNamespacedRoleBinding => Rbac, "createNamespacedRoleBinding", "`{namespace, body}`";
    GetApiVersions => Apis, "getAPIVersions", "no request (`Value::Null`); resolves with an `APIGroupList`";
    WatchNamespacedCustomObject => Custom, "watchNamespacedCustomObject", "`{group, version, namespace, plural, fieldSelector, resourceVersion?, timeoutSeconds}`, opened with [`ClusterApi::watch`]: the Sandbox ready-wait (an addition: the original polls)";
    WatchNamespacedPod => Core, "watchNamespacedPod", "`{namespace, labelSelector, resourceVersion?, timeoutSeconds}`, opened with [`ClusterApi::watch`]: the Sandbox ready-wait reads the pod's state (an addition: the original never does)";
    CreateSelfSubjectAccessReview => Authorization, "createSelfSubjectAccessReview", "`{body}`; the probe's permission checks (an addition: the original never asks)";
}

impl ApiMethod {
    /// `"<api>.<method>"`, the key the golden vectors script a call under.
    pub fn key(self) -> String {
        format!("{}.{}", self.group().as_str(), self.name())
    }
}

/// One event of a watch, as the API server streams it (`{"type", "object"}`).
#[derive(Debug, Clone, PartialEq)]
pub enum WatchEvent {
    Added(Value),
    Modified(Value),
    Deleted(Value),
    /// Only the object's `metadata.resourceVersion` is meaningful.
    Bookmark(Value),
    /// An `ERROR` event: its `metav1.Status` (code 410 when the resourceVersion the watch
    /// started from is too old).
    Error(Value),
}

/// The events of one open watch. It ends when the server ends it (`timeoutSeconds`) or the
/// connection drops; an `Err` item is a failed read of the stream, after which it ends.
pub type WatchStream = futures::stream::BoxStream<'static, Result<WatchEvent, Error>>;

/// What an API server that serves no watches answers (the default of [`ClusterApi::watch`]):
/// 405, so a caller falls back to reading.
pub const WATCH_NOT_SERVED: &str = "watch is not served";

/// A Kubernetes API server, as the orchestration code sees it.
///
/// Requests are the client-node request objects as JSON (documented on each [`ApiMethod`]
/// variant; `body` is the exact manifest to send). Responses are the decoded response bodies.
/// Errors are [`Error`](super::Error)s carrying the HTTP status: the orchestration code
/// absorbs 404 and 409 exactly where the original does and passes everything else through.
///
/// An implementation provides [`ClusterApi::call`]; the named methods below are what the
/// orchestration code calls, so each call site reads like the original's.
pub trait ClusterApi: Send + Sync {
    /// Performs one API call.
    fn call(&self, method: ApiMethod, request: Value) -> BoxFuture<'_, ApiResult>;

    /// `apiServerUrl(kc)`: the API server's URL, or `in-cluster` when the credentials name none.
    /// The key of the Sandbox API version cache ([`crate::cluster::sandbox_api_version`]).
    fn server_url(&self) -> &str {
        "in-cluster"
    }

    fn read_namespace(&self, request: Value) -> BoxFuture<'_, ApiResult> {
        self.call(ApiMethod::ReadNamespace, request)
    }
    fn create_namespace(&self, request: Value) -> BoxFuture<'_, ApiResult> {
        self.call(ApiMethod::CreateNamespace, request)
    }
    fn read_namespaced_service_account(&self, request: Value) -> BoxFuture<'_, ApiResult> {
        self.call(ApiMethod::ReadNamespacedServiceAccount, request)
    }
    fn create_namespaced_service_account(&self, request: Value) -> BoxFuture<'_, ApiResult> {
        self.call(ApiMethod::CreateNamespacedServiceAccount, request)
    }
    fn read_namespaced_resource_quota(&self, request: Value) -> BoxFuture<'_, ApiResult> {
        self.call(ApiMethod::ReadNamespacedResourceQuota, request)
    }
    fn create_namespaced_resource_quota(&self, request: Value) -> BoxFuture<'_, ApiResult> {
        self.call(ApiMethod::CreateNamespacedResourceQuota, request)
    }
    fn read_namespaced_limit_range(&self, request: Value) -> BoxFuture<'_, ApiResult> {
        self.call(ApiMethod::ReadNamespacedLimitRange, request)
    }
    fn create_namespaced_limit_range(&self, request: Value) -> BoxFuture<'_, ApiResult> {
        self.call(ApiMethod::CreateNamespacedLimitRange, request)
    }
    fn create_namespaced_secret(&self, request: Value) -> BoxFuture<'_, ApiResult> {
        self.call(ApiMethod::CreateNamespacedSecret, request)
    }
    fn delete_namespaced_secret(&self, request: Value) -> BoxFuture<'_, ApiResult> {
        self.call(ApiMethod::DeleteNamespacedSecret, request)
    }
    fn read_namespaced_pod(&self, request: Value) -> BoxFuture<'_, ApiResult> {
        self.call(ApiMethod::ReadNamespacedPod, request)
    }
    fn list_namespaced_pod(&self, request: Value) -> BoxFuture<'_, ApiResult> {
        self.call(ApiMethod::ListNamespacedPod, request)
    }
    fn delete_namespaced_pod(&self, request: Value) -> BoxFuture<'_, ApiResult> {
        self.call(ApiMethod::DeleteNamespacedPod, request)
    }
    fn read_namespaced_pod_log(&self, request: Value) -> BoxFuture<'_, ApiResult> {
        self.call(ApiMethod::ReadNamespacedPodLog, request)
    }
    fn create_namespaced_job(&self, request: Value) -> BoxFuture<'_, ApiResult> {
        self.call(ApiMethod::CreateNamespacedJob, request)
    }
    fn read_namespaced_job_status(&self, request: Value) -> BoxFuture<'_, ApiResult> {
        self.call(ApiMethod::ReadNamespacedJobStatus, request)
    }
    fn delete_namespaced_job(&self, request: Value) -> BoxFuture<'_, ApiResult> {
        self.call(ApiMethod::DeleteNamespacedJob, request)
    }
    fn create_namespaced_custom_object(&self, request: Value) -> BoxFuture<'_, ApiResult> {
        self.call(ApiMethod::CreateNamespacedCustomObject, request)
    }
    fn get_namespaced_custom_object(&self, request: Value) -> BoxFuture<'_, ApiResult> {
        self.call(ApiMethod::GetNamespacedCustomObject, request)
    }
    fn delete_namespaced_custom_object(&self, request: Value) -> BoxFuture<'_, ApiResult> {
        self.call(ApiMethod::DeleteNamespacedCustomObject, request)
    }
    fn patch_namespaced_custom_object(&self, request: Value) -> BoxFuture<'_, ApiResult> {
        self.call(ApiMethod::PatchNamespacedCustomObject, request)
    }
    fn read_namespaced_network_policy(&self, request: Value) -> BoxFuture<'_, ApiResult> {
        self.call(ApiMethod::ReadNamespacedNetworkPolicy, request)
    }
    fn create_namespaced_network_policy(&self, request: Value) -> BoxFuture<'_, ApiResult> {
        self.call(ApiMethod::CreateNamespacedNetworkPolicy, request)
    }
    fn read_namespaced_role(&self, request: Value) -> BoxFuture<'_, ApiResult> {
        self.call(ApiMethod::ReadNamespacedRole, request)
    }
    fn create_namespaced_role(&self, request: Value) -> BoxFuture<'_, ApiResult> {
        self.call(ApiMethod::CreateNamespacedRole, request)
    }
    fn read_namespaced_role_binding(&self, request: Value) -> BoxFuture<'_, ApiResult> {
        self.call(ApiMethod::ReadNamespacedRoleBinding, request)
    }
    fn create_namespaced_role_binding(&self, request: Value) -> BoxFuture<'_, ApiResult> {
        self.call(ApiMethod::CreateNamespacedRoleBinding, request)
    }
    fn get_api_versions(&self) -> BoxFuture<'_, ApiResult> {
        self.call(ApiMethod::GetApiVersions, Value::Null)
    }

    /// Opens a watch (`method` is one of the `Watch*` methods): the stream once the server has
    /// answered, or the error it answered with. By default the server serves none (405).
    fn watch(
        &self,
        method: ApiMethod,
        request: Value,
    ) -> BoxFuture<'_, Result<WatchStream, Error>> {
        let _ = (method, request);
        Box::pin(async { Err(Error::new(405, WATCH_NOT_SERVED)) })
    }
    fn create_self_subject_access_review(&self, request: Value) -> BoxFuture<'_, ApiResult> {
        self.call(ApiMethod::CreateSelfSubjectAccessReview, request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn keys_are_the_golden_script_keys() {
        assert_eq!(ApiMethod::ReadNamespace.key(), "core.readNamespace");
        assert_eq!(
            ApiMethod::GetNamespacedCustomObject.key(),
            "custom.getNamespacedCustomObject"
        );
        assert_eq!(ApiMethod::GetApiVersions.key(), "apis.getAPIVersions");
        let keys: HashSet<String> = ApiMethod::ALL.iter().map(|m| m.key()).collect();
        assert_eq!(keys.len(), ApiMethod::ALL.len(), "keys are unique");
    }
}
