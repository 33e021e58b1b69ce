//! The "kubelet": every pod gets a private bubblewrap root (its own writable `/workspace`,
//! `/tmp`, home and every `volumeMounts` path), its containers' environment resolved from
//! `env`/`envFrom` (waiting for missing Secrets like a real kubelet), and, when the container
//! has a command, that command really running; `pods/exec` runs in the same root. Each
//! container has one pid namespace, held open from the pod's start to its end: the container's
//! command and every exec in it join that namespace, as `runc exec` joins a container, so an exec
//! sees (and can signal) what earlier execs left running, and what a command leaves behind lives
//! on after its exec until the pod ends.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use base64::Engine;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::watch;

use super::options::SandboxPlan;
use super::state::App;
use super::status::{KubeError, KubeResult};
use super::store::{ObjKey, meta_str};
use super::util::now;
use crate::sandbox_runner::{
    ExitInfo, IoMode, LaunchSpec, Launched, LaunchedIo, PidNamespace, ProcessTree, SandboxRoot,
};

pub const PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// One container's resolved execution context.
#[derive(Debug, Clone)]
pub struct ContainerEnv {
    pub name: String,
    pub env: Vec<(String, String)>,
    pub cwd: String,
    pub argv: Vec<String>,
}

/// A pod's processes and files.
pub struct PodRuntime {
    pub uid: String,
    pub key: ObjKey,
    root: OnceLock<SandboxRoot>,
    containers: OnceLock<Vec<ContainerEnv>>,
    trees: Mutex<HashMap<u64, Arc<ProcessTree>>>,
    /// Each container's pid namespace, by container name.
    namespaces: Mutex<HashMap<String, PidNamespace>>,
    log: Mutex<Vec<u8>>,
    log_limit: usize,
    /// Set once the pod must run nothing more (deleted, failed, deadline).
    stopped: AtomicBool,
    stop_tx: watch::Sender<bool>,
    live: Arc<AtomicUsize>,
}

/// Registration of one live process tree; dropped once the tree has been reaped.
pub struct TreeGuard {
    pod: Arc<PodRuntime>,
    key: u64,
}

impl Drop for TreeGuard {
    fn drop(&mut self) {
        self.pod.trees.lock().unwrap().remove(&self.key);
        self.pod.live.fetch_sub(1, Ordering::SeqCst);
    }
}

impl PodRuntime {
    pub fn new(uid: String, key: ObjKey, log_limit: usize, live: Arc<AtomicUsize>) -> Self {
        PodRuntime {
            uid,
            key,
            root: OnceLock::new(),
            containers: OnceLock::new(),
            trees: Mutex::new(HashMap::new()),
            namespaces: Mutex::new(HashMap::new()),
            log: Mutex::new(Vec::new()),
            log_limit,
            stopped: AtomicBool::new(false),
            stop_tx: watch::Sender::new(false),
            live,
        }
    }

    /// The container, once the pod runs (`None` while it is pending or after it stopped).
    pub fn container(&self, name: Option<&str>) -> Option<ContainerEnv> {
        if self.stopped.load(Ordering::SeqCst) || self.root.get().is_none() {
            return None;
        }
        let cs = self.containers.get()?;
        match name {
            Some(n) => cs.iter().find(|c| c.name == n).cloned(),
            None => cs.first().cloned(),
        }
    }

    pub fn root_path(&self) -> Option<std::path::PathBuf> {
        self.root.get().map(|r| r.path().to_path_buf())
    }

    pub fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::SeqCst)
    }

    pub fn stopped(&self) -> watch::Receiver<bool> {
        self.stop_tx.subscribe()
    }

    /// Kills every process and stops the pod for good.
    pub fn kill(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        let _ = self.stop_tx.send(true);
        for t in self.trees.lock().unwrap().values() {
            t.kill();
        }
        // Everything an exec left behind dies with its container's namespace.
        for (_, mut ns) in self.namespaces.lock().unwrap().drain() {
            ns.kill();
        }
    }

    /// Starts the pid namespace of every container (on a runtime worker thread: see
    /// [`crate::sandbox_runner::Bwrap::spawn_pid_namespace`]).
    fn start_namespaces(&self, app: &App, containers: &[ContainerEnv]) -> std::io::Result<()> {
        let root = self
            .root
            .get()
            .ok_or_else(|| std::io::Error::other("pod is not running"))?;
        for c in containers {
            let path_only: Vec<(String, String)> =
                c.env.iter().filter(|(k, _)| k == "PATH").cloned().collect();
            let ns = app
                .bwrap
                .spawn_pid_namespace(root.path(), &self.key.name, &path_only)?;
            self.namespaces.lock().unwrap().insert(c.name.clone(), ns);
        }
        if self.is_stopped() {
            self.kill();
        }
        Ok(())
    }

    pub fn remove_root(&self) {
        if let Some(r) = self.root.get() {
            let _ = r.remove();
        }
    }

    fn append_log(&self, data: &[u8]) {
        let mut log = self.log.lock().unwrap();
        log.extend_from_slice(data);
        if log.len() > self.log_limit {
            let cut = log.len() - self.log_limit;
            log.drain(..cut);
        }
    }

    pub fn log(&self) -> Vec<u8> {
        self.log.lock().unwrap().clone()
    }

    /// Starts `argv` in the pod's root as `container` would run it.
    pub fn launch(
        self: &Arc<Self>,
        app: &App,
        container: &ContainerEnv,
        argv: Vec<String>,
        io: IoMode,
    ) -> std::io::Result<(Launched, TreeGuard)> {
        let root = self
            .root
            .get()
            .ok_or_else(|| std::io::Error::other("pod is not running"))?;
        let mut env = container.env.clone();
        if matches!(io, IoMode::Pty { .. }) && !env.iter().any(|(k, _)| k == "TERM") {
            env.push(("TERM".into(), "xterm".into()));
        }
        let cwd = if root.host_path(&container.cwd).is_dir() {
            container.cwd.clone()
        } else {
            "/".to_string()
        };
        let spec = LaunchSpec {
            root: root.path(),
            hostname: &self.key.name,
            cwd: &cwd,
            env,
            argv,
            io,
        };
        let launched = {
            let namespaces = self.namespaces.lock().unwrap();
            let ns = namespaces.get(&container.name).ok_or_else(|| {
                std::io::Error::other(format!(
                    "container {} has no running pid namespace",
                    container.name
                ))
            })?;
            app.bwrap.launch_in(spec, Some(ns.fd()))?
        };
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let key = NEXT.fetch_add(1, Ordering::Relaxed);
        self.trees
            .lock()
            .unwrap()
            .insert(key, launched.tree.clone());
        self.live.fetch_add(1, Ordering::SeqCst);
        if self.is_stopped() {
            launched.tree.kill();
        }
        Ok((
            launched,
            TreeGuard {
                pod: self.clone(),
                key,
            },
        ))
    }
}

/// `tini -- cmd…` → `cmd…`, then the configured argv[0] overrides.
pub fn effective_argv(app: &App, argv: Vec<String>) -> Vec<String> {
    let mut argv = argv;
    if argv.len() >= 2 && argv[0].rsplit('/').next() == Some("tini") && argv[1] == "--" {
        argv.drain(..2);
    }
    let overrides = app.settings().command_overrides;
    if let Some(first) = argv.first()
        && let Some(repl) = overrides.get(first)
    {
        let mut out = repl.clone();
        out.extend(argv.into_iter().skip(1));
        return out;
    }
    argv
}

fn str_list(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Why a container cannot start yet (`CreateContainerConfigError`).
type ConfigError = String;

fn decode_secret(v: &Value) -> String {
    let raw = v.as_str().unwrap_or_default();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(raw)
        .unwrap_or_default();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Resolves `env` and `envFrom` like the kubelet (later entries win; `envFrom` first).
fn resolve_env(
    app: &App,
    ns: &str,
    pod: &Value,
    c: &Value,
) -> Result<Vec<(String, String)>, ConfigError> {
    let mut out: Vec<(String, String)> = vec![("PATH".into(), PATH.into())];
    let mut set = |k: String, v: String| {
        out.retain(|(key, _)| *key != k);
        out.push((k, v));
    };
    let lookup = |plural: &str, name: &str| app.store.get(&ObjKey::new("", plural, ns, name));
    if let Some(Value::Array(from)) = c.get("envFrom") {
        for src in from {
            let prefix = src["prefix"].as_str().unwrap_or_default();
            for (plural, field, is_secret) in [
                ("secrets", "secretRef", true),
                ("configmaps", "configMapRef", false),
            ] {
                let Some(r) = src.get(field) else { continue };
                let name = r["name"].as_str().unwrap_or_default();
                match lookup(plural, name) {
                    Some(obj) => {
                        if let Some(Value::Object(data)) = obj.get("data") {
                            for (k, v) in data {
                                let value = if is_secret {
                                    decode_secret(v)
                                } else {
                                    v.as_str().unwrap_or_default().to_string()
                                };
                                set(format!("{prefix}{k}"), value);
                            }
                        }
                    }
                    None if r["optional"] == true => {}
                    None => {
                        let what = if is_secret { "secret" } else { "configmap" };
                        return Err(format!("{what} \"{name}\" not found"));
                    }
                }
            }
        }
    }
    if let Some(Value::Array(env)) = c.get("env") {
        for e in env {
            let name = e["name"].as_str().unwrap_or_default().to_string();
            if let Some(v) = e.get("value").and_then(Value::as_str) {
                set(name, v.to_string());
                continue;
            }
            let Some(from) = e.get("valueFrom") else {
                set(name, String::new());
                continue;
            };
            for (plural, field, is_secret) in [
                ("secrets", "secretKeyRef", true),
                ("configmaps", "configMapKeyRef", false),
            ] {
                let Some(r) = from.get(field) else { continue };
                let obj_name = r["name"].as_str().unwrap_or_default();
                let key = r["key"].as_str().unwrap_or_default();
                let value = lookup(plural, obj_name).and_then(|o| o["data"].get(key).cloned());
                match value {
                    Some(v) if is_secret => set(name.clone(), decode_secret(&v)),
                    Some(v) => set(name.clone(), v.as_str().unwrap_or_default().to_string()),
                    None if r["optional"] == true => {}
                    None => {
                        let what = if is_secret { "secret" } else { "configmap" };
                        return Err(format!("couldn't find key {key} in {what} {ns}/{obj_name}"));
                    }
                }
            }
            if let Some(f) = from.get("fieldRef") {
                let path = format!(
                    "/{}",
                    f["fieldPath"]
                        .as_str()
                        .unwrap_or_default()
                        .replace('.', "/")
                );
                let v = pod
                    .pointer(&path)
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                set(name.clone(), v.to_string());
            }
        }
    }
    if !out.iter().any(|(k, _)| k == "HOME") {
        out.push(("HOME".into(), "/root".into()));
    }
    Ok(out)
}

/// The container a `pods/exec` or `pods/log` request means: the one named `wanted`, or the
/// pod's only container; 400 (with the API server's message) otherwise.
pub fn container_named(pod: &Value, pod_name: &str, wanted: Option<&str>) -> KubeResult<String> {
    let names: Vec<String> = pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .map(|cs| {
            cs.iter()
                .filter_map(|c| c["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    match wanted {
        Some(c) if !names.iter().any(|n| n == c) => Err(KubeError::bad_request(format!(
            "container {c} is not valid for pod {pod_name}"
        ))),
        Some(c) => Ok(c.to_string()),
        None if names.len() == 1 => Ok(names[0].clone()),
        None => Err(KubeError::bad_request(format!(
            "a container name must be specified for pod {pod_name}, choose one of: [{}]",
            names.join(" ")
        ))),
    }
}

fn containers_of(pod: &Value) -> Vec<Value> {
    pod.pointer("/spec/containers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// The owner reference of `kind`, if any.
pub fn owner_of<'a>(obj: &'a Value, kind: &str) -> Option<&'a Value> {
    obj.pointer("/metadata/ownerReferences")?
        .as_array()?
        .iter()
        .find(|r| r["kind"] == kind)
}

fn condition(kind: &str, ok: bool, reason: Option<&str>, message: Option<&str>) -> Value {
    let mut c = json!({
        "type": kind,
        "status": if ok { "True" } else { "False" },
        "lastProbeTime": null,
        "lastTransitionTime": now(),
    });
    if let Some(r) = reason {
        c["reason"] = json!(r);
    }
    if let Some(m) = message {
        c["message"] = json!(m);
    }
    c
}

fn pod_conditions(ready: bool, why: Option<(&str, String)>) -> Value {
    let (reason, message) = match &why {
        Some((r, m)) => (Some(*r), Some(m.as_str())),
        None => (None, None),
    };
    json!([
        condition("PodReadyToStartContainers", true, None, None),
        condition("Initialized", true, None, None),
        condition("Ready", ready, reason, message),
        condition("ContainersReady", ready, reason, message),
        condition("PodScheduled", true, None, None),
    ])
}

fn container_id(uid: &str, name: &str) -> String {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    std::hash::Hash::hash(&(uid, name), &mut h);
    let v = std::hash::Hasher::finish(&h);
    format!("containerd://{v:016x}{v:016x}{v:016x}{v:016x}")
}

fn unready_names(pod: &Value) -> String {
    let names: Vec<String> = containers_of(pod)
        .iter()
        .filter_map(|c| c["name"].as_str().map(str::to_string))
        .collect();
    format!("containers with unready status: [{}]", names.join(" "))
}

/// Status while containers are being created (or held by a Sandbox plan, or waiting for a
/// Secret).
fn waiting_status(pod: &Value, reason: &str, message: Option<&str>) -> Value {
    let statuses: Vec<Value> = containers_of(pod)
        .iter()
        .map(|c| {
            let mut waiting = json!({ "reason": reason });
            if let Some(m) = message {
                waiting["message"] = json!(m);
            }
            json!({
                "name": c["name"], "image": c["image"], "imageID": "",
                "state": { "waiting": waiting }, "lastState": {},
                "ready": false, "restartCount": 0, "started": false,
            })
        })
        .collect();
    let mut conditions = pod_conditions(false, Some(("ContainersNotReady", unready_names(pod))));
    conditions[0]["status"] = json!("False");
    json!({
        "phase": "Pending",
        "conditions": conditions,
        "hostIP": "10.0.0.1",
        "hostIPs": [{ "ip": "10.0.0.1" }],
        "startTime": pod.pointer("/status/startTime").cloned().unwrap_or_else(|| json!(now())),
        "containerStatuses": statuses,
        "qosClass": pod.pointer("/status/qosClass").cloned().unwrap_or(json!("BestEffort")),
    })
}

fn pod_ip(uid: &str) -> String {
    let n = uid
        .bytes()
        .fold(0u32, |a, b| a.wrapping_mul(31).wrapping_add(b as u32));
    format!("10.244.{}.{}", (n >> 8) % 250 + 1, n % 250 + 2)
}

fn running_status(pod: &Value, uid: &str, started_at: &str) -> Value {
    let statuses: Vec<Value> = containers_of(pod)
        .iter()
        .map(|c| {
            let name = c["name"].as_str().unwrap_or_default();
            json!({
                "name": name, "image": c["image"],
                "imageID": format!("{}@sha256:{:064x}", c["image"].as_str().unwrap_or_default(), 0),
                "containerID": container_id(uid, name),
                "state": { "running": { "startedAt": started_at } }, "lastState": {},
                "ready": true, "restartCount": 0, "started": true,
            })
        })
        .collect();
    let mut s = waiting_status(pod, "", None);
    s["phase"] = json!("Running");
    s["conditions"] = pod_conditions(true, None);
    s["podIP"] = json!(pod_ip(uid));
    s["podIPs"] = json!([{ "ip": pod_ip(uid) }]);
    s["containerStatuses"] = json!(statuses);
    s
}

/// The pod after its containers ended (`phase` given), with their exit codes.
fn terminated_status(
    pod: &Value,
    uid: &str,
    phase: &str,
    exit_codes: &HashMap<String, i32>,
    reason: Option<(&str, &str)>,
) -> Value {
    let mut s = pod.get("status").cloned().unwrap_or_else(|| json!({}));
    let started = pod
        .pointer("/status/startTime")
        .cloned()
        .unwrap_or_else(|| json!(now()));
    let statuses: Vec<Value> = containers_of(pod)
        .iter()
        .map(|c| {
            let name = c["name"].as_str().unwrap_or_default();
            let code = exit_codes.get(name).copied().unwrap_or(137);
            json!({
                "name": name, "image": c["image"], "imageID": "",
                "containerID": container_id(uid, name),
                "state": { "terminated": {
                    "exitCode": code,
                    "reason": if code == 0 { "Completed" } else { "Error" },
                    "startedAt": started, "finishedAt": now(),
                    "containerID": container_id(uid, name),
                } },
                "lastState": {}, "ready": false, "restartCount": 0, "started": false,
            })
        })
        .collect();
    let restart_always =
        pod.pointer("/spec/restartPolicy").and_then(Value::as_str) == Some("Always");
    let phase = if restart_always && reason.is_none() {
        "Running"
    } else {
        phase
    };
    s["phase"] = json!(phase);
    let why = if phase == "Running" {
        "ContainersNotReady"
    } else {
        "PodCompleted"
    };
    s["conditions"] = pod_conditions(false, Some((why, unready_names(pod))));
    if let Some(c) = s["conditions"].as_array_mut() {
        c[0]["status"] = json!("False");
    }
    s["containerStatuses"] = json!(statuses);
    if let Some((r, m)) = reason {
        s["reason"] = json!(r);
        s["message"] = json!(m);
    }
    s
}

/// Writes the pod's status unless the pod is gone.
fn set_status(app: &App, key: &ObjKey, status: Value) {
    app.store.update::<()>(key, |o| {
        o["status"] = status;
        Ok(())
    });
}

/// The "kubelet" loop of one pod, from Pending to its end.
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
        _ = super::util::raised(&mut stopped) => {}
        _ = super::util::raised(&mut app_stop) => {}
    }
}

fn current(app: &App, key: &ObjKey, uid: &str) -> Option<Value> {
    app.store
        .get(key)
        .filter(|p| meta_str(p, "uid") == Some(uid))
        .filter(|p| p.pointer("/metadata/deletionTimestamp").is_none())
}

async fn drive_pod(app: &Arc<App>, rt: &Arc<PodRuntime>, key: &ObjKey) -> Option<()> {
    let uid = rt.uid.clone();
    let pod = current(app, key, &uid)?;
    set_status(app, key, waiting_status(&pod, "ContainerCreating", None));

    // A Sandbox whose plan is not Ready holds its pod in ContainerCreating.
    if let Some(owner) = owner_of(&pod, "Sandbox") {
        let name = owner["name"].as_str().unwrap_or_default().to_string();
        let mut changed = app.plans_changed.subscribe();
        while app.sandbox_plan(&key.namespace, &name) != SandboxPlan::Ready {
            changed.changed().await.ok()?;
        }
    }
    if !app.sleep(app.settings().pod_ready_delay()).await {
        return None;
    }

    // Resolve every container's environment; a missing Secret keeps the pod waiting.
    let mut config = app.config_changed.subscribe();
    let envs = loop {
        let pod = current(app, key, &uid)?;
        let resolved: Result<Vec<ContainerEnv>, ConfigError> = containers_of(&pod)
            .iter()
            .map(|c| {
                let mut argv = str_list(&c["command"]);
                argv.extend(str_list(&c["args"]));
                Ok(ContainerEnv {
                    name: c["name"].as_str().unwrap_or_default().to_string(),
                    env: resolve_env(app, &key.namespace, &pod, c)?,
                    cwd: c["workingDir"].as_str().unwrap_or("/").to_string(),
                    argv,
                })
            })
            .collect();
        match resolved {
            Ok(envs) => break envs,
            Err(msg) => {
                set_status(
                    app,
                    key,
                    waiting_status(&pod, "CreateContainerConfigError", Some(&msg)),
                );
                config.changed().await.ok()?;
            }
        }
    };

    // The root: system dirs come from the host; /tmp, home and every mount are private.
    let pod = current(app, key, &uid)?;
    let mut dirs: Vec<(String, u32)> = vec![
        ("/tmp".into(), 0o1777),
        ("/root".into(), 0o700),
        ("/workspace".into(), 0o777),
        ("/home".into(), 0o755),
        ("/var/tmp".into(), 0o1777),
        ("/run".into(), 0o755),
    ];
    for c in containers_of(&pod) {
        for m in c["volumeMounts"].as_array().into_iter().flatten() {
            if let Some(p) = m["mountPath"].as_str()
                && !p.starts_with("/usr")
                && !p.starts_with("/etc")
                && p != "/"
            {
                let mode = if p == "/tmp" { 0o1777 } else { 0o777 };
                dirs.push((p.to_string(), mode));
            }
        }
    }
    for c in &envs {
        if let Some((_, home)) = c.env.iter().find(|(k, _)| k == "HOME")
            && home.starts_with('/')
            && !home.starts_with("/usr")
            && !home.starts_with("/etc")
        {
            dirs.push((home.clone(), 0o777));
        }
    }
    let path = app
        .work_dir
        .join("pods")
        .join(format!("{}-{}", key.name, &uid[..8]));
    let bwrap = app.bwrap.clone();
    let root = tokio::task::spawn_blocking(move || {
        // `pods/` exists from start-up; if shutdown already removed it, this fails (no leak).
        let borrowed: Vec<(&str, u32)> = dirs.iter().map(|(d, m)| (d.as_str(), *m)).collect();
        SandboxRoot::create(&bwrap, path, &borrowed)
    })
    .await
    .ok()?;
    let root = match root {
        Ok(r) => r,
        Err(e) => {
            let pod = current(app, key, &uid)?;
            let msg = format!("failed to create the pod's root: {e}");
            set_status(
                app,
                key,
                waiting_status(&pod, "CreateContainerError", Some(&msg)),
            );
            return None;
        }
    };
    if app.shutting_down.load(Ordering::SeqCst) {
        let _ = root.remove();
        return None;
    }
    let _ = rt.root.set(root);
    if let Err(e) = rt.start_namespaces(app, &envs) {
        let pod = current(app, key, &uid)?;
        let msg = format!("failed to start the pod's pid namespaces: {e}");
        set_status(
            app,
            key,
            waiting_status(&pod, "CreateContainerError", Some(&msg)),
        );
        return None;
    }
    let _ = rt.containers.set(envs.clone());
    if rt.is_stopped() {
        return None;
    }

    // Start the containers' commands.
    let started_at = now();
    let started = Instant::now();
    let mut waits = Vec::new();
    if app.opts.run_pod_commands {
        for c in &envs {
            if c.argv.is_empty() {
                continue;
            }
            let argv = effective_argv(app, c.argv.clone());
            match rt.launch(app, c, argv, IoMode::Pipes { stdin: false }) {
                Ok((launched, guard)) => waits.push((c.name.clone(), launched, guard)),
                Err(e) => {
                    rt.append_log(format!("failed to start container {}: {e}\n", c.name).as_bytes())
                }
            }
        }
    }
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

    let run_all = async {
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
            // Nothing to run: the pod idles like `sleep infinity` until it is stopped.
            std::future::pending::<()>().await;
        }
        for h in handles {
            if let Ok((name, code)) = h.await {
                codes.insert(name, code);
            }
        }
        codes
    };
    let outcome = match deadline {
        Some(d) => {
            let remaining = d.saturating_sub(started.elapsed());
            tokio::select! {
                codes = run_all => Ok(codes),
                _ = tokio::time::sleep(remaining) => Err(()),
            }
        }
        None => Ok(run_all.await),
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
    let status = child.wait().await;
    tree.mark_reaped();
    drop(guard);
    match status {
        Ok(s) => ExitInfo::from_bwrap(s, tree.delivered()).shell_code(),
        Err(_) => 137,
    }
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

/// Records the pod as Failed for `(reason, message)`, its containers with no exit codes.
fn set_failed(app: &App, key: &ObjKey, pod: &Value, uid: &str, why: (&str, &str)) {
    let status = terminated_status(pod, uid, "Failed", &HashMap::new(), Some(why));
    set_status(app, key, status);
}
