//! Reliability soak: many lease lifecycles against the Kubernetes API
//! emulator (real kube-rs client over HTTPS, real exec over websocket) with random faults
//! injected through its fault API: 5xx and 409 Status replies, delays, dropped connections, cut
//! exec and watch streams, slow pod readiness, and failures of each acquire step after the
//! workload is created (the Secret POST, the follow-up Sandbox GET or pod list, the policy POSTs),
//! which the acquire must clean up after itself. Two of these run on a schedule with no other
//! fault, so every run has them: a 500 on the follow-up Sandbox GET and a dropped Secret POST.
//!
//! Checked: every failure is a catalogued message (`error_catalog::explain`) or a Kubernetes API
//! Status message passed through with its numeric code (as the original does); the canary
//! kubeconfig token never shows up in an error, a log line, a streamed chunk or a result; after
//! every acquired lease is destroyed, no pod, Sandbox, Job, Secret or per-lease policy is left in
//! the tenant namespace and no process is alive.
//!
//! Size: `PAPERCLIP_SOAK_LIFECYCLES=N`, or `PAPERCLIP_SOAK=long` for 1,000 lifecycles (default
//! 16). Seed: `PAPERCLIP_SOAK_SEED=N` replays a run; the seed is printed either way.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use emulator::kubernetes::{FaultRule, KubeEmulatorOptions, KubernetesEmulator, SettingsPatch};
use kubernetes::KubernetesProvider;
use kubernetes::hooks::ACQUIRE_CLEANUP_INCOMPLETE;
use sandbox_core::soak::{self, SoakRng};
use sandbox_core::{BoxFuture, HostSink, LogLevel, OutputStream, ProviderError};
use serde_json::json;

#[allow(dead_code)]
#[path = "support/emulator.rs"]
mod emulator_support;
use emulator_support::{NS, config, job_shim_override, leaked, until_clean};

const DEFAULT_LIFECYCLES: usize = 16;
const LONG_LIFECYCLES: usize = 1000;
const CANARY: &str = "canary-kube-token-7f3e2a91c4";

/// Failures whose message belongs to a dependency rather than to the catalogue (passed
/// through unchanged), each allowed with its reason. `None`: not a pass-through.
fn pass_through(error: &ProviderError) -> Option<&'static str> {
    if error.code.is_some_and(|c| (100..600).contains(&c)) {
        // client-node's ApiException: the API Status message, with `code` = HTTP status.
        return Some("Kubernetes API Status (numeric code)");
    }
    let m = error.message.as_str();
    // The HTTP client's own transport errors (the original passes Node's fetch errors through
    // the same way); kube-rs prefixes them with its error kind.
    if ["ServiceError: ", "HyperError: ", "HttpError: "]
        .iter()
        .any(|p| m.starts_with(p))
    {
        return Some("HTTP client transport error");
    }
    None
}

/// Everything the host could see: log lines, streamed chunks and notifications.
#[derive(Default)]
struct Recorder {
    seen: Mutex<Vec<String>>,
}

impl Recorder {
    fn push(&self, text: String) {
        self.seen.lock().unwrap().push(text);
    }
    fn assert_no_canary(&self) {
        for line in self.seen.lock().unwrap().iter() {
            assert!(
                !line.contains(CANARY),
                "the token leaked to the host: {line}"
            );
        }
    }
}

impl HostSink for Recorder {
    fn log(&self, level: LogLevel, message: &str) {
        self.push(format!("{level:?} {message}"));
    }
    fn execution_log(&self, stream: OutputStream, chunk: String) -> BoxFuture<'_, ()> {
        self.push(format!("{stream:?} {chunk}"));
        Box::pin(async {})
    }
    fn login_output(&self, a: &str, b: &str, chunk: String) {
        self.push(format!("login {a} {b} {chunk}"));
    }
    fn login_exit(&self, a: &str, b: &str, code: Option<i32>) {
        self.push(format!("login-exit {a} {b} {code:?}"));
    }
    fn duplex_data(&self, a: &str, b: &str, data: Vec<u8>) {
        self.push(format!("duplex {a} {b} {}", String::from_utf8_lossy(&data)));
    }
    fn duplex_exit(&self, a: &str, b: &str, code: Option<i32>, x: bool) {
        self.push(format!("duplex-exit {a} {b} {code:?} {x}"));
    }
}

/// Fault targets: (method, path pattern, is an exec or watch stream).
const ROUTES: &[(&str, &str)] = &[
    ("GET", "/api/v1/namespaces/*"),
    ("POST", "/api/v1/namespaces/*/secrets"),
    ("GET", "/api/v1/namespaces/*/pods/*"),
    ("GET", "/api/v1/namespaces/*/pods"),
    ("POST", "/apis/agents.x-k8s.io/*/namespaces/*/sandboxes"),
    ("GET", "/apis/agents.x-k8s.io/*/namespaces/*/sandboxes/*"),
    ("DELETE", "/apis/agents.x-k8s.io/*/namespaces/*/sandboxes/*"),
    ("POST", "/apis/batch/v1/namespaces/*/jobs"),
    ("DELETE", "/apis/batch/v1/namespaces/*/jobs/*"),
    (
        "POST",
        "/apis/cilium.io/v2/namespaces/*/ciliumnetworkpolicies",
    ),
    ("PATCH", "/api/v1/namespaces/*/secrets/*"),
];

/// A failure of one acquire step after the workload claim (G-sync/egress cleanup).
fn after_claim_fault(rng: &mut SoakRng, backend: &str) -> FaultRule {
    let (method, path, nth) = *rng.pick(&[
        ("POST", "/api/v1/namespaces/*/secrets", 1u64),
        (
            "POST",
            "/apis/cilium.io/v2/namespaces/*/ciliumnetworkpolicies",
            1,
        ),
        (
            "POST",
            "/apis/cilium.io/v2/namespaces/*/ciliumnetworkpolicies",
            2,
        ),
        if backend == "job" {
            ("GET", "/api/v1/namespaces/*/pods", 1)
        } else {
            ("GET", "/apis/agents.x-k8s.io/*/namespaces/*/sandboxes/*", 1)
        },
    ]);
    serde_json::from_value(json!({
        "method": method, "path": path, "nth": nth, "times": 1,
        "action": {"kind": "status", "code": *rng.pick(&[500u16, 503]), "after": false},
    }))
    .expect("a valid fault rule")
}

/// The two acquire failures every run injects on a schedule (every 8th lifecycle each, from the
/// 4th and the 8th), with no other fault: a 500 on the follow-up GET of the Sandbox just
/// created, and a Secret POST whose connection is dropped without a reply. Either way the
/// acquire must delete what it created.
const CLEANUP_FAULTS: &[(&str, &str, &str)] = &[
    (
        "500 on the follow-up Sandbox GET",
        "GET",
        "/apis/agents.x-k8s.io/*/namespaces/*/sandboxes/*",
    ),
    (
        "dropped Secret POST",
        "POST",
        "/api/v1/namespaces/*/secrets",
    ),
];

fn scheduled_cleanup_fault(lifecycle: usize) -> Option<usize> {
    match lifecycle % 8 {
        3 => Some(0),
        7 => Some(1),
        _ => None,
    }
}

fn cleanup_fault(which: usize) -> FaultRule {
    let (_, method, path) = CLEANUP_FAULTS[which];
    let action = if which == 0 {
        json!({"kind": "status", "code": 500, "after": false})
    } else {
        json!({"kind": "drop", "after": false})
    };
    serde_json::from_value(json!({"method": method, "path": path, "nth": 1, "times": 1,
        "action": action}))
    .expect("a valid fault rule")
}

fn random_fault(rng: &mut SoakRng) -> FaultRule {
    let stream = rng.chance(20);
    let (method, path, action) = if stream {
        if rng.chance(60) {
            (
                None,
                "/api/v1/namespaces/*/pods/*/exec".to_string(),
                json!({"kind": "cutExec", "afterFrames": rng.below(3), "abort": rng.chance(50)}),
            )
        } else {
            (
                Some("GET"),
                "/**".to_string(),
                json!({"kind": *rng.pick(&["cutWatch", "expireWatch"]), "afterEvents": rng.below(2)}),
            )
        }
    } else {
        let (method, path) = *rng.pick(ROUTES);
        // Never `after: true` on a create: an object created behind a replaced reply is one the
        // client may not know of (the original cannot clean it up either).
        let after = method != "POST" && rng.chance(30);
        let action = match rng.below(6) {
            0 | 1 => {
                json!({"kind": "status", "code": *rng.pick(&[500u16, 502, 503, 504]), "after": after})
            }
            2 => json!({"kind": "status", "code": 409, "after": after}),
            3 | 4 => json!({"kind": "delay", "ms": 20 + rng.below(200)}),
            _ => json!({"kind": "drop", "after": after}),
        };
        (Some(method), path.to_string(), action)
    };
    serde_json::from_value(json!({
        "method": method, "path": path, "nth": 1 + rng.below(3), "times": 1 + rng.below(2),
        "action": action,
    }))
    .expect("a valid fault rule")
}

#[derive(Default)]
struct Tally {
    acquired: usize,
    /// Failed acquires that reported an incomplete cleanup and left their workload behind (see
    /// `orphans_of_failed_acquire`).
    orphaned: usize,
    executed: usize,
    failures: BTreeMap<String, usize>,
    /// Scheduled cleanup faults that fired, per kind (`CLEANUP_FAULTS`).
    cleanup_faults_fired: [usize; 2],
}

impl Tally {
    fn failed(&mut self, seed: u64, step: &str, error: &ProviderError) {
        let message = &error.message;
        assert!(
            !message.contains(CANARY),
            "seed {seed}: token leaked: {message}"
        );
        let code = match error_catalog::explain(message) {
            Some(entry) => entry.code.to_owned(),
            None => match pass_through(error) {
                Some(kind) => format!("pass-through: {kind}"),
                None => panic!("seed {seed}: uncatalogued error from {step}: {error:?}"),
            },
        };
        *self.failures.entry(format!("{step}: {code}")).or_default() += 1;
    }
}

/// Workloads created by an acquire that then failed, as `(name, plural)`.
///
/// A failed acquire deletes what it created (G-sync/egress cleanup), so this is empty unless
/// the cleanup itself failed (a fault hit its deletes too), which the acquire reports with the
/// fixed "cleanup was incomplete" message. Then the soak plays the operator: it finds the
/// created workload in the emulator's request log and destroys it with the provider's own
/// destroy hook, and checks that this removes everything.
fn orphans_of_failed_acquire(emu: &KubernetesEmulator) -> Vec<(String, String)> {
    emu.request_log()
        .into_iter()
        .filter(|r| r.verb.as_deref() == Some("create"))
        .filter_map(|r| {
            let plural = r.resource.clone()?;
            if plural != "sandboxes" && plural != "jobs" {
                return None;
            }
            let name = r.body_json.as_ref()?["metadata"]["name"]
                .as_str()?
                .to_string();
            emu.object(
                if plural == "jobs" {
                    "batch"
                } else {
                    "agents.x-k8s.io"
                },
                &plural,
                NS,
                &name,
            )
            // Being deleted (Foreground: it stays until its pod is gone) is not left behind.
            .filter(|object| object["metadata"]["deletionTimestamp"].is_null())
            .map(|_| (name, plural))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fault_injection_soak_leaks_nothing_and_fails_only_with_catalogued_errors() {
    let seed = soak::seed();
    let n = soak::lifecycles(DEFAULT_LIFECYCLES, LONG_LIFECYCLES);
    println!("kubernetes soak: seed {seed} (PAPERCLIP_SOAK_SEED={seed}), {n} lifecycles");
    eprintln!("kubernetes soak: seed {seed} (PAPERCLIP_SOAK_SEED={seed}), {n} lifecycles");
    let mut rng = SoakRng::new(seed);
    let mut opts = KubeEmulatorOptions::for_tests();
    opts.token = Some(CANARY.into());
    opts.command_overrides = job_shim_override();
    let emu = KubernetesEmulator::start(opts)
        .await
        .expect("emulator starts");
    let base_ready = emu.settings().pod_ready_delay_ms;
    let provider = KubernetesProvider::new();
    let sink = Recorder::default();
    let mut tally = Tally::default();
    let mut results: Vec<String> = Vec::new();
    let started = Instant::now();

    for i in 0..n {
        emu.clear_faults();
        let scheduled = scheduled_cleanup_fault(i);
        let backend = if scheduled.is_some() {
            "sandbox-cr"
        } else {
            *rng.pick(&["sandbox-cr", "sandbox-cr", "job"])
        };
        let config = config(&emu, backend);
        // Slow readiness for a quarter of the lifecycles.
        let ready = if rng.chance(25) {
            100 + rng.below(400)
        } else {
            base_ready
        };
        emu.update_settings(SettingsPatch {
            pod_ready_delay_ms: Some(ready),
            ..SettingsPatch::default()
        });
        if let Some(which) = scheduled {
            emu.add_fault(cleanup_fault(which));
        } else {
            for _ in 0..rng.below(3) {
                emu.add_fault(random_fault(&mut rng));
            }
            if rng.chance(25) {
                emu.add_fault(after_claim_fault(&mut rng, backend));
            }
        }
        emu.clear_request_log();
        let acquired = provider
            .acquire_lease(
                &json!({"config": config, "companyId": "c-1", "environmentId": "e-1",
                    "runId": format!("run-{i}")}),
                &sink,
            )
            .await;
        results.push(format!("{acquired:?}"));
        if let Some(which) = scheduled
            && emu.faults().iter().any(|f| f.fired > 0)
        {
            tally.cleanup_faults_fired[which] += 1;
        }
        let lease = match acquired {
            Ok(lease) => lease,
            Err(error) => {
                tally.failed(seed, "acquire", &error);
                let faults = emu.faults();
                emu.clear_faults();
                let orphans = orphans_of_failed_acquire(&emu);
                assert!(
                    orphans.is_empty() || error.message == ACQUIRE_CLEANUP_INCOMPLETE,
                    "seed {seed}, lifecycle {i}: acquire failed with {error:?} and left {orphans:?} under {faults:?}"
                );
                if !orphans.is_empty() {
                    tally.orphaned += 1;
                    for (name, kind) in orphans {
                        let backend = if kind == "jobs" { "job" } else { "sandbox-cr" };
                        let params = json!({"config": config, "companyId": "c-1",
                            "providerLeaseId": name,
                            "leaseMetadata": {"namespace": NS, "backend": backend}});
                        let destroyed = provider.destroy_lease(&params, &sink).await;
                        results.push(format!("{destroyed:?}"));
                        assert!(
                            destroyed.is_ok(),
                            "seed {seed}: orphan destroy: {destroyed:?}"
                        );
                    }
                }
                until_clean(
                    &emu,
                    &format!(
                        "seed {seed}, lifecycle {i} ({backend}), acquire failed with {error:?} under {faults:?}"
                    ),
                    Duration::from_secs(15),
                )
                .await;
                continue;
            }
        };
        tally.acquired += 1;
        let id = lease["providerLeaseId"].clone();
        let lease_json = json!({"providerLeaseId": id, "metadata": lease["metadata"]});
        let exec = if backend == "job" {
            json!({"config": config, "companyId": "c-1", "lease": lease_json, "timeoutMs": 30000})
        } else if rng.chance(15) {
            json!({"config": config, "companyId": "c-1", "lease": lease_json, "timeoutMs": 200,
                "command": "sleep", "args": ["5"]})
        } else {
            // Short: a cut exec is reported when this watchdog fires, as in the original.
            json!({"config": config, "companyId": "c-1", "lease": lease_json, "timeoutMs": 6000,
                "command": "sh", "args": ["-c", "echo soak"]})
        };
        let result = provider.execute(&exec, &sink).await;
        results.push(format!("{result:?}"));
        match result {
            Ok(_) => tally.executed += 1,
            Err(error) => tally.failed(seed, "execute", &error),
        }
        let params = json!({"config": config, "companyId": "c-1", "providerLeaseId": id,
            "leaseMetadata": lease["metadata"]});
        let released = provider.release_lease(&params, &sink).await;
        results.push(format!("{released:?}"));
        if let Err(error) = released {
            tally.failed(seed, "release", &error);
        }
        emu.clear_faults();
        emu.update_settings(SettingsPatch {
            pod_ready_delay_ms: Some(base_ready),
            ..SettingsPatch::default()
        });
        let destroyed = provider.destroy_lease(&params, &sink).await;
        results.push(format!("{destroyed:?}"));
        if let Err(error) = destroyed {
            panic!("seed {seed}, lifecycle {i}: destroy without faults fails: {error:?}");
        }
        until_clean(
            &emu,
            &format!("seed {seed}, lifecycle {i} ({backend})"),
            Duration::from_secs(15),
        )
        .await;
    }

    println!(
        "kubernetes soak: seed {seed}: {n} lifecycles in {:?}; {} acquired, {} executed; {} failed acquires could not clean up; failures {:#?}",
        started.elapsed(),
        tally.acquired,
        tally.executed,
        tally.orphaned,
        tally.failures
    );
    // Nothing of any lifecycle is left: no pod, Sandbox, Job, Secret or per-lease policy.
    let left = leaked(&emu);
    assert!(left.is_empty(), "seed {seed}: left at the end: {left:?}");
    if n >= 8 {
        for (which, (kind, _, _)) in CLEANUP_FAULTS.iter().enumerate() {
            let fired = tally.cleanup_faults_fired[which];
            println!("kubernetes soak: {kind}: injected {fired} times");
            assert!(fired > 0, "seed {seed}: the {kind} never fired");
        }
    }
    let kinds: BTreeSet<&str> = tally.failures.keys().map(String::as_str).collect();
    println!("kubernetes soak: failure kinds {kinds:?}");
    for text in &results {
        assert!(
            !text.contains(CANARY),
            "seed {seed}: token in a result: {text}"
        );
    }
    sink.assert_no_canary();
    emu.shutdown().await;
}
