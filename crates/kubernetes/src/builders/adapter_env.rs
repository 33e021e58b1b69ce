//! The env a run's Secret carries for its adapter (`buildAdapterEnv` of
//! `adapter-defaults.ts` @ 1516b74).

use super::string_map::assign;
use crate::config::adapters::{AdapterDefaults, StringMap};

/// `buildAdapterEnv(defaults, processEnv)`: the adapter's non-secret `defaultEnv`, overlaid with
/// each `envKeys` secret that `process_env` holds with a non-empty value (the plugin worker's own
/// environment in production).
pub fn build_adapter_env(
    defaults: &AdapterDefaults,
    process_env: impl Fn(&str) -> Option<String>,
) -> StringMap {
    let mut env = defaults.default_env.clone().unwrap_or_default();
    for key in &defaults.env_keys {
        if let Some(value) = process_env(key).filter(|v| !v.is_empty()) {
            assign(&mut env, key, value);
        }
    }
    env
}

/// [`build_adapter_env`] over this process's environment, as the original reads `process.env`.
/// A value that is not valid Unicode is taken with replacement characters, as Node decodes it.
pub fn build_adapter_env_from_process(defaults: &AdapterDefaults) -> StringMap {
    build_adapter_env(defaults, |key| {
        std::env::var_os(key).map(|v| v.to_string_lossy().into_owned())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_override_defaults_in_place() {
        let defaults = AdapterDefaults {
            runtime_image: "r/x:1".into(),
            env_keys: vec!["ANTHROPIC_API_KEY".into(), "OPENAI_API_KEY".into()],
            allow_fqdns: vec![],
            probe_command: vec![],
            default_env: Some(vec![
                ("ANTHROPIC_API_KEY".into(), "placeholder".into()),
                ("BASE_URL".into(), "https://llm.internal".into()),
            ]),
        };
        let env = build_adapter_env(&defaults, |key| match key {
            "ANTHROPIC_API_KEY" => Some("sk-1".into()),
            "OPENAI_API_KEY" => Some(String::new()),
            _ => None,
        });
        assert_eq!(
            env,
            vec![
                ("ANTHROPIC_API_KEY".to_string(), "sk-1".to_string()),
                ("BASE_URL".to_string(), "https://llm.internal".to_string())
            ]
        );
    }
}
