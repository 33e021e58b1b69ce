//! The Sandbox ready-wait on the real node (issue #37): the provider's time over the pod's own
//! Ready transition, beside the original's 2 s poll. Not a test, not part of `npm test`:
//!
//!   cargo bench -p kubernetes --bench readiness_real_node     (or: npm run bench:readiness)
//!
//! For each lease, in turn for the two variants: acquire on the real node of
//! `tests/real_cluster` (root; it starts `scripts/real-cluster/node.sh`), open an admin watch
//! on the lease's pod, run `execute("true")` at once (it waits for the Sandbox to be Ready,
//! then runs), and take
//!
//! - **gross**: from the moment the admin watch sees the pod's `Ready` condition turn `True` to
//!   the moment execute returns;
//! - **exec**: a second `execute("true")` on the same lease, whose Sandbox is known Ready (no
//!   wait): the cost of the exec itself;
//! - **net** = gross - exec: the time the provider took to notice the pod was Ready, the
//!   agent-sandbox controller's own turn (pod Ready -> Sandbox Ready) included, the same for
//!   both variants.
//!
//! The variants: **watch** is the provider as it ships; **poll** is the same provider over a
//! cluster that refuses watches (405), so its ready-wait falls back to the original's poll, a
//! `GET` of the Sandbox every 2 s. A lease whose pod is Ready before the admin watch first sees
//! it is not counted (and is replaced). Results: `bench/results/readiness-real-node.{json,md}`.
//! `PAPERCLIP_BENCH_LEASES` sets the leases per variant (20).

// A bench reports by printing: its progress on stderr, the report on stdout.
#![allow(clippy::print_stderr, clippy::print_stdout)]

#[allow(dead_code)]
#[path = "../tests/real_cluster/node.rs"]
mod node;
#[path = "shared/report.rs"]
mod report;
#[allow(dead_code)]
#[path = "../tests/real_apiserver/support.rs"]
mod support;

use std::sync::Arc;
use std::time::Instant;

use futures::TryStreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::WatchParams;
use kube::core::WatchEvent;
use kubernetes::KubernetesProvider;
use kubernetes::cluster::{ApiMethod, ApiResult, ClusterApi, SystemClock};
use kubernetes::config::KubernetesConfig;
use kubernetes::lease::{ClusterConnector, Connection, KubeConnector};
use report::{machine, stats};
use sandbox_core::{BoxFuture, NullSink};
use serde_json::{Value, json};

const COMPANY: &str = "company-bench";

/// A cluster that serves no watches: the ready-wait then polls, as the original does.
struct NoWatch(Arc<dyn ClusterApi>);

impl ClusterApi for NoWatch {
    fn call(&self, method: ApiMethod, request: Value) -> BoxFuture<'_, ApiResult> {
        self.0.call(method, request)
    }
    fn server_url(&self) -> &str {
        self.0.server_url()
    }
}

struct PollingConnector(KubeConnector);

impl ClusterConnector for PollingConnector {
    fn connect<'a>(
        &'a self,
        config: &'a KubernetesConfig,
    ) -> BoxFuture<'a, Result<Connection, kubernetes::Error>> {
        Box::pin(async move {
            let connection = self.0.connect(config).await?;
            Ok(Connection {
                api: Arc::new(NoWatch(connection.api)),
                exec: connection.exec,
            })
        })
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Variant {
    Watch,
    Poll,
}

impl Variant {
    fn name(self) -> &'static str {
        match self {
            Variant::Watch => "watch",
            Variant::Poll => "poll",
        }
    }
}

struct Sample {
    gross_ms: f64,
    exec_ms: f64,
}

/// When the admin watch saw the pod `name` turn Ready, or `None` when it was Ready already at
/// the first sight (its transition is not observable then).
async fn pod_ready_at(pods: Api<Pod>, name: String) -> Option<Instant> {
    let params = WatchParams::default()
        .fields(&format!("metadata.name={name}"))
        .timeout(120);
    let stream = pods.watch(&params, "0").await.expect("the pod watch opens");
    let mut stream = Box::pin(stream);
    let mut first = true;
    while let Some(event) = stream.try_next().await.expect("the pod watch reads") {
        let pod = match event {
            WatchEvent::Added(pod) | WatchEvent::Modified(pod) => pod,
            _ => continue,
        };
        let ready = pod
            .status
            .and_then(|s| s.conditions)
            .unwrap_or_default()
            .iter()
            .any(|c| c.type_ == "Ready" && c.status == "True");
        if ready {
            return (!first).then(Instant::now);
        }
        first = false;
    }
    panic!("the pod watch ended before the pod {name} was Ready");
}

async fn execute_true(provider: &KubernetesProvider, config: &Value, lease: &Value) -> Instant {
    let params = json!({"config": config, "companyId": COMPANY, "lease": lease,
        "command": "true", "timeoutMs": 120_000});
    let result = provider
        .execute(&params, &NullSink)
        .await
        .unwrap_or_else(|e| panic!("execute refused: {}", e.message));
    assert_eq!(result["exitCode"], 0, "{result}");
    Instant::now()
}

/// One lease of `variant`: its sample, or `None` when its Ready transition was missed.
async fn one_lease(
    provider: &KubernetesProvider,
    admin: &kube::Client,
    config: &Value,
    run: usize,
) -> Option<Sample> {
    let acquired = provider
        .acquire_lease(
            &json!({"config": config, "companyId": COMPANY, "runId": format!("bench-{run}")}),
            &NullSink,
        )
        .await
        .unwrap_or_else(|e| panic!("acquire refused: {}", e.message));
    let name = acquired["providerLeaseId"].as_str().unwrap().to_string();
    let namespace = acquired["metadata"]["namespace"].as_str().unwrap();
    let lease = json!({"providerLeaseId": name, "metadata": acquired["metadata"]});
    let pods: Api<Pod> = Api::namespaced(admin.clone(), namespace);
    let ready = tokio::spawn(pod_ready_at(pods, name.clone()));
    let done = execute_true(provider, config, &lease).await;
    let ready_at = ready.await.expect("the pod watch task");
    let exec_started = Instant::now();
    let exec_done = execute_true(provider, config, &lease).await;
    let sample = ready_at.map(|at| Sample {
        gross_ms: done.saturating_duration_since(at).as_secs_f64() * 1000.0,
        exec_ms: (exec_done - exec_started).as_secs_f64() * 1000.0,
    });
    let params = json!({"config": config, "companyId": COMPANY,
        "providerLeaseId": name, "leaseMetadata": acquired["metadata"]});
    provider
        .destroy_lease(&params, &NullSink)
        .await
        .unwrap_or_else(|e| panic!("destroy refused: {}", e.message));
    sample
}

fn markdown(report: &Value) -> String {
    let m = &report["machine"];
    let row = |variant: &str, figure: &str| {
        let s = &report["variants"][variant][figure];
        format!(
            "| {variant} | {figure} | {} | {} | {} | {} | {} | {} |",
            s["n"], s["p50"], s["p95"], s["mean"], s["min"], s["max"]
        )
    };
    let mut lines = vec![
        "# Sandbox ready-wait on the real node".to_string(),
        String::new(),
        format!(
            "Machine: nproc {}, {} GiB RAM, {}, Linux {}, load average at start {}; Kubernetes {} (single node: containerd, runc, kubelet, scheduler), agent-sandbox {}; bench built {}.",
            m["nproc"], m["memoryGiB"], m["cpuModel"].as_str().unwrap_or("?"), m["kernel"].as_str().unwrap_or("?"),
            m["loadavg"].as_str().unwrap_or("?"), m["kubernetes"].as_str().unwrap_or("?"),
            m["agentSandbox"].as_str().unwrap_or("?"), m["build"].as_str().unwrap_or("?")
        ),
        format!("Run: {} -> {}.", report["startedAt"].as_str().unwrap_or("?"), report["finishedAt"].as_str().unwrap_or("?")),
        String::new(),
        "```sh".into(),
        "cargo bench -p kubernetes --bench readiness_real_node   # as root; npm run bench:readiness".into(),
        "```".into(),
        String::new(),
        "Milliseconds from the pod's `Ready` condition turning `True` (seen by an admin watch) to the provider's first `execute(\"true\")` returning (**gross**), the cost of that exec alone (a second `execute(\"true\")` on the Ready lease), and **net** = gross - exec: the time the provider took to see that the pod was Ready, the agent-sandbox controller's own turn (pod Ready to Sandbox Ready) included. **watch** is the provider as shipped; **poll** is the same provider over a cluster that refuses watches, whose ready-wait is then the original's `GET` every 2 s.".into(),
        String::new(),
        "| variant | figure | n | p50 | p95 | mean | min | max |".into(),
        "|---|---|---|---|---|---|---|---|".into(),
    ];
    for variant in ["watch", "poll"] {
        for figure in ["net", "gross", "exec"] {
            lines.push(row(variant, figure));
        }
    }
    lines.push(String::new());
    lines.push(format!(
        "Leases whose pod was Ready before the admin watch first saw it (not counted, replaced): watch {}, poll {}.",
        report["variants"]["watch"]["missed"], report["variants"]["poll"]["missed"]
    ));
    lines.push(String::new());
    lines.push("The poll's extra time is where the Sandbox's Ready falls in its 2 s interval: between 0 and 2 s, about 1 s on average when that point varies. Here each execute starts right after its acquire and the pod turns Ready a nearly constant time later, so the point is nearly the same every lease (the spread of the poll's net). The watch's net is the controller's turn and the watch's delivery; it dips below 0 by the variance of the exec it subtracts.".into());
    lines.join("\n") + "\n"
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(run());
}

async fn run() {
    let leases: usize = std::env::var("PAPERCLIP_BENCH_LEASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let started_at = js_compat::date::now_iso_string();
    let node = node::node().await;
    let admin = support::client(&node.kubeconfig).await;
    let (_, version) = support::get(&admin, "/version").await;
    let machine = machine(&version, node.agent_sandbox_version.as_deref());
    eprintln!("readiness bench: {leases} leases per variant on {machine}");
    let config = node.provider_config(&support::unique("bench"), "sandbox-cr", json!({}));
    let watching = KubernetesProvider::new();
    let polling = KubernetesProvider::with_connector(
        Arc::new(PollingConnector(KubeConnector::default())),
        Arc::new(SystemClock::new()),
    );
    let mut samples: [Vec<Sample>; 2] = [Vec::new(), Vec::new()];
    let mut missed = [0usize; 2];
    let mut run = 0;
    while samples.iter().any(|s| s.len() < leases) {
        for (i, variant) in [Variant::Watch, Variant::Poll].into_iter().enumerate() {
            if samples[i].len() >= leases {
                continue;
            }
            run += 1;
            let provider = if variant == Variant::Watch {
                &watching
            } else {
                &polling
            };
            match one_lease(provider, &admin, &config, run).await {
                Some(sample) => {
                    eprintln!(
                        "{} #{}: gross {:.0} ms, exec {:.0} ms",
                        variant.name(),
                        samples[i].len() + 1,
                        sample.gross_ms,
                        sample.exec_ms
                    );
                    samples[i].push(sample);
                }
                None => missed[i] += 1,
            }
            assert!(
                missed[i] <= leases,
                "most {} leases were Ready before they were seen",
                variant.name()
            );
        }
    }
    let variants: serde_json::Map<String, Value> = [Variant::Watch, Variant::Poll]
        .into_iter()
        .enumerate()
        .map(|(i, variant)| {
            let of = |f: fn(&Sample) -> f64| samples[i].iter().map(f).collect::<Vec<_>>();
            (
                variant.name().to_string(),
                json!({
                    "net": stats(&of(|s| s.gross_ms - s.exec_ms)),
                    "gross": stats(&of(|s| s.gross_ms)),
                    "exec": stats(&of(|s| s.exec_ms)),
                    "missed": missed[i],
                }),
            )
        })
        .collect();
    let report = json!({"startedAt": started_at, "finishedAt": js_compat::date::now_iso_string(),
        "leasesPerVariant": leases, "machine": machine, "variants": variants});
    let dir = support::repo_root().join("bench/results");
    std::fs::create_dir_all(&dir).expect("bench/results");
    let text = serde_json::to_string_pretty(&report).unwrap() + "\n";
    std::fs::write(dir.join("readiness-real-node.json"), text).expect("write the json");
    let md = markdown(&report);
    std::fs::write(dir.join("readiness-real-node.md"), &md).expect("write the report");
    print!("{md}");
}
