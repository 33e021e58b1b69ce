//! The Kubernetes API emulator: a real HTTP and HTTPS server on loopback that speaks
//! the subset of the Kubernetes REST and WebSocket protocols the Kubernetes provider uses, so
//! that kube-rs (or `@kubernetes/client-node`) runs unmodified against it through a generated
//! kubeconfig.
//!
//! - discovery (`/version`, `/api`, `/apis`, per-group lists, aggregated discovery), with the
//!   `agents.x-k8s.io` Sandbox group served at the versions chosen per instance;
//! - namespaces, pods, secrets, configmaps, serviceaccounts, resourcequotas, limitranges, jobs,
//!   networkpolicies, roles, rolebindings, ciliumnetworkpolicies and sandboxes (and
//!   selfsubjectaccessreviews, answered from the emulator's authorization), with
//!   resourceVersion/uid/generation, selectors, pagination, watches with bookmarks, and
//!   `Status` errors (401, 403, 404, 409 AlreadyExists/Conflict, 410, 415, 422);
//! - controllers: Sandbox → pod → Ready (or Failed / Terminating on request); Job → pod that
//!   really runs its command → Succeeded / Failed with its exit code; garbage collection;
//!   `activeDeadlineSeconds`;
//! - `pods/exec` over WebSocket (`v5.channel.k8s.io`, `v4.channel.k8s.io`), running commands
//!   for real in each pod's bubblewrap root (see [`crate::sandbox_runner`]);
//! - faults, a request log, live counts and a control API under `/_emulator/`.
//!
//! Start one with [`KubernetesEmulator::start`] or the `kubernetes-emulator` binary.
//!
//! ## Layers
//!
//! The modules form a tree: each imports only modules on the lines above its own (besides
//! [`crate::common`] and [`crate::sandbox_runner`]), and none imports this module, which
//! declares them, starts the servers and holds the handle.
//!
//! 1. `util`, `resources`, `options`, `patch`, `kubeconfig`, `request_log`: helpers, the
//!    resource table and the settings, importing nothing of the emulator but `util`.
//! 2. `status` (`Status` errors), `store` (objects, resourceVersions, events), `route`,
//!    `selectors`, `faults`.
//! 3. `pod_runtime`: a pod's processes and files, keyed by the pod only.
//! 4. `state`: `App`, the state every path shares, holding the pod runtimes.
//! 5. `validation` (the field checks), then `objects` (create, default, update rules),
//!    `deletion` (deletion with propagation, finalizers and namespace termination), `watch`.
//! 6. `kubelet`: runs pods (roots, environments, commands, statuses).
//! 7. `controllers`: garbage collector, Sandbox and Job controllers, fed by the store's events.
//! 8. `exec` (`pods/exec` websockets), `access_review` (SelfSubjectAccessReviews), `rest` (the
//!    REST handlers), `control` (`/_emulator/`).
//! 9. `server`: routing and the accept loops.

mod access_review;
mod control;
mod controllers;
mod deletion;
mod exec;
mod faults;
mod kubeconfig;
mod kubelet;
mod objects;
mod options;
mod patch;
mod pod_runtime;
mod request_log;
mod resources;
mod rest;
mod route;
mod selectors;
mod server;
mod state;
mod status;
mod store;
mod util;
mod validation;
mod watch;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::Value;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

pub use control::{Endpoints, KubeCounts};
pub use exec::exit_status;
pub use faults::{FaultAction, FaultEntry, FaultRule};
pub use options::{KubeEmulatorOptions, SandboxPlan, Settings, SettingsPatch};
pub use request_log::RequestRecord;
pub use state::DenyRule;

use crate::sandbox_runner::{Bwrap, RunnerError};
use state::App;
use store::ObjKey;

/// Why the emulator could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Runner(#[from] RunnerError),
    #[error("kubernetes emulator start-up failed: {0}")]
    Io(#[from] std::io::Error),
    #[error("kubernetes emulator TLS set-up failed: {0}")]
    Tls(String),
}

/// A running emulator. Dropping it (or [`KubernetesEmulator::shutdown`]) kills every pod
/// process and removes every directory it created.
pub struct KubernetesEmulator {
    app: Arc<App>,
    endpoints: Endpoints,
    kubeconfig_path: PathBuf,
    kubeconfig_http_path: PathBuf,
    tasks: Vec<JoinHandle<()>>,
}

fn random_token() -> String {
    format!("emu-{:016x}{:016x}", util::random_u64(), util::random_u64())
}

impl KubernetesEmulator {
    pub async fn start(opts: KubeEmulatorOptions) -> Result<KubernetesEmulator, StartError> {
        let bwrap = tokio::task::spawn_blocking(Bwrap::locate)
            .await
            .map_err(|e| std::io::Error::other(e.to_string()))??;
        let parent = opts.work_dir.clone().unwrap_or_else(std::env::temp_dir);
        let work_dir = tempfile::Builder::new()
            .prefix("kubernetes-emulator-")
            .tempdir_in(parent)?
            .keep();
        std::fs::create_dir(work_dir.join("pods"))?;
        let http = TcpListener::bind(("127.0.0.1", opts.http_port)).await?;
        let http_addr = http.local_addr()?;
        let tls = if opts.tls {
            let material = tokio::task::spawn_blocking(kubeconfig::generate)
                .await
                .map_err(|e| StartError::Tls(e.to_string()))?
                .map_err(StartError::Tls)?;
            let listener = TcpListener::bind(("127.0.0.1", opts.https_port)).await?;
            let addr = listener.local_addr()?;
            Some((material, listener, addr))
        } else {
            None
        };
        let token = opts.token.clone().unwrap_or_else(random_token);
        let (store, controller_rx) = store::Store::new(opts.watch_history);
        let (stop, stop_rx) = tokio::sync::watch::channel(false);
        let primary: SocketAddr = tls.as_ref().map_or(http_addr, |(_, _, a)| *a);
        let app = Arc::new(App {
            settings: Mutex::new(Settings::new(&opts)),
            registry: resources::Registry::new(&opts.sandbox_versions),
            store,
            bwrap,
            token: token.clone(),
            work_dir: work_dir.clone(),
            log: request_log::RequestLog::new(Instant::now(), opts.request_log_limit),
            faults: faults::Faults::default(),
            deny: Mutex::new(Vec::new()),
            pods: Mutex::new(Default::default()),
            live_trees: Arc::new(AtomicUsize::new(0)),
            sandbox_plans: Mutex::new(Default::default()),
            plans_changed: tokio::sync::watch::Sender::new(0),
            config_changed: tokio::sync::watch::Sender::new(0),
            shutting_down: AtomicBool::new(false),
            stop,
            server_address: Mutex::new(primary.to_string()),
            opts,
        });
        let mut tasks = vec![tokio::spawn(controllers::run(app.clone(), controller_rx))];
        app.create_initial_namespaces();

        let http_url = format!("http://{http_addr}");
        let https_url = tls.as_ref().map(|(_, _, a)| format!("https://{a}"));
        let ca_pem = tls.as_ref().map(|(m, _, _)| m.ca_pem.clone());
        let url = https_url.clone().unwrap_or_else(|| http_url.clone());
        let kubeconfig = kubeconfig::kubeconfig_yaml(&url, &token, ca_pem.as_deref(), "default");
        let kubeconfig_http = kubeconfig::kubeconfig_yaml(&http_url, &token, None, "default");
        let kubeconfig_path = work_dir.join("kubeconfig.yaml");
        let kubeconfig_http_path = work_dir.join("kubeconfig-http.yaml");
        std::fs::write(&kubeconfig_path, &kubeconfig)?;
        std::fs::write(&kubeconfig_http_path, &kubeconfig_http)?;
        let endpoints = Endpoints {
            url,
            http_url,
            https_url,
            token,
            kubeconfig,
            kubeconfig_http,
            ca_pem,
        };
        let shared = Arc::new(Mutex::new(Some(endpoints.clone())));
        let control = control::router(app.clone(), shared);
        tasks.push(tokio::spawn(server::serve(
            http,
            None,
            app.clone(),
            control.clone(),
            stop_rx.clone(),
        )));
        if let Some((material, listener, _)) = tls {
            tasks.push(tokio::spawn(server::serve(
                listener,
                Some(material.acceptor),
                app.clone(),
                control,
                stop_rx,
            )));
        }
        Ok(KubernetesEmulator {
            app,
            endpoints,
            kubeconfig_path,
            kubeconfig_http_path,
            tasks,
        })
    }

    /// The URL the kubeconfig points at: HTTPS when TLS is on, else HTTP.
    pub fn url(&self) -> &str {
        &self.endpoints.url
    }

    pub fn http_url(&self) -> &str {
        &self.endpoints.http_url
    }

    pub fn https_url(&self) -> Option<&str> {
        self.endpoints.https_url.as_deref()
    }

    /// `http://127.0.0.1:PORT/_emulator`.
    pub fn control_url(&self) -> String {
        format!("{}/_emulator", self.endpoints.http_url)
    }

    pub fn token(&self) -> &str {
        &self.endpoints.token
    }

    /// The CA that signed the HTTPS certificate (PEM), when TLS is on.
    pub fn ca_pem(&self) -> Option<&str> {
        self.endpoints.ca_pem.as_deref()
    }

    /// Kubeconfig for [`Self::url`] (with the CA for HTTPS) and its file.
    pub fn kubeconfig_yaml(&self) -> &str {
        &self.endpoints.kubeconfig
    }

    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig_path
    }

    /// Kubeconfig for the plain-HTTP listener and its file.
    pub fn kubeconfig_http_yaml(&self) -> &str {
        &self.endpoints.kubeconfig_http
    }

    pub fn kubeconfig_http_path(&self) -> &Path {
        &self.kubeconfig_http_path
    }

    pub fn endpoints(&self) -> &Endpoints {
        &self.endpoints
    }

    /// Every logged API request so far (oldest first).
    pub fn request_log(&self) -> Vec<RequestRecord> {
        self.app.log.snapshot(0)
    }

    pub fn clear_request_log(&self) {
        self.app.log.clear();
    }

    pub fn counts(&self) -> KubeCounts {
        self.app.counts()
    }

    pub fn add_fault(&self, rule: FaultRule) -> u64 {
        self.app.faults.add(rule)
    }

    pub fn remove_fault(&self, id: u64) -> bool {
        self.app.faults.remove(id)
    }

    pub fn faults(&self) -> Vec<FaultEntry> {
        self.app.faults.list()
    }

    pub fn clear_faults(&self) {
        self.app.faults.clear();
    }

    /// Forbids matching requests (403 with the API server's message).
    pub fn deny(&self, rule: DenyRule) {
        self.app.deny.lock().unwrap().push(rule);
    }

    pub fn clear_deny(&self) {
        self.app.deny.lock().unwrap().clear();
    }

    pub fn settings(&self) -> Settings {
        self.app.settings()
    }

    pub fn update_settings(&self, patch: SettingsPatch) -> Settings {
        self.app.settings.lock().unwrap().apply(patch);
        self.app.plans_changed.send_modify(|v| *v += 1);
        self.app.settings()
    }

    /// What Sandboxes created from now on do (`Never` = refuse to become Ready).
    pub fn set_default_sandbox_plan(&self, plan: SandboxPlan) {
        self.update_settings(SettingsPatch {
            sandbox_plan: Some(plan),
            ..Default::default()
        });
    }

    /// Drives an existing Sandbox (Failed / Terminating at once; Never / Ready for its pod).
    /// `false` if there is no such Sandbox.
    pub fn set_sandbox_plan(&self, namespace: &str, name: &str, plan: SandboxPlan) -> bool {
        controllers::apply_sandbox_plan(&self.app, namespace, name, &plan)
    }

    /// Marks a pod Failed with `reason` and kills its processes. `false` if there is no such pod.
    pub fn fail_pod(&self, namespace: &str, name: &str, reason: &str, message: &str) -> bool {
        let key = ObjKey::pod(namespace, name);
        if self.app.store.get(&key).is_none() {
            return false;
        }
        kubelet::fail_pod(&self.app, &key, reason, message);
        true
    }

    /// A stored object as the store holds it (`group` is `""` for the core group).
    pub fn object(&self, group: &str, plural: &str, namespace: &str, name: &str) -> Option<Value> {
        self.app
            .store
            .get(&ObjKey::new(group, plural, namespace, name))
    }

    /// The host directory that is `/` of a running pod (white-box assertions).
    pub fn pod_root(&self, namespace: &str, name: &str) -> Option<PathBuf> {
        let pod = self.app.store.get(&ObjKey::pod(namespace, name))?;
        let uid = store::meta_str(&pod, "uid")?;
        self.app.pod_runtime(uid)?.root_path()
    }

    /// The emulator's private directory (removed on shutdown).
    pub fn work_dir(&self) -> &Path {
        &self.app.work_dir
    }

    /// Deletes every object and process and clears the log, faults and settings; keeps serving.
    pub fn reset(&self) {
        self.app.reset();
    }

    /// Stops serving, kills every pod process and removes every directory.
    pub async fn shutdown(mut self) {
        let _ = self.app.stop.send(true);
        for t in self.tasks.drain(..) {
            let _ = t.await;
        }
        let app = self.app.clone();
        let _ = tokio::task::spawn_blocking(move || app.teardown()).await;
    }
}

impl Drop for KubernetesEmulator {
    fn drop(&mut self) {
        let _ = self.app.stop.send(true);
        for t in self.tasks.drain(..) {
            t.abort();
        }
        self.app.teardown();
    }
}
