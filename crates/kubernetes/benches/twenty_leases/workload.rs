//! One lease's work, as a host drives it: acquire, a streaming execute of 1 MiB counted by the
//! sink, a sync-in of 1 MiB and a sync-out of it compared byte for byte, release; its timings.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use kubernetes::KubernetesProvider;
use sandbox_core::{BoxFuture, HostSink, LogLevel, NullSink, OutputStream};
use serde_json::{Value, json};

const COMPANY: &str = "company-leases";
/// The size of the execute's output and of the synced file.
pub const MIB: usize = 1 << 20;
/// The line the execute repeats; its output is these lines cut at 1 MiB.
const LINE: &str = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

/// FNV-1a, 64 bits, over `bytes` from `hash`: the streamed output is checked without being kept.
fn fnv(mut hash: u64, bytes: &[u8]) -> u64 {
    for byte in bytes {
        hash = (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3);
    }
    hash
}
const FNV_START: u64 = 0xcbf2_9ce4_8422_2325;

/// The sink of one execute: counts the stdout chunks and their bytes, hashes them in order, and
/// takes the moment of the first.
#[derive(Default)]
struct CountingSink {
    chunks: AtomicUsize,
    bytes: AtomicUsize,
    hash: Mutex<Option<u64>>,
    stderr: AtomicUsize,
    first: OnceLock<Instant>,
}

impl HostSink for CountingSink {
    fn log(&self, _: LogLevel, _: &str) {}
    fn execution_log(&self, stream: OutputStream, chunk: String) -> BoxFuture<'_, ()> {
        if stream == OutputStream::Stdout {
            self.first.get_or_init(Instant::now);
            self.chunks.fetch_add(1, Ordering::Relaxed);
            self.bytes.fetch_add(chunk.len(), Ordering::Relaxed);
            let mut hash = self.hash.lock().unwrap();
            *hash = Some(fnv(hash.unwrap_or(FNV_START), chunk.as_bytes()));
        } else {
            self.stderr.fetch_add(chunk.len(), Ordering::Relaxed);
        }
        Box::pin(async {})
    }
    fn login_output(&self, _: &str, _: &str, _: String) {}
    fn login_exit(&self, _: &str, _: &str, _: Option<i32>) {}
    fn duplex_data(&self, _: &str, _: &str, _: Vec<u8>) {}
    fn duplex_exit(&self, _: &str, _: &str, _: Option<i32>, _: bool) {}
}

/// A lease that went through all its hooks, and what it took.
pub struct Lease {
    pub name: String,
    pub acquire_ms: f64,
    pub execute_ms: f64,
    pub first_chunk_at: Instant,
    pub execute_done_at: Instant,
    pub chunks: usize,
    pub sync_in_ms: f64,
    pub sync_out_ms: f64,
    pub release_ms: f64,
}

/// What [`LeaseRun::use_lease`] took: the execute's time, sink and end, the two syncs' times.
type Used = (f64, CountingSink, Instant, f64, f64);

pub enum Outcome {
    Done(Lease),
    Failed(String),
}

/// What the leases acquired so far: the tenant namespace and Sandbox API version, their names.
#[derive(Default)]
struct Acquired {
    tenant: Option<(String, String)>,
    names: Vec<String>,
}

/// What the twenty leases share: the one provider (the worker), the config, the expected
/// output, and the names acquired (for the check that nothing is left).
pub struct LeaseRun {
    provider: KubernetesProvider,
    /// An admin client, to say what a failed lease's pod showed.
    admin: kube::Client,
    config: Value,
    expected: String,
    expected_hash: u64,
    acquired: Mutex<Acquired>,
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1000.0
}

fn refused(hook: &str) -> impl FnOnce(sandbox_core::ProviderError) -> String + '_ {
    move |e| format!("{hook} refused: {}", e.message)
}

impl LeaseRun {
    pub fn new(provider: KubernetesProvider, config: Value, admin: kube::Client) -> LeaseRun {
        let expected: String = LINE
            .bytes()
            .chain(std::iter::once(b'\n'))
            .cycle()
            .take(MIB)
            .map(char::from)
            .collect();
        LeaseRun {
            provider,
            admin,
            config,
            expected_hash: fnv(FNV_START, expected.as_bytes()),
            expected,
            acquired: Mutex::default(),
        }
    }

    /// The tenant namespace and the Sandbox API version, once a lease was acquired.
    pub fn namespace(&self) -> Option<(String, String)> {
        self.acquired.lock().unwrap().tenant.clone()
    }

    /// Every lease acquired.
    pub fn names(&self) -> Vec<String> {
        self.acquired.lock().unwrap().names.clone()
    }

    /// Lease `index` through all its hooks.
    pub async fn lease(self: Arc<Self>, index: usize) -> Outcome {
        match self.hooks(index).await {
            Ok(lease) => Outcome::Done(lease),
            Err(why) => Outcome::Failed(format!("lease {index}: {why}")),
        }
    }

    async fn hooks(&self, index: usize) -> Result<Lease, String> {
        let started = Instant::now();
        let acquired = self
            .provider
            .acquire_lease(
                &json!({"config": self.config, "companyId": COMPANY, "environmentId": "env-leases",
                    "runId": format!("leases-{index}")}),
                &NullSink,
            )
            .await
            .map_err(refused("acquire"))?;
        let acquire_ms = ms(started);
        let name = acquired["providerLeaseId"]
            .as_str()
            .unwrap_or("")
            .to_string();
        {
            let mut acquired_names = self.acquired.lock().unwrap();
            let metadata = &acquired["metadata"];
            let version = metadata["sandboxApiVersion"].as_str().unwrap_or("v1beta1");
            acquired_names.tenant = metadata["namespace"]
                .as_str()
                .map(|ns| (ns.to_string(), version.to_string()));
            acquired_names.names.push(name.clone());
        }
        let lease = json!({"providerLeaseId": name, "metadata": acquired["metadata"]});
        let used = match self.use_lease(&lease).await {
            Ok(used) => Ok(used),
            Err(why) => {
                let namespace = acquired["metadata"]["namespace"].as_str().unwrap_or("");
                Err(format!("{why}; {}", self.pod_state(namespace, &name).await))
            }
        };
        // Released whatever happened in between, so that what is left after is the provider's.
        let started = Instant::now();
        let released = self
            .provider
            .release_lease(
                &json!({"config": self.config, "companyId": COMPANY, "environmentId": "env-leases",
                    "providerLeaseId": name, "leaseMetadata": acquired["metadata"]}),
                &NullSink,
            )
            .await
            .map_err(refused("release"));
        let release_ms = ms(started);
        let (execute_ms, sink, execute_done_at, sync_in_ms, sync_out_ms) = match (used, released) {
            (Ok(used), Ok(_)) => used,
            (Err(why), Ok(_)) => return Err(why),
            (Err(why), Err(also)) => return Err(format!("{why}; then {also}")),
            (Ok(_), Err(why)) => return Err(why),
        };
        Ok(Lease {
            name,
            acquire_ms,
            execute_ms,
            first_chunk_at: *sink.first.get().ok_or("execute streamed nothing")?,
            execute_done_at,
            chunks: sink.chunks.load(Ordering::Relaxed),
            sync_in_ms,
            sync_out_ms,
            release_ms,
        })
    }

    /// What the lease's pod shows (phase, conditions, container states) and its last events:
    /// the why of a failed hook, taken before the release deletes the pod.
    async fn pod_state(&self, namespace: &str, name: &str) -> String {
        let path = format!("/api/v1/namespaces/{namespace}/pods/{name}");
        let (status, pod) = crate::support::get(&self.admin, &path).await;
        let conditions: Vec<String> = pod["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| format!("{}={} {}", c["type"], c["status"], c["reason"]))
            .collect();
        let events = format!(
            "/api/v1/namespaces/{namespace}/events?fieldSelector=involvedObject.name%3D{name}"
        );
        let (_, events) = crate::support::get(&self.admin, &events).await;
        let events: Vec<String> = crate::support::items(&events)
            .iter()
            .rev()
            .take(4)
            .map(|e| format!("{} {}: {}", e["type"], e["reason"], e["message"]))
            .collect();
        format!(
            "its pod (GET {status}): phase {}, conditions {conditions:?}, containers {}, node {}; events {events:?}",
            pod["status"]["phase"], pod["status"]["containerStatuses"], pod["spec"]["nodeName"]
        )
    }

    /// The execute and the sync round trip on an acquired lease.
    async fn use_lease(&self, lease: &Value) -> Result<Used, String> {
        let (execute_ms, sink, execute_done_at) = self.execute(lease).await?;
        let (sync_in_ms, sync_out_ms) = self.sync_round_trip(lease).await?;
        Ok((execute_ms, sink, execute_done_at, sync_in_ms, sync_out_ms))
    }

    /// The streaming execute: 1 MiB on stdout, every byte through the sink in order.
    async fn execute(&self, lease: &Value) -> Result<(f64, CountingSink, Instant), String> {
        let sink = CountingSink::default();
        let script = format!("yes {LINE} | head -c {MIB}");
        let started = Instant::now();
        let result = self
            .provider
            .execute(
                &json!({"config": self.config, "companyId": COMPANY, "lease": lease,
                    "command": "sh", "args": ["-c", script], "timeoutMs": 300_000}),
                &sink,
            )
            .await
            .map_err(refused("execute"))?;
        let done = Instant::now();
        let stdout = result["stdout"].as_str().unwrap_or("");
        let streamed = sink.bytes.load(Ordering::Relaxed);
        let hash = *sink.hash.lock().unwrap();
        if result["exitCode"] != 0 || result["timedOut"] != false {
            return Err(format!(
                "execute answered exit {} timedOut {} (stderr {:?})",
                result["exitCode"], result["timedOut"], result["stderr"]
            ));
        }
        if streamed != MIB || hash != Some(self.expected_hash) {
            return Err(format!(
                "execute streamed {streamed} bytes in {} chunks, not the 1 MiB it wrote",
                sink.chunks.load(Ordering::Relaxed)
            ));
        }
        if stdout.is_empty() || !self.expected.ends_with(stdout) {
            return Err(format!(
                "execute's result holds {} bytes of stdout that are not the output's end",
                stdout.len()
            ));
        }
        Ok(((done - started).as_secs_f64() * 1000.0, sink, done))
    }

    /// A 1 MiB file of random bytes in, then out into a fresh directory; the bytes compared.
    async fn sync_round_trip(&self, lease: &Value) -> Result<(f64, f64), String> {
        let host = tempfile::tempdir().map_err(|e| format!("a host temp dir: {e}"))?;
        let mut payload = vec![0u8; MIB];
        getrandom::fill(&mut payload).map_err(|e| format!("random bytes: {e}"))?;
        let source = host.path().join("in.bin");
        std::fs::write(&source, &payload).map_err(|e| format!("the payload: {e}"))?;
        let cwd = lease["metadata"]["remoteCwd"]
            .as_str()
            .unwrap_or("/workspace");
        let remote = format!("{cwd}/bench/in.bin");
        let back = host.path().join("back/in.bin");
        let params = |operations: Value| {
            json!({"config": self.config, "companyId": COMPANY, "lease": lease,
                "operations": operations})
        };
        let started = Instant::now();
        self.provider
            .sync_in(
                &params(json!([{"operationId": "in", "files": [
                    {"kind": "file", "sourcePath": source, "targetPath": remote}]}])),
                &NullSink,
            )
            .await
            .map_err(refused("syncIn"))?;
        let sync_in_ms = ms(started);
        let started = Instant::now();
        self.provider
            .sync_out(
                &params(json!([{"operationId": "out", "files": [
                    {"kind": "file", "sourcePath": remote, "targetPath": back}]}])),
                &NullSink,
            )
            .await
            .map_err(refused("syncOut"))?;
        let sync_out_ms = ms(started);
        let returned = std::fs::read(&back).map_err(|e| format!("the synced-out file: {e}"))?;
        if returned != payload {
            return Err(format!(
                "syncOut brought back {} bytes that differ from the 1 MiB synced in",
                returned.len()
            ));
        }
        Ok((sync_in_ms, sync_out_ms))
    }
}
