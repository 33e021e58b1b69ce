//! A pod's processes and files, as the kubelet holds them: its private root, its containers'
//! resolved contexts, one pid namespace per container, every live process tree, and the pod
//! log. The kubelet fills it in; `pods/exec`, `pods/log`, the controllers and shutdown reach it
//! through `App::pod_runtime`. It knows nothing of the API objects beyond the pod's key, so the
//! shared state can hold it without importing the kubelet.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use tokio::sync::watch;

use super::store::ObjKey;
use crate::sandbox_runner::{
    Bwrap, IoMode, LaunchSpec, Launched, PidNamespace, ProcessTree, SandboxRoot,
};

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
    pub fn start_namespaces(
        &self,
        bwrap: &Bwrap,
        containers: &[ContainerEnv],
    ) -> std::io::Result<()> {
        let root = self
            .root
            .get()
            .ok_or_else(|| std::io::Error::other("pod is not running"))?;
        for c in containers {
            let path_only: Vec<(String, String)> =
                c.env.iter().filter(|(k, _)| k == "PATH").cloned().collect();
            let ns = bwrap.spawn_pid_namespace(root.path(), &self.key.name, &path_only)?;
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

    /// Gives the pod its root (once: the kubelet made it).
    pub fn set_root(&self, root: SandboxRoot) {
        let _ = self.root.set(root);
    }

    /// Records the containers' resolved contexts (once, before the pod is reported running).
    pub fn set_containers(&self, containers: Vec<ContainerEnv>) {
        let _ = self.containers.set(containers);
    }

    /// Appends container output to the pod log, keeping its last `log_limit` bytes.
    pub fn append_log(&self, data: &[u8]) {
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
        bwrap: &Bwrap,
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
            bwrap.launch_in(spec, Some(ns.fd()))?
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
