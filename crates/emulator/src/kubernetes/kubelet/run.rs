//! The kubelet's loop of one pod, from Pending to its end: held while its Sandbox's plan is
//! not Ready, waiting for missing config, its root and pid namespaces made, its containers'
//! commands run with their output in the pod log, and the pod's end (exit codes, or the
//! `activeDeadlineSeconds` deadline) written to its status.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt};

use super::env::{container_envs, effective_argv};
use super::pod_status::{
    running_status, set_failed, set_status, terminated_status, waiting_status,
};
use super::root::create_root;
use super::spec::owner_of;
use crate::kubernetes::options::SandboxPlan;
use crate::kubernetes::pod_runtime::{ContainerEnv, PodRuntime, TreeGuard};
use crate::kubernetes::state::App;
use crate::kubernetes::store::{ObjKey, meta_str};
use crate::kubernetes::util::{now, raised};
use crate::sandbox_runner::{IoMode, Launched, LaunchedIo};

/// The kubelet loop of one pod, from Pending to its end.
pub async fn run_pod(app: Arc<App>, key: ObjKey, uid: String) {
    let rt = Arc::new(PodRuntime::new(
        uid.clone(),
        key.clone(),
        app.opts.pod_log_limit,
        app.live_trees.clone(),
    ));
    app.pods.lock().unwrap().insert(uid.clone(), rt.clone());
    let mut stopped = rt.stopped();
    let mut app_stop = app.stop.subscribe();
    tokio::select! {
        _ = drive_pod(&app, &rt, &key) => {}
        _ = raised(&mut stopped) => {}
        _ = raised(&mut app_stop) => {}
    }
}

/// The pod `key` if it is still the one with `uid` and not being deleted.
fn current(app: &App, key: &ObjKey, uid: &str) -> Option<Value> {
    app.store
        .get(key)
        .filter(|p| meta_str(p, "uid") == Some(uid))
        .filter(|p| p.pointer("/metadata/deletionTimestamp").is_none())
}

/// A started container command: its name, its process and the registration of its tree.
type Started = (String, Launched, TreeGuard);

async fn drive_pod(app: &Arc<App>, rt: &Arc<PodRuntime>, key: &ObjKey) -> Option<()> {
    let uid = rt.uid.clone();
    let pod = current(app, key, &uid)?;
    set_status(app, key, waiting_status(&pod, "ContainerCreating", None));
    hold_for_plan(app, key, &pod).await?;
    if !app.sleep(app.settings().pod_ready_delay()).await {
        return None;
    }
    let envs = resolve_envs(app, key, &uid).await?;
    prepare_runtime(app, rt, key, &envs).await?;

    let started_at = now();
    let started = Instant::now();
    let waits = start_commands(app, rt, &envs);
    let pod = current(app, key, &uid)?;
    let mut status = running_status(&pod, &uid, &started_at);
    status["startTime"] = pod
        .pointer("/status/startTime")
        .cloned()
        .unwrap_or_else(|| json!(started_at));
    set_status(app, key, status);

    let deadline = pod
        .pointer("/spec/activeDeadlineSeconds")
        .and_then(Value::as_f64)
        .map(|s| app.settings().api_seconds(s));
    let outcome = match deadline {
        Some(d) => {
            let remaining = d.saturating_sub(started.elapsed());
            tokio::select! {
                codes = run_all(rt, waits) => Ok(codes),
                _ = tokio::time::sleep(remaining) => Err(()),
            }
        }
        None => Ok(run_all(rt, waits).await),
    };
    let pod = current(app, key, &uid)?;
    match outcome {
        Ok(codes) => {
            let phase = if codes.values().all(|c| *c == 0) {
                "Succeeded"
            } else {
                "Failed"
            };
            set_status(app, key, terminated_status(&pod, &uid, phase, &codes, None));
        }
        Err(()) => {
            rt.kill();
            let why = "Pod was active on the node longer than the specified deadline";
            set_failed(app, key, &pod, &uid, ("DeadlineExceeded", why));
        }
    }
    Some(())
}

/// A Sandbox whose plan is not Ready holds its pod in ContainerCreating.
async fn hold_for_plan(app: &App, key: &ObjKey, pod: &Value) -> Option<()> {
    if let Some(owner) = owner_of(pod, "Sandbox") {
        let name = owner["name"].as_str().unwrap_or_default().to_string();
        let mut changed = app.plans_changed.subscribe();
        while app.sandbox_plan(&key.namespace, &name) != SandboxPlan::Ready {
            changed.changed().await.ok()?;
        }
    }
    Some(())
}

/// Resolves every container's environment; a missing Secret keeps the pod waiting.
async fn resolve_envs(app: &App, key: &ObjKey, uid: &str) -> Option<Vec<ContainerEnv>> {
    let mut config = app.config_changed.subscribe();
    loop {
        let pod = current(app, key, uid)?;
        match container_envs(app, &key.namespace, &pod) {
            Ok(envs) => return Some(envs),
            Err(msg) => {
                set_status(
                    app,
                    key,
                    waiting_status(&pod, "CreateContainerConfigError", Some(&msg)),
                );
                config.changed().await.ok()?;
            }
        }
    }
}

/// Makes the pod's root and its containers' pid namespaces; `None` (with the pod's status
/// saying why where there is one) if the pod cannot run.
async fn prepare_runtime(
    app: &App,
    rt: &Arc<PodRuntime>,
    key: &ObjKey,
    envs: &[ContainerEnv],
) -> Option<()> {
    let uid = rt.uid.as_str();
    let pod = current(app, key, uid)?;
    let root = match create_root(app, key, uid, &pod, envs).await? {
        Ok(r) => r,
        Err(e) => {
            let msg = format!("failed to create the pod's root: {e}");
            return container_error(app, key, uid, &msg);
        }
    };
    if app.shutting_down.load(Ordering::SeqCst) {
        let _ = root.remove();
        return None;
    }
    rt.set_root(root);
    if let Err(e) = rt.start_namespaces(&app.bwrap, envs) {
        let msg = format!("failed to start the pod's pid namespaces: {e}");
        return container_error(app, key, uid, &msg);
    }
    rt.set_containers(envs.to_vec());
    if rt.is_stopped() {
        return None;
    }
    Some(())
}

/// Records a `CreateContainerError` with `msg` on the pod; always `None` (the pod stops here).
fn container_error(app: &App, key: &ObjKey, uid: &str, msg: &str) -> Option<()> {
    let pod = current(app, key, uid)?;
    set_status(
        app,
        key,
        waiting_status(&pod, "CreateContainerError", Some(msg)),
    );
    None
}

/// Starts the containers' commands (when the emulator runs pod commands); a command that
/// cannot start says so in the pod log.
fn start_commands(app: &App, rt: &Arc<PodRuntime>, envs: &[ContainerEnv]) -> Vec<Started> {
    let mut waits = Vec::new();
    if app.opts.run_pod_commands {
        for c in envs {
            if c.argv.is_empty() {
                continue;
            }
            let argv = effective_argv(app, c.argv.clone());
            match rt.launch(&app.bwrap, c, argv, IoMode::Pipes { stdin: false }) {
                Ok((launched, guard)) => waits.push((c.name.clone(), launched, guard)),
                Err(e) => {
                    rt.append_log(format!("failed to start container {}: {e}\n", c.name).as_bytes())
                }
            }
        }
    }
    waits
}

/// Runs every started command to its end; their exit codes by container name. With nothing to
/// run, the pod idles like `sleep infinity` until it is stopped.
async fn run_all(rt: &Arc<PodRuntime>, waits: Vec<Started>) -> HashMap<String, i32> {
    let mut codes = HashMap::new();
    let mut handles = Vec::new();
    for (name, launched, guard) in waits {
        let rt = rt.clone();
        handles.push(tokio::spawn(async move {
            let code = run_container(&rt, launched, guard).await;
            (name, code)
        }));
    }
    if handles.is_empty() {
        std::future::pending::<()>().await;
    }
    for h in handles {
        if let Ok((name, code)) = h.await {
            codes.insert(name, code);
        }
    }
    codes
}

/// Pumps one container's output into the pod log until it exits; returns its exit code.
async fn run_container(rt: &Arc<PodRuntime>, launched: Launched, guard: TreeGuard) -> i32 {
    let Launched {
        tree,
        io,
        mut child,
    } = launched;
    if let LaunchedIo::Pipes { stdout, stderr, .. } = io {
        tokio::join!(pump_log(rt, stdout), pump_log(rt, stderr));
    }
    let ended = tree.wait(&mut child).await;
    drop(guard);
    ended.shell_code()
}

async fn pump_log(rt: &PodRuntime, mut pipe: impl AsyncRead + Unpin) {
    let mut buf = vec![0u8; 16 * 1024];
    while let Ok(n @ 1..) = pipe.read(&mut buf).await {
        rt.append_log(&buf[..n]);
    }
}

/// Marks a pod Failed with `reason` and kills its processes (a Sandbox that was told to fail).
pub fn fail_pod(app: &App, key: &ObjKey, reason: &str, message: &str) {
    let Some(pod) = app.store.get(key) else {
        return;
    };
    let uid = meta_str(&pod, "uid").unwrap_or_default().to_string();
    if let Some(rt) = app.pod_runtime(&uid) {
        rt.kill();
    }
    set_failed(app, key, &pod, &uid, (reason, message));
}
