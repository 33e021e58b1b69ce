//! Issue #37, image references that can be pulled, through the hooks against the Kubernetes
//! API emulator (real kube-rs client over HTTPS): `imageRegistry`'s forms at validate, probe and
//! acquire; `runtimeImages` over the built-ins; an adapter outside the built-ins; and an invalid
//! reference refused by acquire before any request reaches the cluster.

use std::time::Duration;

use emulator::kubernetes::KubernetesEmulator;
use kubernetes::KubernetesProvider;
use sandbox_core::{ErrorClass, NullSink};
use serde_json::{Value, json};

#[allow(dead_code)]
#[path = "support/emulator.rs"]
mod emulator_support;
use emulator_support::{NS, config, leaked_objects, start_with_job_shim, until_clean};

const CLAUDE_TAG: &str = "git-38d8f371722b315d2fb3bbaa512518742e33ce2f";
const REGISTRY_PREFIX: &str = "imageRegistry must be a registry host with an optional path, such as ghcr.io/acme or https://ghcr.io/acme: ";
/// How long the emulator's deletion and garbage collection may take (it acts at once).
const CLEAN_WAIT: Duration = Duration::from_secs(10);

async fn start() -> KubernetesEmulator {
    start_with_job_shim().await
}

/// The emulator's config for the sandbox-cr backend, with `extra` keys set.
fn config_with(emu: &KubernetesEmulator, extra: Value) -> Value {
    let mut config = config(emu, "sandbox-cr");
    for (key, value) in extra.as_object().expect("an object") {
        config[key] = value.clone();
    }
    config
}

fn acquire_params(config: &Value, adapter_type: Option<&str>) -> Value {
    let mut params =
        json!({"config": config, "companyId": "c-1", "environmentId": "e-1", "runId": "run-1"});
    if let Some(adapter_type) = adapter_type {
        params["adapterType"] = adapter_type.into();
    }
    params
}

/// The agent container's image in the lease's Sandbox.
fn sandbox_image(emu: &KubernetesEmulator, lease: &Value) -> String {
    let id = lease["providerLeaseId"].as_str().expect("a lease id");
    let sandbox = emu
        .object("agents.x-k8s.io", "sandboxes", NS, id)
        .expect("the lease's Sandbox");
    sandbox["spec"]["podTemplate"]["spec"]["containers"][0]["image"]
        .as_str()
        .expect("an image")
        .to_string()
}

async fn destroy(provider: &KubernetesProvider, config: &Value, lease: &Value) {
    provider
        .destroy_lease(
            &json!({"config": config, "companyId": "c-1",
                "providerLeaseId": lease["providerLeaseId"], "leaseMetadata": lease["metadata"]}),
            &NullSink,
        )
        .await
        .expect("destroy");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_image_registry_is_named_by_validate_probe_and_acquire_and_sends_nothing() {
    let emu = start().await;
    let provider = KubernetesProvider::new();
    let config = config_with(&emu, json!({"imageRegistry": "https://ghcr.io/Acme"}));
    let message = format!(
        "{REGISTRY_PREFIX}the repository path component \"Acme\" has upper-case letters; repository paths are lower-case"
    );

    let validated = provider
        .validate_config(&json!({"config": config}))
        .unwrap()
        .into_value();
    assert_eq!(validated, json!({"ok": false, "errors": [message]}));

    let probe = provider
        .probe(&json!({"config": config, "companyId": "c-1"}), &NullSink)
        .await
        .unwrap();
    assert_eq!(probe["ok"], false, "{probe}");
    assert_eq!(probe["metadata"]["errors"], json!([message]));

    let err = provider
        .acquire_lease(&acquire_params(&config, None), &NullSink)
        .await
        .unwrap_err();
    assert_eq!(err.class, ErrorClass::ZodError);
    let issues: Value = serde_json::from_str(&err.message).expect("a ZodError's issue list");
    assert_eq!(
        issues,
        json!([{"code": "custom", "message": message, "path": ["imageRegistry"]}])
    );
    assert!(
        emu.request_log().is_empty(),
        "nothing is sent for a refused config: {:?}",
        emu.request_log()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_registry_with_or_without_a_scheme_gives_the_same_reference() {
    let emu = start().await;
    let provider = KubernetesProvider::new();
    for registry in [
        "https://registry.example:5000/acme",
        "registry.example:5000/acme",
        "HTTP://registry.example:5000/acme/",
    ] {
        let config = config_with(&emu, json!({"imageRegistry": registry}));
        let validated = provider
            .validate_config(&json!({"config": config}))
            .unwrap()
            .into_value();
        assert_eq!(validated["ok"], true, "{validated}");
        assert_eq!(validated["normalizedConfig"]["imageRegistry"], registry);

        let lease = provider
            .acquire_lease(&acquire_params(&config, None), &NullSink)
            .await
            .unwrap();
        assert_eq!(
            sandbox_image(&emu, &lease),
            format!("registry.example:5000/acme/agent-runtime-claude:{CLAUDE_TAG}"),
            "{registry}"
        );
        destroy(&provider, &config, &lease).await;
        until_clean(&emu, registry, CLEAN_WAIT).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runtime_images_name_one_adapter_and_the_registry_moves_the_others() {
    let emu = start().await;
    let provider = KubernetesProvider::new();
    let config = config_with(
        &emu,
        json!({"imageRegistry": "mirror.example/acme",
               "runtimeImages": {"codex_local": "ghcr.io/other/codex:2.1"}}),
    );
    let cases = [
        (Some("codex_local"), "ghcr.io/other/codex:2.1".to_string()),
        (
            Some("gemini_local"),
            "mirror.example/acme/agent-runtime-gemini:v1".to_string(),
        ),
        (
            None,
            format!("mirror.example/acme/agent-runtime-claude:{CLAUDE_TAG}"),
        ),
    ];
    for (adapter_type, image) in cases {
        let lease = provider
            .acquire_lease(&acquire_params(&config, adapter_type), &NullSink)
            .await
            .unwrap();
        assert_eq!(sandbox_image(&emu, &lease), image, "{adapter_type:?}");
        destroy(&provider, &config, &lease).await;
    }
    until_clean(&emu, "three leases", CLEAN_WAIT).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_adapter_outside_the_built_ins_runs_only_when_runtime_images_names_it() {
    let emu = start().await;
    let provider = KubernetesProvider::new();
    let config = config_with(
        &emu,
        json!({"adapterType": "aider_local",
               "runtimeImages": {"aider_local": "registry.example/team/aider:0.9"}}),
    );
    let validated = provider
        .validate_config(&json!({"config": config}))
        .unwrap()
        .into_value();
    assert_eq!(validated["ok"], true, "{validated}");
    assert_eq!(validated["normalizedConfig"]["adapterType"], "aider_local");
    assert_eq!(
        validated["normalizedConfig"]["runtimeImages"],
        json!({"aider_local": "registry.example/team/aider:0.9"})
    );

    // A run's hint that runtimeImages does not name is refused as in the original, before any
    // request.
    let err = provider
        .acquire_lease(&acquire_params(&config, Some("goose_local")), &NullSink)
        .await
        .unwrap_err();
    assert_eq!(err.message, "Unknown adapter type: goose_local");
    assert!(emu.request_log().is_empty(), "{:?}", emu.request_log());

    let lease = provider
        .acquire_lease(&acquire_params(&config, None), &NullSink)
        .await
        .unwrap();
    assert_eq!(
        sandbox_image(&emu, &lease),
        "registry.example/team/aider:0.9"
    );
    // Its probe command, `sh -c true`, answers in the pod.
    let mut metadata = lease["metadata"].clone();
    metadata["remoteCwd"] = json!("/workspace");
    let result = provider
        .execute(
            &json!({"config": config, "companyId": "c-1", "timeoutMs": 30000,
                "lease": {"providerLeaseId": lease["providerLeaseId"], "metadata": metadata},
                "command": "sh", "args": ["-c", "true"]}),
            &NullSink,
        )
        .await
        .unwrap();
    assert_eq!(result["exitCode"], 0, "{result}");
    destroy(&provider, &config, &lease).await;
    until_clean(&emu, "the aider lease", CLEAN_WAIT).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_runtime_image_fails_acquire_before_anything_is_sent() {
    let emu = start().await;
    let provider = KubernetesProvider::new();
    let cases = [
        (
            json!({"runtimeImages": {"claude_local": "https://ghcr.io/acme/claude:1"}}),
            None,
            "Kubernetes runtime image for adapter \"claude_local\" is not a valid image reference: \"https://ghcr.io/acme/claude:1\" (it starts with a URL scheme; an image reference has none (write host/path:tag)); set a valid reference (host/path:tag or host/path@sha256:…) for it in runtimeImages.",
        ),
        (
            json!({"runtimeImages": {"aider_local": "ghcr.io/acme/aider@sha256:abc"}}),
            Some("aider_local"),
            "Kubernetes runtime image for adapter \"aider_local\" is not a valid image reference: \"ghcr.io/acme/aider@sha256:abc\" (the sha256 digest is not 64 lower-case hex digits); set a valid reference (host/path:tag or host/path@sha256:…) for it in runtimeImages.",
        ),
        (
            // The undeclared registry's images are checked too, with imageRegistry applied.
            json!({"imageRegistry": "ghcr.io/acme",
                   "adapters": [{"adapterType": "claude_local", "runtimeImage": "r.example/team/Claude:1"}]}),
            None,
            "Kubernetes runtime image for adapter \"claude_local\" is not a valid image reference: \"ghcr.io/acme/Claude:1\" (the repository path component \"Claude\" has upper-case letters; repository paths are lower-case); set a valid reference (host/path:tag or host/path@sha256:…) for it in runtimeImages.",
        ),
    ];
    for (extra, adapter_type, expected) in cases {
        let config = config_with(&emu, extra);
        let err = provider
            .acquire_lease(&acquire_params(&config, adapter_type), &NullSink)
            .await
            .unwrap_err();
        assert_eq!(err.class, ErrorClass::Error);
        assert_eq!(err.message, expected);
        assert!(
            emu.request_log().is_empty(),
            "nothing may reach the cluster: {:?}",
            emu.request_log()
        );
        assert!(emu.object("", "namespaces", "", NS).is_none());
        assert_eq!(leaked_objects(&emu), []);
    }
}
