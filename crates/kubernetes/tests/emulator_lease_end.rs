//! Issue #38 on the Kubernetes emulator: every lease's Sandbox carries its own end
//! (`spec.shutdownTime`, `shutdownPolicy: Delete`) and owns everything else the acquire made, so
//! an abandoned lease (a worker that died, a host that never released) is deleted with all of
//! it by the controller and the garbage collector, while a lease in use is never deleted under
//! its user; a lease made before its Sandbox had an end keeps working and gets one; a refused
//! write of the end is logged and the hook still answers.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use emulator::kubernetes::{DenyRule, KubeEmulatorOptions, KubernetesEmulator};
use kubernetes::KubernetesProvider;
use kubernetes::config::KubernetesConfig;
use kubernetes::lease::{ClusterConnector, KubeConnector};
use sandbox_core::poll::poll;
use sandbox_core::recording_sink::RecordingSink;
use sandbox_core::{HostSink, LogLevel, NullSink};
use serde_json::{Value, json};

#[allow(dead_code)]
#[path = "support/emulator.rs"]
mod emulator_support;
use emulator_support::{NS, config, leaked, leaked_objects};

const SANDBOXES: (&str, &str) = ("agents.x-k8s.io", "sandboxes");

async fn start() -> KubernetesEmulator {
    KubernetesEmulator::start(KubeEmulatorOptions::for_tests())
        .await
        .expect("emulator starts")
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// A config whose leases end `idle_sec` after their last use, with a 10 s acquire bound.
fn short_config(emu: &KubernetesEmulator, idle_sec: u64) -> Value {
    let mut config = config(emu, "sandbox-cr");
    config["podActivityDeadlineSec"] = json!(idle_sec);
    config["timeoutMs"] = json!(10_000);
    config
}

async fn acquire(provider: &KubernetesProvider, config: &Value) -> (String, Value) {
    let acquired = provider
        .acquire_lease(
            &json!({"config": config, "companyId": "c-1", "environmentId": "e-1",
                "runId": "run-end"}),
            &NullSink,
        )
        .await
        .unwrap_or_else(|e| panic!("acquire refused: {}", e.message));
    let name = acquired["providerLeaseId"].as_str().unwrap().to_string();
    let lease = json!({"providerLeaseId": name, "metadata": acquired["metadata"]});
    (name, lease)
}

fn sandbox(emu: &KubernetesEmulator, name: &str) -> Option<Value> {
    emu.object(SANDBOXES.0, SANDBOXES.1, NS, name)
}

fn shutdown_ms(sandbox: &Value) -> u64 {
    let text = sandbox["spec"]["shutdownTime"].as_str().unwrap();
    js_compat::date::parse(text).unwrap() as u64
}

fn exec_params(config: &Value, lease: &Value, script: &str, timeout_ms: u64) -> Value {
    json!({"config": config, "companyId": "c-1", "lease": lease, "command": "sh",
        "args": ["-c", script], "timeoutMs": timeout_ms})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acquired_sandbox_carries_its_end_and_owns_what_the_lease_made() {
    let emu = start().await;
    let provider = KubernetesProvider::new();
    let config = config(&emu, "sandbox-cr");
    let before = now_ms();
    let (name, lease) = acquire(&provider, &config).await;
    let after = now_ms();
    let sb = sandbox(&emu, &name).expect("the lease's Sandbox");
    assert_eq!(sb["spec"]["shutdownPolicy"], "Delete", "{sb}");
    // The acquire's bound (25 s) and 1.5 × podActivityDeadlineSec (3600 s) after it started.
    let end = shutdown_ms(&sb);
    let span = 25_000 + 5_400_000;
    assert!(
        end >= before + span && end <= after + span + 1_000,
        "{end} not within [{}, {}]",
        before + span,
        after + span + 1_000
    );
    let uid = sb["metadata"]["uid"].clone();
    let owner = |group: &str, plural: &str, object: &str| {
        let object = emu
            .object(group, plural, NS, object)
            .unwrap_or_else(|| panic!("{plural}/{object}"));
        object["metadata"]["ownerReferences"][0]["uid"].clone()
    };
    assert_eq!(owner("", "secrets", &format!("{name}-env")), uid);
    let adapter_policy = format!("{name}-adapter-egress");
    assert_eq!(
        owner("cilium.io", "ciliumnetworkpolicies", &adapter_policy),
        uid
    );
    // Deleting the Sandbox alone takes everything of the lease (what the controller does at
    // the end): its pod, its Secret and its policies go through the garbage collector.
    let connection = KubeConnector::default()
        .connect(&KubernetesConfig::parse(&config).unwrap())
        .await
        .unwrap();
    connection
        .api
        .delete_namespaced_custom_object(json!({"group": SANDBOXES.0, "version":
            lease["metadata"]["sandboxApiVersion"], "namespace": NS, "plural": SANDBOXES.1,
            "name": name}))
        .await
        .unwrap();
    poll("nothing of the lease left", Duration::from_secs(20))
        .until(|| leaked_objects(&emu).is_empty())
        .await;
    emu.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abandoned_lease_ends_by_itself_with_everything_it_made() {
    let emu = start().await;
    let config = short_config(&emu, 2);
    let (name, _) = {
        // The worker that acquired it is gone: nothing will release it.
        let provider = KubernetesProvider::new();
        acquire(&provider, &config).await
    };
    let end = shutdown_ms(&sandbox(&emu, &name).unwrap());
    // Its end: the acquire's 10 s bound and 1.5 × 2 s after the acquire began, rounded up to
    // the second.
    assert!(end <= now_ms() + 14_000, "{end}");
    poll("the abandoned lease to be gone", Duration::from_secs(40))
        .until(|| {
            let left = leaked(&emu);
            if left.is_empty() {
                Ok(())
            } else {
                Err(format!("still there: {left:?}"))
            }
        })
        .await;
    emu.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_in_use_outlives_its_first_end_and_then_is_released() {
    let emu = start().await;
    let provider = KubernetesProvider::new();
    let config = short_config(&emu, 2);
    let (name, lease) = acquire(&provider, &config).await;
    let first_end = shutdown_ms(&sandbox(&emu, &name).unwrap());
    // Executes of a second each, back to back, until well past the end it was created with.
    let mut executes = 0;
    while now_ms() < first_end + 4_000 {
        let params = exec_params(&config, &lease, "sleep 1; echo ok", 5_000);
        let result = provider
            .execute(&params, &NullSink)
            .await
            .unwrap_or_else(|e| panic!("execute {executes} refused: {}", e.message));
        assert_eq!(result["exitCode"], 0, "execute {executes}: {result}");
        assert_eq!(result["stdout"], "ok\n");
        executes += 1;
    }
    let sb = sandbox(&emu, &name).expect("the lease in use is still there");
    assert!(shutdown_ms(&sb) > first_end + 4_000, "{sb}");
    let params = json!({"config": config, "companyId": "c-1", "providerLeaseId": name,
        "leaseMetadata": lease["metadata"]});
    assert_eq!(
        provider.release_lease(&params, &NullSink).await.unwrap(),
        None
    );
    poll(
        "nothing of the released lease left",
        Duration::from_secs(20),
    )
    .until(|| leaked_objects(&emu).is_empty())
    .await;
    emu.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_made_without_an_end_keeps_working_and_gets_one() {
    let emu = start().await;
    let config = config(&emu, "sandbox-cr");
    let (name, lease) = acquire(&KubernetesProvider::new(), &config).await;
    strip_end(&config, &lease).await;
    let old = sandbox(&emu, &name).unwrap();
    assert!(old["spec"].get("shutdownTime").is_none(), "{old}");
    // A new worker (the host restarted it) resumes and executes as before.
    let provider = KubernetesProvider::new();
    let params = json!({"config": config, "companyId": "c-1", "environmentId": "e-1",
        "providerLeaseId": name, "leaseMetadata": lease["metadata"]});
    let resumed = provider.resume_lease(&params, &NullSink).await.unwrap();
    assert_eq!(resumed["providerLeaseId"], name.as_str(), "{resumed}");
    let result = provider
        .execute(
            &exec_params(&config, &lease, "echo still", 10_000),
            &NullSink,
        )
        .await
        .unwrap();
    assert_eq!(result["stdout"], "still\n", "{result}");
    let sb = sandbox(&emu, &name).unwrap();
    assert_eq!(sb["spec"]["shutdownPolicy"], "Delete", "{sb}");
    assert!(shutdown_ms(&sb) > now_ms() + 3_600_000, "{sb}");
    provider.destroy_lease(&params, &NullSink).await.unwrap();
    poll("nothing of the lease left", Duration::from_secs(20))
        .until(|| leaked_objects(&emu).is_empty())
        .await;
    emu.shutdown().await;
}

/// Takes the lifecycle fields off the lease's Sandbox (what a lease acquired before issue #38
/// looks like).
async fn strip_end(config: &Value, lease: &Value) {
    let connection = KubeConnector::default()
        .connect(&KubernetesConfig::parse(config).unwrap())
        .await
        .unwrap();
    connection
        .api
        .patch_namespaced_custom_object(json!({"group": SANDBOXES.0, "version":
            lease["metadata"]["sandboxApiVersion"], "namespace": NS, "plural": SANDBOXES.1,
            "name": lease["providerLeaseId"],
            "body": {"spec": {"shutdownTime": null, "shutdownPolicy": null}}}))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sync_and_a_login_open_move_the_end_too() {
    let emu = start().await;
    let config = config(&emu, "sandbox-cr");
    let provider = KubernetesProvider::new();
    let (name, lease) = acquire(&provider, &config).await;
    let has_end = || sandbox(&emu, &name).unwrap()["spec"]["shutdownPolicy"] == "Delete";
    // A new worker's sync (with nothing to transfer) moves the end first.
    strip_end(&config, &lease).await;
    assert!(!has_end());
    let sync = json!({"config": config, "companyId": "c-1", "lease": lease, "operations": []});
    KubernetesProvider::new()
        .sync_out(&sync, &NullSink)
        .await
        .unwrap_or_else(|e| panic!("sync refused: {}", e.message));
    assert!(has_end());
    // A login open on a lease whose end this worker does not know moves it beside the open
    // (whatever the open's own outcome: these pods have no `claude`).
    strip_end(&config, &lease).await;
    provider.lease_ends().forget(&name);
    let open = json!({"hostRouteId": "route-1", "driverKey": "kubernetes", "companyId": "c-1",
        "environmentId": "e-1", "providerLeaseId": name, "loginCommandKey": "claude",
        "sessionHome": "/tmp/paperclip-adapter-login/6a1f0c2e-9b3d-4e5f-a6b7-c8d9e0f1a2b3"});
    let sink: Arc<dyn HostSink> = Arc::new(NullSink);
    let _ = provider.login_pty_open(&open, sink).await;
    assert!(has_end());
    let params = json!({"config": config, "companyId": "c-1", "providerLeaseId": name,
        "leaseMetadata": lease["metadata"]});
    provider.destroy_lease(&params, &NullSink).await.unwrap();
    poll("nothing of the lease left", Duration::from_secs(20))
        .until(|| leaked(&emu).is_empty())
        .await;
    emu.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_end_is_logged_and_the_hook_still_answers() {
    let emu = start().await;
    let config = config(&emu, "sandbox-cr");
    let (name, lease) = acquire(&KubernetesProvider::new(), &config).await;
    let before = sandbox(&emu, &name).unwrap();
    // An operator's RBAC from before issue #38: no `patch` on sandboxes.
    emu.deny(DenyRule {
        verb: Some("patch".into()),
        group: Some(SANDBOXES.0.into()),
        resource: SANDBOXES.1.into(),
        namespace: None,
        name: None,
    });
    let provider = KubernetesProvider::new();
    let sink = RecordingSink::default();
    let result = provider
        .execute(&exec_params(&config, &lease, "echo fine", 10_000), &sink)
        .await
        .unwrap_or_else(|e| panic!("execute refused: {}", e.message));
    assert_eq!(result["stdout"], "fine\n", "{result}");
    let logs = sink.logs.lock().unwrap().clone();
    assert_eq!(logs.len(), 1, "{logs:?}");
    assert_eq!(logs[0].0, LogLevel::Warn);
    let prefix = format!("[plugin-kubernetes] Could not move the end of Sandbox {NS}/{name} to ");
    assert!(logs[0].1.starts_with(&prefix), "{}", logs[0].1);
    assert!(logs[0].1.contains("HTTP-Code: 403"), "{}", logs[0].1);
    // The Sandbox keeps the end it had.
    let after = sandbox(&emu, &name).unwrap();
    assert_eq!(
        after["spec"]["shutdownTime"],
        before["spec"]["shutdownTime"]
    );
    // The next call does not repeat the refused write (nor its warning).
    provider
        .execute(&exec_params(&config, &lease, "true", 10_000), &sink)
        .await
        .unwrap();
    assert_eq!(sink.logs.lock().unwrap().len(), 1);
    emu.shutdown().await;
}
