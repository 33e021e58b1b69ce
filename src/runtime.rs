//! The tokio runtime the addon's async work runs on.
//!
//! napi-rs would start one worker thread per core. Then a burst of Rust work (200 executes, each
//! with its TLS handshake and websocket) keeps every core busy and the worker's JS thread,
//! which must stay responsive to the host, waits for a core: its event loop stalls for tens of
//! milliseconds on a 2-core machine. One core is left to the JS thread instead; the Rust side
//! is I/O-bound and does not need it.

/// Installs the runtime before napi-rs starts its default one; if building it fails, napi-rs's
/// default runtime is used.
pub fn install() {
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
