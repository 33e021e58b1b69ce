//! What the real-node benches share in their reports: the machine they ran on (so that a figure
//! is never read without its machine) and the summary of a sample.

use serde_json::{Value, json};

/// p50, p95 (nearest rank), mean, min, max, rounded to 0.1.
pub fn stats(values: &[f64]) -> Value {
    if values.is_empty() {
        return json!({"n": 0});
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank =
        |p: f64| sorted[((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1];
    let round = |v: f64| (v * 10.0).round() / 10.0;
    json!({"n": sorted.len(), "p50": round(rank(0.50)), "p95": round(rank(0.95)),
        "mean": round(sorted.iter().sum::<f64>() / sorted.len() as f64),
        "min": round(sorted[0]), "max": round(sorted[sorted.len() - 1])})
}

/// The API server's `gitVersion`; a build from source without version stamps reports
/// `v0.0.0-master…`, and then the release `scripts/real-cluster/build.sh` built is named from its
/// cache directory (`~/.cache/paperclip-sandbox/kube-v<version>`).
fn kubernetes_version(version: &Value) -> Value {
    let reported = version["gitVersion"].as_str().unwrap_or_default();
    if !reported.starts_with("v0.0.0") {
        return json!(reported);
    }
    let cache = std::env::var("HOME").map(|home| format!("{home}/.cache/paperclip-sandbox"));
    let built: Vec<String> = cache
        .ok()
        .and_then(|dir| std::fs::read_dir(dir).ok())
        .into_iter()
        .flatten()
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter_map(|name| name.strip_prefix("kube-").map(str::to_string))
        .collect();
    match built.as_slice() {
        [one] => json!(format!("{one} (built from source)")),
        _ => json!(reported),
    }
}

/// The machine: cores, memory, CPU model, kernel, load average now, the cluster's Kubernetes
/// version (`version` is its `/version` answer) and agent-sandbox release, and the build.
pub fn machine(version: &Value, agent_sandbox: Option<&str>) -> Value {
    let read = |path: &str| std::fs::read_to_string(path).unwrap_or_default();
    let cpuinfo = read("/proc/cpuinfo");
    let cpu = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map(|l| l.trim_start_matches([' ', '\t', ':']).to_string());
    let memory_kib = read("/proc/meminfo")
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|l| l.trim().trim_end_matches(" kB").parse::<u64>().ok());
    json!({
        "nproc": std::thread::available_parallelism().map_or(0, usize::from),
        "memoryGiB": memory_kib.map(|k| (k as f64 / 1024.0 / 1024.0 * 10.0).round() / 10.0),
        "cpuModel": cpu,
        "kernel": read("/proc/sys/kernel/osrelease").trim(),
        "loadavg": read("/proc/loadavg").split_whitespace().take(3).collect::<Vec<_>>().join(" "),
        "kubernetes": kubernetes_version(version),
        "agentSandbox": agent_sandbox,
        "build": if cfg!(debug_assertions) { "debug" } else { "release" },
    })
}
