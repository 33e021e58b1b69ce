//! Reliability soak: many lease lifecycles against the CreateOS emulator
//! with random faults injected through its fault API (5xx, 409, delays, dropped connections,
//! cut exec streams, malformed/unsuccessful/invalid replies, slow readiness, command timeouts).
//!
//! Also: creates whose reply is lost after the sandbox was made (`after: true` on
//! `POST /v1/sandboxes`, at random and in about one lifecycle in ten on purpose), and worker
//! shutdowns while an acquire or a probe waits on a slow reply.
//!
//! Checked: every failure is a catalogued message (`error_catalog::explain`) or an explicitly
//! allowed pass-through; the canary API key never shows up in an error, a log line, a streamed
//! chunk or a result; after every acquired lease is destroyed, the emulator has no sandbox and no
//! live process left.
//!
//! Size: `PAPERCLIP_SOAK_LIFECYCLES=N`, or `PAPERCLIP_SOAK=long` for 1,000 lifecycles (default
//! 40). Seed: `PAPERCLIP_SOAK_SEED=N` replays a run; the seed is printed either way (run with
//! `--nocapture` to see it on success; it is also in every failure message).

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::*;
use sandbox_core::poll::poll;
use sandbox_core::soak::{self, SoakRng};
use serde_json::{Value, json};

/// Lifecycles without the long switch: a few seconds on two busy cores.
const DEFAULT_LIFECYCLES: usize = 40;
const LONG_LIFECYCLES: usize = 1000;

/// Messages the original passes through from the platform or the runtime rather than from its
/// catalogue, each with the reason it is allowed.
const PASS_THROUGH: &[(&str, &str)] = &[
    // An undici body-stream abort surfaces as `terminated` in the original (TypeError message).
    (
        "terminated",
        "undici's message for a response body cut mid-stream",
    ),
];

/// The API routes a lifecycle touches (fault targets).
const ROUTES: &[(&str, &str, Option<&str>)] = &[
    ("GET", "/v1/rootfs", None),
    ("POST", "/v1/sandboxes", None),
    ("GET", "/v1/sandboxes/*", None),
    ("POST", "/v1/sandboxes/*/exec", None),
    ("POST", "/v1/sandboxes/*/exec", Some("stream=true")),
    ("PUT", "/v1/sandboxes/*/files", None),
    ("DELETE", "/v1/sandboxes/*", None),
];

/// The routes an acquire waits on, where a shutdown is injected mid-acquire.
const ACQUIRE_ROUTES: &[(&str, &str)] = &[
    ("POST", "/v1/sandboxes"),
    ("GET", "/v1/sandboxes/*"),
    ("POST", "/v1/sandboxes/*/exec"),
    ("PUT", "/v1/sandboxes/*/files"),
];

/// The routes a probe waits on (it creates a sandbox, runs a command in it, deletes it).
const PROBE_ROUTES: &[(&str, &str, Option<&str>)] = &[
    ("POST", "/v1/sandboxes", None),
    ("GET", "/v1/sandboxes/*", None),
    ("POST", "/v1/sandboxes/*/exec", Some("stream=true")),
];

/// A create whose reply is lost after the sandbox was made: dropped, cut into a 5xx, or
/// replaced by an unreadable body.
fn lost_create(rng: &mut SoakRng) -> Value {
    let action = match rng.below(3) {
        0 => json!({"kind": "drop", "after": true}),
        1 => json!({"kind": "status", "status": *rng.pick(&[500u16, 502, 503]), "after": true}),
        _ => json!({"kind": "malformedJson", "after": true}),
    };
    json!({"method": "POST", "path": "/v1/sandboxes", "action": action})
}

/// One random fault rule. `after: true` on `POST /v1/sandboxes` is a create whose reply is lost
/// after the sandbox was made: the provider finds it by its ownership name and deletes it
/// so nothing is left behind; those are injected as often as on any other route.
fn random_fault(rng: &mut SoakRng) -> Value {
    let (method, path, query) = *rng.pick(ROUTES);
    let action = match rng.below(10) {
        8 | 9 => {
            let kind = *rng.pick(&["malformedJson", "unsuccessful", "invalidData"]);
            json!({"kind": kind, "after": rng.chance(30)})
        }
        0 | 1 => json!({"kind": "status", "status": *rng.pick(&[500u16, 502, 503, 504])}),
        2 => json!({"kind": "status", "status": 409}),
        3 => {
            json!({"kind": "status", "status": *rng.pick(&[500u16, 503]), "after": rng.chance(50)})
        }
        4 | 5 => json!({"kind": "delay", "ms": 20 + rng.below(180)}),
        6 => json!({"kind": "drop", "after": rng.chance(30)}),
        _ => {
            if query == Some("stream=true") {
                json!({"kind": "cutStream", "afterFrames": rng.below(3), "abort": rng.chance(50)})
            } else {
                json!({"kind": "status", "status": 500})
            }
        }
    };
    let mut rule = json!({"method": method, "path": path, "nth": 1 + rng.below(3), "times": 1 + rng.below(2), "action": action});
    if let Some(query) = query {
        rule["query"] = json!(query);
    }
    rule
}

/// The sandbox ID of "CreateOS … cleanup is unconfirmed for sandbox ${id}."
fn unconfirmed_sandbox(message: &str) -> Option<&str> {
    message
        .split_once("cleanup is unconfirmed for sandbox ")
        .and_then(|(_, rest)| rest.strip_suffix('.'))
}

/// The sandbox ID of the probe's worker-log warning "CreateOS probe could not delete sandbox
/// ${id}; …" (the probe itself rejects with the delete's own error).
fn not_deleted(line: &str) -> Option<&str> {
    line.strip_prefix("CreateOS probe could not delete sandbox ")
        .and_then(|rest| rest.split_once(';'))
        .map(|(id, _)| id)
}

/// The sandbox name of "CreateOS sandbox creation could not be confirmed … delete the sandbox
/// named ${name} if it exists."
fn unconfirmed_name(message: &str) -> Option<&str> {
    message
        .split_once("delete the sandbox named ")
        .and_then(|(_, rest)| rest.strip_suffix(" if it exists."))
}

/// What an operator does with an acquire error that names a sandbox (by id or name) left behind:
/// finds it and destroys it through the provider. Returns whether there was one.
async fn destroy_named_orphan(h: &Harness, seed: u64, message: &str) -> bool {
    h.emu.clear_faults();
    h.emu.settings().set_transition_delay(Duration::ZERO);
    let ids: Vec<String> = if let Some(id) = unconfirmed_sandbox(message).or(not_deleted(message)) {
        vec![id.to_owned()]
    } else if let Some(name) = unconfirmed_name(message) {
        h.emu
            .sandbox_views()
            .iter()
            .filter(|v| v["name"] == json!(name))
            .filter_map(|v| v["id"].as_str().map(str::to_owned))
            .collect()
    } else {
        return false;
    };
    for id in ids {
        let orphan = json!({ "providerLeaseId": id, "metadata": {
            "provider": "createos", "apiUrl": h.emu.base_url(),
            "companyId": COMPANY, "environmentId": ENVIRONMENT } });
        let params = h.lease_params(json!({}), &orphan);
        let destroyed = h.provider.destroy_lease(&params, &*h.sink).await;
        assert_eq!(destroyed, Ok(None), "seed {seed}: orphan destroy");
    }
    true
}

/// Tallies of what the soak saw, printed at the end.
#[derive(Default, Debug)]
struct Tally {
    acquired: usize,
    /// Acquires whose cleanup failed as well (the sandbox ID is in the error).
    unconfirmed: usize,
    executed: usize,
    /// Acquires interrupted by a worker shutdown.
    shutdowns: usize,
    /// Probes interrupted by a worker shutdown.
    probe_shutdowns: usize,
    /// Lifecycles whose first create had its reply lost on purpose.
    lost_creates: usize,
    failures: BTreeMap<String, usize>,
}

impl Tally {
    /// Checks one failure: catalogued or an allowed pass-through, never with the canary.
    fn failed(&mut self, seed: u64, step: &str, message: &str) {
        no_canary(message);
        let code = match error_catalog::explain(message) {
            Some(entry) => entry.code.to_owned(),
            None => match PASS_THROUGH.iter().find(|(m, _)| *m == message) {
                Some((m, _)) => format!("pass-through `{m}`"),
                None => panic!("seed {seed}: uncatalogued error from {step}: {message:?}"),
            },
        };
        *self.failures.entry(format!("{step}: {code}")).or_default() += 1;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fault_injection_soak_leaks_nothing_and_fails_only_with_catalogued_errors() {
    let seed = soak::seed();
    let n = soak::lifecycles(DEFAULT_LIFECYCLES, LONG_LIFECYCLES);
    println!("createos soak: seed {seed} (PAPERCLIP_SOAK_SEED={seed}), {n} lifecycles");
    eprintln!("createos soak: seed {seed} (PAPERCLIP_SOAK_SEED={seed}), {n} lifecycles");
    let mut rng = SoakRng::new(seed);
    let h = Harness::start().await;
    let started = Instant::now();
    let mut tally = Tally::default();

    for i in 0..n {
        h.emu.clear_faults();
        // Slow readiness: creating/destroying last a while, so the client polls.
        let transition = if rng.chance(25) {
            Duration::from_millis(50 + rng.below(250))
        } else {
            Duration::ZERO
        };
        h.emu.settings().set_transition_delay(transition);
        if rng.chance(10) {
            h.fault(lost_create(&mut rng));
            tally.lost_creates += 1;
        }
        for _ in 0..rng.below(3) {
            h.fault(random_fault(&mut rng));
        }
        let reuse = rng.chance(30);
        let params = h.run_params(json!({ "reuseLease": reuse }));
        if rng.chance(5) {
            // One slow reply among the random faults: a probe whose clean-up delete fails as
            // well names its sandbox, which the soak then destroys.
            shutdown_mid_probe(&h, &mut rng, &mut tally, seed).await;
            assert_nothing_left(&h, seed, i).await;
            continue;
        }
        if rng.chance(8) {
            shutdown_mid_acquire(&h, &mut rng, &mut tally, seed, &params).await;
            assert_nothing_left(&h, seed, i).await;
            continue;
        }
        let lease = h.provider.acquire_lease(&params, &*h.sink).await;
        no_canary(&format!("{lease:?}"));
        match lease {
            Ok(lease) => {
                tally.acquired += 1;
                lifecycle(&h, &mut rng, &mut tally, seed, i, lease, reuse).await;
            }
            Err(error) => {
                tally.failed(seed, "acquire", &error.message);
                h.emu.clear_faults();
                h.emu.settings().set_transition_delay(Duration::ZERO);
                // The documented outcome when the acquire's own cleanup fails too: the error
                // names the sandbox (the original's acquire: a failed setup whose delete fails
                // too reports the sandbox's id) or, for a create whose reply was
                // lost, its name; the host (here: the soak) must destroy it.
                if destroy_named_orphan(&h, seed, &error.message).await {
                    tally.unconfirmed += 1;
                }
            }
        }
        assert_nothing_left(&h, seed, i).await;
    }

    h.emu.clear_faults();
    println!(
        "createos soak: seed {seed}: {n} lifecycles in {:?}; {} acquired, {} executed; {} failed acquires left their sandbox (ID or name in the error, destroyed); {} lost create replies injected; {} shutdowns mid-acquire, {} mid-probe; failures {:#?}",
        started.elapsed(),
        tally.acquired,
        tally.executed,
        tally.unconfirmed,
        tally.lost_creates,
        tally.shutdowns,
        tally.probe_shutdowns,
        tally.failures
    );
    // Zero leaks, and the canary in no log line or streamed chunk.
    h.finish().await;
}

/// Clears the faults and waits (polling the emulator's state) until no sandbox and no process
/// is left; a leak is attributed to the lifecycle (and faults) that caused it.
async fn assert_nothing_left(h: &Harness, seed: u64, i: usize) {
    let faults = h.emu.faults();
    h.emu.clear_faults();
    h.emu.settings().set_transition_delay(Duration::ZERO);
    poll(
        format!("seed {seed}, lifecycle {i}: nothing left"),
        Duration::from_secs(5),
    )
    .until(|| {
        let counts = h.emu.counts();
        if counts.sandboxes == 0 && counts.live_processes == 0 {
            Ok(())
        } else {
            Err(format!("leaked {counts:?}; faults {faults:?}"))
        }
    })
    .await;
}

/// A worker shutdown while an acquire waits on a slow reply, in a worker of its own (shutdown
/// is for good): the acquire fails (stopped by shutdown, or by the faults before that) and,
/// when shutdown returns, nothing it created is left.
async fn shutdown_mid_acquire(
    h: &Harness,
    rng: &mut SoakRng,
    tally: &mut Tally,
    seed: u64,
    params: &Value,
) {
    let worker = createos::CreateOsProvider::with_options(createos::ProviderOptions {
        pacer: createos::Pacer::new(Duration::ZERO),
        host_api_key: createos::HostApiKey::Fixed(None),
    });
    let (method, path) = *rng.pick(ACQUIRE_ROUTES);
    let slow = h.fault(
        json!({"method": method, "path": path, "nth": 1 + rng.below(2),
        "action": {"kind": "delay", "ms": 30_000}}),
    );
    let acquire = worker.acquire_lease(params, &*h.sink);
    let stop = async {
        // Shut down once the slow reply is awaited, or once the acquire is over anyway (or,
        // failing both, after 10 s).
        poll("the slow reply to be awaited", Duration::from_secs(10))
            .every(Duration::from_millis(2))
            .holds(|| {
                worker.state().active_acquisitions() == 0
                    || h.emu.faults().iter().any(|f| f.id == slow && f.fired > 0)
            })
            .await;
        worker.shutdown().await
    };
    let (acquired, stopped) = tokio::join!(acquire, stop);
    assert_eq!(stopped, Ok(None), "seed {seed}: shutdown");
    no_canary(&format!("{acquired:?}"));
    tally.shutdowns += 1;
    match acquired {
        // It finished before the shutdown: the host has the lease and destroys it.
        Ok(lease) => {
            tally.acquired += 1;
            h.emu.clear_faults();
            let params = h.lease_params(json!({}), &lease);
            let destroyed = h.provider.destroy_lease(&params, &*h.sink).await;
            assert_eq!(destroyed, Ok(None), "seed {seed}: destroy");
        }
        Err(error) => {
            tally.failed(seed, "acquire during shutdown", &error.message);
            if destroy_named_orphan(h, seed, &error.message).await {
                tally.unconfirmed += 1;
            }
        }
    }
}

/// A worker shutdown while a probe waits on a slow reply (its create, its readiness poll or
/// its command), in a worker of its own: the probe reports (as data) or fails with a
/// catalogued message and, when shutdown returns, the sandbox it made is gone.
async fn shutdown_mid_probe(h: &Harness, rng: &mut SoakRng, tally: &mut Tally, seed: u64) {
    let worker = createos::CreateOsProvider::with_options(createos::ProviderOptions {
        pacer: createos::Pacer::new(Duration::ZERO),
        host_api_key: createos::HostApiKey::Fixed(None),
    });
    let (method, path, query) = *rng.pick(PROBE_ROUTES);
    let mut rule = json!({"method": method, "path": path, "nth": 1,
        "action": {"kind": "delay", "ms": 30_000}});
    if let Some(query) = query {
        rule["query"] = json!(query);
    }
    let slow = h.fault(rule);
    let params = h.params(json!({}));
    let logged_before = h.sink.logs.lock().unwrap().len();
    let probe = worker.probe(&params, &*h.sink);
    let stop = async {
        // Shut down once the slow reply is awaited (or, failing that, after 10 s).
        poll("the slow reply to be awaited", Duration::from_secs(10))
            .every(Duration::from_millis(2))
            .holds(|| h.emu.faults().iter().any(|f| f.id == slow && f.fired > 0))
            .await;
        worker.shutdown().await
    };
    let (probed, stopped) = tokio::join!(probe, stop);
    assert_eq!(stopped, Ok(None), "seed {seed}: shutdown during probe");
    no_canary(&format!("{probed:?}"));
    tally.probe_shutdowns += 1;
    match probed {
        Ok(report) => {
            if report["ok"] != json!(true)
                && let Some(summary) = report["summary"].as_str()
            {
                no_canary(summary);
                // The probe's acquire failed and could not delete its sandbox either: the
                // summary names it (as the acquire's error would).
                if destroy_named_orphan(h, seed, summary).await {
                    tally.unconfirmed += 1;
                }
            }
        }
        Err(error) => {
            tally.failed(seed, "probe during shutdown", &error.message);
            // The probe rejects with its delete's own error; its warning names the sandbox.
            let warned = h.sink.logs.lock().unwrap()[logged_before..]
                .iter()
                .find_map(|(_, line)| not_deleted(line).map(|_| line.clone()));
            let named = warned.as_deref().unwrap_or(&error.message);
            if destroy_named_orphan(h, seed, named).await {
                tally.unconfirmed += 1;
            }
        }
    }
}

/// Execute, release and destroy one acquired lease (faults still armed until the destroy).
async fn lifecycle(
    h: &Harness,
    rng: &mut SoakRng,
    tally: &mut Tally,
    seed: u64,
    i: usize,
    lease: Value,
    reuse: bool,
) {
    // A quick command, or one that runs into its timeout.
    let timeout = rng.chance(15);
    let (command, args, extra) = if timeout {
        ("sleep", vec!["5"], json!({ "timeoutMs": 150 }))
    } else {
        ("echo", vec!["soak"], json!({}))
    };
    let exec = h.exec_params(&lease, command, &args, extra);
    let result = h.provider.execute(&exec, &*h.sink).await;
    no_canary(&format!("{result:?}"));
    match result {
        Ok(result) => {
            tally.executed += 1;
            if timeout {
                assert_eq!(
                    result["timedOut"], true,
                    "seed {seed}, lifecycle {i}: {result}"
                );
            }
        }
        Err(error) => tally.failed(seed, "execute", &error.message),
    }

    // Release under the same faults (deletes unless kept warm), then destroy for certain.
    let lease_params = h.lease_params(json!({ "reuseLease": reuse }), &lease);
    let released = h.provider.release_lease(&lease_params, &*h.sink).await;
    no_canary(&format!("{released:?}"));
    if let Err(error) = released {
        tally.failed(seed, "release", &error.message);
    }
    h.emu.clear_faults();
    h.emu.settings().set_transition_delay(Duration::ZERO);
    let destroyed = h.provider.destroy_lease(&lease_params, &*h.sink).await;
    no_canary(&format!("{destroyed:?}"));
    if let Err(error) = destroyed {
        // A release that failed half-way may leave the lease closing; retry once, no faults.
        tally.failed(seed, "destroy", &error.message);
        let again = h.provider.destroy_lease(&lease_params, &*h.sink).await;
        assert!(
            again.is_ok(),
            "seed {seed}, lifecycle {i}: destroy without faults fails: {again:?}"
        );
    }
}
