//! Peak memory of a large execute against the Kubernetes emulator: 64 MiB of output streamed
//! through the provider to a host sink that takes it at 32 MiB/s must not raise the process's
//! peak RSS by more than [`PEAK_RISE_LIMIT_MIB`], so an execute that kept its output (or a
//! queue that grew with it) instead of streaming it fails here. It is this file's only test, so
//! the process's peak is this execute's. It runs in `npm test` (`cargo test --workspace`, debug):
//! measured there, ~4.5 s a run, peak +11-12 MiB (release: +11 MiB).
//!
//! To measure rather than check, run it alone in release and read its line:
//!
//! ```text
//! cargo test --release -p kubernetes --test emulator_output_memory -- --nocapture
//! ```
//!
//! `PAPERCLIP_EXEC_MIB` (default 64) sets the output size and `PAPERCLIP_SINK_MIBPS` (default 32;
//! 0 = as fast as it can) the rate at which the host sink takes the streamed chunks.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use emulator::kubernetes::{KubeEmulatorOptions, KubernetesEmulator};
use kubernetes::KubernetesProvider;
use sandbox_core::{BoxFuture, HostSink, LogLevel, OutputStream};
use serde_json::Value;

#[allow(dead_code)]
#[path = "support/emulator.rs"]
mod emulator_support;
use emulator_support::Lease;

/// Takes the streamed chunks at a fixed rate (`bytes_per_sec`, 0 = at once), keeping only
/// their count.
struct RateSink {
    bytes_per_sec: u64,
    started: Mutex<Option<tokio::time::Instant>>,
    stdout_bytes: AtomicU64,
    stdout_chunks: AtomicU64,
    /// The largest VmRSS (KiB) seen while chunks arrive (sampled every 16th chunk).
    streaming_rss: AtomicU64,
}

impl HostSink for RateSink {
    fn log(&self, _: LogLevel, _: &str) {}
    fn execution_log(&self, stream: OutputStream, chunk: String) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if stream != OutputStream::Stdout {
                return;
            }
            let taken = self
                .stdout_bytes
                .fetch_add(chunk.len() as u64, Ordering::SeqCst)
                + chunk.len() as u64;
            if self
                .stdout_chunks
                .fetch_add(1, Ordering::SeqCst)
                .is_multiple_of(16)
            {
                self.streaming_rss
                    .fetch_max(status_kib("VmRSS:"), Ordering::SeqCst);
            }
            drop(chunk);
            if self.bytes_per_sec > 0 {
                let start = *self
                    .started
                    .lock()
                    .unwrap()
                    .get_or_insert_with(tokio::time::Instant::now);
                let due = Duration::from_secs_f64(taken as f64 / self.bytes_per_sec as f64);
                tokio::time::sleep_until(start + due).await;
            }
        })
    }
    fn login_output(&self, _: &str, _: &str, _: String) {}
    fn login_exit(&self, _: &str, _: &str, _: Option<i32>) {}
    fn duplex_data(&self, _: &str, _: &str, _: Vec<u8>) {}
    fn duplex_exit(&self, _: &str, _: &str, _: Option<i32>, _: bool) {}
}

fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The peak RSS may rise this much (MiB) during the execute, whatever the output's size (a
/// streamed output's memory does not grow with it): half of the default 64 MiB, with room above
/// the measured +12 MiB for another allocator or machine.
const PEAK_RISE_LIMIT_MIB: u64 = 32;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn peak_rss_of_a_large_execute() {
    let mib = env_u64("PAPERCLIP_EXEC_MIB", 64);
    let sink_mibps = env_u64("PAPERCLIP_SINK_MIBPS", 32);
    let emu = KubernetesEmulator::start(KubeEmulatorOptions::for_tests())
        .await
        .expect("emulator starts");
    let provider = KubernetesProvider::new();
    let quiet = sandbox_core::NullSink;
    let lease = Lease::acquire(&emu, &provider, "run-1").await;
    let exec = |script: String| lease.exec_params(&script, 600_000);
    // Warm up: the pod is ready, the client and its connection pool exist.
    let warm = provider
        .execute(&exec("echo warm".into()), &quiet)
        .await
        .unwrap();
    assert_eq!(warm["stdout"], "warm\n", "{warm}");

    let bytes = mib * 1024 * 1024;
    let script =
        format!("head -c {bytes} /dev/zero | tr '\\0' a | dd bs=65536 iflag=fullblock status=none");
    // Resets VmHWM to the current RSS (Linux ≥ 4.0).
    std::fs::write("/proc/self/clear_refs", "5").unwrap();
    let base_rss = status_kib("VmRSS:");
    let sink = RateSink {
        bytes_per_sec: sink_mibps * 1024 * 1024,
        started: Mutex::new(None),
        stdout_bytes: AtomicU64::new(0),
        stdout_chunks: AtomicU64::new(0),
        streaming_rss: AtomicU64::new(0),
    };
    let started = Instant::now();
    let result: Value = provider.execute(&exec(script), &sink).await.unwrap();
    let elapsed = started.elapsed();
    let peak = status_kib("VmHWM:");
    assert_eq!(result["exitCode"], 0, "{}", result["stderr"]);
    let stdout = result["stdout"].as_str().unwrap();
    // The result keeps the tail that fits a reply line; the live output carries everything.
    let kept = bytes.min(kubernetes::exec::RESULT_TAIL_BYTES as u64);
    assert_eq!(stdout.len() as u64, kept);
    assert!(stdout.bytes().all(|b| b == b'a'));
    assert_eq!(sink.stdout_bytes.load(Ordering::SeqCst), bytes);
    println!(
        "exec of {mib} MiB, sink {sink_mibps} MiB/s (0 = unthrottled): {:.2}s, {:.1} MiB/s; \
         {} chunks; RSS before {} MiB, while streaming up to {} MiB, peak {} MiB (+{} MiB)",
        elapsed.as_secs_f64(),
        mib as f64 / elapsed.as_secs_f64(),
        sink.stdout_chunks.load(Ordering::SeqCst),
        base_rss / 1024,
        sink.streaming_rss.load(Ordering::SeqCst) / 1024,
        peak / 1024,
        peak.saturating_sub(base_rss) / 1024,
    );
    let rise_mib = peak.saturating_sub(base_rss) / 1024;
    assert!(
        rise_mib <= PEAK_RISE_LIMIT_MIB,
        "the peak RSS rose by {rise_mib} MiB for {mib} MiB of output (at most \
         {PEAK_RISE_LIMIT_MIB}): the output is kept, not streamed"
    );
    drop(result);
    emu.shutdown().await;
}
