//! The schema itself: `kubernetesProviderConfigSchema` (`types.ts` @ a8f79c9) and
//! `adapterRegistrySchema` (`adapter-registry.ts` @ ac6c928), composed from the zod layer.
//!
//! Field order is the schema's shape order: it decides the order of both the issues and the
//! normalised keys. Each field notes the zod chain it reproduces.

use serde_json::{Value, json};

use super::patterns::{
    is_ipv4_cidr_shape, is_short_dns_fragment, is_valid_label_key, is_valid_label_value,
};
use super::zod::{
    Input, NumberCheck, ObjectInput, ParseCtx, Parsed, PathRef, StringCheck, UnknownKeys,
    ZodIssues, any_string_key, array, boolean, enumeration, number, optional, record, refine,
    refine_with, string, with_default,
};
use super::{Backend, DefaultResources, EgressMode, KubernetesConfig, ResourceQuantities};
use crate::config::adapters::{AdapterRegistryEntry, StringMap, is_known_adapter_type};
use crate::config::image_reference::parse_image_registry;

pub const AUTH_REQUIRED: &str = "kubernetes provider requires one of `inCluster` or `kubeconfig`";
pub const INVALID_CIDR: &str = "Invalid CIDR";
pub const SELECTOR_KEY_INVALID: &str =
    "paperclipServerPodSelector keys must be valid Kubernetes label keys";
pub const SELECTOR_VALUE_INVALID: &str =
    "paperclipServerPodSelector values must be valid Kubernetes label values";
pub const SELECTOR_EMPTY: &str = "paperclipServerPodSelector must not be empty";
pub const UNKNOWN_ADAPTER_TYPE: &str = "adapterType must be one of the known adapter types";

/// The issue of an `imageRegistry` the image references cannot be built from (an addition,
/// issue #37: the original's `.url()` refused `ghcr.io/acme` and let `https://…` through into
/// an invalid reference). `reason` says what is wrong with the value.
pub fn image_registry_invalid(reason: &str) -> String {
    format!(
        "imageRegistry must be a registry host with an optional path, such as ghcr.io/acme or https://ghcr.io/acme: {reason}"
    )
}

/// The provider config schema, object-level refinement included.
pub(super) fn parse_provider_config(raw: Input<'_>) -> Result<KubernetesConfig, ZodIssues> {
    let mut cx = ParseCtx::new();
    let fields = provider_config_fields(raw, &PathRef::Root, &mut cx);
    // `.refine((cfg) => cfg.inCluster || cfg.kubeconfig, …)`: JS truthiness, so an empty
    // kubeconfig fails and a whitespace-only one passes.
    let config = refine(
        fields,
        &PathRef::Root,
        &mut cx,
        |cfg| cfg.in_cluster || cfg.kubeconfig.as_deref().is_some_and(|k| !k.is_empty()),
        AUTH_REQUIRED,
    );
    cx.finish(config)
}

/// `adapterRegistrySchema.safeParse(raw)`, for callers that take a registry on its own.
pub fn parse_adapter_registry(raw: &Value) -> Result<Vec<AdapterRegistryEntry>, ZodIssues> {
    let mut cx = ParseCtx::new();
    let parsed = adapter_registry(Some(raw), &PathRef::Root, &mut cx);
    cx.finish(parsed)
}

fn provider_config_fields(
    raw: Input<'_>,
    path: &PathRef<'_>,
    cx: &mut ParseCtx,
) -> Parsed<KubernetesConfig> {
    let Some(mut object) = ObjectInput::new(raw, path, cx) else {
        return Parsed::Aborted;
    };
    // z.boolean().default(false)
    let in_cluster = object.field("inCluster", cx, |v, p, cx| {
        with_default(v, || json!(false), |v| boolean(v, p, cx))
    });
    // z.string().optional()
    let kubeconfig = object.field("kubeconfig", cx, |v, p, cx| {
        optional(v, |v| string(v, p, cx, &[]))
    });
    // z.string().regex(/^[a-z0-9-]{1,32}$/).default("paperclip-")
    let namespace_prefix = object.field("namespacePrefix", cx, |v, p, cx| {
        with_default(v, || json!("paperclip-"), |v| dns_fragment(v, p, cx))
    });
    // z.string().regex(/^[a-z0-9-]{1,32}$/).optional()
    let company_slug = object.field("companySlug", cx, |v, p, cx| {
        optional(v, |v| dns_fragment(v, p, cx))
    });
    // The original's z.string().url().optional(), replaced (issue #37): a string that is a
    // registry host with an optional path, with or without an http(s) scheme.
    let image_registry = object.field("imageRegistry", cx, |v, p, cx| {
        optional(v, |v| image_registry(v, p, cx))
    });
    // An addition (issue #37): z.record(z.string()).optional()
    let runtime_images = object.field("runtimeImages", cx, |v, p, cx| {
        optional(v, |v| string_map(v, p, cx))
    });
    // z.array(z.string()).default([]) ×3
    let image_allow_list = object.field("imageAllowList", cx, defaulted_string_list);
    let image_pull_secrets = object.field("imagePullSecrets", cx, defaulted_string_list);
    let egress_allow_fqdns = object.field("egressAllowFqdns", cx, defaulted_string_list);
    // z.array(z.string().regex(cidrRegex, "Invalid CIDR")).default([])
    let egress_allow_cidrs = object.field("egressAllowCidrs", cx, |v, p, cx| {
        with_default(v, || json!([]), |v| cidr_list(v, p, cx))
    });
    // z.enum(["cilium", "standard"]).default("standard")
    let egress_mode = object.field("egressMode", cx, |v, p, cx| {
        with_default(v, || json!("standard"), |v| egress_mode(v, p, cx))
    });
    // z.record(z.string().refine(key), z.string().refine(value))
    //   .refine(non-empty).default({app: "paperclip-server"})
    let paperclip_server_pod_selector =
        object.field("paperclipServerPodSelector", cx, |v, p, cx| {
            with_default(
                v,
                || json!({"app": "paperclip-server"}),
                |v| pod_selector(v, p, cx),
            )
        });
    // z.object({requests, limits}).optional()
    let default_resources = object.field("defaultResources", cx, |v, p, cx| {
        optional(v, |v| default_resources(v, p, cx))
    });
    // z.string().optional()
    let runtime_class_name = object.field("runtimeClassName", cx, |v, p, cx| {
        optional(v, |v| string(v, p, cx, &[]))
    });
    // z.record(z.string()).default({})
    let service_account_annotations = object.field("serviceAccountAnnotations", cx, |v, p, cx| {
        with_default(v, || json!({}), |v| string_map(v, p, cx))
    });
    // z.number().int().nonnegative().default(900)
    let job_ttl_seconds_after_finished =
        object.field("jobTtlSecondsAfterFinished", cx, |v, p, cx| {
            with_default(v, || json!(900), |v| integer_from_zero(v, p, cx, true))
        });
    // z.number().int().positive().default(3600)
    let pod_activity_deadline_sec = object.field("podActivityDeadlineSec", cx, |v, p, cx| {
        with_default(v, || json!(3600), |v| integer_from_zero(v, p, cx, false))
    });
    // z.number().int().min(1).default(60) (an addition: the ready-wait's unschedulable grace)
    let unschedulable_grace_sec = object.field("unschedulableGraceSec", cx, grace_seconds);
    // z.string().default("claude_local").refine(known, {message}): the refinement wraps the
    // default, so it also sees the defaulted value.
    // Issue #37: a type `runtimeImages` names is accepted too.
    let named = runtime_images.as_ref().and_then(Option::as_ref);
    let adapter_type = object.field("adapterType", cx, |v, p, cx| adapter_type(v, p, cx, named));
    // adapterRegistrySchema.optional()
    let adapters = object.field("adapters", cx, |v, p, cx| {
        optional(v, |v| adapter_registry(v, p, cx))
    });
    // z.enum(["sandbox-cr", "job"]).default("sandbox-cr")
    let backend = object.field("backend", cx, |v, p, cx| {
        with_default(v, || json!("sandbox-cr"), |v| backend(v, p, cx))
    });
    object.finish(cx, UnknownKeys::Strip, || {
        Some(KubernetesConfig {
            in_cluster: in_cluster?,
            kubeconfig: kubeconfig?,
            namespace_prefix: namespace_prefix?,
            company_slug: company_slug?,
            image_registry: image_registry?,
            runtime_images: runtime_images?,
            image_allow_list: image_allow_list?,
            image_pull_secrets: image_pull_secrets?,
            egress_allow_fqdns: egress_allow_fqdns?,
            egress_allow_cidrs: egress_allow_cidrs?,
            egress_mode: egress_mode?,
            paperclip_server_pod_selector: paperclip_server_pod_selector?,
            default_resources: default_resources?,
            runtime_class_name: runtime_class_name?,
            service_account_annotations: service_account_annotations?,
            job_ttl_seconds_after_finished: job_ttl_seconds_after_finished?,
            pod_activity_deadline_sec: pod_activity_deadline_sec?,
            unschedulable_grace_sec: unschedulable_grace_sec?,
            adapter_type: adapter_type?,
            adapters: adapters?,
            backend: backend?,
        })
    })
}

/// `z.string().regex(/^[a-z0-9-]{1,32}$/)`: a namespace prefix or company slug.
fn dns_fragment(v: Input<'_>, p: &PathRef<'_>, cx: &mut ParseCtx) -> Parsed<String> {
    string(v, p, cx, &[StringCheck::Regex(is_short_dns_fragment, None)])
}

/// `z.array(z.string().regex(cidrRegex, "Invalid CIDR"))`
fn cidr_list(v: Input<'_>, p: &PathRef<'_>, cx: &mut ParseCtx) -> Parsed<Vec<String>> {
    array(v, p, cx, |v, p, cx| {
        string(
            v,
            p,
            cx,
            &[StringCheck::Regex(is_ipv4_cidr_shape, Some(INVALID_CIDR))],
        )
    })
}

/// `z.enum(["cilium", "standard"])`
fn egress_mode(v: Input<'_>, p: &PathRef<'_>, cx: &mut ParseCtx) -> Parsed<EgressMode> {
    enumeration(v, p, cx, &EgressMode::OPTIONS)
        .map(|i| [EgressMode::Cilium, EgressMode::Standard][i])
}

/// `z.enum(["sandbox-cr", "job"])`
fn backend(v: Input<'_>, p: &PathRef<'_>, cx: &mut ParseCtx) -> Parsed<Backend> {
    enumeration(v, p, cx, &Backend::OPTIONS).map(|i| [Backend::SandboxCr, Backend::Job][i])
}

/// `z.string().default("claude_local").refine(known, {message})`, where known also takes a
/// (non-empty) type that `runtimeImages` gives an image (issue #37).
fn adapter_type(
    v: Input<'_>,
    p: &PathRef<'_>,
    cx: &mut ParseCtx,
    runtime_images: Option<&StringMap>,
) -> Parsed<String> {
    let parsed = with_default(v, || json!("claude_local"), |v| string(v, p, cx, &[]));
    let named = |t: &str| {
        !t.is_empty() && runtime_images.is_some_and(|images| images.iter().any(|(k, _)| k == t))
    };
    refine(
        parsed,
        p,
        cx,
        |t| is_known_adapter_type(t) || named(t),
        UNKNOWN_ADAPTER_TYPE,
    )
}

/// `imageRegistry`: a string, then a custom issue saying what is wrong with it when the image
/// references cannot be built from it.
fn image_registry(v: Input<'_>, p: &PathRef<'_>, cx: &mut ParseCtx) -> Parsed<String> {
    let value = string(v, p, cx, &[]);
    refine_with(value, p, cx, |value| {
        parse_image_registry(value)
            .err()
            .map(|reason| image_registry_invalid(&reason))
    })
}

/// `z.number().int().min(1).optional()`: `unschedulableGraceSec`. Optional rather than
/// defaulted, so a config without it normalises exactly as the original's; the 60 s default is
/// `ReadinessLimits`'.
fn grace_seconds(v: Input<'_>, p: &PathRef<'_>, cx: &mut ParseCtx) -> Parsed<Option<f64>> {
    let min = NumberCheck::Min {
        value: 1.0,
        inclusive: true,
    };
    optional(v, |v| number(v, p, cx, &[NumberCheck::Int, min]))
}

/// `z.number().int()` then `.nonnegative()` (`zero_allowed`) or `.positive()`.
fn integer_from_zero(
    v: Input<'_>,
    p: &PathRef<'_>,
    cx: &mut ParseCtx,
    zero_allowed: bool,
) -> Parsed<f64> {
    let min = NumberCheck::Min {
        value: 0.0,
        inclusive: zero_allowed,
    };
    number(v, p, cx, &[NumberCheck::Int, min])
}

/// `z.array(z.string())`
fn string_list(v: Input<'_>, p: &PathRef<'_>, cx: &mut ParseCtx) -> Parsed<Vec<String>> {
    array(v, p, cx, |v, p, cx| string(v, p, cx, &[]))
}

/// `z.array(z.string()).default([])`
fn defaulted_string_list(v: Input<'_>, p: &PathRef<'_>, cx: &mut ParseCtx) -> Parsed<Vec<String>> {
    with_default(v, || json!([]), |v| string_list(v, p, cx))
}

/// `z.record(z.string())`
fn string_map(v: Input<'_>, p: &PathRef<'_>, cx: &mut ParseCtx) -> Parsed<StringMap> {
    record(v, p, cx, any_string_key, |v, p, cx| string(v, p, cx, &[]))
}

/// The paperclip-server pod selector: each key then its value checked as a Kubernetes label,
/// then the whole map checked non-empty (only when no value had the wrong type).
fn pod_selector(v: Input<'_>, p: &PathRef<'_>, cx: &mut ParseCtx) -> Parsed<StringMap> {
    let labels = record(
        v,
        p,
        cx,
        |key, p, cx| {
            refine(
                Parsed::Valid(key.to_string()),
                p,
                cx,
                |k| is_valid_label_key(k),
                SELECTOR_KEY_INVALID,
            )
        },
        |v, p, cx| {
            let value = string(v, p, cx, &[]);
            refine(
                value,
                p,
                cx,
                |s| is_valid_label_value(s),
                SELECTOR_VALUE_INVALID,
            )
        },
    );
    refine(labels, p, cx, |labels| !labels.is_empty(), SELECTOR_EMPTY)
}

/// `z.object({requests: quantities.optional(), limits: quantities.optional()})` (strip).
fn default_resources(v: Input<'_>, p: &PathRef<'_>, cx: &mut ParseCtx) -> Parsed<DefaultResources> {
    let Some(mut object) = ObjectInput::new(v, p, cx) else {
        return Parsed::Aborted;
    };
    let requests = object.field("requests", cx, |v, p, cx| {
        optional(v, |v| quantities(v, p, cx))
    });
    let limits = object.field("limits", cx, |v, p, cx| {
        optional(v, |v| quantities(v, p, cx))
    });
    object.finish(cx, UnknownKeys::Strip, || {
        Some(DefaultResources {
            requests: requests?,
            limits: limits?,
        })
    })
}

/// `z.object({cpu: z.string(), memory: z.string()}).partial()` (strip).
fn quantities(v: Input<'_>, p: &PathRef<'_>, cx: &mut ParseCtx) -> Parsed<ResourceQuantities> {
    let Some(mut object) = ObjectInput::new(v, p, cx) else {
        return Parsed::Aborted;
    };
    let cpu = object.field("cpu", cx, |v, p, cx| optional(v, |v| string(v, p, cx, &[])));
    let memory = object.field("memory", cx, |v, p, cx| {
        optional(v, |v| string(v, p, cx, &[]))
    });
    object.finish(cx, UnknownKeys::Strip, || {
        Some(ResourceQuantities {
            cpu: cpu?,
            memory: memory?,
        })
    })
}

/// `z.array(adapterRegistryEntrySchema)`
fn adapter_registry(
    v: Input<'_>,
    p: &PathRef<'_>,
    cx: &mut ParseCtx,
) -> Parsed<Vec<AdapterRegistryEntry>> {
    array(v, p, cx, adapter_registry_entry)
}

/// One registry entry: a `.strict()` object, so undeclared keys are an issue (raised after the
/// declared fields' issues).
fn adapter_registry_entry(
    v: Input<'_>,
    p: &PathRef<'_>,
    cx: &mut ParseCtx,
) -> Parsed<AdapterRegistryEntry> {
    let Some(mut object) = ObjectInput::new(v, p, cx) else {
        return Parsed::Aborted;
    };
    // z.string().min(1)
    let adapter_type = object.field("adapterType", cx, |v, p, cx| {
        string(v, p, cx, &[StringCheck::Min(1)])
    });
    // z.boolean().default(true)
    let enabled = object.field("enabled", cx, |v, p, cx| {
        with_default(v, || json!(true), |v| boolean(v, p, cx))
    });
    // z.string().optional()
    let runtime_image = object.field("runtimeImage", cx, |v, p, cx| {
        optional(v, |v| string(v, p, cx, &[]))
    });
    // z.array(z.string()).optional() ×3
    let env_keys = object.field("envKeys", cx, |v, p, cx| {
        optional(v, |v| string_list(v, p, cx))
    });
    let allow_fqdns = object.field("allowFqdns", cx, |v, p, cx| {
        optional(v, |v| string_list(v, p, cx))
    });
    let probe_command = object.field("probeCommand", cx, |v, p, cx| {
        optional(v, |v| string_list(v, p, cx))
    });
    // z.record(z.string()).optional()
    let default_env = object.field("defaultEnv", cx, |v, p, cx| {
        optional(v, |v| string_map(v, p, cx))
    });
    object.finish(cx, UnknownKeys::Strict, || {
        Some(AdapterRegistryEntry {
            adapter_type: adapter_type?,
            enabled: enabled?,
            runtime_image: runtime_image?,
            env_keys: env_keys?,
            allow_fqdns: allow_fqdns?,
            probe_command: probe_command?,
            default_env: default_env?,
        })
    })
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::image_registry_invalid;
    use crate::config::{KubernetesConfig, Normalized, parse_config_for_hook};

    fn issues(config: Value) -> Vec<Value> {
        KubernetesConfig::parse(&config)
            .expect_err("an invalid config")
            .0
            .iter()
            .map(|issue| issue.to_json())
            .collect()
    }

    #[test]
    fn image_registry_with_or_without_a_scheme_is_kept_as_written() {
        for registry in [
            "ghcr.io/acme",
            "https://ghcr.io/acme",
            "http://registry.local:5000/team",
            "localhost:5000/x",
        ] {
            let config =
                KubernetesConfig::parse(&json!({"inCluster": true, "imageRegistry": registry}))
                    .unwrap();
            let normalized = serde_json::to_value(Normalized(&config)).unwrap();
            assert_eq!(normalized["imageRegistry"], registry);
        }
    }

    #[test]
    fn a_refused_image_registry_is_a_custom_issue_saying_why() {
        let found = issues(json!({"inCluster": true, "imageRegistry": "ftp://ghcr.io/acme"}));
        assert_eq!(
            found,
            [json!({
                "code": "custom",
                "message": "imageRegistry must be a registry host with an optional path, such as ghcr.io/acme or https://ghcr.io/acme: the scheme \"ftp\" is not https or http (or leave the scheme out)",
                "path": ["imageRegistry"],
            })]
        );
        // A wrong type is still zod's type issue; the auth refinement still follows a refusal.
        let found = issues(json!({"imageRegistry": "ghcr.io/Acme"}));
        assert_eq!(found.len(), 2);
        assert_eq!(
            found[0]["message"],
            image_registry_invalid(
                "the repository path component \"Acme\" has upper-case letters; repository paths are lower-case"
            )
        );
        let found = issues(json!({"inCluster": true, "imageRegistry": 5}));
        assert_eq!(found[0]["message"], "Expected string, received number");
    }

    #[test]
    fn the_hooks_zod_error_carries_the_message() {
        let err = parse_config_for_hook(
            &json!({"config": {"inCluster": true, "imageRegistry": "https://u:p@ghcr.io/acme"}}),
        )
        .unwrap_err();
        assert!(
            err.message.contains("\"message\": \"imageRegistry must be a registry host with an optional path, such as ghcr.io/acme or https://ghcr.io/acme: it holds a user name or password (`…@`); give registry credentials through imagePullSecrets instead\""),
            "{}",
            err.message
        );
        assert!(!err.message.contains("u:p@"));
    }

    #[test]
    fn runtime_images_are_kept_after_image_registry() {
        let config = KubernetesConfig::parse(&json!({
            "inCluster": true,
            "runtimeImages": {"codex_local": "r.example/codex:2", "aider_local": "r.example/aider:1"},
            "imageRegistry": "ghcr.io/acme",
        }))
        .unwrap();
        let text = serde_json::to_string(&Normalized(&config)).unwrap();
        assert!(
            text.contains(r#""imageRegistry":"ghcr.io/acme","runtimeImages":{"codex_local":"r.example/codex:2","aider_local":"r.example/aider:1"},"imageAllowList""#),
            "{text}"
        );
        let absent = KubernetesConfig::parse(&json!({"inCluster": true})).unwrap();
        let text = serde_json::to_string(&Normalized(&absent)).unwrap();
        assert!(!text.contains("runtimeImages"));
        let found = issues(json!({"inCluster": true, "runtimeImages": {"codex_local": 2}}));
        assert_eq!(
            found,
            [
                json!({"code": "invalid_type", "expected": "string", "received": "number",
                    "path": ["runtimeImages", "codex_local"], "message": "Expected string, received number"})
            ]
        );
    }

    #[test]
    fn an_adapter_type_outside_the_built_ins_needs_a_runtime_image() {
        let named = json!({"inCluster": true, "adapterType": "aider_local",
                           "runtimeImages": {"aider_local": "r.example/aider:1"}});
        assert_eq!(
            KubernetesConfig::parse(&named).unwrap().adapter_type,
            "aider_local"
        );
        for config in [
            json!({"inCluster": true, "adapterType": "aider_local"}),
            json!({"inCluster": true, "adapterType": "aider_local", "runtimeImages": {"goose_local": "r/g:1"}}),
            json!({"inCluster": true, "adapterType": "", "runtimeImages": {"": "r/g:1"}}),
            // A registry entry still does not widen the default (the original's rule).
            json!({"inCluster": true, "adapterType": "aider_local",
                   "adapters": [{"adapterType": "aider_local", "runtimeImage": "r/a:1"}]}),
        ] {
            let found = issues(config);
            assert_eq!(found.len(), 1);
            assert_eq!(
                found[0]["message"],
                "adapterType must be one of the known adapter types"
            );
        }
    }
}
