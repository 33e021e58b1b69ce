//! The CreateOS API emulator: a real HTTP server on loopback whose sandboxes run real
//! processes (see [`crate::sandbox_runner`]). Start it with [`CreateOsEmulator::start`] or the
//! `createos-emulator` binary; drive faults and read the request log through the handle or
//! the `/_emulator/…` control API.

mod body_fields;
mod catalog;
mod command;
mod control;
mod envelope;
mod exec;
mod faults;
mod files;
mod journal;
mod lifecycle;
mod ndjson;
mod options;
mod page;
mod process;
mod process_api;
mod pump;
mod request_log;
mod request_types;
mod sandbox_api;
mod server;
mod state;
mod stream_faults;
mod tombstones;
mod users;
mod util;
mod view;

use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::Router;
use axum::routing::{get, post, put};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub use control::EmulatorCounts;
pub use faults::{FaultAction, FaultEntry, FaultRule};
pub use lifecycle::Status;
pub use options::{EmulatorOptions, SHAPES, Settings};
pub use request_log::RequestRecord;

use crate::sandbox_runner::{Bwrap, RunnerError};
use state::App;

/// Why the emulator could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Runner(#[from] RunnerError),
    #[error("emulator start-up failed: {0}")]
    Io(#[from] std::io::Error),
}

/// A running emulator. Dropping it (or [`CreateOsEmulator::shutdown`]) kills every sandboxed
/// process and removes every directory it created.
pub struct CreateOsEmulator {
    app: Arc<App>,
    addr: SocketAddr,
    stop: watch::Sender<bool>,
    server: Option<JoinHandle<()>>,
}

impl CreateOsEmulator {
    pub async fn start(opts: EmulatorOptions) -> Result<CreateOsEmulator, StartError> {
        let bwrap = tokio::task::spawn_blocking(Bwrap::locate)
            .await
            .map_err(|e| std::io::Error::other(e.to_string()))??;
        let parent = opts.work_dir.clone().unwrap_or_else(std::env::temp_dir);
        sweep_stale_work_dirs(&parent);
        // Kept as a plain path: teardown removes it explicitly, even from Drop.
        let work_dir = tempfile::Builder::new()
            .prefix(WORK_DIR_PREFIX)
            .tempdir_in(parent)?
            .keep();
        std::fs::write(work_dir.join(OWNER_FILE), std::process::id().to_string())?;
        let listener = TcpListener::bind(("127.0.0.1", opts.port)).await?;
        let addr = listener.local_addr()?;
        let started = Instant::now();
        let primary_key = opts.api_key.clone().unwrap_or_else(|| util::new_id("key"));
        let app = Arc::new(App {
            settings: Settings::new(&opts),
            users: users::Users::new(primary_key, &opts.other_api_keys),
            bwrap,
            work_dir,
            sandboxes: Mutex::new(Default::default()),
            tombstones: tombstones::Tombstones::new(opts.tombstone_limit),
            next_seq: Default::default(),
            live_trees: state::LiveTrees::default(),
            log: request_log::RequestLog::new(started, opts.request_log_limit),
            faults: faults::Faults::default(),
            shutting_down: AtomicBool::new(false),
            opts,
        });
        let (stop, stop_rx) = watch::channel(false);
        let server = tokio::spawn(server::serve(
            listener,
            app.clone(),
            api_router(app.clone()),
            control::router(app.clone()),
            stop_rx,
        ));
        Ok(CreateOsEmulator {
            app,
            addr,
            stop,
            server: Some(server),
        })
    }

    /// Origin to configure as the provider's `apiUrl`, e.g. `http://127.0.0.1:41234`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The primary user's `X-Api-Key`.
    pub fn api_key(&self) -> &str {
        self.app.users.primary_key()
    }

    /// The keys of the further users (`EmulatorOptions::other_api_keys`).
    pub fn other_api_keys(&self) -> &[String] {
        &self.app.opts.other_api_keys
    }

    /// Every logged API request so far (oldest first).
    pub fn request_log(&self) -> Vec<RequestRecord> {
        self.app.log.snapshot(0)
    }

    pub fn clear_request_log(&self) {
        self.app.log.clear();
    }

    pub fn counts(&self) -> EmulatorCounts {
        self.app.counts()
    }

    /// Adds a fault rule; returns its id.
    pub fn add_fault(&self, rule: FaultRule) -> u64 {
        self.app.faults.add(rule)
    }

    pub fn faults(&self) -> Vec<FaultEntry> {
        self.app.faults.list()
    }

    pub fn clear_faults(&self) {
        self.app.faults.clear();
    }

    pub fn settings(&self) -> &Settings {
        &self.app.settings
    }

    /// The API view (`GET /v1/sandboxes/{id}`) of every live sandbox of every user (destroyed
    /// ones are not sandboxes any more: see `tombstones`).
    pub fn sandbox_views(&self) -> Vec<serde_json::Value> {
        let all: Vec<_> = self
            .app
            .sandboxes
            .lock()
            .unwrap()
            .values()
            .cloned()
            .collect();
        all.iter().map(|sb| sb.view()).collect()
    }

    /// Forces a sandbox's status (e.g. `Paused` to simulate the service's auto-pause).
    pub fn force_status(&self, sandbox_id: &str, status: Status) -> bool {
        self.app.force_status(sandbox_id, status)
    }

    /// The host directory that is `/` of a sandbox (for white-box assertions).
    pub fn sandbox_root(&self, sandbox_id: &str) -> Option<std::path::PathBuf> {
        self.app
            .sandbox(sandbox_id)
            .ok()
            .map(|s| s.root.path().to_path_buf())
    }

    /// The emulator's private directory (removed on shutdown).
    pub fn work_dir(&self) -> &std::path::Path {
        &self.app.work_dir
    }

    /// Deletes every sandbox (and forgets destroyed ones) and clears the log and faults, keeping the server up.
    pub fn reset(&self) {
        self.app.reset();
    }

    /// Stops serving, kills every sandboxed process and removes every directory.
    pub async fn shutdown(mut self) {
        let _ = self.stop.send(true);
        if let Some(server) = self.server.take() {
            let _ = server.await;
        }
        let app = self.app.clone();
        let _ = tokio::task::spawn_blocking(move || app.teardown()).await;
    }
}

impl Drop for CreateOsEmulator {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        if let Some(server) = self.server.take() {
            server.abort();
        }
        self.app.teardown();
    }
}

const WORK_DIR_PREFIX: &str = "createos-emulator-";
/// Pid of the process that owns a work dir (sandbox ids never start with a dot).
const OWNER_FILE: &str = ".owner-pid";

/// Removes work dirs of emulators whose process is gone: a SIGKILLed test run cannot clean up
/// after itself (its sandboxed processes die with it through PDEATHSIG, its files do not).
fn sweep_stale_work_dirs(parent: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !name.to_string_lossy().starts_with(WORK_DIR_PREFIX) {
            continue;
        }
        let owner = std::fs::read_to_string(entry.path().join(OWNER_FILE));
        let Some(pid) = owner.ok().and_then(|p| p.trim().parse::<u32>().ok()) else {
            continue;
        };
        if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

fn api_router(app: Arc<App>) -> Router {
    const SB: &str = "/v1/sandboxes/{id}";
    const PROC: &str = "/v1/sandboxes/{id}/processes/{pid}";
    Router::new()
        .route("/healthz", get(catalog::healthz))
        .route("/v1/shapes", get(catalog::shapes))
        .route("/v1/rootfs", get(catalog::rootfs))
        .route(
            "/v1/sandboxes",
            post(sandbox_api::create).get(sandbox_api::list),
        )
        .route(
            SB,
            get(sandbox_api::get)
                .delete(sandbox_api::delete)
                .patch(sandbox_api::patch),
        )
        .route(&format!("{SB}/pause"), post(sandbox_api::pause))
        .route(&format!("{SB}/resume"), post(sandbox_api::resume))
        .route(&format!("{SB}/fork"), post(sandbox_api::fork))
        .route(
            &format!("{SB}/egress"),
            put(sandbox_api::set_egress).get(sandbox_api::get_egress),
        )
        .route(&format!("{SB}/exec"), post(exec::exec))
        .route(
            &format!("{SB}/files"),
            put(files::upload).get(files::download),
        )
        .route(
            &format!("{SB}/processes"),
            post(process_api::create).get(process_api::list),
        )
        .route(PROC, get(process_api::get).delete(process_api::delete))
        .route(&format!("{PROC}/connect"), get(process_api::connect))
        .route(&format!("{PROC}/input"), post(process_api::input))
        .route(
            &format!("{PROC}/stdin/close"),
            post(process_api::close_stdin),
        )
        .route(&format!("{PROC}/signal"), post(process_api::signal))
        .route(&format!("{PROC}/resize"), post(process_api::resize))
        .route(&format!("{PROC}/wait"), get(process_api::wait))
        .fallback(|| async { envelope::ApiError::not_found("route") })
        // The server front already enforces `max_request_body_bytes`; axum's 2 MB default
        // would otherwise reject legitimate large uploads.
        .layer(axum::extract::DefaultBodyLimit::disable())
        .with_state(app)
}
