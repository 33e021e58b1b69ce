//! Every config/zod message, warning and validate-path error of `contract/kubernetes-errors.txt`,
//! produced through the code path that raises it and compared with the contract text (its
//! `${…}` placeholders filled with the values the trigger uses).

use kubernetes::config::adapters::get_adapter_defaults;
use kubernetes::config::zod::default_error_message;
use kubernetes::lease::egress_warnings::acquire_console_warning;
use kubernetes::{
    ConfigStage, KubernetesConfig, config_stage_of_execute, probe_config_error, validate_config,
};
use serde_json::{Value, json};

/// The contract list shipped beside the golden vectors.
fn contract_lines() -> Vec<String> {
    let path = sandbox_core::golden::contract_file("kubernetes-errors.txt");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    text.lines().map(str::to_string).collect()
}

/// The messages of a config that fails to parse.
fn issues(config: Value) -> Vec<String> {
    KubernetesConfig::parse(&config)
        .expect_err("config must be invalid")
        .messages()
}

/// The only message of a config that fails to parse with one issue.
fn only_issue(config: Value) -> String {
    let messages = issues(config);
    assert_eq!(messages.len(), 1, "{messages:?}");
    messages[0].clone()
}

/// The rejection message of validateConfig.
fn validate_throws(config: Value) -> String {
    validate_config(&json!({ "config": config }))
        .expect_err("validate must throw")
        .message
}

/// The one warning validateConfig returns.
fn validate_warning(config: Value) -> String {
    let result = validate_config(&json!({ "config": config }))
        .unwrap()
        .into_value();
    assert_eq!(
        result["warnings"].as_array().map(Vec::len),
        Some(1),
        "{result}"
    );
    result["warnings"][0].as_str().unwrap().to_string()
}

fn acquire_warning(config: Value) -> String {
    let config = KubernetesConfig::parse(&config).unwrap();
    let defaults = get_adapter_defaults(&config.adapter_type, config.adapters.as_deref()).unwrap();
    acquire_console_warning(&config, &defaults.allow_fqdns).expect("a warning")
}

struct Row {
    /// The contract line, verbatim.
    template: &'static str,
    /// Placeholder text and what the trigger puts there.
    fill: &'static [(&'static str, &'static str)],
    produce: fn() -> String,
}

const CLAUDE_FQDNS: &str =
    "api.anthropic.com, claude.com, platform.claude.com, claude.ai, console.anthropic.com";

fn rows() -> Vec<Row> {
    vec![
        Row {
            template: "kubernetes provider requires one of `inCluster` or `kubeconfig`",
            fill: &[],
            produce: || only_issue(json!({"kubeconfig": ""})),
        },
        Row {
            template: "Invalid CIDR",
            fill: &[],
            produce: || {
                only_issue(json!({"inCluster": true, "egressAllowCidrs": ["10.0.0.0/33x"]}))
            },
        },
        Row {
            template: "paperclipServerPodSelector keys must be valid Kubernetes label keys",
            fill: &[],
            produce: || {
                only_issue(json!({"inCluster": true, "paperclipServerPodSelector": {"-app": "x"}}))
            },
        },
        Row {
            template: "paperclipServerPodSelector values must be valid Kubernetes label values",
            fill: &[],
            produce: || {
                only_issue(
                    json!({"inCluster": true, "paperclipServerPodSelector": {"app": "has space"}}),
                )
            },
        },
        Row {
            template: "paperclipServerPodSelector must not be empty",
            fill: &[],
            produce: || only_issue(json!({"inCluster": true, "paperclipServerPodSelector": {}})),
        },
        Row {
            template: "adapterType must be one of the known adapter types",
            fill: &[],
            produce: || only_issue(json!({"inCluster": true, "adapterType": "acpx_local"})),
        },
        Row {
            template: "Invalid",
            fill: &[],
            produce: || only_issue(json!({"inCluster": true, "companySlug": "Acme"})),
        },
        Row {
            // No `.url()` string left in this schema since issue #37 (`imageRegistry` has its
            // own rule, K8S_CONFIG_IMAGE_REGISTRY_INVALID): zod's default for the check is what
            // the port must still say.
            template: "Invalid url",
            fill: &[],
            produce: || {
                default_error_message(
                    json!({"code": "invalid_string", "validation": "url"})
                        .as_object()
                        .unwrap(),
                )
            },
        },
        Row {
            template: "Expected ${expected}, received ${received}",
            fill: &[("${expected}", "array"), ("${received}", "object")],
            produce: || only_issue(json!({"inCluster": true, "egressAllowFqdns": {}})),
        },
        Row {
            template: "Expected object, received ${received}",
            fill: &[("${received}", "array")],
            produce: || only_issue(json!([])),
        },
        Row {
            template: "Expected integer, received float",
            fill: &[],
            produce: || only_issue(json!({"inCluster": true, "jobTtlSecondsAfterFinished": 1.5})),
        },
        Row {
            template: "Number must be greater than or equal to 0",
            fill: &[],
            produce: || only_issue(json!({"inCluster": true, "jobTtlSecondsAfterFinished": -1})),
        },
        Row {
            template: "Number must be greater than 0",
            fill: &[],
            produce: || only_issue(json!({"inCluster": true, "podActivityDeadlineSec": 0})),
        },
        Row {
            template: "Invalid enum value. Expected 'cilium' | 'standard', received '${value}'",
            fill: &[("${value}", "calico")],
            produce: || only_issue(json!({"inCluster": true, "egressMode": "calico"})),
        },
        Row {
            template: "Invalid enum value. Expected 'sandbox-cr' | 'job', received '${value}'",
            fill: &[("${value}", "kata-fc")],
            produce: || only_issue(json!({"inCluster": true, "backend": "kata-fc"})),
        },
        Row {
            template: "String must contain at least 1 character(s)",
            fill: &[],
            produce: || only_issue(json!({"inCluster": true, "adapters": [{"adapterType": ""}]})),
        },
        Row {
            template: "Unrecognized key(s) in object: '${key}'[, '${key2}'…]",
            fill: &[("'${key}'[, '${key2}'…]", "'extra', 'other'")],
            produce: || {
                only_issue(
                    json!({"inCluster": true, "adapters": [{"adapterType": "x", "extra": 1, "other": 2}]}),
                )
            },
        },
        Row {
            template: "Expected boolean, received string",
            fill: &[],
            produce: || {
                only_issue(
                    json!({"inCluster": true, "adapters": [{"adapterType": "x", "enabled": "yes"}]}),
                )
            },
        },
        Row {
            template: "Required",
            fill: &[],
            produce: || {
                only_issue(json!({"inCluster": true, "adapters": [{"runtimeImage": "r/x:1"}]}))
            },
        },
        Row {
            // No union in this schema: zod's default for the code is what the port must say.
            template: "Invalid input",
            fill: &[],
            produce: || {
                default_error_message(json!({"code": "invalid_union"}).as_object().unwrap())
            },
        },
        Row {
            template: "egressMode=standard cannot enforce FQDN-based egress rules (Kubernetes NetworkPolicy is CIDR-only). To keep the configured FQDNs reachable (${totalFqdns.join(\", \")}) without operator intervention, the plugin will allow public IPv4 egress on TCP 80/443 with private/link-local/loopback/multicast ranges excluded. This is broader than exact FQDN allow-listing — switch egressMode to \"cilium\" (requires Cilium CNI) for precise enforcement, or set egressAllowCidrs explicitly to override the fallback.",
            fill: &[(
                "${totalFqdns.join(\", \")}",
                "api.anthropic.com, github.com",
            )],
            produce: || {
                validate_warning(
                    json!({"inCluster": true, "adapterType": "pi_local", "egressAllowFqdns": ["github.com"]}),
                )
            },
        },
        Row {
            template: "egressMode=standard cannot enforce FQDN-based egress rules. The following FQDNs are reachable only via the operator-supplied egressAllowCidrs: ${totalFqdns.join(\", \")}. Switch egressMode to \"cilium\" (requires Cilium CNI) for exact FQDN allow-listing.",
            fill: &[("${totalFqdns.join(\", \")}", CLAUDE_FQDNS)],
            produce: || {
                validate_warning(json!({"inCluster": true, "egressAllowCidrs": ["10.0.0.0/8"]}))
            },
        },
        Row {
            template: "[plugin-kubernetes] egressMode=standard cannot enforce FQDN-based egress rules; falling back to public-IPv4 (TCP 80/443) with private/link-local ranges excluded so the configured FQDNs (${totalFqdnsForWarn.join(\", \")}) remain reachable. Switch egressMode to \"cilium\" for exact FQDN allow-listing.",
            fill: &[("${totalFqdnsForWarn.join(\", \")}", CLAUDE_FQDNS)],
            produce: || acquire_warning(json!({"inCluster": true})),
        },
        Row {
            template: "[plugin-kubernetes] egressMode=standard cannot enforce FQDN-based egress rules. The following FQDNs are reachable only via operator-supplied egressAllowCidrs: ${totalFqdnsForWarn.join(\", \")}. Switch egressMode to \"cilium\" for exact FQDN allow-listing.",
            fill: &[("${totalFqdnsForWarn.join(\", \")}", "llm.internal")],
            produce: || {
                acquire_warning(
                    json!({"inCluster": true, "egressAllowCidrs": ["10.0.0.0/8"],
                    "adapters": [{"adapterType": "claude_local", "runtimeImage": "r/c:1", "allowFqdns": ["llm.internal"]}]}),
                )
            },
        },
        Row {
            template: "The job backend cannot support login PTY advertised by the Kubernetes driver; use sandbox-cr.",
            fill: &[],
            produce: || {
                let result =
                    validate_config(&json!({"config": {"inCluster": true, "backend": "job"}}))
                        .unwrap()
                        .into_value();
                result["errors"][0].as_str().unwrap().to_string()
            },
        },
        Row {
            template: "Invalid Kubernetes provider configuration.",
            fill: &[],
            produce: || {
                let result = probe_config_error(&json!({"config": {}, "companyId": "c"})).unwrap();
                result["summary"].as_str().unwrap().to_string()
            },
        },
        Row {
            template: "Adapter \"${adapterType}\" is not in the configured adapter registry",
            fill: &[("${adapterType}", "claude_local")],
            produce: || {
                validate_throws(
                    json!({"inCluster": true, "adapters": [{"adapterType": "codex_local", "runtimeImage": "r/x:1"}]}),
                )
            },
        },
        Row {
            template: "Adapter \"${entry.adapterType}\" is missing required runtime field: runtimeImage",
            fill: &[("${entry.adapterType}", "claude_local")],
            produce: || {
                validate_throws(
                    json!({"inCluster": true, "adapters": [{"adapterType": "claude_local", "runtimeImage": ""}]}),
                )
            },
        },
        Row {
            template: "Unknown adapter type: ${adapterType}",
            fill: &[("${adapterType}", "aider_local")],
            produce: || {
                get_adapter_defaults("aider_local", None)
                    .unwrap_err()
                    .message
            },
        },
        Row {
            template: "No provider lease ID available for execution.",
            fill: &[],
            produce: || match config_stage_of_execute(
                &json!({"config": {}, "lease": {"providerLeaseId": ""}}),
            ) {
                Ok(ConfigStage::Return(result)) => result["stderr"].as_str().unwrap().to_string(),
                other => panic!("expected an early return, got {other:?}"),
            },
        },
    ]
}

#[test]
fn every_message_matches_its_contract_line() {
    let contract = contract_lines();
    for row in rows() {
        assert!(
            contract.iter().any(|line| line == row.template),
            "not a contract line: {:?}",
            row.template
        );
        let expected =
            row.fill
                .iter()
                .fold(row.template.to_string(), |text, (placeholder, value)| {
                    assert!(
                        text.contains(placeholder),
                        "{placeholder} not in {:?}",
                        row.template
                    );
                    text.replace(placeholder, value)
                });
        assert_eq!(
            (row.produce)(),
            expected,
            "contract line {:?}",
            row.template
        );
    }
}

#[test]
fn the_config_section_of_the_contract_is_fully_covered() {
    let contract = contract_lines();
    let start = contract
        .iter()
        .position(|l| l.starts_with("kubernetes provider requires one of"))
        .expect("config section start");
    let end = contract
        .iter()
        .position(|l| l == "Invalid input")
        .expect("config section end");
    let covered: Vec<&str> = rows().iter().map(|row| row.template).collect();
    // The config/zod messages, then the four warnings that follow them in the file.
    for line in &contract[start..=end + 4] {
        assert!(
            covered.contains(&line.as_str()),
            "no test for contract line {line:?}"
        );
    }
}

#[test]
fn field_issues_come_in_schema_order_then_the_refinement() {
    assert_eq!(
        issues(
            json!({"companySlug": "INVALID UPPER", "namespacePrefix": "UP", "egressAllowCidrs": ["x"]})
        ),
        [
            "Invalid",
            "Invalid",
            "Invalid CIDR",
            "kubernetes provider requires one of `inCluster` or `kubeconfig`"
        ]
    );
    // A type error aborts the object, so the refinement does not run.
    assert_eq!(
        issues(json!({"namespacePrefix": 5})),
        ["Expected string, received number"]
    );
}

/// K8S_CONFIG_URL_INVALID's documented fix, applied: the value that raised `Invalid url` in
/// the original, the registry host without a scheme, now validates, and so does the form the
/// original wanted; both give the image reference without a scheme.
#[test]
fn the_url_invalid_fix_validates_and_gives_a_reference_without_scheme() {
    use kubernetes::builders::{check_image_reference, configured_runtime_images};
    for registry in ["ghcr.io/acme", "https://ghcr.io/acme"] {
        let config = json!({"inCluster": true, "egressMode": "cilium", "imageRegistry": registry});
        let result = validate_config(&json!({ "config": config }))
            .unwrap()
            .into_value();
        assert_eq!(result["ok"], true, "{result}");
        let parsed = KubernetesConfig::parse(&config).unwrap();
        let (adapter, image) = configured_runtime_images(&parsed).remove(0);
        assert_eq!(adapter, "claude_local");
        assert_eq!(
            image,
            "ghcr.io/acme/agent-runtime-claude:git-38d8f371722b315d2fb3bbaa512518742e33ce2f"
        );
        assert_eq!(check_image_reference(&image), Ok(()));
    }
}
