//! `kubernetes/config.json`: validateConfig, the probe's invalid-config answer, and the config
//! stage (early return or `ZodError`) of the lease and execute hooks.

use kubernetes::config::image_reference::parse_image_registry;
use kubernetes::config::image_registry_invalid;
use kubernetes::{
    ConfigStage, KubernetesProvider, config_stage_of_acquire, config_stage_of_destroy,
    config_stage_of_execute, config_stage_of_release, config_stage_of_resume, probe_config_error,
};
use sandbox_core::golden::{Case, assert_all_pass, load_cases, outcome};
use sandbox_core::{HookValue, ProviderResult};
use serde_json::Value;

/// The recorded outcome of the case's hook, or `None` when the original would go on to the
/// cluster (which these vectors cannot cover).
fn run(case: &Case) -> Option<Value> {
    let hook = case.input["hook"].as_str().expect("case names its hook");
    let params = &case.input["params"];
    let stage = |result: ProviderResult<ConfigStage>| match result {
        Err(err) => Some(outcome(&Err(err))),
        Ok(ConfigStage::Return(value)) => Some(outcome(&Ok(value))),
        Ok(ConfigStage::Proceed(_)) => None,
    };
    match hook {
        "onEnvironmentValidateConfig" => {
            let validated = KubernetesProvider::new().validate_config(params);
            Some(outcome(&validated.map(HookValue::into_value)))
        }
        "onEnvironmentProbe" => probe_config_error(params).map(|result| outcome(&Ok(result))),
        "onEnvironmentAcquireLease" => stage(config_stage_of_acquire(params)),
        "onEnvironmentResumeLease" => stage(config_stage_of_resume(params)),
        "onEnvironmentReleaseLease" => stage(config_stage_of_release(params)),
        "onEnvironmentDestroyLease" => stage(config_stage_of_destroy(params)),
        "onEnvironmentExecute" => stage(config_stage_of_execute(params)),
        other => panic!("case {:?}: no runner for hook {other}", case.name),
    }
}

/// The recorded expectation with the later generations this provider adopts applied. The vectors
/// were recorded from 1bbb5810, before G-exec2; G-exec2 gives every execute result
/// `signal: null` (`../shared/reference/kubernetes.md` §11.11 item 12), the early return for a
/// lease without a provider lease id included, right after `exitCode` as on every other execute
/// result. That is the only adjustment: the recorded file stays as recorded, and a recorded
/// execute result that already has a `signal` is left alone.
fn with_adopted_generations(case: &Case) -> Case {
    let mut case = case.clone();
    let returns = &case.expected["returns"];
    if case.input["hook"] == "onEnvironmentExecute"
        && returns.get("exitCode").is_some()
        && returns.get("signal").is_none()
    {
        let mut adopted = serde_json::Map::new();
        for (key, value) in returns.as_object().expect("an execute result is an object") {
            adopted.insert(key.clone(), value.clone());
            if key == "exitCode" {
                adopted.insert("signal".into(), Value::Null);
            }
        }
        case.expected["returns"] = Value::Object(adopted);
    }
    case
}

/// zod's `.url()` message, which the recorded `imageRegistry` issues carry.
const URL_ISSUE: &str = "Invalid url";

/// The recorded expectation with issue #37's `imageRegistry` rule applied (a deliberate
/// difference, docs/wire-parity.md). The original checked the value with `.url()`; this
/// implementation takes a registry host with an optional path, with or without an http(s)
/// scheme. So where a recorded validate result (`errors`) or probe result (`metadata.errors`)
/// holds the `Invalid url` issue, the value is judged again: if it is refused, the issue's
/// message is the new one, saying why; if it is accepted, the issue goes, and when no issue is
/// left the outcome is the one the original gave for the value's `https://` form (the form it
/// accepted, as the recorded `https URL accepted` case shows), with the value kept as written in
/// `normalizedConfig`. Nothing else changes; a recorded `ZodError` holding the issue would need
/// the rule extended, and fails loudly instead.
fn with_image_registry_rule(case: &Case) -> Case {
    let mut case = case.clone();
    let Some(registry) = case.input["params"]["config"]["imageRegistry"].as_str() else {
        return case;
    };
    let registry = registry.to_string();
    let recorded = case.expected.to_string();
    if !recorded.contains(URL_ISSUE) {
        return case;
    }
    assert!(
        case.expected.get("throws").is_none(),
        "case {:?}: a thrown ZodError with the `.url()` issue is not covered by the imageRegistry rule",
        case.name
    );
    let returns = &mut case.expected["returns"];
    let errors = if returns.get("metadata").is_some() {
        &mut returns["metadata"]["errors"]
    } else {
        &mut returns["errors"]
    };
    let errors = errors.as_array_mut().expect("recorded issue messages");
    let at = errors
        .iter()
        .position(|e| e == URL_ISSUE)
        .expect("the `.url()` issue");
    match parse_image_registry(&registry) {
        Err(reason) => errors[at] = image_registry_invalid(&reason).into(),
        Ok(_) => {
            errors.remove(at);
        }
    }
    if errors.is_empty() {
        let mut params = case.input["params"].clone();
        params["config"]["imageRegistry"] = format!("https://{registry}").into();
        let mut accepted = run(&Case {
            name: case.name.clone(),
            input: serde_json::json!({"hook": case.input["hook"], "params": params}),
            expected: Value::Null,
        })
        .expect("a validate or probe outcome");
        accepted["returns"]["normalizedConfig"]["imageRegistry"] = registry.into();
        case.expected = accepted;
    }
    case
}

/// Whether the recorded outcome is one that the config stage itself produces: then going on to
/// the cluster instead is a mismatch, not a case to set aside.
fn is_config_stage_outcome(expected: &Value) -> bool {
    expected["throws"]["name"] == "ZodError"
        || expected["returns"]["summary"] == kubernetes::INVALID_CONFIG_SUMMARY
}

#[test]
fn config_vectors() {
    let cases: Vec<Case> = load_cases("kubernetes/config.json")
        .iter()
        .map(with_adopted_generations)
        .map(|case| with_image_registry_rule(&case))
        .collect();
    let mut needs_cluster = Vec::new();
    let mut runnable = Vec::new();
    for case in &cases {
        if run(case).is_none() && !is_config_stage_outcome(&case.expected) {
            needs_cluster.push(case.name.clone());
        } else {
            runnable.push(case.clone());
        }
    }
    if !needs_cluster.is_empty() {
        eprintln!(
            "{} case(s) go on to the cluster after a valid config and are not run here:\n  {}",
            needs_cluster.len(),
            needs_cluster.join("\n  ")
        );
    }
    assert_all_pass("kubernetes/config.json", &runnable, |case| {
        run(case).unwrap_or_else(|| serde_json::json!({"proceedsToCluster": true}))
    });
    eprintln!(
        "{} of {} config cases run and pass",
        runnable.len(),
        cases.len()
    );
}

/// The G-exec2 adjustment reaches the recorded no-lease-id execute case, and only execute
/// results: nothing else in the file changes.
#[test]
#[expect(
    clippy::cmp_owned,
    reason = "the texts are compared: key order counts, and Value's == ignores it"
)]
fn the_adopted_generations_add_signal_null_to_the_recorded_execute_result_only() {
    let cases = load_cases("kubernetes/config.json");
    let mut adjusted = Vec::new();
    for case in &cases {
        let adopted = with_adopted_generations(case);
        if adopted.expected.to_string() != case.expected.to_string() {
            assert_eq!(case.input["hook"], "onEnvironmentExecute", "{}", case.name);
            adjusted.push((case.name.clone(), adopted.expected.to_string()));
        }
    }
    if std::env::var_os("PAPERCLIP_GOLDEN_DIR").is_none() {
        assert_eq!(
            adjusted,
            vec![(
                "execute: no providerLeaseId returns before parsing".to_string(),
                r#"{"returns":{"exitCode":1,"signal":null,"timedOut":false,"stdout":"","stderr":"No provider lease ID available for execution."}}"#
                    .to_string()
            )]
        );
    }
}

/// Issue #37's `imageRegistry` rule changes exactly the recorded cases whose value the original
/// refused as a URL: the bare `ghcr.io/acme` is now accepted, and `nope` is refused with the
/// message that says why. The adjusted expectations are pinned here as text.
#[test]
#[expect(
    clippy::cmp_owned,
    reason = "the texts are compared: key order counts, and Value's == ignores it"
)]
fn the_image_registry_rule_changes_only_the_url_issue_cases() {
    let cases = load_cases("kubernetes/config.json");
    let mut adjusted = Vec::new();
    for case in &cases {
        let adopted = with_image_registry_rule(case);
        if adopted.expected.to_string() != case.expected.to_string() {
            adjusted.push((case.name.clone(), adopted.expected.to_string()));
        }
    }
    if std::env::var_os("PAPERCLIP_GOLDEN_DIR").is_some() {
        return;
    }
    let names: Vec<&str> = adjusted.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(
        names,
        [
            "validateConfig: imageRegistry without scheme rejected",
            "validateConfig: many field errors reported in schema order"
        ]
    );
    let accepted: Value = serde_json::from_str(&adjusted[0].1).unwrap();
    assert_eq!(accepted["returns"]["ok"], true);
    assert_eq!(
        accepted["returns"]["normalizedConfig"]["imageRegistry"],
        "ghcr.io/acme"
    );
    assert!(
        adjusted[1].1.contains(r#""Invalid","Invalid","imageRegistry must be a registry host with an optional path, such as ghcr.io/acme or https://ghcr.io/acme: \"nope\" has no dot or port and is not localhost, so the container runtime would read it as a Docker Hub path, not a registry host (write the registry's full host, e.g. docker.io/nope)","Invalid CIDR""#),
        "{}",
        adjusted[1].1
    );
}
