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

/// Whether the recorded outcome is one that the config stage itself produces: then going on to
/// the cluster instead is a mismatch, not a case to set aside.
fn is_config_stage_outcome(expected: &Value) -> bool {
    expected["throws"]["name"] == "ZodError"
        || expected["returns"]["summary"] == kubernetes::INVALID_CONFIG_SUMMARY
}

#[test]
fn config_vectors() {
    let cases = load_cases("kubernetes/config.json");
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
