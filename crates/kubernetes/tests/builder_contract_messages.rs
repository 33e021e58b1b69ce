//! The builder-side and acquire-precheck messages of `contract/kubernetes-errors.txt`, each
//! produced through the code path that raises it and compared with its contract line, whose
//! `${…}` placeholders are filled with the values the trigger uses.

use kubernetes::builders::{
    ContainerResources, HardStop, SandboxApiVersion, SandboxCrManifestInput,
    ScopedNetworkEgressGrant, append_network_egress_deny_hint, build_sandbox_cr_manifest,
    resolve_image,
};
use kubernetes::lease::expiry::compute_bounded_lease_deadline;
use kubernetes::lease::precheck::prepare_acquire;
use sandbox_core::ProviderResult;
use serde_json::{Value, json};

/// A fixed clock: 2026-01-01T00:00:00Z.
const NOW_MS: f64 = 1_767_225_600_000.0;

fn contract_lines() -> Vec<String> {
    let path = sandbox_core::golden::contract_file("kubernetes-errors.txt");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    text.lines().map(str::to_string).collect()
}

/// The contract line that starts with `prefix`, its placeholders replaced by `values` in order,
/// and its written `\n` turned into line breaks.
fn contract(prefix: &str, values: &[&str]) -> String {
    let lines = contract_lines();
    let matching: Vec<&String> = lines
        .iter()
        .filter(|line| line.starts_with(prefix))
        .collect();
    assert_eq!(
        matching.len(),
        1,
        "contract lines starting with {prefix:?}: {matching:?}"
    );
    let mut line = matching[0].as_str();
    let mut filled = String::new();
    let mut values = values.iter();
    while let Some(start) = line.find("${") {
        let end = placeholder_end(line, start);
        filled.push_str(&line[..start]);
        filled.push_str(
            values
                .next()
                .unwrap_or_else(|| panic!("too few values for {prefix:?}")),
        );
        line = &line[end..];
    }
    filled.push_str(line);
    assert!(values.next().is_none(), "too many values for {prefix:?}");
    filled.replace("\\n", "\n")
}

/// The index just past the `}` closing the placeholder at `start` (placeholders nest braces).
fn placeholder_end(line: &str, start: usize) -> usize {
    let mut depth = 0;
    for (i, c) in line[start..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return start + i + 1;
                }
            }
            _ => {}
        }
    }
    panic!("unclosed placeholder in {line:?}");
}

fn acquire(params: Value) -> (ProviderResult<()>, Vec<String>) {
    let mut warnings = Vec::new();
    let result =
        prepare_acquire(&params, NOW_MS, &mut |line| warnings.push(line.to_string())).map(|_| ());
    (result, warnings)
}

fn acquire_error(params: Value) -> String {
    acquire(params).0.expect_err("acquire must refuse").message
}

fn sandbox_with_hard_stop(at_epoch_sec: f64) -> SandboxCrManifestInput {
    SandboxCrManifestInput {
        namespace: "paperclip-acme".into(),
        sandbox_name: "pc-x".into(),
        adapter_type: "claude_local".into(),
        image: "img:1".into(),
        env_secret_name: "pc-x-env".into(),
        service_account_name: "paperclip-tenant-sa".into(),
        labels: vec![],
        resources: ContainerResources::default(),
        runtime_class_name: None,
        image_pull_secrets: None,
        hard_stop: Some(HardStop {
            at_epoch_sec,
            active_deadline_seconds: 60.0,
        }),
        api_version: SandboxApiVersion::V1beta1,
        shutdown_time: None,
    }
}

#[test]
fn a5_job_backend_cannot_honor_a_deadline() {
    let message = acquire_error(json!({
        "companyId": "acme",
        "requestedExpiresAt": "2026-01-01T01:00:00Z",
        "config": {"inCluster": true, "backend": "job"},
    }));
    assert_eq!(
        message,
        contract("The Kubernetes job backend cannot honor", &[])
    );
}

#[test]
fn a6_unparseable_deadline() {
    let message = compute_bounded_lease_deadline(Some(&json!("next \"tuesday\"")), NOW_MS)
        .unwrap_err()
        .message;
    assert_eq!(
        message,
        contract(
            "Requested lease deadline (${JSON.stringify",
            &["\"next \\\"tuesday\\\"\""]
        )
    );
    let via_acquire = acquire_error(
        json!({"companyId": "acme", "requestedExpiresAt": "tomorrow", "config": {"inCluster": true}}),
    );
    assert_eq!(
        via_acquire,
        contract(
            "Requested lease deadline (${JSON.stringify",
            &["\"tomorrow\""]
        )
    );
}

#[test]
fn a7_deadline_too_close() {
    let message = compute_bounded_lease_deadline(Some(&json!("2026-01-01T00:00:10Z")), NOW_MS)
        .unwrap_err()
        .message;
    assert_eq!(
        message,
        contract(
            "Requested lease deadline (${requestedExpiresAt})",
            &["2026-01-01T00:00:10Z", "30"]
        )
    );
}

#[test]
fn a9_a10_a11_adapter_resolution_refuses_the_lease() {
    let registry = json!([{"adapterType": "custom_local"}]);
    let message = acquire_error(
        json!({"companyId": "acme", "adapterType": "custom_local", "config": {"inCluster": true, "adapters": registry}}),
    );
    assert_eq!(
        message,
        contract("Adapter \"${entry.adapterType}\"", &["custom_local"])
    );
    let message = acquire_error(
        json!({"companyId": "acme", "adapterType": "other_local", "config": {"inCluster": true, "adapters": registry}}),
    );
    assert_eq!(
        message,
        contract("Adapter \"${adapterType}\"", &["other_local"])
    );
    let message = acquire_error(
        json!({"companyId": "acme", "adapterType": "aider_local", "config": {"inCluster": true}}),
    );
    assert_eq!(message, contract("Unknown adapter type:", &["aider_local"]));
}

#[test]
fn a12_image_override_not_allow_listed() {
    let allow_list = vec!["ghcr.io/acme/*".to_string()];
    let message = resolve_image(Some("ghcr.io/evil/agent:1"), "img:1", &allow_list, None)
        .unwrap_err()
        .message;
    assert_eq!(
        message,
        contract("Image override", &["ghcr.io/evil/agent:1"])
    );
}

#[test]
fn a13_invalid_hard_stop() {
    for (at, text) in [
        (0.0, "0"),
        (-5.0, "-5"),
        (1.5, "1.5"),
        (9_007_199_254_740_992.0, "9007199254740992"),
    ] {
        let message = build_sandbox_cr_manifest(&sandbox_with_hard_stop(at))
            .unwrap_err()
            .message;
        assert_eq!(
            message,
            contract("Invalid sandbox hard-stop deadline:", &[text])
        );
    }
}

#[test]
fn b10_network_deny_hint() {
    let grant = ScopedNetworkEgressGrant {
        allow_fqdns: vec!["github.com".into()],
        allow_cidrs: vec!["10.0.0.0/8".into()],
    };
    let stderr = "curl: (28) Connection timed out after 5000 ms\n\n";
    let hinted = append_network_egress_deny_hint(stderr, &grant);
    let with_grant = " Current task grant: github.com, 10.0.0.0/8.";
    assert_eq!(
        hinted,
        contract(
            "${stderr.trimEnd()}",
            &[
                "curl: (28) Connection timed out after 5000 ms",
                with_grant,
                "executionWorkspaceSettings.networkEgress"
            ]
        )
    );
    let hinted = append_network_egress_deny_hint(
        "Temporary failure in name resolution",
        &ScopedNetworkEgressGrant::default(),
    );
    let without_grant = " No task-scoped destinations are granted.";
    assert_eq!(
        hinted,
        contract(
            "${stderr.trimEnd()}",
            &[
                "Temporary failure in name resolution",
                without_grant,
                "executionWorkspaceSettings.networkEgress"
            ]
        )
    );
}

#[test]
fn e3_e4_acquire_egress_warnings() {
    let claude_fqdns =
        "api.anthropic.com, claude.com, platform.claude.com, claude.ai, console.anthropic.com";
    let (_, warnings) = acquire(
        json!({"companyId": "acme", "requestedExpiresAt": "2001-01-01T00:00:00Z", "config": {"inCluster": true}}),
    );
    assert_eq!(
        warnings,
        [contract(
            "[plugin-kubernetes] egressMode=standard cannot enforce FQDN-based egress rules; falling back",
            &[claude_fqdns]
        )]
    );

    let (result, warnings) = acquire(json!({
        "companyId": "acme",
        "adapterType": "pi_local",
        "config": {"inCluster": true, "egressAllowCidrs": ["10.0.0.0/8"], "egressAllowFqdns": ["github.com"]},
    }));
    assert!(result.is_ok());
    assert_eq!(
        warnings,
        [contract(
            "[plugin-kubernetes] egressMode=standard cannot enforce FQDN-based egress rules. The following",
            &["api.anthropic.com, github.com"]
        )]
    );
}
