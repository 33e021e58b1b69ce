//! Which image each adapter runs, and the check that it can be pulled (issue #37).
//!
//! An adapter's image is the one `runtimeImages` names for it, used as written, or else the
//! table in force's (built-in or `adapters` registry) moved to `imageRegistry` when that is set.
//! Acquire checks the image against the reference grammar before it touches the cluster, and
//! the probe checks every image the config can run, so an operator hears about a reference the
//! kubelet would refuse (a pod stuck in `InvalidImageName`) at once, not at a deadline.

use sandbox_core::ProviderError;

pub use crate::config::image_reference::check_image_reference;

use super::images::rewrite_registry;
use crate::config::KubernetesConfig;
use crate::config::adapters::{
    AdapterDefaults, adapter_defaults_with_images, named_runtime_image, runnable_adapter_types,
};

/// The image a run of `adapter_type` uses, `defaults` being that adapter's (from
/// [`adapter_defaults_with_images`]): `runtimeImages`' reference as written, or the table's
/// image with `imageRegistry` applied.
pub fn runtime_image(
    config: &KubernetesConfig,
    adapter_type: &str,
    defaults: &AdapterDefaults,
) -> String {
    if named_runtime_image(config.runtime_images.as_ref(), adapter_type).is_some() {
        return defaults.runtime_image.clone();
    }
    match config.image_registry.as_deref().filter(|r| !r.is_empty()) {
        Some(registry) => rewrite_registry(&defaults.runtime_image, registry),
        None => defaults.runtime_image.clone(),
    }
}

/// Every adapter type the config can run with the image acquire would use for it: the config's
/// own `adapterType` first, then the table in force's types (the `adapters` registry's when it
/// has entries, else the six built-ins), then the types only `runtimeImages` names, each once.
/// A type whose defaults cannot be resolved (a registry entry with no image anywhere) has no
/// image to list and is left out; acquire refuses it with the registry's own message.
pub fn configured_runtime_images(config: &KubernetesConfig) -> Vec<(String, String)> {
    let registry = config.adapters.as_deref();
    let images = config.runtime_images.as_ref();
    let mut types = vec![config.adapter_type.as_str()];
    for adapter_type in runnable_adapter_types(registry, images) {
        if !types.contains(&adapter_type) {
            types.push(adapter_type);
        }
    }
    types
        .into_iter()
        .filter_map(|adapter_type| {
            let defaults = adapter_defaults_with_images(adapter_type, registry, images).ok()?;
            let image = runtime_image(config, adapter_type, &defaults);
            Some((adapter_type.to_string(), image))
        })
        .collect()
}

/// The error of a runtime image that is not a valid reference: names the adapter, the reference
/// (with anything that looks like a user name or password masked) and the grammar's reason.
pub fn invalid_runtime_image_error(
    adapter_type: &str,
    reference: &str,
    reason: &str,
) -> ProviderError {
    let reference = mask_userinfo(reference);
    ProviderError::new(format!(
        "Kubernetes runtime image for adapter \"{adapter_type}\" is not a valid image reference: \"{reference}\" ({reason}); set a valid reference (host/path:tag or host/path@sha256:…) for it in runtimeImages."
    ))
}

/// `user:password@host/…` (after an optional scheme) becomes `***@host/…`. A digest follows an
/// `@` too, but never holds a `/`, so an `@` followed by a `/` is taken for credentials.
fn mask_userinfo(reference: &str) -> String {
    let (scheme, rest) = match reference.find("://") {
        Some(at) => reference.split_at(at + 3),
        None => ("", reference),
    };
    match rest.rfind('@') {
        Some(at) if rest[at + 1..].contains('/') => format!("{scheme}***@{}", &rest[at + 1..]),
        _ => reference.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config(value: serde_json::Value) -> KubernetesConfig {
        KubernetesConfig::parse(&value).expect("a valid config")
    }

    const CLAUDE_TAG: &str = "git-38d8f371722b315d2fb3bbaa512518742e33ce2f";

    #[test]
    fn built_ins_in_table_order_with_the_config_adapter_first() {
        let images = configured_runtime_images(&config(
            json!({"inCluster": true, "adapterType": "pi_local"}),
        ));
        let types: Vec<&str> = images.iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(
            types,
            [
                "pi_local",
                "claude_local",
                "codex_local",
                "gemini_local",
                "cursor_local",
                "opencode_local"
            ]
        );
        assert_eq!(images[0].1, "ghcr.io/paperclipai/agent-runtime-pi:v1");
        assert_eq!(
            images[1].1,
            format!("ghcr.io/paperclipai/agent-runtime-claude:{CLAUDE_TAG}")
        );
    }

    #[test]
    fn image_registry_rewrites_only_what_runtime_images_does_not_name() {
        let images = configured_runtime_images(&config(json!({
            "inCluster": true,
            "imageRegistry": "https://mirror.example:5000/acme",
            "runtimeImages": {"codex_local": "ghcr.io/other/codex:2", "aider_local": "r.example/aider:1"},
        })));
        let get = |t: &str| {
            images
                .iter()
                .find(|(k, _)| k == t)
                .map(|(_, i)| i.as_str())
                .unwrap()
        };
        assert_eq!(
            get("claude_local"),
            format!("mirror.example:5000/acme/agent-runtime-claude:{CLAUDE_TAG}")
        );
        assert_eq!(get("codex_local"), "ghcr.io/other/codex:2");
        assert_eq!(
            get("gemini_local"),
            "mirror.example:5000/acme/agent-runtime-gemini:v1"
        );
        assert_eq!(get("aider_local"), "r.example/aider:1");
        assert_eq!(images.len(), 7);
        assert_eq!(images.last().unwrap().0, "aider_local");
        for (_, image) in &images {
            assert_eq!(check_image_reference(image), Ok(()), "{image}");
        }
    }

    #[test]
    fn with_the_registry_in_force_its_types_then_the_named_ones() {
        let images = configured_runtime_images(&config(json!({
            "inCluster": true,
            "imageRegistry": "ghcr.io/acme",
            "adapters": [
                {"adapterType": "claude_local", "runtimeImage": "r.example/team/claude:1"},
                {"adapterType": "custom_local"},
                {"adapterType": "claude_local", "runtimeImage": "r.example/ignored:1"},
            ],
            "runtimeImages": {"custom_local": "r.example/custom:3", "extra_local": "r.example/extra:1"},
        })));
        assert_eq!(
            images,
            [
                (
                    "claude_local".to_string(),
                    "ghcr.io/acme/claude:1".to_string()
                ),
                ("custom_local".to_string(), "r.example/custom:3".to_string()),
                ("extra_local".to_string(), "r.example/extra:1".to_string()),
            ]
        );
    }

    #[test]
    fn an_adapter_without_an_image_is_left_out() {
        let images = configured_runtime_images(&config(json!({
            "inCluster": true,
            "adapters": [{"adapterType": "claude_local", "runtimeImage": "r.example/c:1"}, {"adapterType": "custom_local"}],
        })));
        assert_eq!(
            images,
            [("claude_local".to_string(), "r.example/c:1".to_string())]
        );
    }

    #[test]
    fn the_error_names_adapter_reference_and_reason_and_masks_credentials() {
        let err = invalid_runtime_image_error("claude_local", "https://ghcr.io/acme/a:1", "why");
        assert_eq!(
            err.message,
            "Kubernetes runtime image for adapter \"claude_local\" is not a valid image reference: \"https://ghcr.io/acme/a:1\" (why); set a valid reference (host/path:tag or host/path@sha256:…) for it in runtimeImages."
        );
        let err = invalid_runtime_image_error("x", "https://bob:s3cret@ghcr.io/a:1", "why");
        assert!(!err.message.contains("s3cret") && !err.message.contains("bob"));
        assert!(err.message.contains("\"https://***@ghcr.io/a:1\""));
        assert_eq!(mask_userinfo("bob:pw@r.example/a"), "***@r.example/a");
        let digest = "r.example/a:1@sha256:00";
        assert_eq!(mask_userinfo(digest), digest);
    }
}
