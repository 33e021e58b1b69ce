//! [`KubeCluster`]: every [`ApiMethod`] as a kube-rs request.
//!
//! Requests are built with kube-rs's own URL builder (`kube::core::Request`, what `Api<K>`
//! uses) so bodies go to the server exactly as the builders made them (key presence matters),
//! and responses come back as plain JSON.

use kube::api::LogParams;
use kube::core::params::{
    DeleteParams, GetParams, ListParams, Patch, PatchParams, PostParams, PropagationPolicy,
};
use kube::core::{Request, Status};
use sandbox_core::BoxFuture;
use serde_json::Value;

use super::credentials::{KubeClientHandle, Redactor};
use crate::cluster::{ApiMethod, ApiResult, ClusterApi, WatchStream};
use crate::error::Error;

/// A Kubernetes API server reached through kube-rs.
#[derive(Clone, Debug)]
pub struct KubeCluster {
    handle: KubeClientHandle,
}

impl KubeCluster {
    pub fn new(handle: KubeClientHandle) -> Self {
        Self { handle }
    }

    pub fn client(&self) -> &kube::Client {
        &self.handle.client
    }

    /// `apiServerUrl(kc)`.
    pub fn server_url(&self) -> &str {
        &self.handle.server_url
    }

    pub fn redactor(&self) -> &Redactor {
        &self.handle.redactor
    }

    /// One request, cut at the hook's API bound ([`crate::cluster::api_bound`]).
    async fn perform(&self, method: ApiMethod, request: Value) -> ApiResult {
        crate::cluster::api_bound::bounded(self.perform_unbounded(method, request))
            .await
            .map_err(Error::unanswered)?
    }

    async fn perform_unbounded(&self, method: ApiMethod, request: Value) -> ApiResult {
        let client = &self.handle.client;
        let redactor = &self.handle.redactor;
        let fail = |err: kube::Error| api_error_from_kube(err, redactor);
        let http_request = match method {
            ApiMethod::GetApiVersions => {
                let groups = client.list_api_groups().await.map_err(fail)?;
                return serde_json::to_value(groups).map_err(|e| Error::unanswered(e.to_string()));
            }
            ApiMethod::ReadNamespacedPodLog => {
                let req = Request::new(core_path(&request, "pods")?)
                    .logs(&field(&request, "name")?, &LogParams::default())
                    .map_err(build_error)?;
                let text = client.request_text(req).await.map_err(fail)?;
                return Ok(Value::String(text));
            }
            _ => build_request(method, &request)?,
        };
        client.request::<Value>(http_request).await.map_err(fail)
    }
}

impl ClusterApi for KubeCluster {
    fn call(&self, method: ApiMethod, request: Value) -> BoxFuture<'_, ApiResult> {
        Box::pin(self.perform(method, request))
    }

    fn server_url(&self) -> &str {
        KubeCluster::server_url(self)
    }

    fn watch(
        &self,
        method: ApiMethod,
        request: Value,
    ) -> BoxFuture<'_, Result<WatchStream, Error>> {
        Box::pin(async move {
            let path = match method {
                ApiMethod::WatchNamespacedPod => core_path(&request, "pods")?,
                ApiMethod::WatchNamespacedCustomObject => custom_path(&request)?,
                other => unreachable!("{} is not a watch", other.key()),
            };
            let redactor = self.handle.redactor.clone();
            let fail = move |err: kube::Error| api_error_from_kube(err, &redactor);
            super::client_watch::open_watch(&self.handle.client, path, &request, fail).await
        })
    }
}

/// The HTTP request of one JSON-shaped call (all methods but logs and discovery).
fn build_request(method: ApiMethod, request: &Value) -> Result<http::Request<Vec<u8>>, Error> {
    use ApiMethod::*;
    let get = |path: String| {
        Request::new(path)
            .get(&field(request, "name")?, &GetParams::default())
            .map_err(build_error)
    };
    let create = |path: String| {
        let mut body = request.get("body").cloned().unwrap_or(Value::Null);
        if method == CreateNamespacedLimitRange {
            drop_limit_range_defaults(&mut body);
        }
        let bytes = serde_json::to_vec(&body).map_err(|e| Error::unanswered(e.to_string()))?;
        Request::new(path)
            .create(&PostParams::default(), bytes)
            .map_err(build_error)
    };
    let delete = |path: String| {
        let params = DeleteParams {
            propagation_policy: propagation_policy(request.get("propagationPolicy")),
            ..DeleteParams::default()
        };
        Request::new(path)
            .delete(&field(request, "name")?, &params)
            .map_err(build_error)
    };
    let rbac = |plural: &str| -> Result<String, Error> {
        Ok(format!(
            "/apis/rbac.authorization.k8s.io/v1/namespaces/{}/{plural}",
            field(request, "namespace")?
        ))
    };
    match method {
        ReadNamespace => get("/api/v1/namespaces".into()),
        CreateNamespace => create("/api/v1/namespaces".into()),
        ReadNamespacedServiceAccount => get(core_path(request, "serviceaccounts")?),
        CreateNamespacedServiceAccount => create(core_path(request, "serviceaccounts")?),
        ReadNamespacedResourceQuota => get(core_path(request, "resourcequotas")?),
        CreateNamespacedResourceQuota => create(core_path(request, "resourcequotas")?),
        ReadNamespacedLimitRange => get(core_path(request, "limitranges")?),
        CreateNamespacedLimitRange => create(core_path(request, "limitranges")?),
        CreateNamespacedSecret => create(core_path(request, "secrets")?),
        DeleteNamespacedSecret => delete(core_path(request, "secrets")?),
        ReadNamespacedPod => get(core_path(request, "pods")?),
        DeleteNamespacedPod => delete(core_path(request, "pods")?),
        ListNamespacedPod => {
            let mut params = ListParams::default();
            if let Some(selector) = request.get("labelSelector").and_then(Value::as_str) {
                params = params.labels(selector);
            }
            Request::new(core_path(request, "pods")?)
                .list(&params)
                .map_err(build_error)
        }
        CreateNamespacedJob => create(batch_path(request)?),
        ReadNamespacedJobStatus => Request::new(batch_path(request)?)
            .get_subresource("status", &field(request, "name")?)
            .map_err(build_error),
        DeleteNamespacedJob => delete(batch_path(request)?),
        CreateNamespacedCustomObject => create(custom_path(request)?),
        GetNamespacedCustomObject => get(custom_path(request)?),
        DeleteNamespacedCustomObject => delete(custom_path(request)?),
        // A JSON merge patch (`application/merge-patch+json`): custom resources take no
        // strategic merge, and a merge patch needs no read of the object first.
        PatchNamespacedCustomObject => Request::new(custom_path(request)?)
            .patch(
                &field(request, "name")?,
                &PatchParams::default(),
                &Patch::Merge(request.get("body").cloned().unwrap_or(Value::Null)),
            )
            .map_err(build_error),
        ReadNamespacedNetworkPolicy => get(networking_path(request)?),
        CreateNamespacedNetworkPolicy => create(networking_path(request)?),
        ReadNamespacedRole => get(rbac("roles")?),
        CreateNamespacedRole => create(rbac("roles")?),
        ReadNamespacedRoleBinding => get(rbac("rolebindings")?),
        CreateNamespacedRoleBinding => create(rbac("rolebindings")?),
        CreateSelfSubjectAccessReview => {
            create("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews".into())
        }
        ReadNamespacedPodLog | GetApiVersions => unreachable!("handled in KubeCluster::perform"),
        WatchNamespacedCustomObject | WatchNamespacedPod => {
            unreachable!("watches are opened with ClusterApi::watch")
        }
    }
}

/// What `@kubernetes/client-node` 1.x puts on the wire for a `V1LimitRange`: its serializer
/// reads each `V1LimitRangeItem`'s `default` from the model property `_default`, which the plain
/// object the plugin passes does not have, so the request carries no `default` (the plugin's
/// `default {cpu "1", memory "2Gi"}` never reaches the server; see docs/wire-parity.md). The
/// request object keeps it, as the original's does; only the bytes sent drop it.
fn drop_limit_range_defaults(body: &mut Value) {
    let items = body
        .get_mut("spec")
        .and_then(|spec| spec.get_mut("limits"))
        .and_then(Value::as_array_mut);
    for item in items.into_iter().flatten() {
        if let Some(item) = item.as_object_mut() {
            item.remove("default");
        }
    }
}

/// A path parameter, encoded as client-node does (`encodeURIComponent(String(value))`): a name
/// that is not a valid object name still makes a request (and meets the server's 404 or 422)
/// instead of failing to build one.
fn field(request: &Value, key: &str) -> Result<String, Error> {
    request
        .get(key)
        .and_then(Value::as_str)
        .map(js_compat::uri::encode_uri_component)
        .ok_or_else(|| Error::unanswered(format!("Required parameter {key} was null or undefined")))
}

fn core_path(request: &Value, plural: &str) -> Result<String, Error> {
    Ok(format!(
        "/api/v1/namespaces/{}/{plural}",
        field(request, "namespace")?
    ))
}

fn batch_path(request: &Value) -> Result<String, Error> {
    Ok(format!(
        "/apis/batch/v1/namespaces/{}/jobs",
        field(request, "namespace")?
    ))
}

fn networking_path(request: &Value) -> Result<String, Error> {
    Ok(format!(
        "/apis/networking.k8s.io/v1/namespaces/{}/networkpolicies",
        field(request, "namespace")?
    ))
}

fn custom_path(request: &Value) -> Result<String, Error> {
    Ok(format!(
        "/apis/{}/{}/namespaces/{}/{}",
        field(request, "group")?,
        field(request, "version")?,
        field(request, "namespace")?,
        field(request, "plural")?
    ))
}

fn propagation_policy(value: Option<&Value>) -> Option<PropagationPolicy> {
    match value.and_then(Value::as_str)? {
        "Foreground" => Some(PropagationPolicy::Foreground),
        "Background" => Some(PropagationPolicy::Background),
        "Orphan" => Some(PropagationPolicy::Orphan),
        _ => None,
    }
}

fn build_error(err: kube::core::request::Error) -> Error {
    Error::unanswered(err.to_string())
}

/// A kube-rs error as the hooks see it: an API `Status` keeps its HTTP code and its message
/// (never kube's Debug/Display dump); anything else has no HTTP status and a scrubbed message.
pub fn api_error_from_kube(err: kube::Error, redactor: &Redactor) -> Error {
    match err {
        kube::Error::Api(status) => api_error_from_status(*status),
        other => Error::unanswered(redactor.redact(&transport_message(&other))),
    }
}

/// An API failure as the original's client raised it: its message starts with the HTTP status
/// (`HTTP-Code: 404`), then the API's own Status message. The client also appended the whole
/// response body and headers; those stay out, since provider bodies never go into errors.
fn api_error_from_status(status: Status) -> Error {
    let code = status.code;
    let detail = if !status.message.is_empty() {
        status.message.clone()
    } else if !status.reason.is_empty() {
        status.reason.clone()
    } else {
        http::StatusCode::from_u16(code)
            .ok()
            .and_then(|s| s.canonical_reason())
            .unwrap_or("Unknown API Status Code!")
            .to_string()
    };
    let body = serde_json::to_value(&status).unwrap_or(Value::Null);
    Error::new(code, format!("HTTP-Code: {code}\nMessage: {detail}")).with_status(body)
}

/// The error chain, joined: kube's top-level Display is often only "ServiceError: client
/// error (Connect)", the cause (connection refused, certificate) is in the sources.
fn transport_message(err: &kube::Error) -> String {
    let mut message = err.to_string();
    let mut source = std::error::Error::source(err);
    while let Some(cause) = source {
        let text = cause.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = cause.source();
    }
    without_library_hints(&message)
}

/// rustls's text for a TLS stream cut without `close_notify`, which ends in a docs.rs link to
/// its own manual (library internals must not reach users).
const RUSTLS_UNEXPECTED_EOF: &str = "peer closed connection without sending TLS close_notify: https://docs.rs/rustls/latest/rustls/manual/_03_howto/index.html#unexpected-eof";

/// A transport error's text without what only a Rust developer can act on: rustls's manual
/// link becomes plain words, and any other docs.rs link is dropped.
pub fn without_library_hints(text: &str) -> String {
    let text = text.replace(
        RUSTLS_UNEXPECTED_EOF,
        "the API server closed the TLS connection without ending it properly",
    );
    text.split(' ')
        .filter(|word| !word.contains("://docs.rs/"))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod library_text_tests {
    use super::*;

    #[test]
    fn rustls_links_never_reach_users() {
        assert_eq!(
            without_library_hints(&format!("error trying to connect: {RUSTLS_UNEXPECTED_EOF}")),
            "error trying to connect: the API server closed the TLS connection without ending it properly"
        );
        assert_eq!(
            without_library_hints("bad thing, see https://docs.rs/x/latest/x/ for more"),
            "bad thing, see for more"
        );
        assert_eq!(
            without_library_hints("tcp connect error: Connection refused (os error 111)"),
            "tcp connect error: Connection refused (os error 111)"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::{Response, StatusCode};
    use http_body_util::BodyExt;
    use serde_json::json;
    use std::sync::{Arc, Mutex};

    type Seen = Arc<Mutex<Vec<(String, String, Value)>>>;

    /// A canned API server: answers each request with `reply(method, uri)` and records the
    /// requests (method, path+query, JSON body).
    fn canned<F>(reply: F) -> (KubeCluster, Seen)
    where
        F: Fn(&str, &str) -> (u16, Value) + Send + Sync + Clone + 'static,
    {
        let seen: Seen = Arc::default();
        let log = seen.clone();
        let service = tower::service_fn(move |req: http::Request<kube::client::Body>| {
            let reply = reply.clone();
            let log = log.clone();
            async move {
                let method = req.method().to_string();
                let uri = req.uri().to_string();
                let bytes = req.into_body().collect().await.unwrap().to_bytes();
                let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
                log.lock()
                    .unwrap()
                    .push((method.clone(), uri.clone(), body));
                let (code, answer) = reply(&method, &uri);
                let text = match answer {
                    Value::String(s) => s,
                    other => other.to_string(),
                };
                Ok::<_, std::convert::Infallible>(
                    Response::builder()
                        .status(StatusCode::from_u16(code).unwrap())
                        .body(kube::client::Body::from(text.into_bytes()))
                        .unwrap(),
                )
            }
        });
        let client = kube::Client::new(service, "default");
        let handle = KubeClientHandle {
            client,
            server_url: "https://canned".into(),
            redactor: Redactor::default(),
        };
        (KubeCluster::new(handle), seen)
    }

    fn status(code: u16, reason: &str, message: &str) -> Value {
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code})
    }

    #[tokio::test]
    async fn status_errors_keep_code_and_message() {
        for (code, reason, message) in [
            (404, "NotFound", "pods \"pc-x\" not found"),
            (
                409,
                "AlreadyExists",
                "namespaces \"paperclip-acme\" already exists",
            ),
            (
                422,
                "Invalid",
                "Job.batch \"pc-x\" is invalid: spec.template: Required value",
            ),
            (
                403,
                "Forbidden",
                "secrets is forbidden: User \"u\" cannot create resource",
            ),
        ] {
            let answer = status(code, reason, message);
            let (cluster, _) = canned(move |_, _| (code, answer.clone()));
            let err = cluster
                .read_namespaced_pod(json!({"namespace": "ns", "name": "pc-x"}))
                .await
                .unwrap_err();
            assert_eq!(err.http_status().unwrap_or(0), code);
            assert_eq!(
                err.to_string(),
                format!("HTTP-Code: {code}\nMessage: {message}")
            );
            assert_eq!(err.status_body().unwrap()["reason"], reason);
            assert!(!err.to_string().contains("Error"));
        }
    }

    /// Regression (found by the reliability fuzzer): a lease ID that is not a valid object name
    /// (here `String({})`) failed with "failed to build request: invalid uri character" before
    /// any request; client-node encodes path parameters and sends the request.
    #[tokio::test]
    async fn path_parameters_are_encoded_like_encode_uri_component() {
        let (cluster, seen) = canned(|_, _| (404, status(404, "NotFound", "not found")));
        let err = cluster
            .read_namespaced_pod(json!({"namespace": "ns x", "name": "[object Object]/é?#"}))
            .await
            .unwrap_err();
        assert_eq!(err.http_status().unwrap_or(0), 404);
        assert_eq!(
            seen.lock().unwrap()[0].1,
            "/api/v1/namespaces/ns%20x/pods/%5Bobject%20Object%5D%2F%C3%A9%3F%23"
        );
        assert_eq!(
            js_compat::uri::encode_uri_component("pc-01ab.x_~!*'()"),
            "pc-01ab.x_~!*'()"
        );
    }

    #[tokio::test]
    async fn non_status_error_bodies_keep_the_http_code() {
        let (cluster, _) = canned(|_, _| (503, json!("upstream unavailable")));
        let err = cluster
            .read_namespace(json!({"name": "x"}))
            .await
            .unwrap_err();
        assert_eq!(err.http_status().unwrap_or(0), 503);
        assert_eq!(
            err.to_string(),
            "HTTP-Code: 503\nMessage: upstream unavailable"
        );
        let (cluster, _) = canned(|_, _| (500, json!("")));
        let err = cluster
            .read_namespace(json!({"name": "x"}))
            .await
            .unwrap_err();
        assert_eq!(
            (err.http_status().unwrap_or(0), err.to_string().as_str()),
            (500, "HTTP-Code: 500\nMessage: Failed to parse error data")
        );
    }

    #[tokio::test]
    async fn limit_ranges_go_out_as_client_node_serializes_them() {
        let (cluster, seen) = canned(|_, _| (201, json!({})));
        let item = json!({"type": "Container", "max": {"cpu": "4"}, "min": {"cpu": "100m"},
            "default": {"cpu": "1", "memory": "2Gi"}, "defaultRequest": {"cpu": "250m"}});
        let body = json!({"apiVersion": "v1", "kind": "LimitRange",
            "metadata": {"name": "paperclip-limits"}, "spec": {"limits": [item]}});
        cluster
            .create_namespaced_limit_range(json!({"namespace": "ns", "body": body}))
            .await
            .unwrap();
        // Other bodies keep a `default` key: only V1LimitRangeItem maps it from `_default`.
        let secret = json!({"kind": "Secret", "stringData": {"default": "x"}});
        cluster
            .create_namespaced_secret(json!({"namespace": "ns", "body": secret}))
            .await
            .unwrap();
        let seen = seen.lock().unwrap();
        assert_eq!(seen[0].1, "/api/v1/namespaces/ns/limitranges?");
        assert_eq!(
            seen[0].2["spec"]["limits"][0],
            json!({"type": "Container", "max": {"cpu": "4"}, "min": {"cpu": "100m"},
                "defaultRequest": {"cpu": "250m"}})
        );
        assert_eq!(seen[1].2, secret);
        assert_eq!(cluster.server_url(), "https://canned");
        assert_eq!(ClusterApi::server_url(&cluster), "https://canned");
    }

    #[tokio::test]
    async fn paths_verbs_and_bodies() {
        let (cluster, seen) = canned(|method, _| match method {
            "DELETE" => (200, json!({"kind": "Status", "status": "Success"})),
            _ => (200, json!({"metadata": {"uid": "u-1"}})),
        });
        let body = json!({"apiVersion": "agents.x-k8s.io/v1alpha1", "kind": "Sandbox", "metadata": {"name": "pc-1"}});
        let created = cluster
            .create_namespaced_custom_object(
                json!({"group": "agents.x-k8s.io", "version": "v1alpha1",
                "namespace": "ns", "plural": "sandboxes", "body": body}),
            )
            .await
            .unwrap();
        assert_eq!(created["metadata"]["uid"], "u-1");
        cluster
            .delete_namespaced_job(
                json!({"namespace": "ns", "name": "pc-1", "propagationPolicy": "Foreground"}),
            )
            .await
            .unwrap();
        cluster
            .list_namespaced_pod(json!({"namespace": "ns", "labelSelector": "job-name=pc-1"}))
            .await
            .unwrap();
        cluster
            .read_namespaced_job_status(json!({"namespace": "ns", "name": "pc-1"}))
            .await
            .unwrap();
        cluster
            .read_namespaced_role_binding(json!({"namespace": "ns", "name": "paperclip-tenant-rb"}))
            .await
            .unwrap();
        let seen = seen.lock().unwrap();
        assert_eq!(seen[0].0, "POST");
        assert_eq!(
            seen[0].1,
            "/apis/agents.x-k8s.io/v1alpha1/namespaces/ns/sandboxes?"
        );
        assert_eq!(seen[0].2, body);
        assert_eq!(seen[1].0, "DELETE");
        assert_eq!(seen[1].1, "/apis/batch/v1/namespaces/ns/jobs/pc-1?");
        assert_eq!(seen[1].2["propagationPolicy"], "Foreground");
        assert_eq!(
            seen[2].1,
            "/api/v1/namespaces/ns/pods?&labelSelector=job-name%3Dpc-1"
        );
        assert_eq!(seen[3].1, "/apis/batch/v1/namespaces/ns/jobs/pc-1/status");
        assert_eq!(
            seen[4].1,
            "/apis/rbac.authorization.k8s.io/v1/namespaces/ns/rolebindings/paperclip-tenant-rb"
        );
    }

    #[tokio::test]
    async fn a_sandbox_end_is_a_merge_patch_of_the_named_object() {
        let (cluster, seen) = canned(|_, _| (200, json!({"metadata": {"name": "pc-1"}})));
        let body = json!({"spec": {"shutdownTime": "2026-01-02T03:04:05Z"}});
        cluster
            .patch_namespaced_custom_object(json!({"group": "agents.x-k8s.io",
                "version": "v1beta1", "namespace": "ns", "plural": "sandboxes",
                "name": "pc-1", "body": body}))
            .await
            .unwrap();
        let seen = seen.lock().unwrap();
        assert_eq!(seen[0].0, "PATCH");
        assert_eq!(
            seen[0].1,
            "/apis/agents.x-k8s.io/v1beta1/namespaces/ns/sandboxes/pc-1?"
        );
        assert_eq!(seen[0].2, body);
    }

    #[tokio::test]
    async fn pod_log_is_a_string() {
        let (cluster, seen) = canned(|_, _| (200, json!("line 1\n{\"not\": \"json\"}\n")));
        let log = cluster
            .read_namespaced_pod_log(json!({"namespace": "ns", "name": "pod-a"}))
            .await
            .unwrap();
        assert_eq!(log, json!("line 1\n{\"not\": \"json\"}\n"));
        assert_eq!(
            seen.lock().unwrap()[0].1,
            "/api/v1/namespaces/ns/pods/pod-a/log?"
        );
    }
}
