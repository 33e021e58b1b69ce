//! The REST verbs over the store: get, list (selectors, pagination), watch, create, replace,
//! patch (merge, strategic merge, JSON patch, apply), delete (propagation, preconditions,
//! dry run), deletecollection, `/status`, `pods/log`, and the discovery documents.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, Method, Response, header};
use base64::Engine;
use bytes::Bytes;
use serde_json::{Value, json};

use super::access_review;
use super::deletion::{Propagation, delete_object, finalize_if_done};
use super::faults::FaultAction;
use super::kubelet;
use super::objects;
use super::patch;
use super::resources::{ResourceType, version_info};
use super::route::{Query, ResourceRequest, Route};
use super::selectors::{FieldSelector, LabelSelector};
use super::state::App;
use super::status::{KubeError, KubeResult, json_response};
use super::store::{ObjKey, meta_str, rv_of};
use super::watch;

/// Everything a handler needs about the request.
pub struct Call<'a> {
    pub app: &'a Arc<App>,
    pub method: &'a Method,
    pub query: &'a Query,
    pub headers: &'a HeaderMap,
    pub body: Bytes,
    pub fault: Option<FaultAction>,
    /// The token authenticates but is allowed nothing (403 on every resource request).
    pub forbidden: bool,
}

pub async fn dispatch(call: Call<'_>, route: Route) -> Response<Body> {
    let aggregated = call
        .headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("as=APIGroupDiscoveryList"));
    let app = call.app;
    let result = match route {
        Route::Version => Ok(json_response(200, &version_info())),
        Route::Health => {
            let mut r = Response::new(Body::from("ok"));
            r.headers_mut()
                .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
            Ok(r)
        }
        Route::CoreVersions if aggregated => Ok(aggregated_response(app.registry.aggregated(true))),
        Route::CoreVersions => Ok(json_response(
            200,
            &app.registry
                .api_versions(&app.server_address.lock().unwrap()),
        )),
        Route::Groups if aggregated => Ok(aggregated_response(app.registry.aggregated(false))),
        Route::Groups => Ok(json_response(200, &app.registry.api_group_list())),
        Route::Group(g) => app
            .registry
            .api_group(&g)
            .map(|v| json_response(200, &v))
            .ok_or_else(|| KubeError::no_route(&format!("/apis/{g}"))),
        Route::ResourceList { group, version } => app
            .registry
            .resource_list(&group, &version)
            .map(|v| json_response(200, &v))
            .ok_or_else(|| KubeError::no_route(&format!("{group}/{version}"))),
        Route::Resource(rr) => resource(call, rr).await,
    };
    result.unwrap_or_else(KubeError::into_response)
}

fn aggregated_response(v: Value) -> Response<Body> {
    let mut r = json_response(200, &v);
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
        ),
    );
    r
}

fn parse_json(body: &[u8]) -> KubeResult<Value> {
    serde_json::from_slice(body).map_err(|e| {
        KubeError::bad_request(format!(
            "the body of the request was in an unknown format: {e}"
        ))
    })
}

/// Checks that the target type serves the request and resolves it.
pub fn resolve(app: &App, rr: &ResourceRequest) -> KubeResult<ResourceType> {
    let path = || {
        let mut p = rr.plural.clone();
        if let Some(n) = &rr.name {
            p = format!("{p}/{n}");
        }
        p
    };
    let rt = app
        .registry
        .find(&rr.group, &rr.version, &rr.plural)
        .ok_or_else(|| KubeError::no_route(&format!("get {}", path())))?;
    if rt.namespaced && rr.namespace.is_none() && rr.name.is_some() {
        return Err(KubeError::no_route(&path()));
    }
    if let Some(sub) = &rr.subresource
        && !rt.subresources.iter().any(|(s, _, _)| s == sub)
    {
        return Err(KubeError::no_route(&format!("{}/{sub}", path())));
    }
    Ok(rt.clone())
}

async fn resource(call: Call<'_>, rr: ResourceRequest) -> KubeResult<Response<Body>> {
    let app = call.app;
    let rt = resolve(app, &rr)?;
    if rt.plural == "selfsubjectaccessreviews" {
        return access_review::review(app, call.forbidden, call.method.as_str(), &call.body);
    }
    let verb = rr.verb(call.method.as_str(), call.query);
    authorize(&call, &rt, &rr, verb)?;
    let ns = rr.namespace.as_deref();
    let key = |name: &str| ObjKey::new(rt.group, rt.plural, ns.unwrap_or(""), name);
    let q = call.query;
    let dry_run = q.get("dryRun") == Some("All");
    match (
        call.method.as_str(),
        rr.name.as_deref(),
        rr.subresource.as_deref(),
    ) {
        ("GET", None, None) if verb == "watch" => {
            let fault = call.fault.clone();
            let at = (rr.version.clone(), rr.namespace.clone());
            watch::serve_query(app.clone(), rt, at, q, fault)
        }
        ("GET", None, None) => list(app, &rt, &rr.version, ns, q),
        ("GET", Some(name), None | Some("status")) => {
            let obj = app
                .store
                .get(&key(name))
                .ok_or_else(|| KubeError::not_found(&rt, name))?;
            Ok(json_response(200, &app.render(&obj, &rt, &rr.version)))
        }
        ("GET", Some(name), Some("log")) => pod_log(app, &rt, &key(name), q),
        (_, Some(_), Some("exec")) => Err(KubeError::bad_request("Upgrade request required")),
        ("POST", None, None) => {
            let obj = parse_json(&call.body)?;
            check_identity(&rt, &rr, &obj)?;
            let created = objects::create(app, &rt, &rr.version, ns, obj, dry_run)?;
            Ok(json_response(201, &app.render(&created, &rt, &rr.version)))
        }
        ("PUT", Some(name), sub @ (None | Some("status"))) => {
            replace(&call, &rt, &rr, &key(name), sub.is_some(), dry_run)
        }
        ("PATCH", Some(name), sub @ (None | Some("status"))) => patch_object(
            app,
            &rt,
            &rr.version,
            ns,
            name,
            sub.is_some(),
            call.headers,
            &call.body,
            dry_run,
        ),
        ("DELETE", Some(name), None) => delete_one(&call, &rt, &rr, &key(name), dry_run),
        ("DELETE", None, None) => delete_collection(&call, &rt, &rr),
        _ => Err(KubeError::method_not_allowed(format!(
            "the server does not allow this method on the requested resource ({} {})",
            call.method,
            rt.group_resource()
        ))),
    }
}

/// RBAC as the emulator plays it: a caller marked forbidden, or a deny rule for this verb on
/// this resource, gets the API server's 403.
fn authorize(
    call: &Call<'_>,
    rt: &ResourceType,
    rr: &ResourceRequest,
    verb: &str,
) -> KubeResult<()> {
    let resource_name = match &rr.subresource {
        Some(s) => format!("{}/{s}", rt.plural),
        None => rt.plural.to_string(),
    };
    let denied = call.forbidden
        || call.app.denied(
            verb,
            rt.group,
            &resource_name,
            rr.namespace.as_deref(),
            rr.name.as_deref(),
        );
    if !denied {
        return Ok(());
    }
    Err(KubeError::forbidden(
        &call.app.opts.user,
        verb,
        rt,
        rr.subresource.as_deref(),
        rr.namespace.as_deref(),
        rr.name.as_deref(),
    ))
}

/// PUT of an object or its status: the body replaces it, guarded by its resourceVersion when it
/// carries one.
fn replace(
    call: &Call<'_>,
    rt: &ResourceType,
    rr: &ResourceRequest,
    key: &ObjKey,
    status_write: bool,
    dry_run: bool,
) -> KubeResult<Response<Body>> {
    let name = key.name.as_str();
    let obj = parse_json(&call.body)?;
    check_identity(rt, rr, &obj)?;
    if let Some(n) = meta_str(&obj, "name")
        && n != name
    {
        return Err(KubeError::bad_request(format!(
            "the name of the object ({n}) does not match the name on the URL ({name})"
        )));
    }
    let want_rv = meta_str(&obj, "resourceVersion")
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    let write = |cur: &mut Value| -> KubeResult<()> {
        if let Some(rv) = &want_rv
            && meta_str(cur, "resourceVersion") != Some(rv.as_str())
        {
            return Err(KubeError::stale(rt, name));
        }
        let mut new = obj.clone();
        new["apiVersion"] = cur["apiVersion"].clone();
        *cur = objects::merge_write(rt, cur, new, status_write)?;
        Ok(())
    };
    let updated = write_object(call.app, rt, key, dry_run, write)?;
    Ok(json_response(
        200,
        &call.app.render(&updated, rt, &rr.version),
    ))
}

/// DELETE of one object, with its options from the body or the query.
fn delete_one(
    call: &Call<'_>,
    rt: &ResourceType,
    rr: &ResourceRequest,
    key: &ObjKey,
    dry_run: bool,
) -> KubeResult<Response<Body>> {
    let (app, q, name) = (call.app, call.query, key.name.as_str());
    let opts = if call.body.is_empty() {
        json!({})
    } else {
        parse_json(&call.body)?
    };
    let propagation = opts["propagationPolicy"]
        .as_str()
        .or_else(|| q.get("propagationPolicy"))
        .map(|p| {
            Propagation::parse(p).ok_or_else(|| {
                KubeError::bad_request(format!("unsupported propagationPolicy {p:?}"))
            })
        })
        .transpose()?
        .or_else(|| match opts["orphanDependents"].as_bool() {
            Some(true) => Some(Propagation::Orphan),
            Some(false) => Some(Propagation::Background),
            None => None,
        });
    let grace = opts["gracePeriodSeconds"]
        .as_i64()
        .or_else(|| q.get("gracePeriodSeconds").and_then(|s| s.parse().ok()));
    let dry = dry_run
        || opts["dryRun"]
            .as_array()
            .is_some_and(|a| a.iter().any(|v| v == "All"));
    if dry {
        let obj = app
            .store
            .get(key)
            .ok_or_else(|| KubeError::not_found(rt, name))?;
        return Ok(json_response(200, &app.render(&obj, rt, &rr.version)));
    }
    let (obj, gone) = delete_object(app, key, propagation, grace, opts.get("preconditions"))?;
    // As the real API server: an object deleted at once is answered with a `Status`
    // (pods excepted, whose registry returns the object); one that now carries a
    // deletionTimestamp (finalizers, foreground, grace) is returned as it stands.
    if gone && rt.plural != "pods" {
        return Ok(json_response(200, &deleted_status(rt, name, &obj)));
    }
    Ok(json_response(200, &app.render(&obj, rt, &rr.version)))
}

/// DELETE of a collection: every object the selectors match, answered as a list of them.
fn delete_collection(
    call: &Call<'_>,
    rt: &ResourceType,
    rr: &ResourceRequest,
) -> KubeResult<Response<Body>> {
    let (app, q) = (call.app, call.query);
    let labels = LabelSelector::parse(q.get("labelSelector").unwrap_or(""))?;
    let fields = FieldSelector::parse(q.get("fieldSelector").unwrap_or(""))?;
    let (items, _) = app.store.list(rt.group, rt.plural, rr.namespace.as_deref());
    let mut deleted = Vec::new();
    for obj in items
        .iter()
        .filter(|o| labels.matches(o) && fields.matches(o))
    {
        let name = meta_str(obj, "name").unwrap_or_default();
        let k = ObjKey::new(
            rt.group,
            rt.plural,
            meta_str(obj, "namespace").unwrap_or(""),
            name,
        );
        if let Ok((o, _)) = delete_object(app, &k, None, None, None) {
            deleted.push(app.render(&o, rt, &rr.version));
        }
    }
    Ok(json_response(
        200,
        &json!({
            "kind": rt.list_kind(),
            "apiVersion": rt.api_version(&rr.version),
            "metadata": { "resourceVersion": app.store.current_rv().to_string() },
            "items": deleted,
        }),
    ))
}

/// `kind`, `apiVersion` and `metadata.namespace` of a body must agree with the URL.
fn check_identity(rt: &ResourceType, rr: &ResourceRequest, obj: &Value) -> KubeResult<()> {
    if !obj.is_object() {
        return Err(KubeError::bad_request(
            "the body of the request was in an unknown format",
        ));
    }
    let want = rt.api_version(&rr.version);
    if let Some(av) = obj.get("apiVersion").and_then(Value::as_str)
        && av != want
    {
        return Err(KubeError::bad_request(format!(
            "the API version in the data ({av}) does not match the expected API version ({want})"
        )));
    }
    if let Some(kind) = obj.get("kind").and_then(Value::as_str)
        && kind != rt.kind
    {
        return Err(KubeError::bad_request(format!(
            "the kind in the data ({kind}) does not match the expected kind ({})",
            rt.kind
        )));
    }
    if let (Some(body_ns), Some(url_ns)) = (meta_str(obj, "namespace"), rr.namespace.as_deref())
        && !body_ns.is_empty()
        && body_ns != url_ns
    {
        return Err(KubeError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    Ok(())
}

/// Applies `write` to the stored object atomically (or to a copy, for a dry run), then
/// releases it if that removed its last finalizer during deletion.
fn write_object(
    app: &Arc<App>,
    rt: &ResourceType,
    key: &ObjKey,
    dry_run: bool,
    write: impl FnOnce(&mut Value) -> KubeResult<()>,
) -> KubeResult<Value> {
    if dry_run {
        let mut obj = app
            .store
            .get(key)
            .ok_or_else(|| KubeError::not_found(rt, &key.name))?;
        write(&mut obj)?;
        return Ok(obj);
    }
    let updated = app
        .store
        .update(key, write)
        .ok_or_else(|| KubeError::not_found(rt, &key.name))??;
    finalize_if_done(app, key);
    Ok(updated)
}

fn list(
    app: &App,
    rt: &ResourceType,
    version: &str,
    ns: Option<&str>,
    q: &Query,
) -> KubeResult<Response<Body>> {
    let labels = LabelSelector::parse(q.get("labelSelector").unwrap_or(""))?;
    let fields = FieldSelector::parse(q.get("fieldSelector").unwrap_or(""))?;
    let (items, rv) = app.store.list(rt.group, rt.plural, ns);
    let matching: Vec<&Value> = items
        .iter()
        .filter(|o| labels.matches(o) && fields.matches(o))
        .collect();
    let start = match q.get("continue").filter(|c| !c.is_empty()) {
        Some(token) => {
            let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(token)
                .ok()
                .and_then(|b| String::from_utf8(b).ok())
                .and_then(|s| s.parse::<usize>().ok())
                .ok_or_else(|| KubeError::bad_request("continue key is not valid"))?;
            raw.min(matching.len())
        }
        None => 0,
    };
    let limit = q
        .get("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .filter(|l| *l > 0);
    let end = limit.map_or(matching.len(), |l| (start + l).min(matching.len()));
    let mut meta = json!({ "resourceVersion": rv.to_string() });
    if end < matching.len() {
        meta["continue"] =
            json!(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(end.to_string()));
        meta["remainingItemCount"] = json!(matching.len() - end);
    }
    let page: Vec<Value> = matching[start..end]
        .iter()
        .map(|o| app.render(o, rt, version))
        .collect();
    Ok(json_response(
        200,
        &json!({
            "kind": rt.list_kind(),
            "apiVersion": rt.api_version(version),
            "metadata": meta,
            "items": page,
        }),
    ))
}

#[allow(clippy::too_many_arguments)]
fn patch_object(
    app: &Arc<App>,
    rt: &ResourceType,
    version: &str,
    ns: Option<&str>,
    name: &str,
    status_write: bool,
    headers: &HeaderMap,
    body: &[u8],
    dry_run: bool,
) -> KubeResult<Response<Body>> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_string();
    const ACCEPTED: &str = "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml";
    let kind = match content_type.as_str() {
        "application/merge-patch+json" => "merge",
        "application/strategic-merge-patch+json" if !rt.custom => "strategic",
        "application/json-patch+json" => "json",
        "application/apply-patch+yaml" | "application/apply-patch+cbor" => "apply",
        "application/strategic-merge-patch+json" => {
            return Err(KubeError::unsupported_media(ACCEPTED));
        }
        _ => {
            return Err(KubeError::unsupported_media(format!(
                "{ACCEPTED}, application/strategic-merge-patch+json"
            )));
        }
    };
    let p = parse_json(body)?;
    let key = ObjKey::new(rt.group, rt.plural, ns.unwrap_or(""), name);
    if kind == "apply" && app.store.get(&key).is_none() && !status_write {
        let mut obj = p.clone();
        obj["metadata"]["name"] = json!(name);
        let created = objects::create(app, rt, version, ns, obj, dry_run)?;
        return Ok(json_response(201, &app.render(&created, rt, version)));
    }
    let write = |cur: &mut Value| -> KubeResult<()> {
        let mut patched = cur.clone();
        match kind {
            "json" => patch::json_patch(&mut patched, &p).map_err(|e| {
                KubeError::new(
                    422,
                    "Invalid",
                    format!("the server rejected our request due to an error in our request: {e}"),
                )
            })?,
            "strategic" => patch::strategic_merge_patch(&mut patched, &p),
            _ => patch::merge_patch(&mut patched, &p),
        }
        if let Some(rv) = meta_str(&patched, "resourceVersion")
            && (rv_of(&patched) != rv_of(cur) || meta_str(cur, "resourceVersion") != Some(rv))
        {
            return Err(KubeError::stale(rt, name));
        }
        *cur = objects::merge_write(rt, cur, patched, status_write)?;
        Ok(())
    };
    let updated = write_object(app, rt, &key, dry_run, write)?;
    Ok(json_response(200, &app.render(&updated, rt, version)))
}

fn pod_log(app: &App, rt: &ResourceType, key: &ObjKey, q: &Query) -> KubeResult<Response<Body>> {
    let pod = app
        .store
        .get(key)
        .ok_or_else(|| KubeError::not_found(rt, &key.name))?;
    let container = kubelet::container_named(&pod, &key.name, q.get("container"))?;
    let uid = meta_str(&pod, "uid").unwrap_or_default();
    let waiting = pod
        .pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["name"] == container.as_str()))
        .and_then(|c| c.pointer("/state/waiting/reason"))
        .and_then(Value::as_str)
        .map(str::to_string);
    let runtime = app.pod_runtime(uid);
    let log = match (
        runtime
            .as_ref()
            .and_then(|r| r.root_path().map(|_| r.log())),
        waiting,
    ) {
        (Some(log), _) => log,
        (None, reason) => {
            return Err(KubeError::bad_request(format!(
                "container \"{container}\" in pod \"{}\" is waiting to start: {}",
                key.name,
                reason.as_deref().unwrap_or("ContainerCreating")
            )));
        }
    };
    let mut out: &[u8] = &log;
    if let Some(n) = q.get("tailLines").and_then(|s| s.parse::<usize>().ok()) {
        let lines: Vec<&[u8]> = out.split_inclusive(|b| *b == b'\n').collect();
        let skip = lines.len().saturating_sub(n);
        let start: usize = lines[..skip].iter().map(|l| l.len()).sum();
        out = &out[start..];
    }
    if let Some(n) = q.get("limitBytes").and_then(|s| s.parse::<usize>().ok()) {
        out = &out[..n.min(out.len())];
    }
    let mut r = Response::new(Body::from(out.to_vec()));
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    Ok(r)
}

/// The `Status` a DELETE that removed the object at once answers with.
fn deleted_status(rt: &ResourceType, name: &str, obj: &Value) -> Value {
    let mut details = json!({"name": name, "kind": rt.plural});
    if !rt.group.is_empty() {
        details["group"] = json!(rt.group);
    }
    if let Some(uid) = meta_str(obj, "uid") {
        details["uid"] = json!(uid);
    }
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details})
}
