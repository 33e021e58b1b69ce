//! Adapter runtime defaults: the built-in table and the optional `config.adapters` registry.
//!
//! The registry replaces the built-in table when it has any entry. `runtimeImages` (an
//! addition, issue #37) is merged over whichever table is in force: it replaces the image of an
//! adapter the table has, and makes an adapter the table lacks runnable with the
//! [generic defaults](generic_adapter_defaults).

use std::borrow::Cow;
use std::sync::LazyLock;

use js_compat::string;
use sandbox_core::{ProviderError, ProviderResult};
use serde_json::{Map, Value};

/// String-to-string maps taken from input (`defaultEnv`, label selectors, annotations), in the
/// order JS lists their keys.
pub type StringMap = Vec<(String, String)>;

/// A [`StringMap`] as a JSON object.
pub fn string_map_json(map: &StringMap) -> Value {
    Value::Object(
        map.iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect(),
    )
}

fn strings_json(list: &[String]) -> Value {
    list.iter().cloned().map(Value::String).collect()
}

/// What a run of one adapter type needs: its image, the secrets it reads from the worker's
/// environment, the hosts it must reach, and a version probe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdapterDefaults {
    pub runtime_image: String,
    pub env_keys: Vec<String>,
    pub allow_fqdns: Vec<String>,
    pub probe_command: Vec<String>,
    /// Non-secret env layered under the secrets; only registry entries carry it.
    pub default_env: Option<StringMap>,
}

impl AdapterDefaults {
    /// The original's object, keys in its order; `defaultEnv` is absent when undefined.
    pub fn to_json(&self) -> Value {
        let mut out = Map::new();
        out.insert("runtimeImage".into(), self.runtime_image.clone().into());
        out.insert("envKeys".into(), strings_json(&self.env_keys));
        out.insert("allowFqdns".into(), strings_json(&self.allow_fqdns));
        out.insert("probeCommand".into(), strings_json(&self.probe_command));
        if let Some(env) = &self.default_env {
            out.insert("defaultEnv".into(), string_map_json(env));
        }
        Value::Object(out)
    }
}

/// One parsed `config.adapters` entry (the schema's output, defaults applied).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdapterRegistryEntry {
    pub adapter_type: String,
    /// Parsed and kept in the normalised config, but nothing consults it.
    pub enabled: bool,
    pub runtime_image: Option<String>,
    pub env_keys: Option<Vec<String>>,
    pub allow_fqdns: Option<Vec<String>>,
    pub probe_command: Option<Vec<String>>,
    pub default_env: Option<StringMap>,
}

impl AdapterRegistryEntry {
    /// The normalised entry, keys in schema order, unset optional keys absent.
    pub fn to_json(&self) -> Value {
        let mut out = Map::new();
        out.insert("adapterType".into(), self.adapter_type.clone().into());
        out.insert("enabled".into(), self.enabled.into());
        if let Some(image) = &self.runtime_image {
            out.insert("runtimeImage".into(), image.clone().into());
        }
        let lists = [
            ("envKeys", &self.env_keys),
            ("allowFqdns", &self.allow_fqdns),
            ("probeCommand", &self.probe_command),
        ];
        for (key, list) in lists {
            if let Some(list) = list {
                out.insert(key.into(), strings_json(list));
            }
        }
        if let Some(env) = &self.default_env {
            out.insert("defaultEnv".into(), string_map_json(env));
        }
        Value::Object(out)
    }
}

struct BuiltIn {
    adapter_type: &'static str,
    runtime_image: &'static str,
    env_keys: &'static [&'static str],
    allow_fqdns: &'static [&'static str],
    probe_command: &'static [&'static str],
}

/// The built-in table (upstream `adapter-defaults.ts` @ 1516b74), in its declaration order.
const BUILT_INS: [BuiltIn; 6] = [
    BuiltIn {
        adapter_type: "claude_local",
        runtime_image: "ghcr.io/paperclipai/agent-runtime-claude:git-38d8f371722b315d2fb3bbaa512518742e33ce2f",
        env_keys: &["ANTHROPIC_API_KEY"],
        allow_fqdns: &[
            "api.anthropic.com",
            "claude.com",
            "platform.claude.com",
            "claude.ai",
            "console.anthropic.com",
        ],
        probe_command: &["claude", "--version"],
    },
    BuiltIn {
        adapter_type: "codex_local",
        runtime_image: "ghcr.io/paperclipai/agent-runtime-codex:v1",
        env_keys: &["OPENAI_API_KEY"],
        allow_fqdns: &[
            "api.openai.com",
            "auth.openai.com",
            "chatgpt.com",
            "platform.openai.com",
            "oaistatic.com",
        ],
        probe_command: &["codex", "--version"],
    },
    BuiltIn {
        adapter_type: "gemini_local",
        runtime_image: "ghcr.io/paperclipai/agent-runtime-gemini:v1",
        env_keys: &["GOOGLE_API_KEY", "GEMINI_API_KEY"],
        allow_fqdns: &[
            "generativelanguage.googleapis.com",
            "oauth2.googleapis.com",
            "sts.googleapis.com",
        ],
        probe_command: &["gemini", "--version"],
    },
    BuiltIn {
        adapter_type: "cursor_local",
        runtime_image: "ghcr.io/paperclipai/agent-runtime-cursor:v1",
        env_keys: &["ANTHROPIC_API_KEY", "OPENAI_API_KEY"],
        allow_fqdns: &[
            "api.anthropic.com",
            "api.openai.com",
            "cursor.com",
            "api2.cursor.sh",
        ],
        probe_command: &["cursor-agent", "--version"],
    },
    BuiltIn {
        adapter_type: "opencode_local",
        runtime_image: "ghcr.io/paperclipai/agent-runtime-opencode:v1",
        env_keys: &["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY"],
        allow_fqdns: &["api.anthropic.com", "api.openai.com", "openrouter.ai"],
        probe_command: &["opencode", "--version"],
    },
    BuiltIn {
        adapter_type: "pi_local",
        runtime_image: "ghcr.io/paperclipai/agent-runtime-pi:v1",
        env_keys: &["ANTHROPIC_API_KEY"],
        allow_fqdns: &["api.anthropic.com"],
        probe_command: &["pi", "--version"],
    },
];

fn owned(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// The adapter types the config's `adapterType` may name (the built-in table's keys; a custom
/// registry does not widen this).
pub fn known_adapter_types() -> impl Iterator<Item = &'static str> {
    BUILT_INS.iter().map(|b| b.adapter_type)
}

pub fn is_known_adapter_type(adapter_type: &str) -> bool {
    known_adapter_types().any(|known| known == adapter_type)
}

/// The built-in defaults of one adapter type (exact, case-sensitive match). Built once: a
/// validate call consults them, and copying the table's strings out and dropping them again
/// cost ~3,500 instructions a call (only their FQDN list is read, for a warning).
pub fn built_in_adapter_defaults(adapter_type: &str) -> Option<&'static AdapterDefaults> {
    static DEFAULTS: LazyLock<Vec<AdapterDefaults>> = LazyLock::new(|| {
        BUILT_INS
            .iter()
            .map(|b| AdapterDefaults {
                runtime_image: b.runtime_image.to_string(),
                env_keys: owned(b.env_keys),
                allow_fqdns: owned(b.allow_fqdns),
                probe_command: owned(b.probe_command),
                default_env: None,
            })
            .collect()
    });
    let index = BUILT_INS
        .iter()
        .position(|b| b.adapter_type == adapter_type)?;
    DEFAULTS.get(index)
}

/// `getAdapterDefaults(adapterType, registry)`.
///
/// A non-empty registry is authoritative: the first entry of that type must exist and have a
/// runtime image; its missing lists default to empty and `enabled` is not consulted. Without a
/// registry, or with an empty one, the built-in table applies.
pub fn get_adapter_defaults(
    adapter_type: &str,
    registry: Option<&[AdapterRegistryEntry]>,
) -> ProviderResult<Cow<'static, AdapterDefaults>> {
    if let Some(registry) = registry.filter(|r| !r.is_empty()) {
        let entry = registry
            .iter()
            .find(|e| e.adapter_type == adapter_type)
            .ok_or_else(|| {
                ProviderError::new(format!(
                    "Adapter \"{adapter_type}\" is not in the configured adapter registry"
                ))
            })?;
        let runtime_image = entry
            .runtime_image
            .clone()
            .filter(|image| !image.is_empty());
        let Some(runtime_image) = runtime_image else {
            return Err(ProviderError::new(format!(
                "Adapter \"{}\" is missing required runtime field: runtimeImage",
                entry.adapter_type
            )));
        };
        return Ok(Cow::Owned(AdapterDefaults {
            runtime_image,
            env_keys: entry.env_keys.clone().unwrap_or_default(),
            allow_fqdns: entry.allow_fqdns.clone().unwrap_or_default(),
            probe_command: entry.probe_command.clone().unwrap_or_default(),
            default_env: entry.default_env.clone(),
        }));
    }
    built_in_adapter_defaults(adapter_type)
        .map(Cow::Borrowed)
        .ok_or_else(|| ProviderError::new(format!("Unknown adapter type: {adapter_type}")))
}

/// The probe command of an adapter only `runtimeImages` names: the provider does not know that
/// adapter's CLI, so it checks what it can, that the pod runs and that its shell answers an
/// exec (every runtime image needs `/bin/sh`: the exec wrapper and the sync scripts run in it).
pub const GENERIC_PROBE_COMMAND: [&str; 3] = ["sh", "-c", "true"];

/// The defaults of an adapter type that no table in force knows but `runtimeImages` names: no
/// environment keys (the worker's secrets go to no image the provider cannot vouch for), no
/// egress FQDNs (the config's `egressAllowFqdns` and `egressAllowCidrs` still apply), the
/// [generic probe](GENERIC_PROBE_COMMAND), and the named image.
pub fn generic_adapter_defaults(runtime_image: &str) -> AdapterDefaults {
    AdapterDefaults {
        runtime_image: runtime_image.to_string(),
        env_keys: Vec::new(),
        allow_fqdns: Vec::new(),
        probe_command: owned(&GENERIC_PROBE_COMMAND),
        default_env: None,
    }
}

/// The image `runtimeImages` gives `adapter_type`, if it names it.
pub fn named_runtime_image<'a>(
    runtime_images: Option<&'a StringMap>,
    adapter_type: &str,
) -> Option<&'a str> {
    runtime_images?
        .iter()
        .find(|(named, _)| named == adapter_type)
        .map(|(_, image)| image.as_str())
}

/// [`get_adapter_defaults`] with `runtimeImages` merged over the table in force (issue #37).
/// Without `runtimeImages` naming `adapter_type` this is exactly `getAdapterDefaults` (its
/// errors included). When it names it, its image replaces the table's; a registry entry
/// without a `runtimeImage` takes it; a type the table in force lacks gets
/// [`generic_adapter_defaults`].
pub fn adapter_defaults_with_images(
    adapter_type: &str,
    registry: Option<&[AdapterRegistryEntry]>,
    runtime_images: Option<&StringMap>,
) -> ProviderResult<Cow<'static, AdapterDefaults>> {
    let Some(image) = named_runtime_image(runtime_images, adapter_type) else {
        return get_adapter_defaults(adapter_type, registry);
    };
    let registry = registry.filter(|r| !r.is_empty());
    let entry = registry.and_then(|r| r.iter().find(|e| e.adapter_type == adapter_type));
    let mut defaults = match (registry, entry) {
        (Some(_), Some(entry)) => AdapterDefaults {
            runtime_image: String::new(),
            env_keys: entry.env_keys.clone().unwrap_or_default(),
            allow_fqdns: entry.allow_fqdns.clone().unwrap_or_default(),
            probe_command: entry.probe_command.clone().unwrap_or_default(),
            default_env: entry.default_env.clone(),
        },
        (None, _) => built_in_adapter_defaults(adapter_type)
            .cloned()
            .unwrap_or_else(|| generic_adapter_defaults("")),
        (Some(_), None) => generic_adapter_defaults(""),
    };
    defaults.runtime_image = image.to_string();
    Ok(Cow::Owned(defaults))
}

/// The adapter types the config can run, in a stable order: those of the table in force (the
/// registry's entries in their order when it has any, else the built-ins in theirs), then
/// those only `runtimeImages` names, in its order. Each once.
pub fn runnable_adapter_types<'a>(
    registry: Option<&'a [AdapterRegistryEntry]>,
    runtime_images: Option<&'a StringMap>,
) -> Vec<&'a str> {
    let table: Vec<&str> = match registry.filter(|r| !r.is_empty()) {
        Some(registry) => registry.iter().map(|e| e.adapter_type.as_str()).collect(),
        None => known_adapter_types().collect(),
    };
    let named = runtime_images
        .into_iter()
        .flatten()
        .map(|(adapter_type, _)| adapter_type.as_str());
    let mut types: Vec<&str> = Vec::new();
    for adapter_type in table.into_iter().chain(named) {
        if !adapter_type.is_empty() && !types.contains(&adapter_type) {
            types.push(adapter_type);
        }
    }
    types
}

/// `resolveRunAdapterType(runAdapterType, configAdapterType)`: the per-run hint, trimmed, when it
/// is a string that is not blank; otherwise the config default. The hint is not validated here.
pub fn resolve_run_adapter_type(
    run_adapter_type: Option<&Value>,
    config_adapter_type: &str,
) -> String {
    match run_adapter_type.and_then(Value::as_str).map(string::trim) {
        Some(trimmed) if !trimmed.is_empty() => trimmed.to_string(),
        _ => config_adapter_type.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(adapter_type: &str, runtime_image: Option<&str>) -> AdapterRegistryEntry {
        AdapterRegistryEntry {
            adapter_type: adapter_type.into(),
            enabled: true,
            runtime_image: runtime_image.map(Into::into),
            env_keys: None,
            allow_fqdns: None,
            probe_command: None,
            default_env: None,
        }
    }

    #[test]
    fn built_ins_cover_the_six_known_adapters() {
        let known: Vec<_> = known_adapter_types().collect();
        assert_eq!(
            known,
            [
                "claude_local",
                "codex_local",
                "gemini_local",
                "cursor_local",
                "opencode_local",
                "pi_local"
            ]
        );
        assert!(!is_known_adapter_type("Claude_Local"));
        assert!(!is_known_adapter_type("constructor"));
    }

    #[test]
    fn registry_replaces_built_ins() {
        let registry = [entry("custom_local", Some("r/custom:1"))];
        let defaults = get_adapter_defaults("custom_local", Some(&registry)).unwrap();
        assert_eq!(
            defaults.to_json().to_string(),
            r#"{"runtimeImage":"r/custom:1","envKeys":[],"allowFqdns":[],"probeCommand":[]}"#
        );
        let err = get_adapter_defaults("claude_local", Some(&registry)).unwrap_err();
        assert_eq!(
            err.message,
            "Adapter \"claude_local\" is not in the configured adapter registry"
        );
    }

    #[test]
    fn registry_entry_needs_a_runtime_image() {
        for image in [None, Some("")] {
            let registry = [entry("claude_local", image)];
            let err = get_adapter_defaults("claude_local", Some(&registry)).unwrap_err();
            assert_eq!(
                err.message,
                "Adapter \"claude_local\" is missing required runtime field: runtimeImage"
            );
        }
    }

    #[test]
    fn empty_registry_falls_back_and_unknown_types_fail() {
        assert_eq!(
            get_adapter_defaults("pi_local", Some(&[]))
                .unwrap()
                .runtime_image,
            "ghcr.io/paperclipai/agent-runtime-pi:v1"
        );
        let err = get_adapter_defaults("aider_local", None).unwrap_err();
        assert_eq!(err.message, "Unknown adapter type: aider_local");
    }

    fn images(pairs: &[(&str, &str)]) -> StringMap {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn runtime_images_replace_a_built_in_image_and_keep_the_rest() {
        let named = images(&[("codex_local", "r.example/codex:2")]);
        let codex = adapter_defaults_with_images("codex_local", None, Some(&named)).unwrap();
        let built_in = built_in_adapter_defaults("codex_local").unwrap();
        assert_eq!(codex.runtime_image, "r.example/codex:2");
        assert_eq!(
            (&codex.env_keys, &codex.allow_fqdns, &codex.probe_command),
            (
                &built_in.env_keys,
                &built_in.allow_fqdns,
                &built_in.probe_command
            )
        );
        // Other adapters keep theirs.
        let pi = adapter_defaults_with_images("pi_local", None, Some(&named)).unwrap();
        assert_eq!(pi.runtime_image, "ghcr.io/paperclipai/agent-runtime-pi:v1");
    }

    #[test]
    fn an_unknown_adapter_runs_only_when_runtime_images_names_it() {
        let named = images(&[("aider_local", "r.example/aider:1")]);
        let aider = adapter_defaults_with_images("aider_local", None, Some(&named)).unwrap();
        assert_eq!(
            aider.to_json().to_string(),
            r#"{"runtimeImage":"r.example/aider:1","envKeys":[],"allowFqdns":[],"probeCommand":["sh","-c","true"]}"#
        );
        for named in [None, Some(&named)] {
            let err = adapter_defaults_with_images("goose_local", None, named).unwrap_err();
            assert_eq!(err.message, "Unknown adapter type: goose_local");
        }
    }

    #[test]
    fn runtime_images_over_the_registry_in_force() {
        let registry = [
            entry("claude_local", Some("r/claude:1")),
            entry("custom_local", None),
        ];
        let named = images(&[
            ("claude_local", "r.example/claude:9"),
            ("custom_local", "r.example/c:1"),
        ]);
        let named = Some(&named);
        let claude = adapter_defaults_with_images("claude_local", Some(&registry), named).unwrap();
        assert_eq!(claude.runtime_image, "r.example/claude:9");
        assert!(
            claude.env_keys.is_empty(),
            "the registry entry's lists, not the built-in's"
        );
        // An entry without an image takes runtimeImages'.
        let custom = adapter_defaults_with_images("custom_local", Some(&registry), named).unwrap();
        assert_eq!(custom.runtime_image, "r.example/c:1");
        // Without runtimeImages naming it, the registry's behaviour is exact.
        let err = adapter_defaults_with_images("custom_local", Some(&registry), None).unwrap_err();
        assert_eq!(
            err.message,
            "Adapter \"custom_local\" is missing required runtime field: runtimeImage"
        );
        let err = adapter_defaults_with_images("codex_local", Some(&registry), named).unwrap_err();
        assert_eq!(
            err.message,
            "Adapter \"codex_local\" is not in the configured adapter registry"
        );
        // A type the registry lacks, named by runtimeImages, gets the generic defaults.
        let extra = images(&[("extra_local", "r.example/e:1")]);
        let extra = adapter_defaults_with_images("extra_local", Some(&registry), Some(&extra));
        assert_eq!(*extra.unwrap(), generic_adapter_defaults("r.example/e:1"));
    }

    #[test]
    fn runnable_types_table_then_named_each_once() {
        let named = images(&[("pi_local", "a/b:1"), ("x_local", "a/x:1"), ("", "a/e:1")]);
        assert_eq!(
            runnable_adapter_types(None, Some(&named)),
            [
                "claude_local",
                "codex_local",
                "gemini_local",
                "cursor_local",
                "opencode_local",
                "pi_local",
                "x_local"
            ]
        );
        let registry = [
            entry("b_local", None),
            entry("a_local", None),
            entry("b_local", None),
        ];
        assert_eq!(
            runnable_adapter_types(Some(&registry), Some(&named)),
            ["b_local", "a_local", "pi_local", "x_local"]
        );
        assert_eq!(runnable_adapter_types(Some(&[]), None).len(), 6);
    }

    #[test]
    fn run_adapter_hint() {
        use serde_json::json;
        assert_eq!(
            resolve_run_adapter_type(Some(&json!(" codex_local ")), "claude_local"),
            "codex_local"
        );
        assert_eq!(
            resolve_run_adapter_type(Some(&json!("  ")), "claude_local"),
            "claude_local"
        );
        assert_eq!(
            resolve_run_adapter_type(Some(&json!(5)), "claude_local"),
            "claude_local"
        );
        assert_eq!(
            resolve_run_adapter_type(None, "gemini_local"),
            "gemini_local"
        );
    }
}
