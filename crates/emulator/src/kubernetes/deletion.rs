//! Deleting an object the way the API server does, for every path that deletes (REST handlers,
//! the garbage collector, the Job controller): preconditions, finalizers, graceful pod
//! termination, ownerReference propagation, and namespace termination (everything in the
//! namespace deleted, then the namespace). Above the shared state, below the controllers.

use std::sync::Arc;

use serde_json::{Value, json};

use super::resources::ResourceType;
use super::state::App;
use super::status::{KubeError, KubeResult};
use super::store::{ObjKey, meta_str};
use super::util::{now, raised};

/// `propagationPolicy` of a delete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Propagation {
    Orphan,
    Background,
    Foreground,
}

impl Propagation {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "Orphan" => Some(Propagation::Orphan),
            "Background" => Some(Propagation::Background),
            "Foreground" => Some(Propagation::Foreground),
            _ => None,
        }
    }
}

/// The object's finalizers.
fn finalizers(o: &Value) -> Vec<String> {
    o.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// A 409 if `preconditions` name a uid or resourceVersion other than the object's.
fn check_preconditions(
    rt: &ResourceType,
    key: &ObjKey,
    obj: &Value,
    preconditions: &Value,
) -> KubeResult<()> {
    for (field, label) in [("uid", "UID"), ("resourceVersion", "ResourceVersion")] {
        if let Some(want) = preconditions.get(field).and_then(Value::as_str) {
            let have = meta_str(obj, field).unwrap_or_default();
            if want != have {
                return Err(KubeError::conflict(
                    rt,
                    &key.name,
                    &format!(
                        "Precondition failed: {label} in precondition: {want}, {label} in object meta: {have}"
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// A delete of an object already being deleted: it goes now if nothing holds it any more.
fn delete_again(app: &App, key: &ObjKey, obj: Value, grace_seconds: Option<i64>) -> (Value, bool) {
    let unheld = finalizers(&obj).is_empty() && key.plural != "namespaces" && key.plural != "pods";
    if unheld || (key.plural == "pods" && grace_seconds == Some(0)) {
        let gone = app.store.remove(key).unwrap_or(obj);
        return (gone, true);
    }
    (obj, false)
}

/// Drops the owner `uid` from its dependents' ownerReferences (orphan propagation).
fn orphan_dependents(app: &App, namespace: &str, uid: &str) {
    for (dep, _) in app.store.dependents(namespace, uid) {
        app.store.update::<()>(&dep, |o| {
            if let Some(Value::Array(refs)) = o.pointer_mut("/metadata/ownerReferences") {
                refs.retain(|r| r["uid"] != uid);
            }
            Ok(())
        });
    }
}

/// Marks an object as being deleted: `deletionTimestamp`, the grace period, and an extra
/// finalizer if given.
fn stamp(o: &mut Value, extra_finalizer: Option<&str>, grace: i64) {
    o["metadata"]["deletionTimestamp"] = json!(now());
    o["metadata"]["deletionGracePeriodSeconds"] = json!(grace);
    if let Some(f) = extra_finalizer {
        let list = o["metadata"]
            .as_object_mut()
            .expect("metadata")
            .entry("finalizers")
            .or_insert(json!([]));
        if let Value::Array(a) = list
            && !a.iter().any(|v| v == f)
        {
            a.push(json!(f));
        }
    }
}

/// Writes `f` to the stored object: a deletion that is deferred (the object stays).
fn deferred(
    app: &App,
    rt: &ResourceType,
    key: &ObjKey,
    f: &dyn Fn(&mut Value),
) -> KubeResult<(Value, bool)> {
    let updated = app
        .store
        .update::<()>(key, |o| {
            f(o);
            Ok(())
        })
        .and_then(Result::ok)
        .ok_or_else(|| KubeError::not_found(rt, &key.name))?;
    Ok((updated, false))
}

/// Deletes an object the way the API server would: preconditions, finalizers, graceful
/// pod termination, and ownerReference propagation. Returns the object and whether it is
/// gone already (`false`: it now carries a `deletionTimestamp`).
pub fn delete_object(
    app: &Arc<App>,
    key: &ObjKey,
    propagation: Option<Propagation>,
    grace_seconds: Option<i64>,
    preconditions: Option<&Value>,
) -> KubeResult<(Value, bool)> {
    let rt = app.rt(&key.group, &key.plural).clone();
    let obj = app
        .store
        .get(key)
        .ok_or_else(|| KubeError::not_found(&rt, &key.name))?;
    if let Some(pre) = preconditions {
        check_preconditions(&rt, key, &obj, pre)?;
    }
    let uid = meta_str(&obj, "uid").unwrap_or_default().to_string();
    if obj.pointer("/metadata/deletionTimestamp").is_some() {
        return Ok(delete_again(app, key, obj, grace_seconds));
    }
    // batch/v1 Jobs orphan their pods unless told otherwise (kept for compatibility by
    // the real API server; kubectl sends Background explicitly).
    let propagation = propagation.unwrap_or(if key.plural == "jobs" {
        Propagation::Orphan
    } else {
        Propagation::Background
    });
    if propagation == Propagation::Orphan {
        orphan_dependents(app, &key.namespace, &uid);
    }
    if key.plural == "namespaces" {
        let out = deferred(app, &rt, key, &|o| {
            stamp(o, None, 0);
            o["status"]["phase"] = json!("Terminating");
        })?;
        tokio::spawn(clean_namespace(app.clone(), key.name.clone()));
        return Ok(out);
    }
    if propagation == Propagation::Foreground {
        return deferred(app, &rt, key, &|o| stamp(o, Some("foregroundDeletion"), 0));
    }
    if !finalizers(&obj).is_empty() {
        return deferred(app, &rt, key, &|o| stamp(o, None, 0));
    }
    if key.plural == "pods"
        && let Some(out) = terminate_pod_gracefully(app, &rt, key, &obj, grace_seconds)
    {
        return out;
    }
    let gone = app
        .store
        .remove(key)
        .ok_or_else(|| KubeError::not_found(&rt, &key.name))?;
    Ok((gone, true))
}

/// A pod with a grace period (and a termination delay configured) is stamped now and removed
/// once the delay has passed; `None` if it goes at once.
fn terminate_pod_gracefully(
    app: &Arc<App>,
    rt: &ResourceType,
    key: &ObjKey,
    obj: &Value,
    grace_seconds: Option<i64>,
) -> Option<KubeResult<(Value, bool)>> {
    let delay = app.settings().pod_termination_delay();
    let grace = grace_seconds
        .or_else(|| {
            obj.pointer("/spec/terminationGracePeriodSeconds")
                .and_then(Value::as_i64)
        })
        .unwrap_or(30);
    if delay.is_zero() || grace == 0 {
        return None;
    }
    let out = match deferred(app, rt, key, &|o| stamp(o, None, grace)) {
        Ok(out) => out,
        Err(e) => return Some(Err(e)),
    };
    let (app, key) = (app.clone(), key.clone());
    tokio::spawn(async move {
        let mut stop = app.stop.subscribe();
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = raised(&mut stop) => return,
        }
        app.store.remove(&key);
    });
    Some(Ok(out))
}

/// Removes an object whose deletion was deferred once nothing holds it any more.
pub fn finalize_if_done(app: &App, key: &ObjKey) {
    let Some(obj) = app.store.get(key) else {
        return;
    };
    let done = obj.pointer("/metadata/deletionTimestamp").is_some()
        && obj
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .is_none_or(|a| a.is_empty())
        && key.plural != "pods"
        && key.plural != "namespaces";
    if done {
        app.store.remove(key);
    }
}

/// Deletes everything in a terminating namespace, then the namespace itself.
async fn clean_namespace(app: Arc<App>, name: String) {
    loop {
        let objs = app.store.in_namespace(&name);
        if objs.is_empty() {
            break;
        }
        for (k, v) in objs {
            if v.pointer("/metadata/deletionTimestamp").is_none() {
                let _ = delete_object(&app, &k, Some(Propagation::Background), None, None);
            }
        }
        if !app.sleep(std::time::Duration::from_millis(5)).await {
            return;
        }
    }
    app.store.remove(&ObjKey::new("", "namespaces", "", &name));
}
