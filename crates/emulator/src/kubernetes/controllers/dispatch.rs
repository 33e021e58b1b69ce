//! The controllers' event loop: every store event goes to the kubelet (pods started, killed,
//! forgotten), the Sandbox and Job controllers (one task per new object), the pods waiting for
//! config, and the garbage collector.

use std::sync::Arc;

use tokio::sync::mpsc;

use super::fields::{deleting, uid_of};
use super::{gc, job, sandbox};
use crate::kubernetes::kubelet;
use crate::kubernetes::state::App;
use crate::kubernetes::store::{Event, EventType};
use crate::kubernetes::util::raised;

/// Dispatches store events to the controllers until shutdown.
pub async fn run(app: Arc<App>, mut rx: mpsc::UnboundedReceiver<Arc<Event>>) {
    let mut stop = app.stop.subscribe();
    loop {
        let ev = tokio::select! {
            ev = rx.recv() => match ev { Some(e) => e, None => return },
            _ = raised(&mut stop) => return,
        };
        handle(&app, &ev);
        gc::on_event(&app, &ev);
    }
}

fn handle(app: &Arc<App>, ev: &Event) {
    let k = &ev.key;
    let obj = &ev.object;
    match (k.group.as_str(), k.plural.as_str(), ev.kind) {
        ("", "pods", EventType::Added) => {
            tokio::spawn(kubelet::run_pod(app.clone(), k.clone(), uid_of(obj)));
        }
        ("", "pods", EventType::Deleted) => {
            let rt = app.pods.lock().unwrap().remove(&uid_of(obj));
            if let Some(rt) = rt {
                rt.kill();
                tokio::task::spawn_blocking(move || rt.remove_root());
            }
        }
        ("", "pods", EventType::Modified) => {
            let was_deleting = ev.old.as_ref().is_some_and(deleting);
            if deleting(obj)
                && !was_deleting
                && let Some(rt) = app.pod_runtime(&uid_of(obj))
            {
                rt.kill();
            }
        }
        ("agents.x-k8s.io", "sandboxes", EventType::Added) => {
            tokio::spawn(sandbox::run_sandbox(app.clone(), k.clone(), uid_of(obj)));
        }
        ("agents.x-k8s.io", "sandboxes", EventType::Deleted) => {
            app.sandbox_plans
                .lock()
                .unwrap()
                .remove(&(k.namespace.clone(), k.name.clone()));
        }
        ("batch", "jobs", EventType::Added) => {
            tokio::spawn(job::run_job(app.clone(), k.clone(), uid_of(obj)));
        }
        ("", "secrets" | "configmaps", _) => {
            app.config_changed.send_modify(|v| *v += 1);
        }
        _ => {}
    }
}
