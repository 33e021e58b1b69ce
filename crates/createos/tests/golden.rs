//! Golden vectors recorded from the original plugin (`tests/data/golden/createos`). The folder
//! named by `PAPERCLIP_GOLDEN_DIR` replaces the default one, so other vector sets run unchanged.

use createos::CreateOsProvider;
use createos::config::{
    parse_config_arg, resolve_api_key, resolve_egress_allowlist, resolve_rootfs,
};
use sandbox_core::ProviderError;
use sandbox_core::golden::{Case, assert_all_pass, load_cases, outcome};
use serde_json::{Map, Value, json};

/// `onEnvironmentValidateConfig({driverKey: "createos", config})`. A vector without `config`
/// recorded a call without it (JS `undefined`), so the key is left out rather than set to null.
#[test]
fn validate_config_vectors() {
    let provider = CreateOsProvider::new();
    let cases = load_cases("createos/config.json");
    assert_all_pass("createos/config.json", &cases, |case| {
        let mut params = Map::new();
        params.insert("driverKey".into(), json!("createos"));
        if let Some(config) = case.input.get("config") {
            params.insert("config".into(), config.clone());
        }
        json!({ "returns": provider.validate_config(&Value::Object(params)).into_value() })
    });
}

/// `parseConfig(input.config)` then `input.fn` with the documented extra argument.
#[test]
fn helper_vectors() {
    let cases = load_cases("createos/helpers.json");
    assert_all_pass("createos/helpers.json", &cases, |case| {
        outcome(&run_helper(case))
    });
}

fn run_helper(case: &Case) -> Result<Value, ProviderError> {
    let input = &case.input;
    let config = parse_config_arg(input.get("config"))?;
    let function = input["fn"].as_str().unwrap_or_default();
    match function {
        "resolveApiKey" => {
            let env_key = input
                .pointer("/env/CREATEOS_API_KEY")
                .and_then(Value::as_str);
            resolve_api_key(&config, env_key).map(Value::from)
        }
        "resolveEgressAllowlist" => {
            resolve_egress_allowlist(&config, input.get("settings")).map(Value::from)
        }
        // `adapterType: null` records a call without the argument.
        "resolveRootfs" => Ok(resolve_rootfs(&config, input["adapterType"].as_str()).into()),
        other => panic!("case {:?}: unknown helper {other:?}", case.name),
    }
}
