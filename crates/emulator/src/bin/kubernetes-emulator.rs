//! `kubernetes-emulator`: runs the Kubernetes API emulator as a process for Node tests.
//!
//! Contract: prints exactly one JSON line to stdout once it is serving —
//! `{"url":"https://127.0.0.1:P","httpUrl":"http://127.0.0.1:Q","httpsUrl":"https://127.0.0.1:P",
//!   "token":"…","kubeconfig":"/tmp/…/kubeconfig.yaml","kubeconfigHttp":"/tmp/…/kubeconfig-http.yaml",
//!   "kubeconfigYaml":"…","caPem":"…","controlUrl":"http://127.0.0.1:Q/_emulator","pid":N}`
//! (`url` and `kubeconfig` are HTTPS unless `--no-tls`; `httpsUrl`/`caPem` are then null) —
//! then serves until its stdin reaches EOF or it receives SIGTERM/SIGINT, and exits 0 after
//! killing every pod process and removing its directories. Start-up failures (e.g. bubblewrap
//! missing) go to stderr with exit code 2.

use std::time::Duration;

use emulator::common::lifecycle;
use emulator::kubernetes::{KubeEmulatorOptions, KubernetesEmulator};

const USAGE: &str = "usage: kubernetes-emulator [--token T] [--forbidden-token T]... [--no-tls] \
[--http-port N] [--https-port N] [--sandbox-versions v1alpha1,v1beta1] [--no-sandbox-phase] \
[--sandbox-pod-name] [--sandbox-pod-suffix] [--ready-delay-ms N] [--termination-delay-ms N] \
[--deadline-second-ms N] [--bookmark-ms N] [--exec-protocols v5.channel.k8s.io,v4.channel.k8s.io] \
[--command-override PATH=JSON_ARGV]... [--no-pod-commands] [--namespace NS]... [--work-dir DIR] \
[--fast] [--no-stdin]";

fn list(v: &str) -> Vec<String> {
    v.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

fn parse_args() -> Result<(KubeEmulatorOptions, bool), String> {
    let mut opts = KubeEmulatorOptions::default();
    let mut watch_stdin = true;
    let mut extra_namespaces = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        match flag.as_str() {
            "--no-stdin" => watch_stdin = false,
            "--no-tls" => opts.tls = false,
            "--no-sandbox-phase" => opts.sandbox_phase = false,
            "--sandbox-pod-name" => opts.sandbox_pod_name = true,
            "--sandbox-pod-suffix" => opts.sandbox_pod_suffix = true,
            "--no-pod-commands" => opts.run_pod_commands = false,
            "--fast" => {
                let fast = KubeEmulatorOptions::for_tests();
                opts.pod_ready_delay = fast.pod_ready_delay;
                opts.deadline_second = fast.deadline_second;
                opts.job_retry_delay = fast.job_retry_delay;
                opts.bookmark_interval = fast.bookmark_interval;
            }
            "--help" | "-h" => return Err(USAGE.into()),
            _ => {
                let value = lifecycle::flag_value(&mut args, &flag, USAGE)?;
                let num = || lifecycle::flag_number(&flag, &value);
                match flag.as_str() {
                    "--token" => opts.token = Some(value.clone()),
                    "--forbidden-token" => opts.forbidden_tokens.push(value.clone()),
                    "--http-port" => opts.http_port = num()? as u16,
                    "--https-port" => opts.https_port = num()? as u16,
                    "--sandbox-versions" => opts.sandbox_versions = list(&value),
                    "--ready-delay-ms" => opts.pod_ready_delay = Duration::from_millis(num()?),
                    "--termination-delay-ms" => {
                        opts.pod_termination_delay = Duration::from_millis(num()?)
                    }
                    "--deadline-second-ms" => opts.deadline_second = Duration::from_millis(num()?),
                    "--bookmark-ms" => opts.bookmark_interval = Duration::from_millis(num()?),
                    "--exec-protocols" => opts.exec_protocols = list(&value),
                    "--namespace" => extra_namespaces.push(value.clone()),
                    "--work-dir" => opts.work_dir = Some(value.clone().into()),
                    "--command-override" => {
                        let (path, argv) = value.split_once('=').ok_or_else(|| {
                            format!("--command-override wants PATH=JSON_ARGV, got {value}")
                        })?;
                        let argv: Vec<String> = serde_json::from_str(argv)
                            .map_err(|e| format!("--command-override {path}: {e}"))?;
                        opts.command_overrides.insert(path.to_string(), argv);
                    }
                    _ => return Err(format!("unknown option {flag}\n{USAGE}")),
                }
            }
        }
    }
    opts.namespaces.extend(extra_namespaces);
    Ok((opts, watch_stdin))
}

#[tokio::main]
async fn main() {
    let (opts, watch_stdin) = parse_args().unwrap_or_else(|msg| lifecycle::exit_with_error(msg));
    let emulator = KubernetesEmulator::start(opts)
        .await
        .unwrap_or_else(|e| lifecycle::exit_with_error(format!("kubernetes-emulator: {e}")));
    let ready = serde_json::json!({
        "url": emulator.url(),
        "httpUrl": emulator.http_url(),
        "httpsUrl": emulator.https_url(),
        "token": emulator.token(),
        "kubeconfig": emulator.kubeconfig_path(),
        "kubeconfigHttp": emulator.kubeconfig_http_path(),
        "kubeconfigYaml": emulator.kubeconfig_yaml(),
        "caPem": emulator.ca_pem(),
        "controlUrl": emulator.control_url(),
        "pid": std::process::id(),
    });
    lifecycle::announce_and_wait(&ready, watch_stdin).await;
    emulator.shutdown().await;
    lifecycle::exit_cleanly();
}
