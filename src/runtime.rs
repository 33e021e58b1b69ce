//! The process-level setup of the addon: its tokio runtime and the allocator settings.

/// Called once from `module_init`, before napi-rs would start its default runtime.
pub fn install() {
    tune_malloc();
    install_runtime();
}

/// napi-rs would start one tokio worker per core. In a burst of Rust work (200 executes, each
/// with its TLS handshake and websocket) those keep every core busy, and the worker's JS thread,
/// which must stay responsive to the host, waits for a core. One core is left to the JS thread
/// instead (measured on 2 cores: worst event-loop stall per burst, median ~14 ms with one worker
/// against ~18 ms with two, same wall time; bench/profile/README.md section 3). The Rust side is
/// I/O-bound. If the runtime cannot be built, napi-rs's default is used.
fn install_runtime() {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let workers = cores.saturating_sub(1).max(1);
    if let Ok(runtime) = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .thread_name("paperclip-sandbox-rt")
        .enable_all()
        .build()
    {
        napi::bindgen_prelude::create_custom_tokio_runtime(runtime);
    }
}

/// glibc's malloc, tuned for a worker that moves output between threads.
///
/// Streamed output is allocated on tokio threads and freed on the JS thread, in blocks from a few
/// KiB to the 4 MiB of a captured tail. Left alone, glibc gives every thread its own arena and,
/// once a large block has been freed, raises its mmap threshold so that later large blocks come
/// from those arenas, where freed memory mostly stays resident. A fixed 256 KiB threshold (large
/// blocks are mapped and unmapped) and at most two arenas keep the worker ~30 MiB smaller after
/// repeated large executes (bench/profile/README.md). The worker process is the plugin's own;
/// Node's allocations only see the same two settings.
fn tune_malloc() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only adjusts allocator parameters; it is called once, at module load,
    // before the runtime's threads exist.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 256 * 1024);
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
}
