//! Start-up options, and the settings tests may change while the emulator runs.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// What a new Sandbox does once its pod is up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(
    tag = "state",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum SandboxPlan {
    /// Its pod starts after the ready delay and the Sandbox becomes Ready.
    #[default]
    Ready,
    /// It never becomes Ready: its pod stays Pending (ContainerCreating) until the plan changes.
    Never,
    /// It fails: the Sandbox reports `Failed` with this reason and message.
    Failed {
        #[serde(default = "default_fail_reason")]
        reason: String,
        #[serde(default)]
        message: String,
    },
    /// It is being torn down: `phase: Terminating`, a `deletionTimestamp`, Ready=False.
    Terminating,
}

fn default_fail_reason() -> String {
    "SandboxFailed".into()
}

/// How a [`super::KubernetesEmulator`] starts.
#[derive(Debug, Clone)]
pub struct KubeEmulatorOptions {
    /// The bearer token the kubeconfig carries; random when `None`.
    pub token: Option<String>,
    /// Tokens that authenticate but may do nothing (every request answers 403).
    pub forbidden_tokens: Vec<String>,
    /// The user name in 403 messages.
    pub user: String,
    /// Also serve HTTPS (self-signed CA in the kubeconfig). The kubeconfig then points there.
    pub tls: bool,
    /// Loopback ports; 0 picks free ones.
    pub http_port: u16,
    pub https_port: u16,
    /// Served versions of `agents.x-k8s.io` Sandboxes, preferred first (`v1alpha1`, `v1beta1`
    /// or both). Empty: the group is not installed (discovery finds no Sandbox API).
    pub sandbox_versions: Vec<String>,
    /// Whether Sandbox status carries `phase` (agent-sandbox before v1beta1) besides conditions.
    pub sandbox_phase: bool,
    /// Whether Sandbox status carries `podName`.
    pub sandbox_pod_name: bool,
    /// Name Sandbox pods `<sandbox>-<suffix>` instead of after the Sandbox (so a client must
    /// find them by the `agents.x-k8s.io/sandbox-name` label).
    pub sandbox_pod_suffix: bool,
    /// How long a pod stays Pending before it runs (and its Sandbox becomes Ready).
    pub pod_ready_delay: Duration,
    /// How long a deleted pod stays Terminating (with a `deletionTimestamp`) before it is gone.
    pub pod_termination_delay: Duration,
    /// How long one second of `activeDeadlineSeconds` / `ttlSecondsAfterFinished` lasts.
    pub deadline_second: Duration,
    /// Delay before a failed Job pod is replaced (within `backoffLimit`).
    pub job_retry_delay: Duration,
    /// Interval of BOOKMARK events on watches that allow them.
    pub bookmark_interval: Duration,
    /// Events remembered for watches that resume from a resourceVersion.
    pub watch_history: usize,
    /// Run pods' container commands for real (Job workloads; a Sandbox's `sleep`).
    pub run_pod_commands: bool,
    /// Replaces a container's `argv[0]` (e.g. `/usr/local/bin/paperclip-agent-shim`) by an
    /// argv prefix that exists on this machine. `tini --` prefixes are always unwrapped.
    pub command_overrides: BTreeMap<String, Vec<String>>,
    /// Exec subprotocols served, in the server's order of preference.
    pub exec_protocols: Vec<String>,
    /// Namespaces that exist from the start.
    pub namespaces: Vec<String>,
    /// Requests kept in the request log.
    pub request_log_limit: usize,
    pub max_request_body_bytes: usize,
    /// Bytes of container output kept per pod for `pods/log`.
    pub pod_log_limit: usize,
    /// Parent of the emulator's private directory (pod roots, kubeconfigs).
    pub work_dir: Option<PathBuf>,
}

impl Default for KubeEmulatorOptions {
    fn default() -> Self {
        KubeEmulatorOptions {
            token: None,
            forbidden_tokens: Vec::new(),
            user: "system:serviceaccount:paperclip:paperclip-plugin".into(),
            tls: true,
            http_port: 0,
            https_port: 0,
            sandbox_versions: vec!["v1alpha1".into()],
            sandbox_phase: true,
            sandbox_pod_name: false,
            sandbox_pod_suffix: false,
            pod_ready_delay: Duration::from_millis(300),
            pod_termination_delay: Duration::ZERO,
            deadline_second: Duration::from_secs(1),
            job_retry_delay: Duration::from_millis(100),
            bookmark_interval: Duration::from_secs(1),
            watch_history: 10_000,
            run_pod_commands: true,
            command_overrides: BTreeMap::new(),
            exec_protocols: vec!["v5.channel.k8s.io".into(), "v4.channel.k8s.io".into()],
            namespaces: vec!["default".into(), "kube-system".into()],
            request_log_limit: 10_000,
            max_request_body_bytes: 16 * 1024 * 1024,
            pod_log_limit: 4 * 1024 * 1024,
            work_dir: None,
        }
    }
}

impl KubeEmulatorOptions {
    /// Millisecond delays and a 20 ms deadline second, for fast tests.
    pub fn for_tests() -> Self {
        KubeEmulatorOptions {
            pod_ready_delay: Duration::from_millis(5),
            deadline_second: Duration::from_millis(20),
            job_retry_delay: Duration::from_millis(5),
            bookmark_interval: Duration::from_millis(200),
            ..Self::default()
        }
    }
}

/// Settings that may change at run time (handle or control API).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Settings {
    pub pod_ready_delay_ms: u64,
    pub pod_termination_delay_ms: u64,
    pub deadline_second_ms: u64,
    pub job_retry_delay_ms: u64,
    pub bookmark_interval_ms: u64,
    /// What new Sandboxes do.
    pub sandbox_plan: SandboxPlan,
    pub exec_protocols: Vec<String>,
    pub command_overrides: BTreeMap<String, Vec<String>>,
}

impl Settings {
    pub fn new(o: &KubeEmulatorOptions) -> Self {
        let ms = |d: Duration| d.as_millis() as u64;
        Settings {
            pod_ready_delay_ms: ms(o.pod_ready_delay),
            pod_termination_delay_ms: ms(o.pod_termination_delay),
            deadline_second_ms: ms(o.deadline_second).max(1),
            job_retry_delay_ms: ms(o.job_retry_delay),
            bookmark_interval_ms: ms(o.bookmark_interval).max(1),
            sandbox_plan: SandboxPlan::Ready,
            exec_protocols: o.exec_protocols.clone(),
            command_overrides: o.command_overrides.clone(),
        }
    }

    pub fn pod_ready_delay(&self) -> Duration {
        Duration::from_millis(self.pod_ready_delay_ms)
    }
    pub fn pod_termination_delay(&self) -> Duration {
        Duration::from_millis(self.pod_termination_delay_ms)
    }
    /// `seconds` of API time (deadlines, TTLs) in real time.
    pub fn api_seconds(&self, seconds: f64) -> Duration {
        Duration::from_secs_f64((seconds.max(0.0) * self.deadline_second_ms as f64) / 1000.0)
    }
    pub fn job_retry_delay(&self) -> Duration {
        Duration::from_millis(self.job_retry_delay_ms)
    }
    pub fn bookmark_interval(&self) -> Duration {
        Duration::from_millis(self.bookmark_interval_ms.max(1))
    }
}

/// A partial [`Settings`] (control API `PATCH /_emulator/settings`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SettingsPatch {
    pub pod_ready_delay_ms: Option<u64>,
    pub pod_termination_delay_ms: Option<u64>,
    pub deadline_second_ms: Option<u64>,
    pub job_retry_delay_ms: Option<u64>,
    pub bookmark_interval_ms: Option<u64>,
    pub sandbox_plan: Option<SandboxPlan>,
    pub exec_protocols: Option<Vec<String>>,
    pub command_overrides: Option<BTreeMap<String, Vec<String>>>,
}

impl Settings {
    pub fn apply(&mut self, p: SettingsPatch) {
        if let Some(v) = p.pod_ready_delay_ms {
            self.pod_ready_delay_ms = v;
        }
        if let Some(v) = p.pod_termination_delay_ms {
            self.pod_termination_delay_ms = v;
        }
        if let Some(v) = p.deadline_second_ms {
            self.deadline_second_ms = v.max(1);
        }
        if let Some(v) = p.job_retry_delay_ms {
            self.job_retry_delay_ms = v;
        }
        if let Some(v) = p.bookmark_interval_ms {
            self.bookmark_interval_ms = v.max(1);
        }
        if let Some(v) = p.sandbox_plan {
            self.sandbox_plan = v;
        }
        if let Some(v) = p.exec_protocols {
            self.exec_protocols = v;
        }
        if let Some(v) = p.command_overrides {
            self.command_overrides = v;
        }
    }
}
