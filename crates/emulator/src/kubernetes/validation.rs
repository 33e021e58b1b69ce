//! The API server's field validation of an object (create and update) as the emulator plays it:
//! names by kind, labels, pod specs (pods, Job templates, Sandbox pod templates), Jobs, Secrets
//! and a Sandbox's status conditions, each failure a `FieldError` with the real server's text.

use base64::Engine;
use serde_json::{Value, json};

use super::resources::ResourceType;
use super::status::FieldError;
use super::store::meta_str;

fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_dns_label)
}

const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

fn valid_label_value(v: &str) -> bool {
    v.is_empty()
        || (v.len() <= 63
            && v.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
            && v.as_bytes()[0].is_ascii_alphanumeric()
            && v.as_bytes()[v.len() - 1].is_ascii_alphanumeric())
}

fn valid_label_key(k: &str) -> bool {
    let (prefix, name) = match k.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, k),
    };
    prefix.is_none_or(is_dns_subdomain) && !name.is_empty() && valid_label_value(name)
}

/// Field errors of an object (create and update).
pub fn validate(rt: &ResourceType, obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    name_errors(rt, obj, &mut errs);
    label_errors(obj, &mut errs);
    const ANY_RESTART: &[&str] = &["Always", "OnFailure", "Never"];
    match (rt.group, rt.plural) {
        ("", "pods") => pod_spec_errors(obj.get("spec"), "spec", ANY_RESTART, &mut errs),
        ("batch", "jobs") => job_errors(obj, &mut errs),
        ("agents.x-k8s.io", "sandboxes") => {
            errs.extend(status_errors(rt, obj));
            lifecycle_errors(obj, &mut errs);
            if obj.pointer("/spec/podTemplate").is_none() {
                errs.push(FieldError::required("spec.podTemplate", ""));
            } else {
                let spec = obj.pointer("/spec/podTemplate/spec");
                pod_spec_errors(spec, "spec.podTemplate.spec", ANY_RESTART, &mut errs);
            }
        }
        ("", "secrets") => secret_errors(obj, &mut errs),
        _ => {}
    }
    errs
}

/// The Sandbox CRD's lifecycle fields (both versions): `spec.shutdownTime` a `date-time`
/// string, `spec.shutdownPolicy` `Delete` or `Retain`.
fn lifecycle_errors(obj: &Value, errs: &mut Vec<FieldError>) {
    if let Some(time) = obj.pointer("/spec/shutdownTime") {
        let date_time = time
            .as_str()
            .is_some_and(|t| t.contains('T') && js_compat::date::parse(t).is_some());
        if !date_time {
            let detail = format!("spec.shutdownTime in body must be of type date-time: {time}");
            errs.push(FieldError::invalid(
                "spec.shutdownTime",
                time.clone(),
                detail,
            ));
        }
    }
    if let Some(policy) = obj.pointer("/spec/shutdownPolicy")
        && !matches!(policy.as_str(), Some("Delete" | "Retain"))
    {
        let valid = ["Delete", "Retain"];
        errs.push(FieldError::not_supported(
            "spec.shutdownPolicy",
            policy.clone(),
            &valid,
        ));
    }
}

/// `metadata.name` by the kind's rule: a DNS label for namespaces, a subdomain of at most 63
/// for jobs, a path segment for RBAC objects, a DNS subdomain for everything else.
fn name_errors(rt: &ResourceType, obj: &Value, errs: &mut Vec<FieldError>) {
    let name = meta_str(obj, "name").unwrap_or_default();
    let name_ok = match rt.plural {
        "namespaces" => is_dns_label(name),
        "jobs" => is_dns_subdomain(name) && name.len() <= 63,
        "roles" | "rolebindings" => {
            !name.is_empty() && !name.contains('/') && name != "." && name != ".."
        }
        _ => is_dns_subdomain(name),
    };
    if !name_ok {
        let msg = if rt.plural == "namespaces" {
            LABEL_MSG
        } else {
            SUBDOMAIN_MSG
        };
        errs.push(FieldError::invalid("metadata.name", json!(name), msg));
    }
}

/// Every label: a string value, a qualified key, a valid value.
fn label_errors(obj: &Value, errs: &mut Vec<FieldError>) {
    let Some(Value::Object(labels)) = obj.pointer("/metadata/labels") else {
        return;
    };
    for (k, v) in labels {
        let Some(s) = v.as_str() else {
            errs.push(FieldError::invalid(
                format!("metadata.labels[{k}]"),
                v.clone(),
                "must be a string",
            ));
            continue;
        };
        if !valid_label_key(k) {
            errs.push(FieldError::invalid("metadata.labels", json!(k), "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"));
        }
        if !valid_label_value(s) {
            errs.push(FieldError::invalid("metadata.labels", json!(s), "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"));
        }
    }
}

/// A pod spec at `prefix`: containers with names and images, a restart policy of `restart`
/// (required where only two are allowed, as in a Job's template), a positive deadline.
fn pod_spec_errors(
    spec: Option<&Value>,
    prefix: &str,
    restart: &[&str],
    errs: &mut Vec<FieldError>,
) {
    let Some(spec) = spec else {
        errs.push(FieldError::required(prefix, ""));
        return;
    };
    match spec.get("containers").and_then(Value::as_array) {
        Some(cs) if !cs.is_empty() => {
            for (i, c) in cs.iter().enumerate() {
                for field in ["name", "image"] {
                    if c[field].as_str().is_none_or(str::is_empty) {
                        let path = format!("{prefix}.containers[{i}].{field}");
                        errs.push(FieldError::required(path, ""));
                    }
                }
            }
        }
        _ => errs.push(FieldError::required(format!("{prefix}.containers"), "")),
    }
    if let Some(p) = spec.get("restartPolicy") {
        if !restart.iter().any(|r| p == r) {
            errs.push(FieldError::not_supported(
                format!("{prefix}.restartPolicy"),
                p.clone(),
                restart,
            ));
        }
    } else if restart.len() == 2 {
        errs.push(FieldError::required(
            format!("{prefix}.restartPolicy"),
            "valid values: \"OnFailure\", \"Never\"",
        ));
    }
    if let Some(d) = spec.get("activeDeadlineSeconds")
        && d.as_f64().is_none_or(|d| d < 1.0)
    {
        errs.push(FieldError::invalid(
            format!("{prefix}.activeDeadlineSeconds"),
            d.clone(),
            "must be between 1 and 2147483647, inclusive",
        ));
    }
}

/// A Job: its template's pod spec, a positive deadline, a backoff limit of at least 0.
fn job_errors(obj: &Value, errs: &mut Vec<FieldError>) {
    let template = obj.pointer("/spec/template/spec");
    pod_spec_errors(
        template,
        "spec.template.spec",
        &["OnFailure", "Never"],
        errs,
    );
    if let Some(d) = obj.pointer("/spec/activeDeadlineSeconds")
        && d.as_f64().is_none_or(|d| d < 1.0)
    {
        errs.push(FieldError::invalid(
            "spec.activeDeadlineSeconds",
            d.clone(),
            "must be greater than or equal to 1",
        ));
    }
    if let Some(b) = obj.pointer("/spec/backoffLimit")
        && b.as_i64().is_none_or(|b| b < 0)
    {
        errs.push(FieldError::invalid(
            "spec.backoffLimit",
            b.clone(),
            "must be greater than or equal to 0",
        ));
    }
}

/// A Secret's `data`: every value base64.
fn secret_errors(obj: &Value, errs: &mut Vec<FieldError>) {
    let Some(Value::Object(data)) = obj.get("data") else {
        return;
    };
    for (k, v) in data {
        let ok = v
            .as_str()
            .is_some_and(|s| base64::engine::general_purpose::STANDARD.decode(s).is_ok());
        if !ok {
            errs.push(FieldError::invalid(
                format!("data[{k}]"),
                v.clone(),
                "must be base64-encoded bytes",
            ));
        }
    }
}

/// What the schema of a status says of `obj`: a Sandbox's conditions are metav1.Conditions,
/// each with all five required fields (the agent-sandbox CRD).
pub fn status_errors(rt: &ResourceType, obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if (rt.group, rt.plural) == ("agents.x-k8s.io", "sandboxes")
        && let Some(Value::Array(conditions)) = obj.pointer("/status/conditions")
    {
        for (i, condition) in conditions.iter().enumerate() {
            for field in ["lastTransitionTime", "message", "reason", "status", "type"] {
                if condition.get(field).is_none() {
                    let at = format!("status.conditions[{i}].{field}");
                    errs.push(FieldError::required(at, ""));
                }
            }
        }
    }
    errs
}
