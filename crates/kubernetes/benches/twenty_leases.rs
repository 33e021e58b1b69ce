//! Twenty leases at once (issue #38 item 3): one worker, twenty concurrent sandbox-cr leases on
//! the real node, and the same run against the emulator beside it. Not a test, not part of
//! `npm test` or `npm run bench` (root, the real node, minutes):
//!
//!   cargo bench -p kubernetes --bench twenty_leases     (or: npm run bench:leases)
//!
//! One [`KubernetesProvider`] in this process, on a runtime of the addon's size (a core left for
//! the worker's JS thread), is the worker. Each lease, all twenty started together: acquire; a
//! streaming execute that writes 1 MiB to stdout, counted chunk by chunk by the sink the host
//! would be; a sync-in of a 1 MiB file of random bytes and a sync-out of it into a fresh host
//! directory, compared byte for byte; release. Every hook must succeed and, after, the tenant
//! namespace must hold nothing of any lease (Sandboxes, pods, Secrets, policies; listed with
//! bounded waits while the garbage collector finishes).
//!
//! Figures per target: acquire p50/p95; the first execute over the pod's own `Ready` transition
//! (an admin watch of all pods on its own thread, as `readiness_real_node` takes it): to its first
//! output chunk and to its end; the worker's CPU time (`getrusage(RUSAGE_SELF)`, user + system,
//! from the first acquire to the last release) and its peak RSS (`VmHWM`, reset before the run).
//! The emulator runs in a child process (this binary again), so that its CPU and memory are not
//! the worker's; the node's components are not the worker's either.
//!
//! `PAPERCLIP_BENCH_LEASES` sets the leases (20); `PAPERCLIP_BENCH_TARGETS` the targets
//! (`emulator,real-node`). Results: `bench/results/twenty-leases.{json,md}`, written when both
//! targets ran (a run of one prints its report only).

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
#[path = "twenty_leases/watch.rs"]
mod watch;
#[path = "twenty_leases/workload.rs"]
mod workload;

use std::process::{Child, ChildStdin, Command};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kube::Client;
use kubernetes::KubernetesProvider;
use report::{machine, stats};
use sandbox_core::poll::poll;
use serde_json::{Value, json};

use watch::ReadyWatch;
use workload::{Lease, LeaseRun, Outcome};

/// Set in the environment of this binary's child that serves the emulator.
const EMULATOR_CHILD: &str = "PAPERCLIP_BENCH_EMULATOR_CHILD";
/// How long the namespace may take to hold nothing of the released leases.
const CLEAN_WITHIN: Duration = Duration::from_secs(120);

fn main() {
    if std::env::var_os(EMULATOR_CHILD).is_some() {
        return serve_emulator();
    }
    // The addon's runtime: the cores but one (kept for the worker's JS thread), at least one.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cores.saturating_sub(1).max(1))
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(run());
}

/// The child: the Kubernetes emulator with its default (not the tests') timings, its kubeconfig
/// on one JSON line on stdout, served until stdin closes.
fn serve_emulator() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let emu = emulator::kubernetes::KubernetesEmulator::start(Default::default())
            .await
            .expect("the emulator starts");
        println!("{}", json!({"kubeconfig": emu.kubeconfig_yaml()}));
        tokio::task::spawn_blocking(|| std::io::copy(&mut std::io::stdin(), &mut std::io::sink()))
            .await
            .ok();
        emu.shutdown().await;
    });
}

/// A cluster to run against, and what keeps it up.
struct Target {
    name: &'static str,
    kubeconfig: String,
    image: Value,
    agent_sandbox: Option<String>,
    /// The emulator child and the pipe whose closing ends it.
    _child: Option<(Child, ChildStdin)>,
}

fn start_emulator() -> Target {
    let exe = std::env::current_exe().expect("this bench's path");
    let (child, stdin, ready) = support::start_up(
        Command::new(exe).env(EMULATOR_CHILD, "1"),
        "the emulator child",
    );
    Target {
        name: "emulator",
        kubeconfig: ready["kubeconfig"].as_str().expect("a kubeconfig").into(),
        image: json!({}),
        agent_sandbox: None,
        _child: Some((child, stdin)),
    }
}

async fn start_real_node() -> Target {
    let node = node::node().await;
    Target {
        name: "real-node",
        kubeconfig: node.kubeconfig.clone(),
        image: node.image_config(),
        agent_sandbox: node.agent_sandbox_version.clone(),
        _child: None,
    }
}

/// The provider config of a run: its own company slug (so its own tenant namespace), requests
/// small enough that twenty pods fit a 2-core node (the defaults ask 250m each; 100m and 128Mi
/// are the least the tenant's LimitRange admits), a 10 min bound on each sync exec.
fn provider_config(target: &Target) -> Value {
    let mut config = json!({"kubeconfig": target.kubeconfig, "companySlug": support::unique("leases"),
        "backend": "sandbox-cr", "podActivityDeadlineSec": 600,
        "defaultResources": {"requests": {"cpu": "100m", "memory": "128Mi"},
            "limits": {"cpu": "1", "memory": "512Mi"}}});
    for (key, value) in target.image.as_object().into_iter().flatten() {
        config[key] = value.clone();
    }
    config
}

/// The run's provider config without its kubeconfig, for the report.
fn config_shown(config: &Value) -> Value {
    let mut shown = config.clone();
    if let Some(object) = shown.as_object_mut() {
        object.remove("kubeconfig");
    }
    shown
}

/// `VmHWM` or `VmRSS` of this process, in MiB.
fn status_mib(field: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches(" kB").parse::<f64>().ok())
        .map_or(f64::NAN, |kib| (kib / 1024.0 * 10.0).round() / 10.0)
}

/// User + system CPU time of this process so far, in ms.
fn cpu_ms() -> f64 {
    use nix::sys::resource::{UsageWho, getrusage};
    let usage = getrusage(UsageWho::RUSAGE_SELF).expect("getrusage");
    let ms = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 * 1000.0 + t.tv_usec() as f64 / 1000.0;
    ms(usage.user_time()) + ms(usage.system_time())
}

/// The twenty leases on `target`, measured; then the check that nothing of them is left.
async fn run_target(target: &Target, leases: usize) -> Value {
    let admin = support::client(&target.kubeconfig).await;
    let (_, version) = support::get(&admin, "/version").await;
    let machine = machine(&version, target.agent_sandbox.as_deref());
    eprintln!(
        "twenty leases: {leases} on {} ({})",
        target.name, machine["kubernetes"]
    );
    let config = provider_config(target);
    let watch = ReadyWatch::start(target.kubeconfig.clone());
    let run = Arc::new(LeaseRun::new(
        KubernetesProvider::new(),
        config.clone(),
        admin.clone(),
    ));
    // Resets VmHWM to the current RSS (Linux >= 4.0), so the peak is this run's.
    std::fs::write("/proc/self/clear_refs", "5").expect("reset VmHWM");
    let rss_before = status_mib("VmRSS:");
    let cpu_before = cpu_ms();
    let started = Instant::now();
    let tasks: Vec<_> = (0..leases)
        .map(|i| tokio::spawn(run.clone().lease(i)))
        .collect();
    let mut outcomes = Vec::new();
    for task in tasks {
        outcomes.push(
            task.await
                .unwrap_or_else(|e| Outcome::Failed(panic_text(e))),
        );
    }
    let wall_ms = started.elapsed().as_secs_f64() * 1000.0;
    let cpu = cpu_ms() - cpu_before;
    let peak = status_mib("VmHWM:");
    let ready = watch.stop();
    let done: Vec<&Lease> = outcomes
        .iter()
        .filter_map(|o| match o {
            Outcome::Done(lease) => Some(lease),
            Outcome::Failed(_) => None,
        })
        .collect();
    let failures: Vec<&String> = outcomes
        .iter()
        .filter_map(|o| match o {
            Outcome::Failed(why) => Some(why),
            Outcome::Done(_) => None,
        })
        .collect();
    for failure in &failures {
        eprintln!("{}: a lease failed: {failure}", target.name);
    }
    let names: Vec<String> = run.names();
    let left = match &run.namespace() {
        Some((ns, version)) => nothing_left(admin, ns.clone(), version.clone(), names).await,
        None => Err("no lease was acquired: no namespace to check".into()),
    };
    let over_ready = |f: fn(&Lease) -> Instant| -> Vec<f64> {
        done.iter()
            .filter_map(|l| {
                let at = ready.get(&l.name)?;
                Some(f(l).saturating_duration_since(*at).as_secs_f64() * 1000.0)
            })
            .collect()
    };
    let first_chunk = over_ready(|l| l.first_chunk_at);
    json!({
        "target": target.name,
        "machine": machine,
        "leases": leases,
        "config": config_shown(&config),
        "succeeded": done.len(),
        "failures": failures,
        "nothingLeft": left.as_ref().map_or_else(|why| json!(why), |()| json!(true)),
        "wallMs": (wall_ms * 10.0).round() / 10.0,
        "acquireMs": stats(&done.iter().map(|l| l.acquire_ms).collect::<Vec<_>>()),
        "readyToFirstChunkMs": stats(&first_chunk),
        "readyToExecuteEndMs": stats(&over_ready(|l| l.execute_done_at)),
        "readyMissed": done.len() - first_chunk.len(),
        "executeMs": stats(&done.iter().map(|l| l.execute_ms).collect::<Vec<_>>()),
        "syncInMs": stats(&done.iter().map(|l| l.sync_in_ms).collect::<Vec<_>>()),
        "syncOutMs": stats(&done.iter().map(|l| l.sync_out_ms).collect::<Vec<_>>()),
        "releaseMs": stats(&done.iter().map(|l| l.release_ms).collect::<Vec<_>>()),
        "chunksPerExecute": stats(&done.iter().map(|l| l.chunks as f64).collect::<Vec<_>>()),
        "workerCpuMs": (cpu * 10.0).round() / 10.0,
        "workerRssBeforeMiB": rss_before,
        "workerPeakRssMiB": peak,
    })
}

/// A panic's message, from a task that panicked.
fn panic_text(error: tokio::task::JoinError) -> String {
    match error.try_into_panic() {
        Ok(panic) => panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "a panic".into()),
        Err(error) => error.to_string(),
    }
}

/// What the tenant namespace `ns` still holds (Sandboxes of API `version`) of the leases `names`: every Sandbox and pod (the
/// namespace is this run's), the Secrets and policies named after a lease.
async fn left_in(
    admin: &Client,
    (ns, version): (&str, &str),
    names: &[String],
) -> Result<Vec<String>, String> {
    let mut left = Vec::new();
    for (list, whole) in [
        (
            format!("/apis/agents.x-k8s.io/{version}/namespaces/{ns}/sandboxes"),
            true,
        ),
        (format!("/api/v1/namespaces/{ns}/pods"), true),
        (format!("/api/v1/namespaces/{ns}/secrets"), false),
        (
            format!("/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies"),
            false,
        ),
        (
            format!("/apis/cilium.io/v2/namespaces/{ns}/ciliumnetworkpolicies"),
            false,
        ),
    ] {
        let (status, body) = support::get(admin, &list).await;
        match status {
            200 => {}
            // Cilium's policies are served where Cilium is installed only.
            404 if list.contains("cilium") => continue,
            _ => return Err(format!("GET {list}: {status}")),
        }
        for item in support::items(&body) {
            let name = item["metadata"]["name"].as_str().unwrap_or("").to_string();
            if whole || names.iter().any(|lease| name.starts_with(lease.as_str())) {
                left.push(format!("{list}: {name}"));
            }
        }
    }
    Ok(left)
}

/// Waits (at most [`CLEAN_WITHIN`]) until [`left_in`] is empty; the failure names what stayed.
async fn nothing_left(
    admin: Client,
    ns: String,
    version: String,
    names: Vec<String>,
) -> Result<(), String> {
    let check = tokio::spawn(async move {
        poll(format!("{ns} to hold nothing of the leases"), CLEAN_WITHIN)
            .every(Duration::from_millis(250))
            .until_async(|| async {
                match left_in(&admin, (&ns, &version), &names).await {
                    Ok(left) if left.is_empty() => Ok(()),
                    Ok(left) => Err(format!("left: {left:?}")),
                    Err(why) => Err(why),
                }
            })
            .await
    });
    check.await.map_err(panic_text)
}

fn markdown(report: &Value) -> String {
    let runs = report["runs"].as_array().cloned().unwrap_or_default();
    // The machine as the real node's run saw it (its Kubernetes, its agent-sandbox).
    let m = &runs
        .iter()
        .rev()
        .find(|r| r["target"] == "real-node")
        .or(runs.last())
        .map_or(json!({}), |r| r["machine"].clone());
    let mut lines = vec![
        "# Twenty leases at once".to_string(),
        String::new(),
        format!(
            "Machine: nproc {}, {} GiB RAM, {}, Linux {}; Kubernetes {} (single node: containerd, runc, kubelet, scheduler), agent-sandbox {}; bench built {}.",
            m["nproc"],
            m["memoryGiB"],
            m["cpuModel"].as_str().unwrap_or("?"),
            m["kernel"].as_str().unwrap_or("?"),
            m["kubernetes"].as_str().unwrap_or("?"),
            m["agentSandbox"].as_str().unwrap_or("?"),
            m["build"].as_str().unwrap_or("?")
        ),
        format!(
            "Run: {} -> {}.",
            report["startedAt"].as_str().unwrap_or("?"),
            report["finishedAt"].as_str().unwrap_or("?")
        ),
        String::new(),
        "```sh".into(),
        "cargo bench -p kubernetes --bench twenty_leases   # as root; npm run bench:leases".into(),
        "```".into(),
        String::new(),
        format!(
            "One worker (one `KubernetesProvider` on the addon's runtime: {} thread(s)), {} sandbox-cr leases started together, each: acquire, `execute` of a command writing 1 MiB to stdout (streamed to a sink that counts the chunks), `syncIn` of a 1 MiB file of random bytes, `syncOut` of it into a fresh directory (compared byte for byte), `release`. Then the tenant namespace is listed until it holds nothing of any lease (Sandboxes, pods, Secrets, policies). The emulator is the project's Kubernetes emulator (default timings: a pod runs 300 ms after it is created; commands run in bubblewrap on this host) in a process of its own.",
            report["runtimeThreads"], report["leases"]
        ),
        String::new(),
        "| figure | emulator | real node |".into(),
        "|---|---|---|".into(),
    ];
    let of = |name: &str| {
        runs.iter()
            .find(|r| r["target"] == name)
            .cloned()
            .unwrap_or(json!({}))
    };
    let (emu, real) = (of("emulator"), of("real-node"));
    let cell = |r: &Value, key: &str, pick: &str| -> String {
        let v = &r[key][pick];
        if v.is_null() {
            "-".into()
        } else {
            v.to_string()
        }
    };
    let plain = |r: &Value, key: &str| -> String {
        let v = &r[key];
        if v.is_null() {
            "-".into()
        } else {
            v.to_string().trim_matches('"').to_string()
        }
    };
    let load = |r: &Value| r["machine"]["loadavg"].as_str().unwrap_or("-").to_string();
    lines.push(format!(
        "| load average at the run's start | {} | {} |",
        load(&emu),
        load(&real)
    ));
    lines.push(format!(
        "| leases succeeded | {} | {} |",
        plain(&emu, "succeeded"),
        plain(&real, "succeeded")
    ));
    lines.push(format!(
        "| nothing left after release | {} | {} |",
        plain(&emu, "nothingLeft"),
        plain(&real, "nothingLeft")
    ));
    for (label, key) in [
        ("acquire (ms)", "acquireMs"),
        (
            "pod Ready -> first execute's first chunk (ms)",
            "readyToFirstChunkMs",
        ),
        (
            "pod Ready -> first execute's end (ms)",
            "readyToExecuteEndMs",
        ),
        ("execute of 1 MiB, whole hook (ms)", "executeMs"),
        ("syncIn 1 MiB (ms)", "syncInMs"),
        ("syncOut 1 MiB (ms)", "syncOutMs"),
        ("release (ms)", "releaseMs"),
        ("chunks per 1 MiB execute", "chunksPerExecute"),
    ] {
        for pick in ["p50", "p95"] {
            lines.push(format!(
                "| {label} {pick} | {} | {} |",
                cell(&emu, key, pick),
                cell(&real, key, pick)
            ));
        }
    }
    for (label, key) in [
        (
            "first execute's pod Ready not seen as a transition (not counted)",
            "readyMissed",
        ),
        ("wall time, first acquire to last release (ms)", "wallMs"),
        ("worker CPU, user + system, for the run (ms)", "workerCpuMs"),
        ("worker RSS before the run (MiB)", "workerRssBeforeMiB"),
        ("worker peak RSS, VmHWM (MiB)", "workerPeakRssMiB"),
    ] {
        lines.push(format!(
            "| {label} | {} | {} |",
            plain(&emu, key),
            plain(&real, key)
        ));
    }
    lines.push(String::new());
    lines.push("The first execute starts as soon as its acquire returns and waits for the Sandbox to be Ready; its time over the pod's own `Ready` transition (seen by an admin watch of all pods, on a thread of its own) is the provider's ready-wait under load plus the exec's start and the first 1 MiB frame's way to the sink. Worker CPU is `getrusage(RUSAGE_SELF)` of this process over the run (the emulator's and the node's processes are not in it); peak RSS is `VmHWM` after resetting it (`/proc/self/clear_refs` = 5) before the run. p50 and p95 are nearest-rank.".into());
    for r in &runs {
        for failure in r["failures"].as_array().into_iter().flatten() {
            lines.push(format!(
                "\nFailed on {}: {}",
                r["target"].as_str().unwrap_or("?"),
                failure.as_str().unwrap_or("?")
            ));
        }
    }
    lines.join("\n") + "\n"
}

async fn run() {
    let leases: usize = std::env::var("PAPERCLIP_BENCH_LEASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let targets =
        std::env::var("PAPERCLIP_BENCH_TARGETS").unwrap_or_else(|_| "emulator,real-node".into());
    let targets: Vec<&str> = targets.split(',').map(str::trim).collect();
    let started_at = js_compat::date::now_iso_string();
    let mut runs = Vec::new();
    for name in &targets {
        let target = match *name {
            "emulator" => start_emulator(),
            "real-node" => start_real_node().await,
            other => panic!("PAPERCLIP_BENCH_TARGETS: unknown target {other}"),
        };
        runs.push(run_target(&target, leases).await);
        eprintln!(
            "{}",
            serde_json::to_string_pretty(runs.last().unwrap()).unwrap()
        );
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let report = json!({"startedAt": started_at, "finishedAt": js_compat::date::now_iso_string(),
        "leases": leases, "runtimeThreads": cores.saturating_sub(1).max(1), "runs": runs});
    let md = markdown(&report);
    if targets.contains(&"emulator") && targets.contains(&"real-node") {
        let dir = support::repo_root().join("bench/results");
        std::fs::create_dir_all(&dir).expect("bench/results");
        let text = serde_json::to_string_pretty(&report).unwrap() + "\n";
        std::fs::write(dir.join("twenty-leases.json"), text).expect("write the json");
        std::fs::write(dir.join("twenty-leases.md"), &md).expect("write the report");
    }
    print!("{md}");
    for run in &runs {
        assert_eq!(
            run["succeeded"], leases,
            "{}: {}",
            run["target"], run["failures"]
        );
        assert_eq!(
            run["nothingLeft"], true,
            "{}: {}",
            run["target"], run["nothingLeft"]
        );
    }
}
