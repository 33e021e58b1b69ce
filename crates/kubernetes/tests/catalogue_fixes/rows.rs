//! The emulator rows of `catalogue_fixes.rs`: each makes its catalogued failures happen, applies
//! the documented fix and shows the failure gone. The quoted line above each step is the fix as
//! the catalogue words it.

use std::path::Path;
use std::sync::Arc;

use super::{
    ChannelSink, DenyRule, Duration, HostSink, IMAGE, KubeEmulatorOptions, KubernetesEmulator,
    KubernetesProvider, LogLevel, NS, NullSink, RecordingSink, Terminal, Value, assert_code,
    code_of, iso_in, json, rejected,
};

/// The login home every row opens terminals with.
const HOME: &str = "/tmp/paperclip-adapter-login/6a1f0c2e-9b3d-4e5f-a6b7-c8d9e0f1a2b3";

pub async fn start(opts: KubeEmulatorOptions) -> KubernetesEmulator {
    KubernetesEmulator::start(opts)
        .await
        .expect("emulator starts")
}

/// Waits (bounded) until no lease object is left in the tenant namespace.
pub async fn until_nothing_left(emu: &KubernetesEmulator) {
    sandbox_core::poll::poll("nothing of any row left", Duration::from_secs(10))
        .until(|| {
            let counts = emu.counts();
            let left: Vec<&str> = ["sandboxes", "jobs", "secrets", "pods"]
                .into_iter()
                .filter(|p| counts.count(NS, p) > 0)
                .collect();
            if left.is_empty() {
                Ok(())
            } else {
                Err(format!("left: {left:?}"))
            }
        })
        .await;
}

pub async fn run(row: &str, emu: &KubernetesEmulator) {
    match row {
        "credentials" => credentials(emu).await,
        "deadlines" => deadlines(emu).await,
        "adapter" => adapter(emu).await,
        "rbac" => rbac(emu).await,
        "egress-log" => egress_log(emu).await,
        "sync-lease" => sync_lease(emu).await,
        "sync-pod" => sync_pod(emu).await,
        "sync-host" => sync_host(emu).await,
        "post-upload" => post_upload(emu).await,
        "execute" => execute(emu).await,
        "sandbox-api" => sandbox_api().await,
        "probe-checks" => probe_checks(emu).await,
        "login" => login().await,
        "lease-end" => lease_end(emu).await,
        other => panic!("no row {other}"),
    }
}

fn config(emu: &KubernetesEmulator) -> Value {
    json!({"kubeconfig": emu.kubeconfig_yaml(), "companySlug": "acme", "egressMode": "cilium"})
}

fn with(mut base: Value, extra: Value) -> Value {
    for (k, v) in extra.as_object().unwrap() {
        base[k] = v.clone();
    }
    base
}

fn acquire_params(config: &Value, run: &str) -> Value {
    json!({"config": config, "companyId": "c-1", "environmentId": "e-1", "runId": run})
}

/// A lease of `config` (`{providerLeaseId, metadata}`), acquired for run `run`.
async fn acquire(provider: &KubernetesProvider, config: &Value, run: &str) -> Value {
    let acquired = provider
        .acquire_lease(&acquire_params(config, run), &NullSink)
        .await
        .unwrap_or_else(|e| panic!("acquire {run}: {}", e.message));
    json!({"providerLeaseId": acquired["providerLeaseId"], "metadata": acquired["metadata"]})
}

async fn destroy(provider: &KubernetesProvider, config: &Value, lease: &Value) {
    provider
        .destroy_lease(
            &json!({"config": config, "companyId": "c-1", "providerLeaseId": lease["providerLeaseId"],
                "leaseMetadata": lease["metadata"]}),
            &NullSink,
        )
        .await
        .unwrap_or_else(|e| panic!("destroy: {}", e.message));
}

async fn probe(provider: &KubernetesProvider, config: &Value) -> Value {
    provider
        .probe(&json!({"config": config, "companyId": "c-1"}), &NullSink)
        .await
        .unwrap()
}

/// What a probe result says: each line of its summary, its `metadata.error` and each of its
/// `metadata.errors`.
fn probe_messages(result: &Value) -> Vec<String> {
    let mut said: Vec<String> = result["summary"]
        .as_str()
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect();
    said.extend(result["metadata"]["error"].as_str().map(str::to_string));
    said.extend(
        result["metadata"]["errors"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|m| m.as_str().map(str::to_string)),
    );
    said
}

/// `sh -c script` in the lease; its result.
async fn sh(provider: &KubernetesProvider, config: &Value, lease: &Value, script: &str) -> Value {
    provider
        .execute(
            &json!({"config": config, "companyId": "c-1", "lease": lease, "command": "sh",
                "args": ["-c", script], "timeoutMs": 30000}),
            &NullSink,
        )
        .await
        .unwrap()
}

fn sync_params(config: &Value, lease: &Value, files: Value) -> Value {
    json!({"config": config, "companyId": "c-1", "lease": lease,
        "operations": [{"operationId": "op", "files": files}]})
}

/// Credentials and the probe: each broken config probes red with its message, the fixed one green.
async fn credentials(emu: &KubernetesEmulator) {
    let provider = KubernetesProvider::new();
    let good = config(emu);
    let yaml = emu.kubeconfig_yaml();
    let token = emu.token();
    let cases = [
        // "Set `kubeconfig` to the full kubeconfig YAML text …"
        ("K8S_KUBECONFIG_MISSING", "   ".to_string()),
        // "Copy the token again as one line …"
        (
            "K8S_KUBECONFIG_TOKEN_INVALID",
            yaml.replace(
                &format!("token: \"{token}\""),
                &format!("token: \"{}\\n{}\"", &token[..4], &token[4..]),
            ),
        ),
        // "… remove the duplicate or fix the syntax …"
        (
            "K8S_KUBECONFIG_YAML_INVALID",
            yaml.replacen("users:", "kind: Config\nusers:", 1),
        ),
        // "… test the same kubeconfig … from the Paperclip host and fix connectivity …"
        (
            "K8S_CLUSTER_PROBE_FAILED",
            yaml.replace(emu.url(), "https://127.0.0.1:9"),
        ),
    ];
    for (code, kubeconfig) in cases {
        let broken = probe(
            &provider,
            &with(good.clone(), json!({"kubeconfig": kubeconfig})),
        )
        .await;
        assert_eq!(broken["ok"], false, "{code}: {broken}");
        let said = probe_messages(&broken);
        assert!(
            said.iter()
                .any(|m| code_of(m) == "K8S_CLUSTER_PROBE_FAILED"),
            "{said:?}"
        );
        assert!(said.iter().any(|m| code_of(m) == code), "{code}: {said:?}");
        assert!(!broken.to_string().contains(token), "{broken}");
    }
    // "Run validation … and correct the config."
    let broken = probe(
        &provider,
        &with(good.clone(), json!({"companySlug": "Acme"})),
    )
    .await;
    let said = probe_messages(&broken);
    assert!(
        said.iter().any(|m| code_of(m) == "K8S_CONFIG_INVALID"),
        "{said:?}"
    );
    let fixed = probe(&provider, &good).await;
    assert_eq!(fixed["ok"], true, "{fixed}");
}

/// Bounded leases: the job backend, an unparseable deadline and one too close.
async fn deadlines(emu: &KubernetesEmulator) {
    let provider = KubernetesProvider::new();
    let good = config(emu);
    let bounded = |config: &Value, deadline: Value| {
        with(
            acquire_params(config, "run-deadline"),
            json!({"requestedExpiresAt": deadline}),
        )
    };
    let cases = [
        // "Switch the environment to `backend: \"sandbox-cr\"` …"
        (
            "K8S_JOB_DEADLINE_UNSUPPORTED",
            with(good.clone(), json!({"backend": "job"})),
            json!(iso_in(3600)),
        ),
        // "Pass `requestedExpiresAt` as an ISO 8601 timestamp …"
        (
            "K8S_LEASE_DEADLINE_INVALID",
            good.clone(),
            json!("tomorrow"),
        ),
        // "Request a deadline at least 30 seconds (realistically several minutes) in the future …"
        (
            "K8S_LEASE_DEADLINE_TOO_CLOSE",
            good.clone(),
            json!(iso_in(5)),
        ),
    ];
    for (code, config, deadline) in cases {
        let message = rejected(
            provider
                .acquire_lease(&bounded(&config, deadline), &NullSink)
                .await,
        );
        assert_code(code, &message);
    }
    let fixed = provider
        .acquire_lease(&bounded(&good, json!(iso_in(600))), &NullSink)
        .await
        .unwrap();
    assert!(fixed["expiresAt"].is_string(), "{fixed}");
    let lease = json!({"providerLeaseId": fixed["providerLeaseId"], "metadata": fixed["metadata"]});
    destroy(&provider, &good, &lease).await;
}

/// A run's adapter outside the built-ins.
async fn adapter(emu: &KubernetesEmulator) {
    let provider = KubernetesProvider::new();
    let good = config(emu);
    let params = |config: &Value| {
        with(
            acquire_params(config, "run-adapter"),
            json!({"adapterType": "acme_local"}),
        )
    };
    let message = rejected(provider.acquire_lease(&params(&good), &NullSink).await);
    assert_code("K8S_ADAPTER_UNKNOWN", &message);
    // An image reference with a scheme: "Give the adapter a reference such as
    // `ghcr.io/acme/agent-runtime-claude:1.0` in `runtimeImages` …: no scheme …"
    let with_scheme = with(
        good.clone(),
        json!({"runtimeImages": {"acme_local": format!("https://{IMAGE}")}}),
    );
    let message = rejected(
        provider
            .acquire_lease(&params(&with_scheme), &NullSink)
            .await,
    );
    assert_code("K8S_RUNTIME_IMAGE_INVALID", &message);
    assert_eq!(
        emu.counts().count(NS, "sandboxes"),
        0,
        "nothing was created"
    );
    // "Name the adapter's image in the environment's `runtimeImages` …"
    let fixed = with(
        good.clone(),
        json!({"runtimeImages": {"acme_local": IMAGE}}),
    );
    let acquired = provider
        .acquire_lease(&params(&fixed), &NullSink)
        .await
        .unwrap();
    let lease =
        json!({"providerLeaseId": acquired["providerLeaseId"], "metadata": acquired["metadata"]});
    let name = acquired["providerLeaseId"].as_str().unwrap();
    let sandbox = emu
        .object("agents.x-k8s.io", "sandboxes", NS, name)
        .unwrap();
    let image = &sandbox["spec"]["podTemplate"]["spec"]["containers"][0]["image"];
    assert_eq!(image, IMAGE);
    destroy(&provider, &fixed, &lease).await;
}

/// The probe's checks: a permission the config needs, and a tenant namespace these credentials
/// may not create or read. Each is refused by the emulator's authorization (its RBAC) and
/// granted again.
async fn probe_checks(emu: &KubernetesEmulator) {
    let provider = KubernetesProvider::new();
    // A company whose tenant namespace does not exist yet.
    let good = with(config(emu), json!({"companySlug": "acme-probe"}));
    let deny = |verb: &str, resource: &str| DenyRule {
        verb: Some(verb.into()),
        group: None,
        resource: resource.into(),
        namespace: None,
        name: None,
    };
    let cases = [
        // "Apply docs/rbac/clusterrole.yaml and bind it to the provider's identity …"
        (
            deny("create", "pods/exec"),
            &[
                "K8S_PROBE_CHECKS_FAILED",
                "K8S_PROBE_PERMISSIONS_PARTLY_GRANTED",
                "K8S_PROBE_PERMISSION_MISSING",
            ][..],
        ),
        // "… or grant `create` on namespaces (docs/rbac/clusterrole.yaml), then probe again."
        (
            deny("create", "namespaces"),
            &["K8S_PROBE_TENANT_NAMESPACE_NOT_CREATABLE"][..],
        ),
        // "Read the error; grant `get` on namespaces …, then probe again."
        (
            deny("get", "namespaces"),
            &["K8S_PROBE_TENANT_NAMESPACE_UNREADABLE"][..],
        ),
    ];
    for (rule, codes) in cases {
        emu.deny(rule);
        let broken = probe(&provider, &good).await;
        assert_eq!(broken["ok"], false, "{broken}");
        let said = probe_messages(&broken);
        for code in codes {
            assert!(said.iter().any(|m| code_of(m) == *code), "{code}: {said:?}");
        }
        emu.clear_deny();
        let fixed = probe(&provider, &good).await;
        assert_eq!(fixed["ok"], true, "{fixed}");
        let said = probe_messages(&fixed);
        for code in [
            "K8S_PROBE_PERMISSIONS_GRANTED",
            "K8S_PROBE_TENANT_NAMESPACE_CREATABLE",
        ] {
            assert!(said.iter().any(|m| code_of(m) == code), "{code}: {said:?}");
        }
    }
}

/// Missing permissions (the emulator's RBAC refusals), and the cleanup the catalogue describes.
async fn rbac(emu: &KubernetesEmulator) {
    let provider = KubernetesProvider::new();
    let good = config(emu);
    let deny = |verb: &str, resource: &str| DenyRule {
        verb: Some(verb.into()),
        group: None,
        resource: resource.into(),
        namespace: None,
        name: None,
    };
    // A 403 names what is missing; "For a 403, grant what it names".
    emu.deny(deny("create", "sandboxes"));
    let message = rejected(
        provider
            .acquire_lease(&acquire_params(&good, "run-403"), &NullSink)
            .await,
    );
    assert_code("K8S_API_HTTP_ERROR", &message);
    assert!(message.starts_with("HTTP-Code: 403\n"), "{message}");
    assert!(message.contains("sandboxes"), "{message}");
    emu.clear_deny();
    let lease = acquire(&provider, &good, "run-403").await;
    destroy(&provider, &good, &lease).await;

    // The Secret cannot be created and the Sandbox cannot be deleted: the acquire's cleanup is
    // incomplete. "… delete them (`kubectl delete sandbox,job,secret -l
    // paperclip.io/run-id=<run>`), check the plugin identity may delete them, then retry."
    emu.deny(deny("create", "secrets"));
    emu.deny(deny("delete", "sandboxes"));
    let message = rejected(
        provider
            .acquire_lease(&acquire_params(&good, "run-cleanup"), &NullSink)
            .await,
    );
    assert_code("K8S_ACQUIRE_CLEANUP_INCOMPLETE", &message);
    assert_eq!(
        emu.counts().count(NS, "sandboxes"),
        1,
        "the Sandbox is left"
    );
    emu.clear_deny();
    delete_by_run_label(emu, "run-cleanup").await;
    until_nothing_left(emu).await;
    let lease = acquire(&provider, &good, "run-cleanup").await;

    // "Grant the plugin's identity delete rights in the tenant namespace, … and destroy again."
    emu.deny(deny("delete", "sandboxes"));
    emu.deny(deny("delete", "secrets"));
    let message = rejected(
        provider
            .destroy_lease(
                &json!({"config": good, "companyId": "c-1",
                    "providerLeaseId": lease["providerLeaseId"], "leaseMetadata": lease["metadata"]}),
                &NullSink,
            )
            .await,
    );
    assert_code("K8S_LEASE_DELETE_FAILED", &message);
    emu.clear_deny();
    destroy(&provider, &good, &lease).await;
}

/// `kubectl delete sandbox,job,secret -l paperclip.io/run-id=<run>`, through kube-rs.
async fn delete_by_run_label(emu: &KubernetesEmulator, run: &str) {
    use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, ListParams};
    use kube::config::{KubeConfigOptions, Kubeconfig};
    let kubeconfig = Kubeconfig::from_yaml(emu.kubeconfig_yaml()).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap();
    let client = kube::Client::try_from(config).unwrap();
    let selector = ListParams::default().labels(&format!("paperclip.io/run-id={run}"));
    let kinds = [
        ("agents.x-k8s.io", "v1alpha1", "Sandbox", "sandboxes"),
        ("batch", "v1", "Job", "jobs"),
        ("", "v1", "Secret", "secrets"),
    ];
    for (group, version, kind, plural) in kinds {
        let api_version = if group.is_empty() {
            version.to_string()
        } else {
            format!("{group}/{version}")
        };
        let resource = ApiResource {
            group: group.into(),
            version: version.into(),
            api_version,
            kind: kind.into(),
            plural: plural.into(),
        };
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), NS, &resource);
        api.delete_collection(&DeleteParams::foreground(), &selector)
            .await
            .unwrap_or_else(|e| panic!("delete {plural}: {e}"));
    }
}

/// The worker-log warnings of a standard-mode acquire.
async fn egress_log(emu: &KubernetesEmulator) {
    let provider = KubernetesProvider::new();
    let standard = with(config(emu), json!({"egressMode": "standard"}));
    let cases = [
        ("K8S_EGRESS_FQDN_FALLBACK_PUBLIC_LOG", standard.clone()),
        (
            "K8S_EGRESS_FQDN_CIDR_ONLY_LOG",
            with(
                standard.clone(),
                json!({"egressAllowCidrs": ["203.0.113.0/24"]}),
            ),
        ),
    ];
    for (code, broken) in cases {
        let sink = RecordingSink::default();
        let acquired = provider
            .acquire_lease(&acquire_params(&broken, "run-egress"), &sink)
            .await
            .unwrap();
        let warned = sink.logs.lock().unwrap().clone();
        assert!(
            warned
                .iter()
                .any(|(level, line)| *level == LogLevel::Warn && code_of(line) == code),
            "{code}: {warned:?}"
        );
        let lease = json!({"providerLeaseId": acquired["providerLeaseId"], "metadata": acquired["metadata"]});
        destroy(&provider, &broken, &lease).await;
        // "Switch to `egressMode: \"cilium\"` for exact FQDN rules …"
        let fixed = with(broken, json!({"egressMode": "cilium"}));
        let sink = RecordingSink::default();
        let lease = acquire_with(&provider, &fixed, "run-egress", &sink).await;
        let warned = sink.logs.lock().unwrap().clone();
        assert!(
            warned.iter().all(|(level, _)| *level != LogLevel::Warn),
            "{warned:?}"
        );
        destroy(&provider, &fixed, &lease).await;
    }
}

async fn acquire_with(
    provider: &KubernetesProvider,
    config: &Value,
    run: &str,
    sink: &dyn HostSink,
) -> Value {
    let acquired = provider
        .acquire_lease(&acquire_params(config, run), sink)
        .await
        .unwrap_or_else(|e| panic!("acquire {run}: {}", e.message));
    json!({"providerLeaseId": acquired["providerLeaseId"], "metadata": acquired["metadata"]})
}

/// Sync with a lease that cannot sync, or to a path outside the workspace.
async fn sync_lease(emu: &KubernetesEmulator) {
    let provider = KubernetesProvider::new();
    let good = config(emu);
    let lease = acquire(&provider, &good, "run-sync-lease").await;
    let host = tempfile::tempdir().unwrap();
    let file = host.path().join("a.txt");
    std::fs::write(&file, b"a").unwrap();
    let to = |target: &str| json!([{"kind": "file", "sourcePath": file, "targetPath": target}]);
    let mut job_lease = lease.clone();
    job_lease["metadata"]["backend"] = json!("job");
    let mut no_dir = lease.clone();
    no_dir["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("remoteCwd");
    let mut no_id = lease.clone();
    no_id["providerLeaseId"] = Value::Null;
    let cases = [
        // "… acquire a new lease …" on the sandbox-cr backend.
        (
            "K8S_SYNC_BACKEND_UNSUPPORTED",
            job_lease,
            "/workspace/a.txt",
        ),
        // "Re-acquire a fresh lease for this environment and pass that lease to the sync call."
        ("K8S_SYNC_REMOTE_DIR_MISSING", no_dir, "/workspace/a.txt"),
        ("K8S_SYNC_LEASE_ID_MISSING", no_id, "/workspace/a.txt"),
        // "Use absolute paths inside the lease's workspace remote dir, without `..`."
        ("K8S_SYNC_PATH_NOT_CONFINED", lease.clone(), "a.txt"),
        // "Sync only into or out of the workspace remote dir … or below it."
        (
            "K8S_SYNC_PATH_ESCAPES_WORKSPACE",
            lease.clone(),
            "/tmp/a.txt",
        ),
    ];
    for (code, broken, target) in cases {
        let params = sync_params(&good, &broken, to(target));
        assert_code(code, &rejected(provider.sync_in(&params, &NullSink).await));
    }
    let fixed = sync_params(&good, &lease, to("/workspace/a.txt"));
    provider.sync_in(&fixed, &NullSink).await.unwrap();
    destroy(&provider, &good, &lease).await;
}

/// Sync failures the in-pod scripts report, each cleared as the catalogue says.
async fn sync_pod(emu: &KubernetesEmulator) {
    let provider = KubernetesProvider::new();
    let good = config(emu);
    let lease = acquire(&provider, &good, "run-sync-pod").await;
    let host = tempfile::tempdir().unwrap();
    let src = host.path().join("src");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join("f"), b"f").unwrap();
    let setup = "mkdir -p /workspace/dir /workspace/t && ln -s /tmp /workspace/out && ln -s /etc/hostname /workspace/t/l && echo x > /workspace/t/x";
    assert_eq!(sh(&provider, &good, &lease, setup).await["exitCode"], 0);

    // ESCAPE: "Remove or replace the symlink in the workspace …, then sync again."
    let into_out = sync_params(
        &good,
        &lease,
        json!([{"kind": "directory", "sourcePath": src, "targetPath": "/workspace/out/d"}]),
    );
    let message = rejected(provider.sync_in(&into_out, &NullSink).await);
    assert_code("K8S_SYNC_TRANSFER_FAILED", &message);
    assert!(message.ends_with(": ESCAPE"), "{message}");
    assert_code("K8S_SYNC_SCRIPT_ESCAPE", "ESCAPE");
    assert_eq!(
        sh(&provider, &good, &lease, "rm /workspace/out").await["exitCode"],
        0
    );
    provider.sync_in(&into_out, &NullSink).await.unwrap();

    let out = |kind: &str, source: &str, target: &Path| {
        sync_params(
            &good,
            &lease,
            json!([{"kind": kind, "sourcePath": source, "targetPath": target}]),
        )
    };
    // NOTREG: "Use `kind: \"directory\"` for directories …"
    let message = rejected(
        provider
            .sync_out(
                &out("file", "/workspace/dir", &host.path().join("dir")),
                &NullSink,
            )
            .await,
    );
    assert!(message.ends_with(": NOTREG"), "{message}");
    provider
        .sync_out(
            &out("directory", "/workspace/dir", &host.path().join("dir")),
            &NullSink,
        )
        .await
        .unwrap();
    // A source that is not there ends the script at its `exec` redirection (dash, BusyBox
    // `sh`): exit 2 with the shell's `cannot open`. "… a file sync-out source that does not
    // exist in the pod": correct the path.
    let message = rejected(
        provider
            .sync_out(
                &out("file", "/workspace/missing", &host.path().join("m")),
                &NullSink,
            )
            .await,
    );
    assert_code("K8S_SYNC_TRANSFER_FAILED", &message);
    assert!(
        message.contains("(exit 2)") && message.contains("cannot open"),
        "{message}"
    );
    provider
        .sync_out(
            &out("file", "/workspace/t/x", &host.path().join("m")),
            &NullSink,
        )
        .await
        .unwrap();
    // A link out of the tree: "… delete it, or add it to `exclude` …"
    let message = rejected(
        provider
            .sync_out(
                &out("directory", "/workspace/t", &host.path().join("t")),
                &NullSink,
            )
            .await,
    );
    assert_code("K8S_SYNC_OUT_LINK_ESCAPES", &message);
    assert_eq!(
        sh(&provider, &good, &lease, "rm /workspace/t/l").await["exitCode"],
        0
    );
    provider
        .sync_out(
            &out("directory", "/workspace/t", &host.path().join("t2")),
            &NullSink,
        )
        .await
        .unwrap();
    assert_eq!(std::fs::read(host.path().join("t2/x")).unwrap(), b"x\n");
    destroy(&provider, &good, &lease).await;
}

/// Sync failures found on the host's side.
async fn sync_host(emu: &KubernetesEmulator) {
    let provider = KubernetesProvider::new();
    let good = config(emu);
    let lease = acquire(&provider, &good, "run-sync-host").await;
    let host = tempfile::tempdir().unwrap();
    let src = host.path().join("src");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join("f"), b"f").unwrap();
    std::os::unix::fs::symlink(".", src.join("loop")).unwrap();
    let dir_in = |follow: bool| {
        sync_params(
            &good,
            &lease,
            json!([{"kind": "directory", "sourcePath": src, "targetPath": "/workspace/in",
                "followSymlinks": follow}]),
        )
    };
    // "… or sync without `followSymlinks` so links are kept as links."
    assert_code(
        "K8S_SYNC_SOURCE_REPEATED_DIRECTORY",
        &rejected(provider.sync_in(&dir_in(true), &NullSink).await),
    );
    provider.sync_in(&dir_in(false), &NullSink).await.unwrap();

    // "Map directories with `kind: \"directory\"`."
    let as_kind = |kind: &str| {
        sync_params(
            &good,
            &lease,
            json!([{"kind": kind, "sourcePath": src, "targetPath": "/workspace/in2"}]),
        )
    };
    assert_code(
        "K8S_SYNC_SOURCE_IS_DIRECTORY",
        &rejected(provider.sync_in(&as_kind("file"), &NullSink).await),
    );
    provider
        .sync_in(&as_kind("directory"), &NullSink)
        .await
        .unwrap();

    // A link left in the target: "Remove the link named in the message from the target …"
    let target = host.path().join("back");
    let elsewhere = host.path().join("elsewhere");
    std::fs::create_dir_all(&target).unwrap();
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, target.join("sub")).unwrap();
    assert_eq!(
        sh(
            &provider,
            &good,
            &lease,
            "mkdir -p /workspace/o/sub && echo y > /workspace/o/sub/y"
        )
        .await["exitCode"],
        0
    );
    let back = sync_params(
        &good,
        &lease,
        json!([{"kind": "directory", "sourcePath": "/workspace/o", "targetPath": target}]),
    );
    assert_code(
        "K8S_SYNC_OUT_THROUGH_SYMLINK",
        &rejected(provider.sync_out(&back, &NullSink).await),
    );
    assert!(std::fs::read_dir(&elsewhere).unwrap().next().is_none());
    std::fs::remove_file(target.join("sub")).unwrap();
    provider.sync_out(&back, &NullSink).await.unwrap();
    assert_eq!(std::fs::read(target.join("sub/y")).unwrap(), b"y\n");
    destroy(&provider, &good, &lease).await;
}

/// Post-upload commands: a failing one, a loud one and a slow one.
async fn post_upload(emu: &KubernetesEmulator) {
    let provider = KubernetesProvider::new();
    let good = config(emu);
    let lease = acquire(&provider, &good, "run-post").await;
    let host = tempfile::tempdir().unwrap();
    std::fs::write(host.path().join("a.txt"), b"a").unwrap();
    let with_command = |command: Value| {
        json!({"config": good, "companyId": "c-1", "lease": lease, "operations": [{
            "operationId": "op",
            "files": [{"kind": "file", "sourcePath": host.path().join("a.txt"),
                "targetPath": "/workspace/a.txt"}],
            "postUploadCommands": [command]}]})
    };
    let cases = [
        // "Run the command by hand in the pod … to see and fix the failure."
        (
            "K8S_POST_UPLOAD_COMMAND_FAILED",
            json!({"command": "cat missing.txt"}),
            json!({"command": "cat a.txt"}),
        ),
        // "Make post-upload commands quieter (… `2>/dev/null` …)."
        (
            "K8S_STREAM_EXEC_STDERR_CAP",
            json!({"command": "head -c 1100000 /dev/zero >&2"}),
            json!({"command": "head -c 1100000 /dev/zero 2>/dev/null >/dev/null"}),
        ),
        // "… raise … the command's `timeoutMs` …"
        (
            "K8S_STREAM_EXEC_TIMEOUT",
            json!({"command": "sleep 2", "timeoutMs": 300}),
            json!({"command": "sleep 2", "timeoutMs": 20000}),
        ),
    ];
    for (code, broken, fixed) in cases {
        let message = rejected(provider.sync_in(&with_command(broken), &NullSink).await);
        assert_code(code, &message);
        provider
            .sync_in(&with_command(fixed), &NullSink)
            .await
            .unwrap_or_else(|e| panic!("{code} after the fix: {}", e.message));
    }
    destroy(&provider, &good, &lease).await;
}

/// Execute without a lease id, and a command past its timeout.
/// Issue #38: a hook could not move its lease's end (an RBAC without `patch` on sandboxes).
async fn lease_end(emu: &KubernetesEmulator) {
    let good = config(emu);
    let lease = acquire(&KubernetesProvider::new(), &good, "run-end").await;
    let name = lease["providerLeaseId"].as_str().unwrap().to_string();
    let end = || {
        let sandbox = emu
            .object("agents.x-k8s.io", "sandboxes", NS, &name)
            .unwrap();
        sandbox["spec"]["shutdownTime"].clone()
    };
    let created_with = end();
    let run = json!({"config": good, "companyId": "c-1", "lease": lease, "command": "true",
        "timeoutMs": 30000});
    emu.deny(DenyRule {
        verb: Some("patch".into()),
        group: None,
        resource: "sandboxes".into(),
        namespace: None,
        name: None,
    });
    // A new worker's first execute moves the end: refused, logged, the execute answers.
    let sink = RecordingSink::default();
    let result = KubernetesProvider::new()
        .execute(&run, &sink)
        .await
        .unwrap();
    assert_eq!(result["exitCode"], 0, "{result}");
    let warned = sink.logs.lock().unwrap().clone();
    assert!(
        warned
            .iter()
            .any(|(level, line)| *level == LogLevel::Warn
                && code_of(line) == "K8S_LEASE_END_NOT_MOVED"),
        "{warned:?}"
    );
    assert_eq!(end(), created_with);
    // "Apply docs/rbac/clusterrole.yaml again (it grants `patch` on sandboxes) …"
    emu.clear_deny();
    let sink = RecordingSink::default();
    let provider = KubernetesProvider::new();
    provider.execute(&run, &sink).await.unwrap();
    assert!(sink.logs.lock().unwrap().is_empty());
    assert_ne!(end(), created_with, "the end moved");
    destroy(&provider, &good, &lease).await;
}

async fn execute(emu: &KubernetesEmulator) {
    let provider = KubernetesProvider::new();
    let good = config(emu);
    let lease = acquire(&provider, &good, "run-exec").await;
    let run = |lease: &Value, script: &str, timeout_ms: u64| {
        json!({"config": good, "companyId": "c-1", "lease": lease, "command": "sh",
            "args": ["-c", script], "timeoutMs": timeout_ms})
    };
    // "Re-acquire a fresh lease … and pass that lease to the execute call."
    let no_id = json!({"providerLeaseId": null, "metadata": lease["metadata"]});
    let result = provider
        .execute(&run(&no_id, "echo ok", 30000), &NullSink)
        .await
        .unwrap();
    assert_code(
        "K8S_EXECUTE_NO_LEASE_ID",
        result["stderr"].as_str().unwrap(),
    );
    let result = provider
        .execute(&run(&lease, "echo ok", 30000), &NullSink)
        .await
        .unwrap();
    assert_eq!(result["stdout"], "ok\n", "{result}");

    // "Raise the command's `timeoutMs` …" (the floor is 5 s).
    let result = provider
        .execute(&run(&lease, "sleep 6; echo done", 1000), &NullSink)
        .await
        .unwrap();
    assert_eq!(result["timedOut"], true, "{result}");
    assert_code("K8S_EXEC_TIMEOUT", result["stderr"].as_str().unwrap());
    let result = provider
        .execute(&run(&lease, "sleep 6; echo done", 30000), &NullSink)
        .await
        .unwrap();
    assert_eq!(
        (&result["exitCode"], &result["stdout"]),
        (&json!(0), &json!("done\n")),
        "{result}"
    );
    destroy(&provider, &good, &lease).await;
}

/// A cluster without agent-sandbox, then one with it.
async fn sandbox_api() {
    let mut none = KubeEmulatorOptions::for_tests();
    none.sandbox_versions = Vec::new();
    let without = start(none).await;
    let provider = KubernetesProvider::new();
    let message = rejected(
        provider
            .acquire_lease(&acquire_params(&config(&without), "run-api"), &NullSink)
            .await,
    );
    assert_code("K8S_SANDBOX_API_NOT_SERVED", &message);
    let said = probe_messages(&probe(&provider, &config(&without)).await);
    assert!(
        said.iter()
            .any(|m| code_of(m) == "K8S_PROBE_SANDBOX_API_NOT_INSTALLED"),
        "{said:?}"
    );
    assert_eq!(
        without.counts().count(NS, "secrets"),
        0,
        "nothing was created"
    );
    without.shutdown().await;
    // "Install agent-sandbox v1.0.x …": a cluster serving agents.x-k8s.io/v1beta1.
    let mut installed = KubeEmulatorOptions::for_tests();
    installed.sandbox_versions = vec!["v1beta1".into()];
    let with_api = start(installed).await;
    let good = config(&with_api);
    let lease = acquire(&provider, &good, "run-api").await;
    assert_eq!(lease["metadata"]["sandboxApiVersion"], "v1beta1");
    let said = probe_messages(&probe(&provider, &good).await);
    assert!(
        said.iter()
            .any(|m| code_of(m) == "K8S_PROBE_SANDBOX_API_SERVED"),
        "{said:?}"
    );
    destroy(&provider, &good, &lease).await;
    until_nothing_left(&with_api).await;
    with_api.shutdown().await;
}

/// Login terminals: the pods have no `claude`, so every `/bin/sh` of this emulator first puts a
/// stand-in on PATH (a line loop), then runs its script.
async fn login() {
    const FAKE_CLAUDE_SHELL: &str = r#"if [ ! -x /tmp/fakebin/claude ]; then mkdir -p /tmp/fakebin && printf '%s\n' '#!/bin/sh' 'printf "ready\n"' 'while IFS= read -r line; do printf "got:%s\n" "$line"; done' > /tmp/fakebin/claude && chmod +x /tmp/fakebin/claude; fi; PATH=/tmp/fakebin:$PATH; eval "$2""#;
    let mut opts = KubeEmulatorOptions::for_tests();
    opts.command_overrides = std::collections::BTreeMap::from([(
        "/bin/sh".to_string(),
        vec![
            "/bin/bash".into(),
            "-c".into(),
            FAKE_CLAUDE_SHELL.into(),
            "sh".into(),
        ],
    )]);
    let emu = start(opts).await;
    let provider = KubernetesProvider::new();
    let good = config(&emu);
    let lease = acquire(&provider, &good, "run-login").await;
    let id = lease["providerLeaseId"].as_str().unwrap().to_string();
    let open = |route: &str, extra: Value| {
        with(
            json!({"hostRouteId": route, "driverKey": "kubernetes", "companyId": "c-1",
                "environmentId": "e-1", "providerLeaseId": id, "loginCommandKey": "claude",
                "sessionHome": HOME}),
            extra,
        )
    };
    let (tx, events) = tokio::sync::mpsc::unbounded_channel();
    let sink: Arc<dyn HostSink> = Arc::new(ChannelSink::new(tx));
    let mut term = Terminal::new(events, Duration::from_secs(20));

    // "Open login sessions through Paperclip for a supported adapter (claude, codex, grok) …"
    let message = rejected(
        provider
            .login_pty_open(
                &open("route-1", json!({"loginCommandKey": "bash"})),
                sink.clone(),
            )
            .await,
    );
    assert_code("K8S_LOGIN_PTY_DESCRIPTOR_REJECTED", &message);
    // "Resume (or re-acquire) the lease in this environment, then open the login session with it."
    let message = rejected(
        provider
            .login_pty_open(
                &open("route-1", json!({"environmentId": "e-2"})),
                sink.clone(),
            )
            .await,
    );
    assert_code("K8S_LOGIN_PTY_LEASE_MISMATCH", &message);
    let opened = provider
        .login_pty_open(&open("route-1", json!({})), sink.clone())
        .await
        .unwrap();
    let session = opened["workerSessionId"].as_str().unwrap().to_string();
    term.until("ready", |s| s.contains("ready\r\n")).await;

    // "Send input in pieces of at most 65536 bytes."
    let input = |data: String| json!({"workerSessionId": session, "data": data});
    let big = format!("{}\n", "x".repeat(70_000));
    let message = rejected(
        provider
            .login_pty_input(&input(big.clone()), &NullSink)
            .await,
    );
    assert_code("K8S_LOGIN_PTY_INPUT_TOO_LARGE", &message);
    let (head, tail) = big.split_at(65_536);
    for piece in [head, tail] {
        provider
            .login_pty_input(&input(piece.into()), &NullSink)
            .await
            .unwrap();
    }
    // The terminal's line discipline keeps at most 4095 characters of a line; what matters is
    // that both pieces were taken and the session goes on.
    provider
        .login_pty_input(&input("after\n".into()), &NullSink)
        .await
        .unwrap();
    term.until("the line after", |s| s.contains("got:after"))
        .await;

    // "Close the existing session (onLoginPtyClose) before opening another on the route."
    let message = rejected(
        provider
            .login_pty_open(&open("route-1", json!({})), sink.clone())
            .await,
    );
    assert_code("K8S_LOGIN_PTY_ROUTE_OPEN", &message);
    provider
        .login_pty_close(
            &json!({"hostRouteId": "route-1", "workerSessionId": session}),
            &NullSink,
        )
        .await
        .unwrap();
    let reopened = provider
        .login_pty_open(&open("route-1", json!({})), sink.clone())
        .await
        .unwrap();
    provider
        .login_pty_close(
            &json!({"hostRouteId": "route-1", "workerSessionId": reopened["workerSessionId"]}),
            &NullSink,
        )
        .await
        .unwrap();
    destroy(&provider, &good, &lease).await;
    until_nothing_left(&emu).await;
    emu.shutdown().await;
}
