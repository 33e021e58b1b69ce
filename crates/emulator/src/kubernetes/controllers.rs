//! The controllers: garbage collection through ownerReferences (background and foreground),
//! namespace termination, the agent-sandbox controller (Sandbox → pod → Ready, or Failed /
//! Terminating on request), and the Job controller (pod really runs its command; Succeeded /
//! Failed with its exit code; `backoffLimit`, `activeDeadlineSeconds`,
//! `ttlSecondsAfterFinished`).

use std::sync::Arc;
use std::time::Instant;

use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::{broadcast, mpsc};

use super::objects;
use super::options::SandboxPlan;
use super::pods;
use super::state::{App, Propagation};
use super::store::{Event, EventType, ObjKey, meta_str};
use super::util::{name_suffix, now};

/// Dispatches store events to the controllers until shutdown.
pub async fn run(app: Arc<App>, mut rx: mpsc::UnboundedReceiver<Arc<Event>>) {
    let mut stop = app.stop.subscribe();
    loop {
        let ev = tokio::select! {
            ev = rx.recv() => match ev { Some(e) => e, None => return },
            _ = super::util::raised(&mut stop) => return,
        };
        handle(&app, &ev);
    }
}

fn uid_of(v: &Value) -> String {
    meta_str(v, "uid").unwrap_or_default().to_string()
}

fn deleting(v: &Value) -> bool {
    v.pointer("/metadata/deletionTimestamp").is_some()
}

fn has_finalizer(v: &Value, f: &str) -> bool {
    v.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|a| a.iter().any(|x| x == f))
}

fn handle(app: &Arc<App>, ev: &Event) {
    let k = &ev.key;
    let obj = &ev.object;
    match (k.group.as_str(), k.plural.as_str(), ev.kind) {
        ("", "pods", EventType::Added) => {
            tokio::spawn(pods::run_pod(app.clone(), k.clone(), uid_of(obj)));
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
            tokio::spawn(run_sandbox(app.clone(), k.clone(), uid_of(obj)));
        }
        ("agents.x-k8s.io", "sandboxes", EventType::Deleted) => {
            app.sandbox_plans
                .lock()
                .unwrap()
                .remove(&(k.namespace.clone(), k.name.clone()));
        }
        ("batch", "jobs", EventType::Added) => {
            tokio::spawn(run_job(app.clone(), k.clone(), uid_of(obj)));
        }
        ("", "secrets" | "configmaps", _) => {
            app.config_changed.send_modify(|v| *v += 1);
        }
        _ => {}
    }
    match ev.kind {
        // An object created after all its owners were gone (a controller that made a pod for a
        // Sandbox deleted meanwhile): the real garbage collector deletes a dependent none of
        // whose owners exists, and so does this one.
        EventType::Added if orphaned(app, k, obj) => {
            let _ = app.delete_object(k, Some(Propagation::Background), None, None);
        }
        EventType::Deleted => {
            // Background garbage collection of dependents.
            for (dep, _) in app.store.dependents(&k.namespace, &uid_of(obj)) {
                let _ = app.delete_object(&dep, Some(Propagation::Background), None, None);
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
        app.finalize_if_done(key);
        return;
    }
    for (dep, v) in deps {
        if !deleting(&v) {
            let _ = app.delete_object(&dep, Some(Propagation::Background), None, None);
        }
    }
}

/// Deletes everything in a terminating namespace, then the namespace itself.
pub async fn clean_namespace(app: Arc<App>, name: String) {
    loop {
        let objs = app.store.in_namespace(&name);
        if objs.is_empty() {
            break;
        }
        for (k, v) in objs {
            if !deleting(&v) {
                let _ = app.delete_object(&k, Some(Propagation::Background), None, None);
            }
        }
        if !app.sleep(std::time::Duration::from_millis(5)).await {
            return;
        }
    }
    app.store.remove(&ObjKey::new("", "namespaces", "", &name));
}

/// Events from now on, for a task that waits on a few objects.
fn subscribe(app: &App) -> broadcast::Receiver<Arc<Event>> {
    let rv = app.store.current_rv();
    match app.store.watch_from(rv) {
        Ok((_, rx)) => rx,
        Err(_) => unreachable!("the current resourceVersion is always in the history"),
    }
}

/// What a waiting controller heard.
enum Heard {
    Event(Arc<Event>),
    /// Events were missed: re-read the store.
    Resync,
    Stop,
}

async fn next(rx: &mut broadcast::Receiver<Arc<Event>>, app: &App) -> Heard {
    let mut stop = app.stop.subscribe();
    tokio::select! {
        r = rx.recv() => match r {
            Ok(ev) => Heard::Event(ev),
            Err(RecvError::Lagged(_)) => Heard::Resync,
            Err(RecvError::Closed) => Heard::Stop,
        },
        _ = super::util::raised(&mut stop) => Heard::Stop,
    }
}

fn pod_ready(pod: &Value) -> bool {
    pod.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
}

fn pod_phase(pod: &Value) -> &str {
    pod.pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("Pending")
}

fn condition(kind: &str, ok: bool, reason: &str, message: &str, generation: &Value) -> Value {
    let mut c = json!({
        "type": kind,
        "status": if ok { "True" } else { "False" },
        "reason": reason,
        "message": message,
        "lastTransitionTime": now(),
    });
    if !generation.is_null() {
        c["observedGeneration"] = generation.clone();
    }
    c
}

// ---------------------------------------------------------------------------------------------
// agent-sandbox

fn name_hash(name: &str) -> String {
    let mut h: u32 = 0x811c_9dc5;
    for b in name.bytes() {
        h ^= b as u32;
        h = h.wrapping_mul(0x0100_0193);
    }
    format!("{h:08x}")
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum SandboxState {
    Pending,
    Ready,
    Failed,
    Terminating,
}

/// Writes the Sandbox's status for `state` (phase only when the instance serves it).
fn set_sandbox_status(
    app: &App,
    key: &ObjKey,
    state: SandboxState,
    pod_name: Option<&str>,
    why: Option<(&str, &str)>,
) {
    let opts = &app.opts;
    app.store.update::<()>(key, |o| {
        let generation = o["metadata"]["generation"].clone();
        let name = key.name.as_str();
        let mut s = json!({
            "serviceFQDN": format!("{name}.{}.svc.cluster.local", key.namespace),
            "service": name,
            "replicas": 1,
            "selector": format!("agents.x-k8s.io/sandbox-name-hash={}", name_hash(name)),
        });
        let (phase, conditions) = match state {
            SandboxState::Pending => (
                "Pending",
                vec![condition(
                    "Ready",
                    false,
                    "DependenciesNotReady",
                    "Pod exists with phase: Pending; Service Exists",
                    &generation,
                )],
            ),
            SandboxState::Ready => (
                "Ready",
                vec![condition(
                    "Ready",
                    true,
                    "DependenciesReady",
                    "Pod is Ready; Service Exists",
                    &generation,
                )],
            ),
            SandboxState::Failed => {
                let (reason, message) = why.unwrap_or(("PodFailed", "Pod failed"));
                (
                    "Failed",
                    vec![
                        condition("Ready", false, reason, message, &generation),
                        condition("Failed", true, reason, message, &generation),
                    ],
                )
            }
            SandboxState::Terminating => {
                if o.pointer("/metadata/deletionTimestamp").is_none() {
                    o["metadata"]["deletionTimestamp"] = json!(now());
                    o["metadata"]["deletionGracePeriodSeconds"] = json!(0);
                }
                (
                    "Terminating",
                    vec![condition(
                        "Ready",
                        false,
                        "SandboxTerminating",
                        "Sandbox is terminating",
                        &generation,
                    )],
                )
            }
        };
        if opts.sandbox_phase {
            s["phase"] = json!(phase);
        }
        if opts.sandbox_pod_name
            && let Some(p) = pod_name
        {
            s["podName"] = json!(p);
        }
        s["conditions"] = json!(conditions);
        o["status"] = s;
        Ok(())
    });
}

/// Applies a plan to a live Sandbox at once (control API / handle).
pub fn apply_sandbox_plan(app: &App, namespace: &str, name: &str, plan: &SandboxPlan) -> bool {
    let key = ObjKey::new("agents.x-k8s.io", "sandboxes", namespace, name);
    let Some(sb) = app.store.get(&key) else {
        return false;
    };
    app.set_sandbox_plan(namespace, name, plan.clone());
    let pod = sandbox_pod(app, &sb);
    let pod_name = pod.as_ref().map(|(k, _)| k.name.clone());
    match plan {
        SandboxPlan::Failed { reason, message } => {
            if let Some((pk, _)) = &pod {
                pods::fail_pod(app, pk, reason, message);
            }
            set_sandbox_status(
                app,
                &key,
                SandboxState::Failed,
                pod_name.as_deref(),
                Some((reason, message)),
            );
        }
        SandboxPlan::Terminating => {
            set_sandbox_status(
                app,
                &key,
                SandboxState::Terminating,
                pod_name.as_deref(),
                None,
            );
        }
        SandboxPlan::Never | SandboxPlan::Ready => {}
    }
    true
}

/// The pod a Sandbox owns, if any.
fn sandbox_pod(app: &App, sb: &Value) -> Option<(ObjKey, Value)> {
    let ns = meta_str(sb, "namespace").unwrap_or_default();
    let uid = uid_of(sb);
    app.store
        .dependents(ns, &uid)
        .into_iter()
        .find(|(k, _)| k.plural == "pods")
}

fn sandbox_pod_manifest(app: &App, sb: &Value, key: &ObjKey) -> Value {
    let template = sb
        .pointer("/spec/podTemplate")
        .cloned()
        .unwrap_or(json!({}));
    let mut labels = template
        .pointer("/metadata/labels")
        .cloned()
        .unwrap_or(json!({}));
    labels["agents.x-k8s.io/sandbox-name-hash"] = json!(name_hash(&key.name));
    labels["agents.x-k8s.io/sandbox-name"] = json!(key.name);
    let name = if app.opts.sandbox_pod_suffix {
        format!("{}-{}", key.name, name_suffix(5))
    } else {
        key.name.clone()
    };
    let metadata = json!({
        "name": name,
        "namespace": key.namespace,
        "labels": labels,
        "ownerReferences": [{
            "apiVersion": sb["apiVersion"].as_str().unwrap_or("agents.x-k8s.io/v1alpha1"),
            "kind": "Sandbox",
            "name": key.name,
            "uid": uid_of(sb),
            "controller": true,
            "blockOwnerDeletion": true,
        }],
    });
    pod_from_template(&template, metadata)
}

async fn run_sandbox(app: Arc<App>, key: ObjKey, uid: String) {
    let current = |app: &App| {
        app.store
            .get(&key)
            .filter(|o| meta_str(o, "uid") == Some(uid.as_str()))
    };
    // The plan in force when the Sandbox was created sticks to it.
    let plan = app.sandbox_plan(&key.namespace, &key.name);
    app.set_sandbox_plan(&key.namespace, &key.name, plan.clone());
    let mut rx = subscribe(&app);
    let Some(sb) = current(&app) else { return };
    set_sandbox_status(&app, &key, SandboxState::Pending, None, None);
    if matches!(plan, SandboxPlan::Failed { .. } | SandboxPlan::Terminating) {
        let (app2, key2, plan2) = (app.clone(), key.clone(), plan.clone());
        tokio::spawn(async move {
            if app2.sleep(app2.settings().pod_ready_delay()).await {
                apply_sandbox_plan(&app2, &key2.namespace, &key2.name, &plan2);
            }
        });
    }
    let mut pod_key = match sandbox_pod(&app, &sb) {
        Some((k, _)) => k,
        None => match objects::create_internal(
            &app,
            "",
            "pods",
            &key.namespace,
            sandbox_pod_manifest(&app, &sb, &key),
        ) {
            Ok(p) => ObjKey::pod(&key.namespace, meta_str(&p, "name").unwrap_or_default()),
            Err(_) => return,
        },
    };
    let mut last = SandboxState::Pending;
    loop {
        let heard = next(&mut rx, &app).await;
        if let Heard::Event(ev) = &heard
            && ev.key != pod_key
            && ev.key != key
        {
            continue;
        }
        if matches!(heard, Heard::Stop) {
            return;
        }
        let Some(sb) = current(&app) else { return };
        if deleting(&sb) {
            continue;
        }
        let plan = app.sandbox_plan(&key.namespace, &key.name);
        if matches!(plan, SandboxPlan::Failed { .. } | SandboxPlan::Terminating) {
            continue;
        }
        match app.store.get(&pod_key) {
            None => {
                // The controller replaces a pod that vanished under a live Sandbox.
                match objects::create_internal(
                    &app,
                    "",
                    "pods",
                    &key.namespace,
                    sandbox_pod_manifest(&app, &sb, &key),
                ) {
                    Ok(p) => {
                        pod_key =
                            ObjKey::pod(&key.namespace, meta_str(&p, "name").unwrap_or_default())
                    }
                    Err(_) => return,
                }
                set_sandbox_status(&app, &key, SandboxState::Pending, None, None);
                last = SandboxState::Pending;
            }
            Some(pod) => {
                let state = if pod_phase(&pod) == "Failed" || pod_phase(&pod) == "Succeeded" {
                    SandboxState::Failed
                } else if pod_ready(&pod) {
                    SandboxState::Ready
                } else {
                    SandboxState::Pending
                };
                if state != last {
                    let reason = pod
                        .pointer("/status/reason")
                        .and_then(Value::as_str)
                        .unwrap_or("PodFailed");
                    let message = pod
                        .pointer("/status/message")
                        .and_then(Value::as_str)
                        .unwrap_or("Pod failed")
                        .to_string();
                    set_sandbox_status(
                        &app,
                        &key,
                        state,
                        Some(&pod_key.name),
                        Some((reason, &message)),
                    );
                    last = state;
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Jobs

enum PodEnd {
    Succeeded,
    Failed,
    Deadline,
    JobGone,
}

/// A pod with `metadata` (plus the template's annotations) and the template's spec.
fn pod_from_template(template: &Value, mut metadata: Value) -> Value {
    if let Some(a) = template.pointer("/metadata/annotations") {
        metadata["annotations"] = a.clone();
    }
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": template.get("spec").cloned().unwrap_or(json!({})),
    })
}

fn job_pod_manifest(job: &Value, key: &ObjKey) -> Value {
    let uid = uid_of(job);
    let template = job.pointer("/spec/template").cloned().unwrap_or(json!({}));
    let mut labels = template
        .pointer("/metadata/labels")
        .cloned()
        .unwrap_or(json!({}));
    for (k, v) in [
        ("batch.kubernetes.io/controller-uid", uid.as_str()),
        ("batch.kubernetes.io/job-name", key.name.as_str()),
        ("controller-uid", uid.as_str()),
        ("job-name", key.name.as_str()),
    ] {
        labels[k] = json!(v);
    }
    let metadata = json!({
        "name": format!("{}-{}", key.name, name_suffix(5)),
        "generateName": format!("{}-", key.name),
        "namespace": key.namespace,
        "labels": labels,
        "ownerReferences": [{
            "apiVersion": "batch/v1", "kind": "Job", "name": key.name, "uid": uid,
            "controller": true, "blockOwnerDeletion": true,
        }],
    });
    pod_from_template(&template, metadata)
}

fn update_job_status(app: &App, key: &ObjKey, f: impl FnOnce(&mut serde_json::Map<String, Value>)) {
    app.store.update::<()>(key, |o| {
        if !o["status"].is_object() {
            o["status"] = json!({});
        }
        f(o["status"].as_object_mut().expect("object"));
        Ok(())
    });
}

async fn wait_for_pod(
    app: &App,
    rx: &mut broadcast::Receiver<Arc<Event>>,
    job_key: &ObjKey,
    pod_key: &ObjKey,
    deadline: Option<Instant>,
) -> PodEnd {
    loop {
        match app.store.get(pod_key) {
            None => return PodEnd::Failed,
            Some(p) => match pod_phase(&p) {
                "Succeeded" => return PodEnd::Succeeded,
                "Failed" => return PodEnd::Failed,
                _ => {}
            },
        }
        match app.store.get(job_key) {
            Some(j) if !deleting(&j) => {}
            _ => return PodEnd::JobGone,
        }
        let sleep = async {
            match deadline {
                Some(d) => tokio::time::sleep_until(d.into()).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            heard = next(rx, app) => if let Heard::Stop = heard { return PodEnd::JobGone },
            _ = sleep => return PodEnd::Deadline,
        }
    }
}

async fn run_job(app: Arc<App>, key: ObjKey, uid: String) {
    let Some(job) = app
        .store
        .get(&key)
        .filter(|o| meta_str(o, "uid") == Some(uid.as_str()))
    else {
        return;
    };
    let spec = job["spec"].clone();
    let backoff_limit = spec["backoffLimit"].as_i64().unwrap_or(6);
    let deadline = spec["activeDeadlineSeconds"]
        .as_f64()
        .map(|s| Instant::now() + app.settings().api_seconds(s));
    update_job_status(&app, &key, |s| {
        s.insert("startTime".into(), json!(now()));
        s.insert("ready".into(), json!(0));
        s.insert("terminating".into(), json!(0));
        s.insert("uncountedTerminatedPods".into(), json!({}));
    });
    let mut failed = 0i64;
    let outcome: Result<(), (&str, &str)> = loop {
        let mut rx = subscribe(&app);
        let pod_key = match objects::create_internal(
            &app,
            "",
            "pods",
            &key.namespace,
            job_pod_manifest(&job, &key),
        ) {
            Ok(p) => ObjKey::pod(&key.namespace, meta_str(&p, "name").unwrap_or_default()),
            Err(_) => return,
        };
        update_job_status(&app, &key, |s| {
            s.insert("active".into(), json!(1));
        });
        match wait_for_pod(&app, &mut rx, &key, &pod_key, deadline).await {
            PodEnd::Succeeded => break Ok(()),
            PodEnd::Failed => {
                failed += 1;
                update_job_status(&app, &key, |s| {
                    s.remove("active");
                    s.insert("failed".into(), json!(failed));
                });
                if failed > backoff_limit {
                    break Err((
                        "BackoffLimitExceeded",
                        "Job has reached the specified backoff limit",
                    ));
                }
                if !app.sleep(app.settings().job_retry_delay()).await {
                    return;
                }
            }
            PodEnd::Deadline => {
                let _ = app.delete_object(&pod_key, Some(Propagation::Background), Some(0), None);
                break Err((
                    "DeadlineExceeded",
                    "Job was active longer than specified deadline",
                ));
            }
            PodEnd::JobGone => return,
        }
    };
    update_job_status(&app, &key, |s| {
        s.remove("active");
        let gen_none = Value::Null;
        let conds = match outcome {
            Ok(()) => {
                s.insert("succeeded".into(), json!(1));
                s.insert("completionTime".into(), json!(now()));
                let m = "Reached expected number of succeeded pods";
                vec![
                    condition(
                        "SuccessCriteriaMet",
                        true,
                        "CompletionsReached",
                        m,
                        &gen_none,
                    ),
                    condition("Complete", true, "CompletionsReached", m, &gen_none),
                ]
            }
            Err((reason, message)) => vec![
                condition("FailureTarget", true, reason, message, &gen_none),
                condition("Failed", true, reason, message, &gen_none),
            ],
        };
        let conds: Vec<Value> = conds
            .into_iter()
            .map(|mut c| {
                c["lastProbeTime"] = c["lastTransitionTime"].clone();
                c
            })
            .collect();
        s.insert("conditions".into(), json!(conds));
    });
    if let Some(ttl) = spec["ttlSecondsAfterFinished"].as_f64()
        && app.sleep(app.settings().api_seconds(ttl)).await
    {
        let still_ours = app
            .store
            .get(&key)
            .is_some_and(|o| meta_str(&o, "uid") == Some(uid.as_str()));
        if still_ours {
            let _ = app.delete_object(&key, Some(Propagation::Background), None, None);
        }
    }
}
