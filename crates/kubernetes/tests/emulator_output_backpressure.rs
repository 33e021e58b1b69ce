//! Backpressure of execute's live output against the Kubernetes emulator: a host that does not
//! take chunks holds the exec's stream back, so the provider never holds more than a few
//! chunks of output it has not handed over (plus the one copy it keeps for the result).
//!
//! The provider's process-wide read counters (`exec::transport::probe`) are the observable, so
//! this file holds a single test.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use emulator::kubernetes::{KubeEmulatorOptions, KubernetesEmulator};
use kubernetes::KubernetesProvider;
use kubernetes::exec::transport::probe;
use kubernetes::exec::{OUTPUT_TAP_CAPACITY, READ_CHUNK_BYTES};
use sandbox_core::{BoxFuture, HostSink, LogLevel, OutputStream};
use tokio::sync::{Notify, Semaphore};

#[allow(dead_code)]
#[path = "support/emulator.rs"]
mod emulator_support;
use emulator_support::Lease;

/// The most bytes the provider may have read but not yet handed to the host, when the host is
/// given chunk k: chunk k itself, a full tap, and the chunk the reader waits to send.
const IN_FLIGHT_BOUND: u64 = ((OUTPUT_TAP_CAPACITY + 2) * READ_CHUNK_BYTES) as u64;

/// A host whose `execution_log` does not resolve while the gate is shut. Records, for every
/// chunk, how far the provider's reads were ahead of what the host had taken before it.
struct GatedSink {
    gate: Semaphore,
    received: Notify,
    /// The probe's byte count before the exec.
    taken_at_start: u64,
    /// The probe's wait count when the first chunk arrived.
    waits_at_first_chunk: AtomicU64,
    stdout: Mutex<String>,
    stderr: Mutex<String>,
    chunks: AtomicU64,
    /// The largest `read - delivered before this chunk` seen.
    max_ahead: AtomicU64,
}

impl GatedSink {
    fn new(taken_at_start: u64) -> Self {
        Self {
            gate: Semaphore::new(0),
            received: Notify::new(),
            taken_at_start,
            waits_at_first_chunk: AtomicU64::new(u64::MAX),
            stdout: Mutex::new(String::new()),
            stderr: Mutex::new(String::new()),
            chunks: AtomicU64::new(0),
            max_ahead: AtomicU64::new(0),
        }
    }

    fn open(&self) {
        // Every pending and later `acquire` fails at once: the gate stays open.
        self.gate.close();
    }
}

impl HostSink for GatedSink {
    fn log(&self, _: LogLevel, _: &str) {}
    fn execution_log(&self, stream: OutputStream, chunk: String) -> BoxFuture<'_, ()> {
        let read = probe::bytes_taken() - self.taken_at_start;
        let waits = probe::tap_waits();
        let _ = self.waits_at_first_chunk.compare_exchange(
            u64::MAX,
            waits,
            Ordering::SeqCst,
            Ordering::SeqCst,
        );
        {
            let mut stdout = self.stdout.lock().unwrap();
            let delivered = stdout.len() as u64 + self.stderr.lock().unwrap().len() as u64;
            self.max_ahead
                .fetch_max(read.saturating_sub(delivered), Ordering::SeqCst);
            match stream {
                OutputStream::Stdout => stdout.push_str(&chunk),
                OutputStream::Stderr => self.stderr.lock().unwrap().push_str(&chunk),
            }
        }
        self.chunks.fetch_add(1, Ordering::SeqCst);
        self.received.notify_waiters();
        Box::pin(async move {
            let _ = self.gate.acquire().await;
        })
    }
    fn login_output(&self, _: &str, _: &str, _: String) {}
    fn login_exit(&self, _: &str, _: &str, _: Option<i32>) {}
    fn duplex_data(&self, _: &str, _: &str, _: Vec<u8>) {}
    fn duplex_exit(&self, _: &str, _: &str, _: Option<i32>, _: bool) {}
}

/// Resolves once the provider is held back by the gated host (it holds the first chunk and the
/// reader waits on a full tap), or once it has read more than the bound (an unbounded design).
async fn held_back_or_over_the_bound(sink: &GatedSink) {
    loop {
        let probe_changed = probe::changed();
        let sink_changed = sink.received.notified();
        tokio::pin!(probe_changed, sink_changed);
        probe_changed.as_mut().enable();
        sink_changed.as_mut().enable();
        let first = sink.waits_at_first_chunk.load(Ordering::SeqCst);
        let held_back = first != u64::MAX && probe::tap_waits() > first;
        let over = probe::bytes_taken() - sink.taken_at_start > IN_FLIGHT_BOUND;
        if held_back || over {
            return;
        }
        tokio::select! {
            _ = probe_changed => {}
            _ = sink_changed => {}
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_host_holds_the_exec_stream_back_and_still_gets_all_of_it() {
    let emu = KubernetesEmulator::start(KubeEmulatorOptions::for_tests())
        .await
        .expect("emulator starts");
    let provider = KubernetesProvider::new();
    let quiet = sandbox_core::NullSink;
    let lease = Lease::acquire(&emu, &provider, "run-1").await;
    let exec = |script: &str| lease.exec_params(script, 300_000);
    // The pod is ready before the measured exec starts.
    let warm = provider.execute(&exec("echo warm"), &quiet).await.unwrap();
    assert_eq!(warm["stdout"], "warm\n", "{warm}");

    // 16 MiB: far more than the provider may hold back (about 640 KiB).
    let total: usize = 16 * 1024 * 1024;
    let script = format!(
        "head -c {total} /dev/zero | tr '\\0' a | dd bs=65536 iflag=fullblock status=none; \
         echo done >&2"
    );
    let params = exec(&script);
    let sink = GatedSink::new(probe::bytes_taken());
    let execute = provider.execute(&params, &sink);
    tokio::pin!(execute);

    tokio::select! {
        result = &mut execute => panic!("the exec ended while the host was not taking output: {result:?}"),
        () = held_back_or_over_the_bound(&sink) => {}
    }
    // The host has one chunk and blocks on it; everything else the provider read is in the tap
    // or waiting to go in. Nothing more can be read until the host takes something.
    let read = probe::bytes_taken() - sink.taken_at_start;
    assert!(
        read <= IN_FLIGHT_BOUND,
        "the provider read {read} bytes while the host held its first chunk (bound {IN_FLIGHT_BOUND})"
    );
    assert_eq!(sink.chunks.load(Ordering::SeqCst), 1);
    assert!(read < total as u64);

    sink.open();
    let result = execute.await.unwrap();
    assert_eq!(result["exitCode"], 0, "{}", result["stderr"]);
    assert_eq!(result["timedOut"], false);
    // The host got all of it live; the result keeps the tail that fits a reply.
    let stdout = result["stdout"].as_str().unwrap();
    assert_eq!(stdout.len(), kubernetes::exec::RESULT_TAIL_BYTES);
    assert_eq!(result["metadata"]["outputTruncated"], true);
    assert!(stdout.bytes().all(|b| b == b'a'));
    {
        let streamed = sink.stdout.lock().unwrap();
        assert_eq!(streamed.len(), total);
        assert!(streamed.ends_with(stdout));
    }
    assert_eq!(result["stderr"], "done\n");
    assert_eq!(*sink.stderr.lock().unwrap(), "done\n");
    // Throughout, never more than the bound ahead of the host (the stderr reader may hold its
    // one small chunk as well).
    let max_ahead = sink.max_ahead.load(Ordering::SeqCst);
    assert!(
        max_ahead <= IN_FLIGHT_BOUND + "done\n".len() as u64,
        "read {max_ahead} bytes ahead of the host (bound {IN_FLIGHT_BOUND})"
    );
    assert!(sink.chunks.load(Ordering::SeqCst) >= (total / READ_CHUNK_BYTES) as u64);
    emu.shutdown().await;
}
