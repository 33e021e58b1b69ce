//! The provider's hooks against the real API server: probe, acquire (both backends, both
//! Sandbox CRD shapes, both egress modes), resume, release, destroy and the errors the server
//! really answers with.
//!
//! Nothing schedules or runs pods here (no scheduler, no kubelet). Where a step needs a Ready
//! pod (resume), the test plays the agent-sandbox controller and the kubelet, for status only:
//! it creates the Sandbox's pod from the Sandbox's own pod template (so Pod Security admission,
//! the LimitRange and the ResourceQuota of the tenant namespace judge the provider's pod spec),
//! then writes the pod's status (Running, Ready) and the Sandbox's (Ready condition).

use emulator::kubernetes::{KubeEmulatorOptions, KubernetesEmulator};
use kube::Client;
use kubernetes::KubernetesProvider;
use kubernetes::cluster::permissions::needed;
use kubernetes::config::{Backend, EgressMode};
use sandbox_core::NullSink;
use serde_json::{Value, json};

use crate::control_plane::{ControlPlane, Shape, control_plane};
use crate::support::{
    client, delete, get, items, merge_patch, owned_by, post, unique, until, until_gone,
};

const SANDBOX_GROUP: &str = "agents.x-k8s.io";

fn config(kubeconfig: &str, slug: &str, backend: &str, egress: &str) -> Value {
    json!({"kubeconfig": kubeconfig, "companySlug": slug, "backend": backend, "egressMode": egress})
}

/// A task grant, so that acquire makes the task-scoped egress policy too.
fn acquire_params(config: &Value, run: &str) -> Value {
    json!({"config": config, "companyId": "company-real", "runId": run,
        "executionWorkspaceSettings": {"networkEgress": {
            "allowFqdns": ["github.com"], "allowCidrs": ["192.0.2.0/24"]}}})
}

fn lease_params(config: &Value, lease: &Value) -> Value {
    json!({"config": config, "companyId": "company-real",
        "providerLeaseId": lease["providerLeaseId"], "leaseMetadata": lease["metadata"]})
}

async fn acquire(provider: &KubernetesProvider, config: &Value, run: &str) -> Value {
    provider
        .acquire_lease(&acquire_params(config, run), &NullSink)
        .await
        .unwrap_or_else(|e| panic!("acquire refused: {}", e.message))
}

fn sandboxes_path(version: &str, ns: &str) -> String {
    format!("/apis/{SANDBOX_GROUP}/{version}/namespaces/{ns}/sandboxes")
}

fn cnp_path(ns: &str) -> String {
    format!("/apis/cilium.io/v2/namespaces/{ns}/ciliumnetworkpolicies")
}

fn np_path(ns: &str) -> String {
    format!("/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies")
}

/// The paths of the tenant objects every lease of a company shares.
fn tenant_objects(ns: &str, egress: &str) -> Vec<String> {
    let mut paths = vec![
        format!("/api/v1/namespaces/{ns}"),
        format!("/api/v1/namespaces/{ns}/serviceaccounts/paperclip-tenant-sa"),
        format!("/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles/paperclip-tenant-role"),
        format!(
            "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings/paperclip-tenant-rb"
        ),
        format!("/api/v1/namespaces/{ns}/resourcequotas/paperclip-quota"),
        format!("/api/v1/namespaces/{ns}/limitranges/paperclip-limits"),
        format!("{}/paperclip-deny-all", np_path(ns)),
    ];
    paths.push(match egress {
        "cilium" => format!("{}/paperclip-egress-fqdn", cnp_path(ns)),
        _ => format!("{}/paperclip-egress-allow", np_path(ns)),
    });
    paths
}

/// GETs each path (every one must exist): its uid and what its builder decided (controllers
/// may write status, e.g. the quota's usage, so the resourceVersion is no witness).
async fn tenant_state(admin: &Client, paths: &[String]) -> Vec<(String, Value, Value)> {
    let mut state = Vec::new();
    for path in paths {
        let (status, body) = get(admin, path).await;
        assert_eq!(status, 200, "{path} exists: {body}");
        state.push((
            path.clone(),
            body["metadata"]["uid"].clone(),
            built_parts_of(&body),
        ));
    }
    state
}

/// Replaces the run's random workload name and the tenant namespace, so objects of two runs
/// can be compared.
fn normalized(value: &Value, run_name: &str, ns: &str) -> Value {
    let text = value.to_string().replace(run_name, "RUN").replace(ns, "NS");
    serde_json::from_str(&text).unwrap()
}

/// One object the provider makes: where it lives (`ns` empty for the namespace itself).
struct Made {
    group: &'static str,
    version: &'static str,
    plural: &'static str,
    /// `RUN` stands for the workload name.
    name: String,
}

impl Made {
    fn new(group: &'static str, version: &'static str, plural: &'static str, name: &str) -> Self {
        Made {
            group,
            version,
            plural,
            name: name.to_string(),
        }
    }

    fn name_in(&self, run: &str) -> String {
        self.name.replace("RUN", run)
    }

    fn path(&self, ns: &str, run: &str) -> String {
        let prefix = match self.group {
            "" => format!("/api/{}", self.version),
            group => format!("/apis/{group}/{}", self.version),
        };
        match self.plural {
            "namespaces" => format!("{prefix}/namespaces/{ns}"),
            plural => format!("{prefix}/namespaces/{ns}/{plural}/{}", self.name_in(run)),
        }
    }
}

/// Everything one acquire makes, except the per-run Secret (whose `stringData` the server
/// turns into `data`).
fn made_by_acquire(shape: Shape, backend: &str, egress: &str) -> Vec<Made> {
    let (policy_group, policy_plural) = match egress {
        "cilium" => ("cilium.io", "ciliumnetworkpolicies"),
        _ => ("networking.k8s.io", "networkpolicies"),
    };
    let policy_version = if egress == "cilium" { "v2" } else { "v1" };
    vec![
        Made::new("", "v1", "namespaces", ""),
        Made::new("", "v1", "serviceaccounts", "paperclip-tenant-sa"),
        Made::new(
            "rbac.authorization.k8s.io",
            "v1",
            "roles",
            "paperclip-tenant-role",
        ),
        Made::new(
            "rbac.authorization.k8s.io",
            "v1",
            "rolebindings",
            "paperclip-tenant-rb",
        ),
        Made::new("", "v1", "resourcequotas", "paperclip-quota"),
        Made::new("", "v1", "limitranges", "paperclip-limits"),
        Made::new(
            "networking.k8s.io",
            "v1",
            "networkpolicies",
            "paperclip-deny-all",
        ),
        match egress {
            "cilium" => Made::new(
                "cilium.io",
                "v2",
                "ciliumnetworkpolicies",
                "paperclip-egress-fqdn",
            ),
            _ => Made::new(
                "networking.k8s.io",
                "v1",
                "networkpolicies",
                "paperclip-egress-allow",
            ),
        },
        match backend {
            "job" => Made::new("batch", "v1", "jobs", "RUN"),
            _ => Made::new(SANDBOX_GROUP, shape.sandbox_version(), "sandboxes", "RUN"),
        },
        Made::new(
            policy_group,
            policy_version,
            policy_plural,
            "RUN-adapter-egress",
        ),
        Made::new(policy_group, policy_version, policy_plural, "RUN-egress"),
    ]
}

/// The parts of an object that its builder decides (not the server's metadata or status),
/// normalized (its own uid, which a Job's server-made selector labels carry, becomes `UID`).
fn built_parts(object: &Value, run_name: &str, ns: &str) -> Value {
    let uid = object["metadata"]["uid"].as_str().unwrap_or("no-uid");
    let object: Value = serde_json::from_str(&object.to_string().replace(uid, "UID")).unwrap();
    normalized(&built_parts_of(&object), run_name, ns)
}

fn built_parts_of(object: &Value) -> Value {
    let mut parts = object.clone();
    if let Some(map) = parts.as_object_mut() {
        map.remove("status");
        let metadata = map.remove("metadata").unwrap_or(Value::Null);
        map.insert("labels".into(), metadata["labels"].clone());
        map.insert("annotations".into(), metadata["annotations"].clone());
    }
    parts
}

/// Every field `sent` has, `stored` has with the same value (the server may add defaults; it
/// must not drop or change what was sent, which a CRD schema that does not know a field would).
fn assert_stored_as_sent(sent: &Value, stored: &Value, at: &str) {
    match (sent, stored) {
        (Value::Object(sent), Value::Object(stored)) => {
            for (key, value) in sent {
                // The server keeps no empty maps or lists (`omitempty`): as good as sent.
                let empty = value.as_object().is_some_and(|m| m.is_empty())
                    || value.as_array().is_some_and(|a| a.is_empty());
                if value.is_null() || (empty && stored.get(key).is_none_or(Value::is_null)) {
                    continue;
                }
                let next = format!("{at}.{key}");
                let Some(kept) = stored.get(key) else {
                    panic!("{next} was sent as {value} but not stored");
                };
                assert_stored_as_sent(value, kept, &next);
            }
        }
        (Value::Array(sent), Value::Array(stored)) => {
            assert_eq!(
                sent.len(),
                stored.len(),
                "{at}: {sent:?} stored as {stored:?}"
            );
            for (i, (a, b)) in sent.iter().zip(stored).enumerate() {
                assert_stored_as_sent(a, b, &format!("{at}[{i}]"));
            }
        }
        (sent, stored) => assert_eq!(sent, stored, "{at}"),
    }
}

/// What the provider sends for an acquire, taken from the emulator (which stores objects as
/// they arrive), by [`made_by_acquire`] entry.
async fn as_sent_to_the_emulator(shape: Shape, backend: &str, egress: &str) -> Vec<Value> {
    let mut opts = KubeEmulatorOptions::for_tests();
    opts.sandbox_versions = vec![shape.sandbox_version().to_string()];
    opts.run_pod_commands = false;
    let emu = KubernetesEmulator::start(opts)
        .await
        .expect("emulator starts");
    let provider = KubernetesProvider::new();
    let config = config(emu.kubeconfig_yaml(), "as-sent", backend, egress);
    let lease = acquire(&provider, &config, "run-1").await;
    let ns = lease["metadata"]["namespace"].as_str().unwrap().to_string();
    let run = lease["providerLeaseId"].as_str().unwrap().to_string();
    let sent = made_by_acquire(shape, backend, egress)
        .iter()
        .map(|made| {
            let object = match made.plural {
                "namespaces" => emu.object("", "namespaces", "", &ns),
                plural => emu.object(made.group, plural, &ns, &made.name_in(&run)),
            };
            let object = object.unwrap_or_else(|| panic!("the emulator holds {}", made.name));
            built_parts(&object, &run, &ns)
        })
        .collect();
    emu.shutdown().await;
    sent
}

/// Plays the agent-sandbox controller and the kubelet for status only: the Sandbox's pod, made
/// from its own pod template and owned by it, Running and Ready; then the Sandbox Ready.
/// Returns the pod's name.
async fn make_sandbox_ready(admin: &Client, shape: Shape, ns: &str, sandbox: &Value) -> String {
    let name = sandbox["metadata"]["name"].as_str().unwrap();
    let uid = sandbox["metadata"]["uid"].as_str().unwrap();
    let version = shape.sandbox_version();
    // v0.4.x names the pod after the Sandbox; v0.5.x is found by its sandbox-name label.
    let pod_name = match shape {
        Shape::V04 => name.to_string(),
        Shape::V05 => format!("{name}-pod"),
        Shape::WithoutAgentSandbox => unreachable!("no Sandbox without agent-sandbox"),
    };
    let template = &sandbox["spec"]["podTemplate"];
    let mut labels = template["metadata"]["labels"].clone();
    labels["agents.x-k8s.io/sandbox-name"] = json!(name);
    let pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": pod_name, "namespace": ns, "labels": labels,
            "ownerReferences": [{"apiVersion": format!("{SANDBOX_GROUP}/{version}"),
                "kind": "Sandbox", "name": name, "uid": uid,
                "controller": true, "blockOwnerDeletion": true}]},
        "spec": template["spec"],
    });
    // The quota admission refuses pods until the resourcequota controller has counted usage.
    let quota = format!("/api/v1/namespaces/{ns}/resourcequotas/paperclip-quota");
    until("the tenant ResourceQuota's status", || async {
        let (_, rq) = get(admin, &quota).await;
        rq["status"]["hard"]
            .as_object()
            .filter(|h| !h.is_empty())
            .map(drop)
    })
    .await;
    let (status, created) = post(admin, &format!("/api/v1/namespaces/{ns}/pods"), &pod).await;
    assert_eq!(
        status, 201,
        "the provider's pod template is admitted in its tenant namespace: {created}"
    );
    let now = "2026-01-01T00:00:00Z";
    let ready = json!({"type": "Ready", "status": "True", "lastTransitionTime": now});
    let pod_status = json!({"status": {"phase": "Running", "conditions": [ready]}});
    let pod_path = format!("/api/v1/namespaces/{ns}/pods/{pod_name}/status");
    let (status, body) = merge_patch(admin, &pod_path, &pod_status).await;
    assert_eq!(status, 200, "{body}");
    let condition = json!({"type": "Ready", "status": "True", "reason": "DependenciesReady",
        "message": "Pod is Ready", "lastTransitionTime": now,
        "observedGeneration": sandbox["metadata"]["generation"]});
    let mut sandbox_status = json!({"status": {"conditions": [condition]}});
    if shape == Shape::V04 {
        // v1alpha1 requires the replica count in every status.
        sandbox_status["status"]["replicas"] = json!(1);
        sandbox_status["status"]["selector"] =
            json!(format!("agents.x-k8s.io/sandbox-name-hash=x"));
    }
    let path = format!("{}/{name}/status", sandboxes_path(version, ns));
    let (status, body) = merge_patch(admin, &path, &sandbox_status).await;
    assert_eq!(status, 200, "the Sandbox status write is valid: {body}");
    pod_name
}

/// The lease's objects in the tenant namespace: the workload, its Secret and scoped policies
/// (through their ownerReferences), and its pods.
struct LeaseObjects {
    workload: Value,
    secret: String,
}

async fn lease_objects(
    admin: &Client,
    backend: &str,
    egress: &str,
    shape: Shape,
    lease: &Value,
) -> LeaseObjects {
    let ns = lease["metadata"]["namespace"].as_str().unwrap();
    let name = lease["providerLeaseId"].as_str().unwrap();
    let path = workload_path(backend, shape, ns, name);
    let (status, workload) = get(admin, &path).await;
    assert_eq!(status, 200, "the workload exists: {workload}");
    let uid = workload["metadata"]["uid"].as_str().unwrap();
    let (_, secrets) = get(admin, &format!("/api/v1/namespaces/{ns}/secrets")).await;
    let secret = owned_by(&secrets, uid);
    assert_eq!(
        secret,
        [format!("{name}-env")],
        "one per-run Secret, owned by the workload"
    );
    let (_, policies) = get(admin, &policy_path(egress, ns)).await;
    let mut policies = owned_by(&policies, uid);
    policies.sort();
    assert_eq!(
        policies,
        [format!("{name}-adapter-egress"), format!("{name}-egress")],
        "the scoped egress policies, owned by the workload"
    );
    LeaseObjects {
        workload,
        secret: secret[0].clone(),
    }
}

fn workload_path(backend: &str, shape: Shape, ns: &str, name: &str) -> String {
    match backend {
        "job" => format!("/apis/batch/v1/namespaces/{ns}/jobs/{name}"),
        _ => format!("{}/{name}", sandboxes_path(shape.sandbox_version(), ns)),
    }
}

fn policy_path(egress: &str, ns: &str) -> String {
    match egress {
        "cilium" => cnp_path(ns),
        _ => np_path(ns),
    }
}

/// Waits until nothing in the namespace is owned by `uid` any more, and the workload is gone.
async fn until_lease_gone(admin: &Client, egress: &str, ns: &str, workload_path: &str, uid: &str) {
    until_gone(admin, workload_path).await;
    for list in [
        format!("/api/v1/namespaces/{ns}/secrets"),
        format!("/api/v1/namespaces/{ns}/pods"),
        policy_path(egress, ns),
    ] {
        until(&format!("{list} to hold nothing of {uid}"), || async {
            let (status, body) = get(admin, &list).await;
            assert_eq!(status, 200, "{body}");
            owned_by(&body, uid).is_empty().then_some(())
        })
        .await;
    }
}

/// Deletes the tenant namespace and waits for the namespace controller to finish.
async fn delete_namespace(admin: &Client, ns: &str) {
    let path = format!("/api/v1/namespaces/{ns}");
    let (status, body) = delete(admin, &path).await;
    assert_eq!(status, 200, "{body}");
    until_gone(admin, &path).await;
}

/// acquire → every object as built → a second acquire meets the tenant as it is → (Sandbox)
/// resume with a Ready pod → release of one lease and destroy of the other remove all they
/// made → the namespace deletion completes.
async fn lifecycle(shape: Shape, backend: &str, egress: &str) {
    let plane: &ControlPlane = control_plane(shape).await;
    let admin = client(&plane.kubeconfig).await;
    let slug = unique(&format!(
        "{}-{}-{}",
        shape.sandbox_version(),
        &backend[..3],
        &egress[..3]
    ));
    let config = config(&plane.kubeconfig, &slug, backend, egress);
    let provider = KubernetesProvider::new();

    let first = acquire(&provider, &config, "run-1").await;
    let ns = first["metadata"]["namespace"].as_str().unwrap().to_string();
    let first_name = first["providerLeaseId"].as_str().unwrap().to_string();
    if backend == "job" {
        assert!(
            first["metadata"].get("sandboxApiVersion").is_none(),
            "{first}"
        );
    } else {
        assert_eq!(
            first["metadata"]["sandboxApiVersion"],
            shape.sandbox_version(),
            "discovery picks the version the CRD shape stores"
        );
    }

    // Every tenant object exists.
    let tenant = tenant_objects(&ns, egress);
    let before = tenant_state(&admin, &tenant).await;
    let objects = lease_objects(&admin, backend, egress, shape, &first).await;
    let workload_uid = objects.workload["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_string();
    let (_, secret) = get(
        &admin,
        &format!("/api/v1/namespaces/{ns}/secrets/{}", objects.secret),
    )
    .await;
    assert!(
        secret["data"]["BOOTSTRAP_TOKEN"].is_string(),
        "stringData was stored as data"
    );

    // Stored as sent: nothing the provider sent was pruned (by a CRD schema or as an unknown
    // field of a built-in type) or changed.
    let sent = as_sent_to_the_emulator(shape, backend, egress).await;
    for (made, sent) in made_by_acquire(shape, backend, egress).iter().zip(&sent) {
        let path = made.path(&ns, &first_name);
        let (status, stored) = get(&admin, &path).await;
        assert_eq!(status, 200, "{path}: {stored}");
        let stored = built_parts(&stored, &first_name, &ns);
        assert_stored_as_sent(sent, &stored, &path);
    }

    // A second acquire for the same company leaves every tenant object as it is.
    let second = acquire(&provider, &config, "run-2").await;
    assert_eq!(second["metadata"]["namespace"], ns.as_str());
    let after = tenant_state(&admin, &tenant).await;
    assert_eq!(
        before, after,
        "first write wins: the tenant objects are not rewritten"
    );
    let second_objects = lease_objects(&admin, backend, egress, shape, &second).await;

    if backend == "job" {
        // The job controller makes the Job's pod: admitted under the tenant's restricted
        // Pod Security level, quota and limits.
        let selector = format!("job-name={first_name}");
        until("the Job's pod", || async {
            let (_, pods) = get(
                &admin,
                &format!("/api/v1/namespaces/{ns}/pods?labelSelector={selector}"),
            )
            .await;
            (!items(&pods).is_empty()).then_some(())
        })
        .await;
    } else {
        let pod = make_sandbox_ready(&admin, shape, &ns, &objects.workload).await;
        let resumed = provider
            .resume_lease(&lease_params(&config, &first), &NullSink)
            .await
            .unwrap_or_else(|e| panic!("resume refused: {}", e.message));
        assert_eq!(resumed["providerLeaseId"], first_name.as_str(), "{resumed}");
        assert_eq!(resumed["metadata"]["podName"], pod.as_str(), "{resumed}");
        assert_eq!(resumed["metadata"]["phase"], "Running", "{resumed}");
    }
    if shape == Shape::V05 && backend != "job" {
        // Without the conversion webhook, v1alpha1 requests that need a conversion fail.
        let (status, body) = get(&admin, &sandboxes_path("v1alpha1", &ns)).await;
        assert_eq!(status, 500, "v1alpha1 needs the missing webhook: {body}");
        assert!(
            body["message"]
                .as_str()
                .unwrap_or("")
                .contains("conversion webhook"),
            "{body}"
        );
    }

    // Release (the workload in the foreground; the rest by ownerReference).
    let released = provider
        .release_lease(&lease_params(&config, &first), &NullSink)
        .await
        .unwrap_or_else(|e| panic!("release refused: {}", e.message));
    assert_eq!(released, None);
    let path = workload_path(backend, shape, &ns, &first_name);
    until_lease_gone(&admin, egress, &ns, &path, &workload_uid).await;

    // Destroy (workload, pod and Secret, each explicitly).
    let second_name = second["providerLeaseId"].as_str().unwrap();
    let second_uid = second_objects.workload["metadata"]["uid"].as_str().unwrap();
    provider
        .destroy_lease(&lease_params(&config, &second), &NullSink)
        .await
        .unwrap_or_else(|e| panic!("destroy refused: {}", e.message));
    let path = workload_path(backend, shape, &ns, second_name);
    until_lease_gone(&admin, egress, &ns, &path, second_uid).await;

    // The tenant outlives its leases; deleting it completes.
    tenant_state(&admin, &tenant).await;
    delete_namespace(&admin, &ns).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sandbox_cr_on_agent_sandbox_v04_standard_egress() {
    lifecycle(Shape::V04, "sandbox-cr", "standard").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sandbox_cr_on_agent_sandbox_v05_cilium_egress() {
    lifecycle(Shape::V05, "sandbox-cr", "cilium").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_backend_standard_egress() {
    lifecycle(Shape::V04, "job", "standard").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_backend_cilium_egress() {
    lifecycle(Shape::V05, "job", "cilium").await;
}

/// Concurrent first acquires of one company race to create its tenant: the losers' 409s are
/// absorbed, and every acquire succeeds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_first_acquires_absorb_the_conflicts() {
    let plane = control_plane(Shape::V05).await;
    let admin = client(&plane.kubeconfig).await;
    let config = config(&plane.kubeconfig, &unique("race"), "sandbox-cr", "cilium");
    let provider = KubernetesProvider::new();
    let (a, b, c) = tokio::join!(
        acquire(&provider, &config, "run-a"),
        acquire(&provider, &config, "run-b"),
        acquire(&provider, &config, "run-c"),
    );
    let ns = a["metadata"]["namespace"].as_str().unwrap().to_string();
    for lease in [&a, &b, &c] {
        assert_eq!(lease["metadata"]["namespace"], ns.as_str());
        lease_objects(&admin, "sandbox-cr", "cilium", Shape::V05, lease).await;
        provider
            .destroy_lease(&lease_params(&config, lease), &NullSink)
            .await
            .unwrap_or_else(|e| panic!("destroy refused: {}", e.message));
    }
    tenant_state(&admin, &tenant_objects(&ns, "cilium")).await;
    delete_namespace(&admin, &ns).await;
}

/// The probe reaches the server; a user RBAC grants nothing is no longer the original's
/// `probe failed` (issue #37): the server answered, and the probe names what is missing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probe_reaches_the_server_and_names_what_a_user_without_rights_lacks() {
    let plane = control_plane(Shape::V04).await;
    let provider = KubernetesProvider::new();
    let slug = unique("probe");
    let ok = provider
        .probe(
            &json!({"config": config(&plane.kubeconfig, &slug, "sandbox-cr", "standard"),
            "companyId": "c"}),
            &NullSink,
        )
        .await
        .unwrap();
    let ns = format!("paperclip-{slug}");
    assert_eq!(ok["ok"], true, "{ok}");
    let lines: Vec<&str> = ok["summary"].as_str().unwrap().split('\n').collect();
    assert_eq!(
        lines[..2],
        [
            format!("Kubernetes cluster reachable. Tenant namespace: {ns}.").as_str(),
            "Sandbox API agents.x-k8s.io: served in v1alpha1; leases use v1alpha1."
        ]
    );
    assert_eq!(ok["metadata"]["namespace"], ns.as_str());
    assert_eq!(ok["metadata"]["provider"], "kubernetes");

    let denied = provider
        .probe(
            &json!({"config": config(&plane.limited_kubeconfig, &slug, "sandbox-cr", "standard"),
            "companyId": "c"}),
            &NullSink,
        )
        .await
        .unwrap();
    assert_eq!(denied["ok"], false, "{denied}");
    assert!(denied["metadata"].get("error").is_none(), "{denied}");
    let summary = denied["summary"].as_str().unwrap();
    // Every user may ask for access reviews and read discovery (RBAC's default roles).
    let count = needed(Backend::SandboxCr, EgressMode::Standard).len();
    for line in [
        format!("Permissions: 2 of {count} the config needs are granted; each one missing follows."),
        format!("Permission missing: list pods in namespace {ns}, to find a lease's pod, follow its readiness, delete it on destroy."),
        "Permission missing: create namespaces cluster-wide, to read each company's tenant namespace, and create it on the company's first lease.".to_string(),
        format!("Tenant namespace {ns}: could not be read: HTTP-Code: 403 Message: namespaces \"{ns}\" is forbidden: User \"paperclip-limited\" cannot get resource \"namespaces\" in API group \"\" in the namespace \"{ns}\""),
    ] {
        assert!(summary.contains(&format!("\n{line}\n")), "{line}\nnot in:\n{summary}");
    }
}

/// The server's own 403, 404 and 422 reach the hooks as the original's client reported them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_servers_errors_reach_the_hooks() {
    let plane = control_plane(Shape::V04).await;
    let admin = client(&plane.kubeconfig).await;
    let provider = KubernetesProvider::new();

    // 403: a token RBAC grants nothing. Discovery is open to every user; the tenant is not.
    let slug = unique("denied");
    let limited = config(&plane.limited_kubeconfig, &slug, "sandbox-cr", "standard");
    let err = provider
        .acquire_lease(&acquire_params(&limited, "run-1"), &NullSink)
        .await
        .unwrap_err();
    let ns = format!("paperclip-{slug}");
    assert_eq!(
        err.message,
        format!(
            "HTTP-Code: 403\nMessage: namespaces \"{ns}\" is forbidden: User \"paperclip-limited\" cannot get resource \"namespaces\" in API group \"\" in the namespace \"{ns}\""
        )
    );
    let (status, _) = get(&admin, &format!("/api/v1/namespaces/{ns}")).await;
    assert_eq!(status, 404, "nothing was provisioned");

    // 404: leases whose objects do not exist.
    let slug = unique("missing");
    let admin_config = config(&plane.kubeconfig, &slug, "sandbox-cr", "standard");
    let ghost = json!({"providerLeaseId": "pc-0000000000000000000000000a",
        "metadata": {"namespace": format!("paperclip-{slug}"), "backend": "sandbox-cr",
            "sandboxApiVersion": "v1alpha1"}});
    let resumed = provider
        .resume_lease(&lease_params(&admin_config, &ghost), &NullSink)
        .await
        .unwrap();
    assert_eq!(
        resumed,
        json!({"providerLeaseId": null, "metadata": {"expired": true, "reason": "Sandbox CR no longer exists"}})
    );
    let released = provider
        .release_lease(&lease_params(&admin_config, &ghost), &NullSink)
        .await;
    assert_eq!(released.map_err(|e| e.message), Ok(None));
    let destroyed = provider
        .destroy_lease(&lease_params(&admin_config, &ghost), &NullSink)
        .await;
    assert_eq!(destroyed.map_err(|e| e.message), Ok(None));

    // 422: the server validates what the config puts into the Job's pod template.
    let slug = unique("invalid");
    let mut bad = config(&plane.kubeconfig, &slug, "job", "standard");
    bad["runtimeClassName"] = json!("Not_A_Class");
    let err = provider
        .acquire_lease(&acquire_params(&bad, "run-1"), &NullSink)
        .await
        .unwrap_err();
    assert!(
        err.message
            .starts_with("HTTP-Code: 422\nMessage: Job.batch \"pc-")
            && err
                .message
                .contains("spec.template.spec.runtimeClassName: Invalid value: \"Not_A_Class\""),
        "{}",
        err.message
    );
    let ns = format!("paperclip-{slug}");
    let (_, jobs) = get(&admin, &format!("/apis/batch/v1/namespaces/{ns}/jobs")).await;
    assert!(items(&jobs).is_empty(), "no Job: {jobs}");
    delete_namespace(&admin, &ns).await;
}
