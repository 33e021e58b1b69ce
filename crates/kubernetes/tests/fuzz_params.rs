//! Property-based fuzzing: zod-exact config parsing, lease metadata, sync
//! mappings and the params object of every hook, with arbitrary JSON.
//!
//! Properties: no panic; no hang (every async call is bounded by a timeout); every `Err` carries
//! a catalogued message (`error_catalog::explain`, which also reads a ZodError's issue list) or
//! a documented pass-through (a message owned by a dependency); the canary kubeconfig token
//! never appears in an error or a result.
//!
//! No network: hook configs use a kubeconfig whose server is a closed loopback port (connection
//! refused at once), `inCluster` outside a cluster (fails reading the service account), or fail
//! validation first. Sync mappings run the real sync engine against a pod exec that always
//! fails. Cases: `PROPTEST_CASES` (default 256 per property, 4,096 under `PAPERCLIP_SOAK=long`).

use std::sync::Arc;

use kubernetes::KubernetesProvider;
use kubernetes::exec::PodExec;
use kubernetes::exec::{
    ExecError, ExecOutput, ExecRequest, OutputTap, StreamingIo, StreamingOutput,
};
use kubernetes::sync::{SyncOperation, SyncTarget, perform_sync_in, perform_sync_out};
use proptest::prelude::*;
use sandbox_core::fuzz::{self, JsonShape, Properties, SyncFixture, bounded, runner, runtime};
use sandbox_core::{BoxFuture, ProviderError};
use serde_json::{Map, Value, json};

const CANARY: &str = "canary-kube-token-fuzz-3a8c";
/// What the fake pod exec answers.
const NO_POD: &str = "fuzz: no pod to exec in";

fn dead_kubeconfig() -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: dead\n  cluster:\n    server: http://127.0.0.1:9\nusers:\n- name: dead\n  user:\n    token: \"{CANARY}\"\ncontexts:\n- name: dead\n  context:\n    cluster: dead\n    user: dead\ncurrent-context: dead\n"
    )
}

const KEYS: &[&str] = &[
    "kubeconfig",
    "inCluster",
    "companySlug",
    "backend",
    "egressMode",
    "namespacePrefix",
    "adapterType",
    "adapters",
    "runtimeImage",
    "imageAllowList",
    "imageRegistry",
    "imagePullSecrets",
    "defaultResources",
    "requests",
    "limits",
    "cpu",
    "memory",
    "runtimeClassName",
    "egressAllowFqdns",
    "egressAllowCidrs",
    "podActivityDeadlineSec",
    "jobTtlSecondsAfterFinished",
    "paperclipServerPodSelector",
    "serviceAccountAnnotations",
    "probeCommand",
    "envKeys",
    "defaultEnv",
    "allowFqdns",
    "providerLeaseId",
    "leaseMetadata",
    "metadata",
    "lease",
    "namespace",
    "jobName",
    "podName",
    "secretName",
    "phase",
    "remoteCwd",
    "expiresAt",
    "requestedExpiresAt",
    "companyId",
    "environmentId",
    "runId",
    "command",
    "args",
    "env",
    "cwd",
    "stdin",
    "timeoutMs",
    "operations",
    "files",
    "kind",
    "sourcePath",
    "targetPath",
    "workspace",
    "executionWorkspaceSettings",
    "networkEgress",
    "hostRouteId",
    "workerSessionId",
    "data",
    "cols",
    "rows",
    "__proto__",
];

static SHAPE: JsonShape = JsonShape {
    keys: KEYS,
    floats: &[0.5, -0.0, 1e308, -1.0],
    integers: &[60, 86_400],
    strings: &[
        "",
        " ",
        "\0",
        "a\nb",
        "../..",
        "/",
        "/workspace",
        "sandbox-cr",
        "job",
        "cilium",
        "standard",
        "claude_local",
        "acme",
        "100m",
        "1Gi",
        "10.0.0.0/8",
        "pc-01hzzzzzzzzzzzzzzzzzzzzzzz",
        "2030-01-01T00:00:00.000Z",
    ],
};

static PROPERTIES: Properties = Properties {
    canary: CANARY,
    secret: "token",
    pass_through,
    catalogued: |message| error_catalog::explain(message).is_some(),
};

/// A connection that never reaches a real cluster.
fn connection() -> impl Strategy<Value = (Option<Value>, Option<Value>)> {
    prop_oneof![
        4 => Just((Some(json!(dead_kubeconfig())), None)),
        1 => Just((None, Some(json!(true)))),
        1 => Just((Some(json!("not: [yaml")), None)),
        1 => Just((Some(json!("")), None)),
        1 => Just((None, None)),
        1 => Just((Some(json!(3)), Some(json!("yes")))),
    ]
}

/// A config that is valid apart from some arbitrary fields (the connection always safe), or
/// arbitrary non-object JSON.
fn config() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => (
            connection(),
            proptest::collection::btree_map(SHAPE.key(), SHAPE.any_json(), 0..4),
        )
            .prop_map(|((kubeconfig, in_cluster), extra)| {
                let mut config = json!({ "companySlug": "acme", "backend": "sandbox-cr",
                    "egressMode": "cilium" });
                for (k, v) in extra {
                    config[k] = v;
                }
                let object = config.as_object_mut().unwrap();
                object.remove("kubeconfig");
                object.remove("inCluster");
                if let Some(k) = kubeconfig {
                    object.insert("kubeconfig".into(), k);
                }
                if let Some(c) = in_cluster {
                    object.insert("inCluster".into(), c);
                }
                config
            }),
        1 => SHAPE.any_json().prop_filter_map("no object", |v| (!v.is_object()).then_some(v)),
    ]
}

fn params() -> impl Strategy<Value = Value> {
    (
        config(),
        proptest::collection::btree_map(SHAPE.key(), SHAPE.any_json(), 0..6),
        any::<bool>(),
    )
        .prop_map(|(config, extra, with_lease)| {
            let mut params = Map::new();
            params.insert("companyId".into(), json!("c-1"));
            params.insert("environmentId".into(), json!("e-1"));
            params.insert("runId".into(), json!("run-1"));
            if with_lease {
                let metadata = json!({ "namespace": "paperclip-acme", "jobName": "pc-1",
                    "podName": "pc-1-pod", "secretName": "pc-1-env", "phase": "Running",
                    "backend": "sandbox-cr", "remoteCwd": "/workspace" });
                params.insert("providerLeaseId".into(), json!("pc-1"));
                params.insert("leaseMetadata".into(), metadata.clone());
                params.insert(
                    "lease".into(),
                    json!({ "providerLeaseId": "pc-1", "metadata": metadata }),
                );
                params.insert("command".into(), json!("true"));
                params.insert("timeoutMs".into(), json!(2000));
            }
            fuzz::params_with(params, extra, config)
        })
}

/// Messages owned by a dependency, passed through unchanged, each with its reason.
fn pass_through(error: &ProviderError) -> Option<&'static str> {
    if error.code.is_some_and(|c| (100..600).contains(&c)) {
        return Some("Kubernetes API Status message with its HTTP code");
    }
    let m = error.message.as_str();
    if ["ServiceError: ", "HyperError: ", "HttpError: "]
        .iter()
        .any(|p| m.starts_with(p))
    {
        return Some("HTTP client transport error");
    }
    // kube-rs's in-cluster config loading (the original passes `loadFromCluster` errors
    // through the same way).
    if m.starts_with("failed to read an incluster ") {
        return Some("in-cluster config loading error");
    }
    // kube-rs's kubeconfig loading (the original passes `loadFromString` YAML errors through).
    if m.starts_with("failed to parse kubeconfig YAML: ") {
        return Some("kubeconfig YAML error");
    }
    // kube-rs refuses an empty object name before sending (lease ID `[]` reads as `""`).
    // Deliberate divergence: client-node would send DELETE …/sandboxes/ (the collection).
    if m == "failed to validate request: A non-empty name is required" {
        return Some("kube-rs refuses an empty object name");
    }
    if m == NO_POD {
        return Some("the fake pod exec of this test");
    }
    fuzz::node_pass_through(m)
}

/// `validateConfig`'s `normalizedConfig` is the host's own config handed back for the host to
/// persist (the contract, as in the original), so it carries the kubeconfig by design; the rest
/// of the result must not.
fn without_normalized_config(result: &Value) -> Value {
    let mut result = result.clone();
    if let Some(object) = result.as_object_mut() {
        object.remove("normalizedConfig");
    }
    result
}

#[test]
fn config_parsing_never_panics_and_fails_with_catalogued_messages() {
    let strategy = prop_oneof![SHAPE.any_json(), config()];
    runner()
        .run(&strategy, |raw| {
            let params = json!({ "config": raw, "companyId": "c-1" });
            match kubernetes::validate_config(&params).map(sandbox_core::HookValue::into_value) {
                Ok(result) => {
                    PROPERTIES
                        .check_result("validate_config", &without_normalized_config(&result))?;
                    for message in result
                        .get("errors")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        let message = message.as_str().unwrap_or_default();
                        prop_assert!(
                            error_catalog::explain(message).is_some(),
                            "validate_config: uncatalogued {message:?} for {raw}"
                        );
                    }
                }
                Err(error) => PROPERTIES.check_error("validate_config", &raw, &error)?,
            }
            if let Err(error) = kubernetes::parse_config_for_hook(&params) {
                PROPERTIES.check_error("parse_config_for_hook", &raw, &error)?;
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn every_hook_with_arbitrary_params() {
    let rt = runtime();
    let provider = KubernetesProvider::new();
    runner()
        .run(&params(), |params| {
            let outcomes = rt.block_on(async {
                let p = &provider;
                let params = &params;
                let mut outcomes = sandbox_core::fuzz_hooks!(
                    p,
                    params,
                    probe,
                    acquire_lease,
                    resume_lease,
                    release_lease,
                    destroy_lease,
                    realize_workspace,
                    execute,
                    sync_in,
                    sync_out,
                    login_pty_input,
                    login_pty_stop,
                    login_pty_close,
                );
                let sink: Arc<dyn sandbox_core::HostSink> = Arc::new(sandbox_core::NullSink);
                outcomes.push((
                    "login_pty_open",
                    bounded(p.login_pty_open(params, sink)).await,
                ));
                outcomes
            });
            PROPERTIES.check_outcomes(&params, outcomes)
        })
        .unwrap();
}

/// A pod exec that always fails: the sync engine's own checks run, nothing executes.
struct NoPod;

impl PodExec for NoPod {
    fn exec(
        &self,
        _request: ExecRequest,
        _tap: Option<OutputTap>,
    ) -> BoxFuture<'_, Result<ExecOutput, ExecError>> {
        Box::pin(async { Err(ExecError::Transport(NO_POD.into())) })
    }

    fn exec_streaming<'a>(
        &'a self,
        _namespace: &'a str,
        _pod: &'a str,
        _argv: &'a [String],
        _io: StreamingIo<'a>,
    ) -> BoxFuture<'a, Result<StreamingOutput, ExecError>> {
        Box::pin(async { Err(ExecError::Transport(NO_POD.into())) })
    }
}

fn mapping(root: String) -> impl Strategy<Value = Value> {
    let remote = prop_oneof![
        Just(json!("/workspace/x")),
        Just(json!("/workspace/../etc")),
        Just(json!("/etc/passwd")),
        Just(json!("relative")),
        Just(json!("/a\nb")),
        Just(json!("/a\0b")),
        SHAPE.any_json(),
    ];
    (
        SHAPE.mapping_kind(),
        SHAPE.host_path_or_json(&root),
        remote,
        prop_oneof![Just(Value::Null), Just(json!(420)), SHAPE.any_json()],
        any::<bool>(),
    )
        .prop_map(|(kind, host, remote, mode, swap)| {
            let (source, target) = if swap { (remote, host) } else { (host, remote) };
            json!({ "kind": kind, "sourcePath": source, "targetPath": target, "mode": mode })
        })
}

fn operations(root: String) -> impl Strategy<Value = Value> {
    let command = (SHAPE.any_json(), SHAPE.any_json())
        .prop_map(|(command, cwd)| json!({ "command": command, "cwd": cwd }));
    prop_oneof![
        1 => SHAPE.any_json(),
        4 => proptest::collection::vec(
            (
                SHAPE.any_json(),
                proptest::collection::vec(mapping(root), 0..3),
                prop_oneof![
                    Just(Value::Null),
                    proptest::collection::vec(command, 0..2).prop_map(Value::Array)
                ],
            )
                .prop_map(|(id, files, commands)| {
                    json!({ "operationId": id, "files": files, "postUploadCommands": commands })
                }),
            0..3,
        )
        .prop_map(Value::Array),
    ]
}

#[test]
fn sync_mappings_with_arbitrary_fields() {
    let fixture = SyncFixture::new("k8s-fuzz-sync");
    let rt = runtime();
    let target = SyncTarget {
        exec: Arc::new(NoPod),
        namespace: "paperclip-acme".into(),
        pod: "pc-1-pod".into(),
    };
    runner()
        .run(&operations(fixture.root().display().to_string()), |raw| {
            let operations = SyncOperation::parse_all(Some(&raw));
            let outcomes = rt.block_on(async {
                vec![
                    (
                        "sync_in",
                        bounded(perform_sync_in(&target, &operations, "/workspace", 2000)).await,
                    ),
                    (
                        "sync_out",
                        bounded(perform_sync_out(
                            &target,
                            &operations,
                            "/workspace",
                            2000,
                            None,
                        ))
                        .await,
                    ),
                ]
            });
            PROPERTIES.check_outcomes(&raw, outcomes)
        })
        .unwrap();
    assert_eq!(
        fixture.top_names(),
        ["dir", "file.txt"],
        "sync wrote next to the fixtures"
    );
}

/// Regression (found by `sync_mappings_with_arbitrary_fields`): a `file` mapping whose source
/// is a directory failed with std's "the source path is neither a regular file nor a symlink to
/// a regular file, copyfile '…'" instead of Node's `fs.copyFile` rejection.
#[test]
fn sync_in_of_a_directory_as_a_file_fails_like_node_copyfile() {
    let root = std::env::temp_dir().join(format!("k8s-fuzz-copyfile-{}", std::process::id()));
    std::fs::create_dir_all(&root).unwrap();
    let target = SyncTarget {
        exec: Arc::new(NoPod),
        namespace: "paperclip-acme".into(),
        pod: "pc-1-pod".into(),
    };
    let operations = SyncOperation::parse_all(Some(&json!([{ "operationId": "op",
        "files": [{ "kind": "file", "sourcePath": root, "targetPath": "/workspace/x" }] }])));
    let error = runtime()
        .block_on(perform_sync_in(&target, &operations, "/workspace", 2000))
        .unwrap_err();
    std::fs::remove_dir_all(&root).unwrap();
    let prefix = format!(
        "EISDIR: illegal operation on a directory, copyfile '{}' -> '",
        root.display()
    );
    assert!(error.message.starts_with(&prefix), "{}", error.message);
    assert!(error.message.ends_with("/stage/0'"), "{}", error.message);
}
