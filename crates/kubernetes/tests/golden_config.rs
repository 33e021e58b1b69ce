//! `kubernetes/config.json`: validateConfig, the probe's invalid-config answer, and the config
//! stage (early return or `ZodError`) of the lease and execute hooks.

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
