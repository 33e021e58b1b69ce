//! What the API server does to an object before storing it: defaulting (pod status, Job
//! selector and labels, Secret `stringData`), validation (422 with field causes, `validation.rs`)
//! and the status-subresource rules of updates.

use std::sync::Arc;

use base64::Engine;
use serde_json::{Value, json};

use super::resources::ResourceType;
use super::state::App;
use super::status::{FieldError, KubeError, KubeResult};
use super::store::{ObjKey, meta_str};
use super::util::name_suffix;
use super::validation::{status_errors, validate};
use js_compat::uuid::random_uuid;

/// Server-side defaults of a new object (after the uid is known).
fn default_new(rt: &ResourceType, obj: &mut Value) {
    let uid = meta_str(obj, "uid").unwrap_or_default().to_string();
    match (rt.group, rt.plural) {
        ("", "namespaces") => {
            obj["spec"] = json!({ "finalizers": ["kubernetes"] });
            obj["status"] = json!({ "phase": "Active" });
            let name = meta_str(obj, "name").unwrap_or_default().to_string();
            obj["metadata"]["labels"]["kubernetes.io/metadata.name"] = json!(name);
        }
        ("", "pods") => {
            default_pod_spec(&mut obj["spec"], true);
            obj["status"] = json!({ "phase": "Pending", "qosClass": qos_class(&obj["spec"]) });
        }
        ("", "secrets") => {
            if let Some(Value::Object(sd)) =
                obj.as_object_mut().and_then(|m| m.remove("stringData"))
            {
                for (k, v) in sd {
                    let enc = base64::engine::general_purpose::STANDARD
                        .encode(v.as_str().unwrap_or_default());
                    obj["data"][k] = json!(enc);
                }
            }
            if obj.get("type").is_none() {
                obj["type"] = json!("Opaque");
            }
        }
        ("batch", "jobs") => {
            let name = meta_str(obj, "name").unwrap_or_default().to_string();
            // A Job without labels takes its template's, as the template was sent (before the
            // server adds the controller-uid and job-name labels to it); one with labels keeps
            // them as they are.
            let no_labels = obj["metadata"]["labels"]
                .as_object()
                .is_none_or(|l| l.is_empty());
            if no_labels && let Some(l) = obj.pointer("/spec/template/metadata/labels").cloned() {
                obj["metadata"]["labels"] = l;
            }
            let spec = &mut obj["spec"];
            for (k, v) in [
                ("backoffLimit", json!(6)),
                ("completions", json!(1)),
                ("parallelism", json!(1)),
                ("completionMode", json!("NonIndexed")),
                ("suspend", json!(false)),
                ("podReplacementPolicy", json!("TerminatingOrFailed")),
                ("manualSelector", json!(false)),
            ] {
                if spec.get(k).is_none() {
                    spec[k] = v;
                }
            }
            if spec.get("selector").is_none() {
                spec["selector"] =
                    json!({ "matchLabels": { "batch.kubernetes.io/controller-uid": uid } });
            }
            let labels = &mut spec["template"]["metadata"]["labels"];
            for (k, v) in [
                ("batch.kubernetes.io/controller-uid", uid.as_str()),
                ("batch.kubernetes.io/job-name", name.as_str()),
                ("controller-uid", uid.as_str()),
                ("job-name", name.as_str()),
            ] {
                labels[k] = json!(v);
            }
            default_pod_spec(&mut spec["template"]["spec"], false);
            obj["status"] = json!({});
        }
        _ => {
            if rt.status_subresource
                && let Some(m) = obj.as_object_mut()
            {
                m.remove("status");
            }
        }
    }
}

/// The API's PodSpec defaults; `enableServiceLinks` and `priority` are set on pods only (by pod
/// defaulting and the Priority admission plugin), never in a Job's pod template.
fn default_pod_spec(spec: &mut Value, pod: bool) {
    if !spec.is_object() {
        return;
    }
    let pod_only = [("enableServiceLinks", json!(true)), ("priority", json!(0))];
    for (k, v) in [
        ("restartPolicy", json!("Always")),
        ("terminationGracePeriodSeconds", json!(30)),
        ("dnsPolicy", json!("ClusterFirst")),
        ("schedulerName", json!("default-scheduler")),
        ("securityContext", json!({})),
    ]
    .into_iter()
    .chain(pod_only.into_iter().filter(|_| pod))
    {
        if spec.get(k).is_none() {
            spec[k] = v;
        }
    }
    if let Some(Value::Array(cs)) = spec.get_mut("containers") {
        for c in cs {
            if c.get("terminationMessagePath").is_none() {
                c["terminationMessagePath"] = json!("/dev/termination-log");
            }
            if c.get("terminationMessagePolicy").is_none() {
                c["terminationMessagePolicy"] = json!("File");
            }
            if c.get("imagePullPolicy").is_none() {
                let latest = c["image"]
                    .as_str()
                    .is_some_and(|i| i.ends_with(":latest") || !i.contains(':'));
                c["imagePullPolicy"] = json!(if latest { "Always" } else { "IfNotPresent" });
            }
            if c.get("resources").is_none() {
                c["resources"] = json!({});
            }
        }
    }
}

fn qos_class(spec: &Value) -> &'static str {
    let cs = spec["containers"].as_array().cloned().unwrap_or_default();
    let has = |c: &Value, k: &str| c["resources"][k].as_object().is_some_and(|m| !m.is_empty());
    if cs.iter().all(|c| !has(c, "requests") && !has(c, "limits")) {
        "BestEffort"
    } else if cs.iter().all(|c| {
        has(c, "limits")
            && (!has(c, "requests") || c["resources"]["requests"] == c["resources"]["limits"])
    }) {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

/// Creates an object as the API server would (`generateName`, defaults, validation,
/// namespace checks). `obj` must already be checked for kind and namespace consistency.
pub fn create(
    app: &Arc<App>,
    rt: &ResourceType,
    version: &str,
    namespace: Option<&str>,
    mut obj: Value,
    dry_run: bool,
) -> KubeResult<Value> {
    if !obj.is_object() {
        return Err(KubeError::bad_request(
            "the body of the request was in an unknown format",
        ));
    }
    if !obj["metadata"].is_object() {
        obj["metadata"] = json!({});
    }
    let name = match meta_str(&obj, "name").filter(|n| !n.is_empty()) {
        Some(n) => n.to_string(),
        None => match meta_str(&obj, "generateName").filter(|n| !n.is_empty()) {
            Some(prefix) => format!("{prefix}{}", name_suffix(5)),
            None => {
                return Err(KubeError::invalid(
                    rt,
                    "",
                    vec![FieldError::required(
                        "metadata.name",
                        "name or generateName is required",
                    )],
                ));
            }
        },
    };
    obj["metadata"]["name"] = json!(name);
    if let Some(ns) = namespace {
        obj["metadata"]["namespace"] = json!(ns);
    } else if let Some(m) = obj["metadata"].as_object_mut() {
        m.remove("namespace");
    }
    for server_field in [
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
    ] {
        if let Some(m) = obj["metadata"].as_object_mut() {
            m.remove(server_field);
        }
    }
    let errs = validate(rt, &obj);
    if !errs.is_empty() {
        return Err(KubeError::invalid(rt, &name, errs));
    }
    if let Some(ns) = namespace {
        app.check_namespace_for_create(ns)?;
    }
    obj["apiVersion"] = json!(rt.api_version(version));
    obj["kind"] = json!(rt.kind);
    obj["metadata"]["uid"] = json!(random_uuid());
    default_new(rt, &mut obj);
    let key = ObjKey::new(rt.group, rt.plural, namespace.unwrap_or(""), &name);
    if dry_run {
        if app.store.get(&key).is_some() {
            return Err(KubeError::already_exists(rt, &name));
        }
        obj["metadata"]["creationTimestamp"] = json!(super::util::now());
        return Ok(obj);
    }
    app.store
        .create(key, obj)
        .map_err(|()| KubeError::already_exists(rt, &name))
}

/// Controllers create through here (the preferred version, the same defaults and checks).
pub fn create_internal(
    app: &Arc<App>,
    group: &str,
    plural: &str,
    namespace: &str,
    obj: Value,
) -> KubeResult<Value> {
    let rt = app.rt(group, plural).clone();
    let version = rt.preferred_version().to_string();
    let ns = rt.namespaced.then_some(namespace);
    create(app, &rt, &version, ns, obj, false)
}

/// The object that results from writing `new` over `old` through the main resource or
/// through `/status`.
pub fn merge_write(
    rt: &ResourceType,
    old: &Value,
    mut new: Value,
    status_write: bool,
) -> KubeResult<Value> {
    let name = meta_str(old, "name").unwrap_or_default().to_string();
    if !new.is_object() {
        return Err(KubeError::bad_request(
            "the body of the request was in an unknown format",
        ));
    }
    if status_write {
        let mut out = old.clone();
        out["status"] = new.get("status").cloned().unwrap_or(Value::Null);
        if out["status"].is_null()
            && let Some(m) = out.as_object_mut()
        {
            m.remove("status");
        }
        let errs = status_errors(rt, &out);
        if !errs.is_empty() {
            return Err(KubeError::invalid(rt, &name, errs));
        }
        return Ok(out);
    }
    if rt.status_subresource {
        match old.get("status") {
            Some(s) => new["status"] = s.clone(),
            None => {
                if let Some(m) = new.as_object_mut() {
                    m.remove("status");
                }
            }
        }
    }
    // Server-owned metadata survives any write.
    for field in ["deletionTimestamp", "deletionGracePeriodSeconds"] {
        if let Some(v) = old["metadata"].get(field) {
            new["metadata"][field] = v.clone();
        }
    }
    match (rt.group, rt.plural) {
        ("", "pods") => {
            let strip = |v: &Value| {
                let mut s = v["spec"].clone();
                if let Some(Value::Array(cs)) = s.get_mut("containers") {
                    for c in cs {
                        c["image"] = Value::Null;
                    }
                }
                if let Some(m) = s.as_object_mut() {
                    m.remove("activeDeadlineSeconds");
                    m.remove("tolerations");
                }
                s
            };
            if strip(old) != strip(&new) {
                return Err(KubeError::invalid(rt, &name, vec![FieldError {
                    field: "spec".into(),
                    reason: "FieldValueForbidden",
                    detail: "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)".into(),
                    value: None,
                }]));
            }
        }
        ("batch", "jobs") => {
            for field in ["template", "selector"] {
                if old["spec"].get(field) != new["spec"].get(field)
                    && new["spec"].get(field).is_some()
                {
                    return Err(KubeError::invalid(
                        rt,
                        &name,
                        vec![FieldError::invalid(
                            format!("spec.{field}"),
                            new["spec"][field].clone(),
                            "field is immutable",
                        )],
                    ));
                }
            }
        }
        _ => {}
    }
    let errs = validate(rt, &new);
    if !errs.is_empty() {
        return Err(KubeError::invalid(rt, &name, errs));
    }
    if rt.plural == "secrets"
        && let Some(Value::Object(sd)) = new.as_object_mut().and_then(|m| m.remove("stringData"))
    {
        for (k, v) in sd {
            let enc =
                base64::engine::general_purpose::STANDARD.encode(v.as_str().unwrap_or_default());
            new["data"][k] = json!(enc);
        }
    }
    Ok(new)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kubernetes::resources::Registry;

    #[test]
    fn validation_reports_field_causes() {
        let r = Registry::new(&["v1alpha1".into()]);
        let pods = r.by_plural("", "pods").unwrap();
        let errs = validate(
            pods,
            &json!({ "metadata": { "name": "Bad_Name" }, "spec": { "containers": [] } }),
        );
        let fields: Vec<&str> = errs.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["metadata.name", "spec.containers"]);
        let jobs = r.by_plural("batch", "jobs").unwrap();
        let errs = validate(
            jobs,
            &json!({ "metadata": { "name": "j" }, "spec": { "template": { "spec": {
            "containers": [{ "name": "a", "image": "x" }] } } } }),
        );
        assert_eq!(errs[0].field, "spec.template.spec.restartPolicy");
        let err = KubeError::invalid(jobs, "j", errs);
        assert_eq!(err.code, 422);
        assert!(
            err.message.starts_with(
                "Job \"j\" is invalid: spec.template.spec.restartPolicy: Required value"
            )
        );
        assert!(
            validate(
                pods,
                &json!({ "metadata": { "name": "ok", "labels": { "a/b": "c d" } },
            "spec": { "containers": [{ "name": "a", "image": "x" }] } })
            )
            .len()
                == 1
        );
    }
}
