//! Start-up options and the few settings tests may change while the emulator runs.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::page::MAX_LIMIT;

/// The shape catalog the provider's manifest offers (the emulator rejects any other shape).
pub const SHAPES: &[&str] = &[
    "s-1vcpu-256mb",
    "s-0.25vcpu-512mb",
    "s-0.5vcpu-1gb",
    "s-1vcpu-1gb",
    "s-1vcpu-2gb",
    "s-2vcpu-2gb",
    "s-2vcpu-4gb",
    "s-4vcpu-4gb",
    "s-4vcpu-8gb",
    "s-8vcpu-8gb",
    "s-8vcpu-16gb",
];

/// How to start a [`super::CreateOsEmulator`]. Limits mirror the service's (request bodies,
/// output frames, replay journals): a client that behaves within them against the emulator
/// behaves within them in production.
#[derive(Debug, Clone)]
pub struct EmulatorOptions {
    /// Accepted `X-Api-Key` of the primary user; a random one when `None`.
    pub api_key: Option<String>,
    /// Keys of further users, one user per key: each sees only its own sandboxes (another
    /// user's sandbox is 404 to it, as on the real server).
    pub other_api_keys: Vec<String>,
    /// Destroyed sandboxes kept visible (`GET` answers them with status `destroyed`); the
    /// oldest is forgotten first.
    pub tombstone_limit: usize,
    /// How long `creating`, `forking`, `pausing` and `resuming` last.
    pub transition_delay: Duration,
    /// Interval of heartbeat frames on idle streams.
    pub heartbeat_interval: Duration,
    /// Output kept per managed process for `connect?after=N` replay; older output is evicted.
    pub journal_limit_bytes: usize,
    /// Largest request body accepted (413 beyond).
    pub max_request_body_bytes: usize,
    /// Largest read turned into one output frame (stream text or journal entry).
    pub frame_bytes: usize,
    /// Largest decoded `data_base64` accepted by one process `input` call (413 beyond).
    pub max_input_bytes: usize,
    /// Per-stream cap on the stdout/stderr returned by a one-shot `/exec`.
    pub one_shot_output_limit: usize,
    /// Requests kept in the request log (oldest dropped first).
    pub request_log_limit: usize,
    /// Running managed processes allowed per sandbox (429 beyond).
    pub max_processes_per_sandbox: usize,
    /// Root filesystems the catalog offers; all run on the host's system directories.
    pub rootfs_catalog: Vec<String>,
    pub default_rootfs: String,
    pub shapes: Vec<String>,
    /// Loopback port; 0 picks a free one.
    pub port: u16,
    /// Parent of the emulator's private temp directory (sandbox roots live inside it).
    pub work_dir: Option<PathBuf>,
}

impl Default for EmulatorOptions {
    fn default() -> Self {
        EmulatorOptions {
            api_key: None,
            other_api_keys: Vec::new(),
            tombstone_limit: 1000,
            transition_delay: Duration::from_millis(200),
            heartbeat_interval: Duration::from_secs(5),
            journal_limit_bytes: 8 * 1024 * 1024,
            max_request_body_bytes: 64 * 1024 * 1024,
            frame_bytes: 16 * 1024,
            max_input_bytes: 256 * 1024,
            one_shot_output_limit: 4 * 1024 * 1024,
            request_log_limit: 10_000,
            max_processes_per_sandbox: 64,
            rootfs_catalog: vec!["devbox:1".into(), "debian:12".into(), "ubuntu:24.04".into()],
            default_rootfs: "devbox:1".into(),
            shapes: SHAPES.iter().map(|s| s.to_string()).collect(),
            port: 0,
            work_dir: None,
        }
    }
}

impl EmulatorOptions {
    /// Fast transitions for tests (still observable as transitional states).
    pub fn for_tests() -> Self {
        EmulatorOptions {
            transition_delay: Duration::from_millis(5),
            heartbeat_interval: Duration::from_millis(500),
            ..Self::default()
        }
    }
}

/// Settings that may change at run time (through the handle or the control API).
#[derive(Debug)]
pub struct Settings {
    transition_ms: AtomicU64,
    heartbeat_ms: AtomicU64,
    max_page_size: AtomicU64,
}

impl Settings {
    pub fn new(opts: &EmulatorOptions) -> Self {
        Settings {
            transition_ms: AtomicU64::new(opts.transition_delay.as_millis() as u64),
            heartbeat_ms: AtomicU64::new(opts.heartbeat_interval.as_millis().max(1) as u64),
            max_page_size: AtomicU64::new(MAX_LIMIT as u64),
        }
    }
    /// The largest page a list answers: the server's 500, unless a test lowers it to page
    /// through a list without making hundreds of sandboxes. A larger `limit` is clamped to it,
    /// as the server clamps to 500.
    pub fn max_page_size(&self) -> usize {
        self.max_page_size.load(Ordering::Relaxed) as usize
    }
    pub fn set_max_page_size(&self, n: usize) {
        self.max_page_size
            .store(n.clamp(1, MAX_LIMIT) as u64, Ordering::Relaxed);
    }
    pub fn transition_delay(&self) -> Duration {
        Duration::from_millis(self.transition_ms.load(Ordering::Relaxed))
    }
    pub fn set_transition_delay(&self, d: Duration) {
        self.transition_ms
            .store(d.as_millis() as u64, Ordering::Relaxed);
    }
    pub fn heartbeat_interval(&self) -> Duration {
        Duration::from_millis(self.heartbeat_ms.load(Ordering::Relaxed))
    }
    pub fn set_heartbeat_interval(&self, d: Duration) {
        self.heartbeat_ms
            .store(d.as_millis().max(1) as u64, Ordering::Relaxed);
    }
}
