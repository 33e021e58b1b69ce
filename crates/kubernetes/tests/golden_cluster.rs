//! `kubernetes/builders.json`, the functions that talk to the cluster: each case runs against a
//! `ScriptedCluster` scripted by `input.cluster`, and both its outcome and the ordered API calls
//! it made must equal the recording (`expected.calls`, plus `releaseWorkloadCalled` where
//! recorded).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

use kubernetes::builders::scoped_egress::{
    ScopedEgressPolicyInput, ScopedNetworkEgressGrant, ScopedPolicyBaseRules,
};
use kubernetes::cluster::testing::{ManualClock, ScriptedCluster};
use kubernetes::cluster::{
    ClusterError, DestroyLease, PerRunSecret, PollOptions, ReadinessLimits, ResumeCheck,
    SandboxApiVersion, TenantInput, check_lease_resumable, create_per_run_secret,
    create_scoped_network_egress_policy, create_scoped_network_egress_policy_or_release_workload,
    destroy_lease_resources, ensure_tenant, find_pod_for_job, find_pod_for_sandbox, get_job_status,
    get_sandbox_cr_status, sandbox_api_version_from_metadata, wait_for_sandbox_ready,
};
use kubernetes::config::{Backend, EgressMode};
use sandbox_core::golden::{Case, load_cases};
use serde_json::{Map, Value, json};

#[path = "support/golden.rs"]
mod golden_support;
use golden_support::{CLUSTER_FUNCTIONS, assert_groups_pass};

const VECTORS: &str = "kubernetes/builders.json";

#[test]
fn cluster_orchestration_vectors() {
    let cases = load_cases(VECTORS);
    let mut by_function: BTreeMap<&str, Vec<Case>> = BTreeMap::new();
    for case in &cases {
        let function = case.input["fn"].as_str().unwrap_or_default();
        if let Some(known) = CLUSTER_FUNCTIONS.iter().find(|f| **f == function) {
            by_function.entry(known).or_default().push(case.clone());
        }
    }
    assert!(!by_function.is_empty(), "{VECTORS} has no cluster cases");

    assert_groups_pass(&by_function, run_case);
}

/// Runs one case and records it in the golden shape.
fn run_case(case: &Case) -> Value {
    let cluster = ScriptedCluster::from_script(&case.input["cluster"]).expect("cluster script");
    let release_called = AtomicBool::new(false);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let result = runtime.block_on(call(case, &cluster, &release_called));

    let mut recorded = Map::new();
    match result {
        Ok(value) => recorded.insert("returns".into(), value),
        Err(err) => recorded.insert("throws".into(), err.to_js_json()),
    };
    recorded.insert("calls".into(), cluster.calls_json());
    if case.expected.get("releaseWorkloadCalled").is_some() {
        let called = release_called.load(Ordering::SeqCst);
        recorded.insert("releaseWorkloadCalled".into(), json!(called));
    }
    Value::Object(recorded)
}

async fn call(
    case: &Case,
    cluster: &ScriptedCluster,
    release_called: &AtomicBool,
) -> Result<Value, ClusterError> {
    let args = &case.input["args"];
    let input = &args["input"];
    let namespace = args["namespace"].as_str().unwrap_or_default();
    let name = args["name"].as_str().unwrap_or_default();
    let clock = ManualClock::new();
    match case.input["fn"].as_str().unwrap_or_default() {
        "createPerRunSecret" => {
            create_per_run_secret(cluster, &per_run_secret(input)).await?;
            Ok(Value::Null)
        }
        "ensureTenant" => {
            let tenant: TenantInput = serde_json::from_value(input.clone()).expect("tenant input");
            ensure_tenant(cluster, &tenant).await?;
            Ok(Value::Null)
        }
        "createScopedNetworkEgressPolicy" => {
            let name = create_scoped_network_egress_policy(cluster, &scoped_policy(input)).await?;
            Ok(json!(name))
        }
        "createScopedNetworkEgressPolicyOrReleaseWorkload" => {
            let release_error = case.input["release"]["throws"].as_str().map(str::to_owned);
            let release = || async {
                release_called.store(true, Ordering::SeqCst);
                match release_error {
                    Some(message) => Err(ClusterError::Failed(message)),
                    None => Ok(()),
                }
            };
            let policy = scoped_policy(input);
            let name =
                create_scoped_network_egress_policy_or_release_workload(cluster, &policy, release)
                    .await?;
            Ok(json!(name))
        }
        "getJobStatus" => Ok(get_job_status(cluster, namespace, name).await?.to_json()),
        "findPodForJob" => Ok(json!(find_pod_for_job(cluster, namespace, name).await?)),
        "getSandboxCrStatus" => {
            let version = SandboxApiVersion::default();
            let status = get_sandbox_cr_status(cluster, version, namespace, name).await?;
            Ok(status.to_json())
        }
        "findPodForSandbox" => {
            let version = SandboxApiVersion::default();
            Ok(json!(
                find_pod_for_sandbox(cluster, version, namespace, name).await?
            ))
        }
        "waitForSandboxReady" => {
            let options = poll_options(&args["opts"], PollOptions::default());
            let version = SandboxApiVersion::default();
            let status =
                wait_for_sandbox_ready(cluster, &clock, version, namespace, name, options).await?;
            Ok(status.to_json())
        }
        "checkLeaseResumable" => {
            let check = ResumeCheck {
                namespace: string(&input["namespace"]),
                name: string(&input["name"]),
                backend: backend(&input["backend"]),
                ready_wait: poll_options(input, ResumeCheck::DEFAULT_READY_WAIT),
                readiness: ReadinessLimits::default(),
                sandbox_api_version: sandbox_api_version(&input["sandboxApiVersion"]),
            };
            Ok(check_lease_resumable(cluster, &clock, &check)
                .await?
                .to_json())
        }
        "destroyLeaseResources" => {
            let lease = DestroyLease {
                namespace: string(&input["namespace"]),
                name: string(&input["name"]),
                backend: backend(&input["backend"]),
                pod_name: input["podName"].as_str().map(str::to_owned),
                secret_name: input["secretName"].as_str().map(str::to_owned),
                sandbox_api_version: sandbox_api_version(&input["sandboxApiVersion"]),
            };
            destroy_lease_resources(cluster, &lease).await?;
            Ok(Value::Null)
        }
        other => panic!("not a cluster function: {other}"),
    }
}

fn string(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_string()
}

fn string_list(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|items| items.iter().map(string).collect())
        .unwrap_or_default()
}

fn string_map(value: &Value) -> Vec<(String, String)> {
    value
        .as_object()
        .map(|object| object.iter().map(|(k, v)| (k.clone(), string(v))).collect())
        .unwrap_or_default()
}

/// The lease's backend as the original branches on it: `sandbox-cr`, else the Job path.
fn backend(value: &Value) -> Backend {
    if value.as_str() == Some("sandbox-cr") {
        Backend::SandboxCr
    } else {
        Backend::Job
    }
}

fn sandbox_api_version(value: &Value) -> SandboxApiVersion {
    sandbox_api_version_from_metadata(Some(value)).unwrap_or_default()
}

/// `{timeoutMs, pollMs}` (or `{readyTimeoutMs, pollMs}`), each falling back to `defaults`.
fn poll_options(value: &Value, defaults: PollOptions) -> PollOptions {
    let timeout = value
        .get("timeoutMs")
        .or_else(|| value.get("readyTimeoutMs"));
    PollOptions {
        timeout_ms: timeout
            .and_then(Value::as_u64)
            .unwrap_or(defaults.timeout_ms),
        poll_ms: value["pollMs"].as_u64().unwrap_or(defaults.poll_ms),
    }
}

fn per_run_secret(input: &Value) -> PerRunSecret {
    PerRunSecret {
        namespace: string(&input["namespace"]),
        secret_name: string(&input["secretName"]),
        run_id: string(&input["runId"]),
        owner_kind: string(&input["ownerKind"]),
        owner_api_version: string(&input["ownerApiVersion"]),
        owner_name: string(&input["ownerName"]),
        owner_uid: string(&input["ownerUid"]),
        bootstrap_token: string(&input["bootstrapToken"]),
        adapter_env: string_map(&input["adapterEnv"]),
    }
}

fn scoped_policy(input: &Value) -> ScopedEgressPolicyInput {
    let base_rules = input.get("baseRules").filter(|b| b.is_object());
    ScopedEgressPolicyInput {
        namespace: string(&input["namespace"]),
        mode: if input["mode"] == "cilium" {
            EgressMode::Cilium
        } else {
            EgressMode::Standard
        },
        run_id: string(&input["runId"]),
        workload_name: string(&input["workloadName"]),
        owner_reference: input["ownerReference"].clone(),
        grant: ScopedNetworkEgressGrant {
            allow_fqdns: string_list(&input["grant"]["allowFqdns"]),
            allow_cidrs: string_list(&input["grant"]["allowCidrs"]),
        },
        suffix: input["suffix"].as_str().map(str::to_owned),
        base_rules: base_rules.map(|rules| ScopedPolicyBaseRules {
            paperclip_server_namespace: string(&rules["paperclipServerNamespace"]),
            paperclip_server_pod_selector: rules
                .get("paperclipServerPodSelector")
                .filter(|s| s.is_object())
                .map(string_map),
        }),
    }
}
