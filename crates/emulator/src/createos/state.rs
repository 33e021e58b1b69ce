//! Shared emulator state: the sandbox registry and what every handler needs.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use serde_json::Value;

use super::envelope::ApiError;
use super::faults::Faults;
use super::lifecycle::{Lifecycle, Status};
use super::options::{EmulatorOptions, Settings};
use super::process::ManagedProcess;
use super::request_log::RequestLog;
use super::tombstones::{Tombstone, Tombstones};
use super::users::{User, Users};
use crate::common::util::random_u64;
use crate::sandbox_runner::{Bwrap, IoMode, LaunchSpec, Launched, ProcessTree, SandboxRoot};

/// The workspace the provider uses; present from creation like on the service's images.
pub const WORKSPACE: &str = "/paperclip-workspace";

/// Everything the HTTP handlers share.
pub struct App {
    pub opts: EmulatorOptions,
    pub settings: Settings,
    pub users: Users,
    pub bwrap: Bwrap,
    /// Private temp directory; every sandbox root lives inside and it is removed on shutdown.
    pub work_dir: PathBuf,
    /// Live sandboxes (not destroyed through the API), every user's.
    pub sandboxes: Mutex<BTreeMap<String, Arc<Sandbox>>>,
    pub tombstones: Tombstones,
    /// Next creation sequence number (list order).
    pub next_seq: AtomicU64,
    /// Sandboxed process trees not yet reaped (managed processes, execs, file transfers).
    pub live_trees: LiveTrees,
    pub log: RequestLog,
    pub faults: Faults,
    pub shutting_down: AtomicBool,
}

impl App {
    /// Any user's live sandbox: for the control API and the Rust handle only.
    pub fn sandbox(&self, id: &str) -> Result<Arc<Sandbox>, ApiError> {
        self.sandboxes
            .lock()
            .unwrap()
            .get(id)
            .cloned()
            .ok_or_else(|| ApiError::not_found("sandbox"))
    }

    /// `user`'s live sandbox: what every API handler works on. Another user's sandbox and a
    /// destroyed one are both 404 (`GET` and `DELETE` consult the tombstones themselves).
    pub fn owned(&self, user: User, id: &str) -> Result<Arc<Sandbox>, ApiError> {
        self.sandbox(id)
            .ok()
            .filter(|sb| sb.owner == user)
            .ok_or_else(|| ApiError::not_found("sandbox"))
    }

    /// `user`'s sandbox, which must be `running` for commands and file transfers (409
    /// otherwise).
    pub fn running_sandbox(&self, user: User, id: &str) -> Result<Arc<Sandbox>, ApiError> {
        let sb = self.owned(user, id)?;
        let status = sb.status();
        if status != Status::Running {
            return Err(ApiError::conflict(
                "sandbox_not_running",
                format!("sandbox is {}", status.as_str()),
            ));
        }
        Ok(sb)
    }

    /// Kills every process tree of `sb` and deletes its root. Blocking (briefly): the root
    /// is removed only once the killed processes are gone, or a dying process could recreate
    /// a file behind `remove_dir_all`.
    pub fn destroy(&self, sb: &Sandbox) {
        sb.info.lock().unwrap().lifecycle.force(Status::Destroyed);
        let trees = sb.trees();
        for tree in &trees {
            tree.kill();
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        while !trees.iter().all(|t| t.is_dead()) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        if sb.root.remove().is_err() {
            let _ = sb.root.remove();
        }
    }

    /// Destroys `user`'s live sandbox `id` through the API: it leaves the live set (counts, the
    /// control API's list) and its last view stays behind as a tombstone. False when `user` has
    /// no such live sandbox (a concurrent delete took it first). Blocking, like `destroy`.
    pub fn bury(&self, user: User, id: &str) -> bool {
        let taken = {
            let mut all = self.sandboxes.lock().unwrap();
            match all.get(id) {
                Some(sb) if sb.owner == user => all.remove(id),
                _ => None,
            }
        };
        let Some(sb) = taken else {
            return false;
        };
        // Tombstone first: a GET racing the kill already sees `destroyed`, never a 404.
        self.tombstones.push(Tombstone {
            id: sb.id.clone(),
            owner: sb.owner,
            seq: sb.seq,
            view: sb.destroyed_view(SystemTime::now()),
        });
        self.destroy(&sb);
        true
    }

    /// Registers a new sandbox of `user` under `name` (a generated one when `None`), unless
    /// `user` already has a live sandbox of that name: names are unique per user among live
    /// sandboxes. Checked and inserted under one lock, so two racing creates cannot both win.
    pub fn register(
        &self,
        user: User,
        id: String,
        root: SandboxRoot,
        mut info: SandboxInfo,
        name: Option<String>,
    ) -> Result<Arc<Sandbox>, (SandboxRoot, ApiError)> {
        let mut all = self.sandboxes.lock().unwrap();
        let taken = |n: &str| {
            all.values()
                .any(|sb| sb.owner == user && sb.info.lock().unwrap().name == n)
        };
        info.name = match name {
            Some(n) if taken(&n) => {
                let err = ApiError::conflict(
                    "name_taken",
                    format!("a live sandbox named {n:?} already exists"),
                );
                return Err((root, err));
            }
            Some(n) => n,
            None => loop {
                let n = format!("sandbox-{:08x}", random_u64() as u32);
                if !taken(&n) {
                    break n;
                }
            },
        };
        let sb = Arc::new(Sandbox::new(id.clone(), user, self.seq(), root, info));
        all.insert(id, sb.clone());
        Ok(sb)
    }

    /// The next creation sequence number.
    pub fn seq(&self) -> u64 {
        self.next_seq.fetch_add(1, Ordering::Relaxed)
    }

    /// Synchronous teardown used by shutdown and `Drop`: nothing may outlive the emulator.
    pub fn teardown(&self) {
        self.shutting_down.store(true, Ordering::SeqCst);
        let all: Vec<Arc<Sandbox>> = std::mem::take(&mut *self.sandboxes.lock().unwrap())
            .into_values()
            .collect();
        for sb in &all {
            self.destroy(sb);
        }
        let _ = std::fs::remove_dir_all(&self.work_dir);
    }

    /// Starts a command in `sb` and registers its tree for pause/kill and leak accounting.
    pub fn launch(
        &self,
        sb: &Arc<Sandbox>,
        argv: Vec<String>,
        cwd: Option<&str>,
        env: &[(String, String)],
        io: IoMode,
    ) -> Result<(Launched, TreeGuard), ApiError> {
        let cwd = match cwd {
            Some(c) => {
                if !c.starts_with('/') || c.contains('\0') {
                    return Err(ApiError::bad_request("cwd must be an absolute path"));
                }
                // System directories come from the host; everything else lives in the root.
                let system = c == "/" || c.starts_with("/usr") || c.starts_with("/etc");
                if !(sb.root.host_path(c).is_dir() || (system && PathBuf::from(c).is_dir())) {
                    return Err(ApiError::bad_request("cwd does not exist in the sandbox"));
                }
                c
            }
            None => WORKSPACE,
        };
        let mut full_env = sb.base_env(matches!(io, IoMode::Pty { .. }));
        for (k, v) in env {
            full_env.retain(|(key, _)| key != k);
            full_env.push((k.clone(), v.clone()));
        }
        let launched = self
            .bwrap
            .launch(LaunchSpec {
                root: sb.root.path(),
                hostname: &sb.id,
                cwd,
                env: full_env,
                argv,
                io,
            })
            .map_err(|e| ApiError::internal(format!("failed to start sandbox process: {e}")))?;
        let guard = TreeGuard::register(sb, launched.tree.clone(), self.live_trees.clone());
        Ok((launched, guard))
    }
}

/// Every registered process tree of the emulator, for leak accounting.
#[derive(Clone, Default)]
pub struct LiveTrees(Arc<Mutex<HashMap<u64, Arc<ProcessTree>>>>);

impl LiveTrees {
    /// Trees with a process still alive. A killed tree stops counting as soon as its processes
    /// are gone, not when the task that follows it gets round to reaping it: a test that has
    /// just deleted a sandbox must see zero, not a tree in the middle of being collected.
    pub fn alive(&self) -> usize {
        self.0
            .lock()
            .unwrap()
            .values()
            .filter(|tree| !tree.is_dead())
            .count()
    }
}

/// Registration of one live tree; dropped after the tree has been reaped.
pub struct TreeGuard {
    sandbox: Arc<Sandbox>,
    key: u64,
    live: LiveTrees,
}

impl TreeGuard {
    fn register(sb: &Arc<Sandbox>, tree: Arc<ProcessTree>, live: LiveTrees) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let key = NEXT.fetch_add(1, Ordering::Relaxed);
        if sb.status().frozen() {
            tree.freeze(true);
        }
        sb.trees.lock().unwrap().insert(key, tree.clone());
        // A launch can race a delete: `destroy` marks the sandbox destroyed before it takes its
        // snapshot of the trees, so a tree inserted after that snapshot sees the mark here and
        // is killed instead of outliving its sandbox.
        if sb.status() == Status::Destroyed {
            tree.kill();
        }
        live.0.lock().unwrap().insert(key, tree);
        TreeGuard {
            sandbox: sb.clone(),
            key,
            live,
        }
    }
}

impl Drop for TreeGuard {
    fn drop(&mut self) {
        self.sandbox.trees.lock().unwrap().remove(&self.key);
        self.live.0.lock().unwrap().remove(&self.key);
    }
}

/// Mutable description of a sandbox, as returned by `GET /sandboxes/{id}` (see `view`).
#[derive(Debug)]
pub struct SandboxInfo {
    pub lifecycle: Lifecycle,
    /// User-facing name, unique per user among live sandboxes.
    pub name: String,
    pub shape: String,
    pub rootfs: String,
    pub region: Option<String>,
    pub disk_mib: u64,
    pub egress: Vec<String>,
    pub auto_pause_after_seconds: Option<u64>,
    pub ingress_enabled: bool,
    /// `envs` of the create (or fork): in every command's environment; per-command overrides
    /// (managed processes) may only use these keys.
    pub envs: Vec<(String, String)>,
    pub ssh_pubkeys: Vec<String>,
    /// -1 = unmetered.
    pub bandwidth_quota_bytes: i64,
    pub spawn_ms: u64,
    pub created_at: SystemTime,
    pub forked_from: Option<String>,
}

pub struct Sandbox {
    pub id: String,
    pub owner: User,
    /// Creation order (lists answer in this order).
    pub seq: u64,
    pub root: SandboxRoot,
    pub info: Mutex<SandboxInfo>,
    pub processes: Mutex<BTreeMap<String, Arc<ManagedProcess>>>,
    /// Every running tree (managed or not), for freezing on pause and killing on delete.
    pub trees: Mutex<HashMap<u64, Arc<ProcessTree>>>,
}

impl Sandbox {
    pub fn new(id: String, owner: User, seq: u64, root: SandboxRoot, info: SandboxInfo) -> Self {
        Sandbox {
            id,
            owner,
            seq,
            root,
            info: Mutex::new(info),
            processes: Mutex::new(BTreeMap::new()),
            trees: Mutex::new(HashMap::new()),
        }
    }

    pub fn status(&self) -> Status {
        self.info.lock().unwrap().lifecycle.current()
    }

    pub fn trees(&self) -> Vec<Arc<ProcessTree>> {
        self.trees.lock().unwrap().values().cloned().collect()
    }

    /// Freezes or thaws every process (pause/resume of the "VM").
    pub fn freeze(&self, frozen: bool) {
        for tree in self.trees() {
            tree.freeze(frozen);
        }
    }

    fn base_env(&self, pty: bool) -> Vec<(String, String)> {
        let mut env: Vec<(String, String)> = [
            (
                "PATH",
                "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            ),
            ("HOME", "/root"),
            ("USER", "root"),
            ("LOGNAME", "root"),
            ("LANG", "C.UTF-8"),
            ("HOSTNAME", &self.id),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        if pty {
            env.push(("TERM".into(), "xterm-256color".into()));
        }
        env.extend(self.info.lock().unwrap().envs.iter().cloned());
        env
    }

    /// Per-command variables must have been declared when the sandbox was created (the
    /// service rejects others with 400; the provider therefore never sends `env`).
    pub fn check_env_overrides(
        &self,
        env: Option<&Value>,
    ) -> Result<Vec<(String, String)>, ApiError> {
        let Some(env) = env else {
            return Ok(Vec::new());
        };
        let Value::Object(map) = env else {
            return Err(ApiError::bad_request("env must be an object of strings"));
        };
        let info = self.info.lock().unwrap();
        let mut out = Vec::new();
        for (k, v) in map {
            let Value::String(v) = v else {
                return Err(ApiError::bad_request("env must be an object of strings"));
            };
            if !info.envs.iter().any(|(key, _)| key == k) {
                return Err(ApiError::bad_request(format!(
                    "env key {k} was not declared when the sandbox was created"
                )));
            }
            out.push((k.clone(), v.clone()));
        }
        Ok(out)
    }
}
