//! The garbage collector: dependents of a deleted owner deleted in the background, foreground
//! deletion (dependents first, then the owner), and dependents created after all their owners
//! were gone.

use std::sync::Arc;

use serde_json::Value;

use super::fields::{deleting, has_finalizer, uid_of};
use crate::kubernetes::deletion::{Propagation, delete_object, finalize_if_done};
use crate::kubernetes::state::App;
use crate::kubernetes::store::{Event, EventType, ObjKey, meta_str};

/// What the garbage collector does on a store event.
pub fn on_event(app: &Arc<App>, ev: &Event) {
    let k = &ev.key;
    let obj = &ev.object;
    match ev.kind {
        // An object created after all its owners were gone (a controller that made a pod for a
        // Sandbox deleted meanwhile): the real garbage collector deletes a dependent none of
        // whose owners exists, and so does this one.
        EventType::Added if orphaned(app, k, obj) => {
            let _ = delete_object(app, k, Some(Propagation::Background), None, None);
        }
        EventType::Deleted => {
            // Background garbage collection of dependents.
            for (dep, _) in app.store.dependents(&k.namespace, &uid_of(obj)) {
                let _ = delete_object(app, &dep, Some(Propagation::Background), None, None);
            }
            // A foreground-deleting owner may now be free to go.
            for r in obj
                .pointer("/metadata/ownerReferences")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let owner_uid = r["uid"].as_str().unwrap_or_default();
                if let Some((owner_key, _)) = find_by_uid(app, &k.namespace, owner_uid) {
                    foreground_step(app, &owner_key);
                }
            }
        }
        EventType::Modified if deleting(obj) && has_finalizer(obj, "foregroundDeletion") => {
            foreground_step(app, k);
        }
        _ => {}
    }
}

/// Whether `obj` names owners and none of them exists (by uid).
fn orphaned(app: &App, key: &ObjKey, obj: &Value) -> bool {
    let owners: Vec<&str> = obj
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|r| r["uid"].as_str())
        .collect();
    !owners.is_empty()
        && owners
            .iter()
            .all(|uid| !app.store.owner_exists(&key.namespace, uid))
}

fn find_by_uid(app: &App, namespace: &str, uid: &str) -> Option<(ObjKey, Value)> {
    app.store
        .in_namespace(namespace)
        .into_iter()
        .find(|(_, v)| meta_str(v, "uid") == Some(uid))
}

/// Foreground deletion: delete the dependents; once none is left, drop the finalizer and
/// with it the owner.
fn foreground_step(app: &Arc<App>, key: &ObjKey) {
    let Some(owner) = app.store.get(key) else {
        return;
    };
    if !(deleting(&owner) && has_finalizer(&owner, "foregroundDeletion")) {
        return;
    }
    let deps = app.store.dependents(&key.namespace, &uid_of(&owner));
    if deps.is_empty() {
        app.store.update::<()>(key, |o| {
            if let Some(Value::Array(f)) = o.pointer_mut("/metadata/finalizers") {
                f.retain(|x| x != "foregroundDeletion");
            }
            Ok(())
        });
        finalize_if_done(app, key);
        return;
    }
    for (dep, v) in deps {
        if !deleting(&v) {
            let _ = delete_object(app, &dep, Some(Propagation::Background), None, None);
        }
    }
}
