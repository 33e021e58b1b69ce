//! `docs/operators.md` states facts of the code: the names of what the provider creates, the
//! server namespace and port the egress policies assume, the built-in adapters' keys and hosts,
//! the RBAC files, the container's entrypoint, the waits' defaults. These tests hold each
//! statement to the constant it describes, so that a change of the code that the guide does not
//! follow fails here. (Its troubleshooting table is generated and checked by error-catalog's
//! `tests/operators.rs`.)

use std::path::PathBuf;

use kubernetes::KubernetesConfig;
use kubernetes::builders::cilium::CILIUM_EGRESS_POLICY_NAME;
use kubernetes::builders::job::JOB_COMMAND;
use kubernetes::builders::network_policy::{
    DENY_ALL_POLICY_NAME, EGRESS_ALLOW_POLICY_NAME, PAPERCLIP_SERVER_PORT,
};
use kubernetes::builders::pod_template::{AGENT_CONTAINER_NAME, AGENT_HOME};
use kubernetes::builders::scoped_egress::{
    ADAPTER_EGRESS_POLICY_SUFFIX, NETWORK_EGRESS_GRANT_PATH, TASK_EGRESS_POLICY_SUFFIX,
};
use kubernetes::builders::{
    SandboxCrManifestInput, TENANT_SERVICE_ACCOUNT, build_sandbox_cr_manifest,
};
use kubernetes::cluster::ReadinessLimits;
use kubernetes::cluster::TenantResourceQuota;
use kubernetes::cluster::rbac_yaml::{
    CLUSTER_ROLE, KUBECONFIG_USER, SERVER_NAMESPACE, SERVER_SERVICE_ACCOUNT, rbac_files,
};
use kubernetes::cluster::readiness::STARTUP_WINDOW_MS;
use kubernetes::cluster::tenant::{
    TENANT_LIMIT_RANGE_NAME, TENANT_RESOURCE_QUOTA_NAME, TENANT_ROLE_BINDING_NAME, TENANT_ROLE_NAME,
};
use kubernetes::config::adapters::{built_in_adapter_defaults, known_adapter_types};
use kubernetes::hooks::PAPERCLIP_SERVER_NAMESPACE;
use serde_json::json;

fn guide() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/operators.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// The guide's text with its line breaks and indentation folded into single spaces, so that a
/// phrase is found wherever the prose wraps it.
fn prose() -> String {
    guide().split_whitespace().collect::<Vec<_>>().join(" ")
}

#[track_caller]
fn says(prose: &str, phrase: &str) {
    assert!(
        prose.contains(phrase),
        "docs/operators.md does not say {phrase:?}"
    );
}

#[test]
fn the_names_of_what_the_provider_creates() {
    let prose = prose();
    for name in [
        TENANT_SERVICE_ACCOUNT,
        TENANT_ROLE_NAME,
        TENANT_ROLE_BINDING_NAME,
        TENANT_RESOURCE_QUOTA_NAME,
        TENANT_LIMIT_RANGE_NAME,
        DENY_ALL_POLICY_NAME,
        EGRESS_ALLOW_POLICY_NAME,
        CILIUM_EGRESS_POLICY_NAME,
    ] {
        says(&prose, &format!("`{name}`"));
    }
    says(
        &prose,
        &format!("`pc-<ulid>{ADAPTER_EGRESS_POLICY_SUFFIX}`"),
    );
    says(&prose, &format!("`pc-<ulid>{TASK_EGRESS_POLICY_SUFFIX}`"));
    says(&prose, "`pc-<ulid>-env`");
    says(&prose, &format!("`{NETWORK_EGRESS_GRANT_PATH}`"));
    let quota = TenantResourceQuota::default();
    says(
        &prose,
        &format!(
            "at most {} pods, requests {} CPU / {}, limits {} CPU / {} per tenant",
            quota.pods,
            quota.requests_cpu,
            quota.requests_memory,
            quota.limits_cpu,
            quota.limits_memory
        ),
    );
}

#[test]
fn the_container_and_its_entrypoint() {
    let prose = prose();
    says(&prose, &format!("one container, `{AGENT_CONTAINER_NAME}`"));
    says(&prose, &format!("`{AGENT_HOME}` (HOME)"));
    says(&prose, &format!("`/usr/bin/tini -- {}`", JOB_COMMAND[2]));
    assert_eq!(&JOB_COMMAND[..2], ["/usr/bin/tini", "--"]);
    let manifest = build_sandbox_cr_manifest(&SandboxCrManifestInput {
        namespace: "paperclip-acme".into(),
        sandbox_name: "pc-x".into(),
        adapter_type: "claude_local".into(),
        image: "ghcr.io/acme/agent:1".into(),
        env_secret_name: "pc-x-env".into(),
        service_account_name: TENANT_SERVICE_ACCOUNT.into(),
        labels: vec![],
        resources: Default::default(),
        runtime_class_name: None,
        image_pull_secrets: None,
        hard_stop: None,
        api_version: Default::default(),
        shutdown_time: None,
    })
    .unwrap();
    let command = &manifest["spec"]["podTemplate"]["spec"]["containers"][0]["command"];
    assert_eq!(
        command,
        &json!(["/usr/bin/tini", "--", "/bin/sh", "-c", "sleep infinity"])
    );
    says(&prose, "`/usr/bin/tini -- /bin/sh -c \"sleep infinity\"`");
}

#[test]
fn the_server_namespace_port_and_selector_of_the_egress_policies() {
    let prose = prose();
    assert_eq!(PAPERCLIP_SERVER_NAMESPACE, SERVER_NAMESPACE);
    says(
        &prose,
        &format!("in the namespace **`{PAPERCLIP_SERVER_NAMESPACE}`**"),
    );
    says(
        &prose,
        &format!("TCP {PAPERCLIP_SERVER_PORT} to pods matching"),
    );
    let config = KubernetesConfig::parse(&json!({"inCluster": true})).unwrap();
    let selector: Vec<String> = config
        .paperclip_server_pod_selector
        .iter()
        .map(|(k, v)| format!("\"{k}\": \"{v}\""))
        .collect();
    says(&prose, &format!("(default `{{{}}}`)", selector.join(", ")));
}

#[test]
fn the_built_in_adapters_table() {
    let guide = guide();
    for adapter in known_adapter_types() {
        let defaults = built_in_adapter_defaults(adapter).unwrap();
        let keys: Vec<String> = defaults.env_keys.iter().map(|k| format!("`{k}`")).collect();
        let row = format!(
            "| `{adapter}` | {} | {} |",
            keys.join(", "),
            defaults.allow_fqdns.join(", ")
        );
        assert!(
            guide.contains(&row),
            "docs/operators.md lacks the row {row}"
        );
    }
}

#[test]
fn the_rbac_files_and_their_subjects() {
    let prose = prose();
    for (path, _) in rbac_files() {
        let link = path.strip_prefix("docs/").unwrap();
        says(&prose, &format!("]({link})"));
    }
    says(
        &prose,
        &format!("ServiceAccount `{SERVER_SERVICE_ACCOUNT}` in namespace `{SERVER_NAMESPACE}`"),
    );
    says(&prose, &format!("user `{KUBECONFIG_USER}`"));
    assert!(rbac_files()[0].1.contains(&format!("name: {CLUSTER_ROLE}")));
}

#[test]
fn the_waits_defaults() {
    let prose = prose();
    says(
        &prose,
        &format!(
            "after `unschedulableGraceSec` (default {} s;",
            ReadinessLimits::DEFAULT_UNSCHEDULABLE_GRACE_SEC
        ),
    );
    says(
        &prose,
        &format!(
            "no status {} s after it was created",
            STARTUP_WINDOW_MS / 1000
        ),
    );
}
