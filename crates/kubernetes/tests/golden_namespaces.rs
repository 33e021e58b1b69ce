//! `kubernetes/namespaces.json`: the tenant namespace of a company under a parsed config.

use kubernetes::{KubernetesConfig, derive_tenant_namespace, zod_error};
use sandbox_core::golden::{assert_all_pass, load_cases, outcome};
use serde_json::Value;

#[test]
fn namespace_vectors() {
    let cases = load_cases("kubernetes/namespaces.json");
    assert_all_pass("kubernetes/namespaces.json", &cases, |case| {
        let company_id = case.input["companyId"]
            .as_str()
            .expect("companyId is a string");
        let result = KubernetesConfig::parse(&case.input["config"])
            .map(|config| Value::String(derive_tenant_namespace(&config, company_id)))
            .map_err(zod_error);
        outcome(&result)
    });
}
