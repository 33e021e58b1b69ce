//! The provider config: the zod schema of the original (`types.ts` @ a8f79c9), its typed result
//! and its normalised JSON form.
//!
//! * [`KubernetesConfig::parse`] is `schema.safeParse`: the typed config, or zod's issues.
//! * [`Normalized`] writes the parsed object as the original returns it as
//!   `normalizedConfig`: schema key order, defaults filled in, unknown keys gone, optional keys
//!   that were not supplied absent.
//! * [`adapters`]: the adapter runtime defaults (built-in table, or the `adapters` registry of
//!   the config) that the schema checks `adapterType` against and acquire runs with.

pub mod adapters;
pub mod image_reference;
mod patterns;
mod schema;
pub mod zod;

use sandbox_core::{ErrorClass, ProviderError, ProviderResult};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};

pub use adapters::{AdapterRegistryEntry, StringMap};
use js_compat::number;
pub use patterns::{is_valid_label_key, is_valid_label_value};
pub use schema::{image_registry_invalid, parse_adapter_registry};
pub use zod::{Issue, ZodIssues};

/// How egress to FQDNs is enforced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EgressMode {
    /// CiliumNetworkPolicy with FQDN rules.
    Cilium,
    /// Kubernetes NetworkPolicy, which is CIDR-only.
    Standard,
}

/// `kubernetesProviderConfigSchema.parse(params.config)` as the lease and execute hooks call
/// it: a failure rejects with the `ZodError`, whose message is the pretty-printed issue list.
pub fn parse_config_for_hook(params: &Value) -> ProviderResult<KubernetesConfig> {
    KubernetesConfig::parse_input(params.get("config")).map_err(zod_error)
}

/// The `ZodError` a failed `schema.parse` throws.
pub fn zod_error(issues: ZodIssues) -> ProviderError {
    ProviderError::new(issues.error_message()).with_class(ErrorClass::ZodError)
}

impl EgressMode {
    /// The schema's enum options, in declaration order.
    pub const OPTIONS: [&'static str; 2] = ["cilium", "standard"];

    pub fn as_str(self) -> &'static str {
        match self {
            EgressMode::Cilium => "cilium",
            EgressMode::Standard => "standard",
        }
    }
}

/// Which workload kind a lease runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// The agent-sandbox `Sandbox` custom resource (long-lived pod, exec-able).
    SandboxCr,
    /// A batch/v1 Job (one-shot, no exec).
    Job,
}

impl Backend {
    /// The schema's enum options, in declaration order.
    pub const OPTIONS: [&'static str; 2] = ["sandbox-cr", "job"];

    pub fn as_str(self) -> &'static str {
        match self {
            Backend::SandboxCr => "sandbox-cr",
            Backend::Job => "job",
        }
    }
}

/// `cpu`/`memory` quantities, passed through unvalidated.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResourceQuantities {
    pub cpu: Option<String>,
    pub memory: Option<String>,
}

impl ResourceQuantities {
    pub fn to_json(&self) -> Value {
        let mut out = Map::new();
        if let Some(cpu) = &self.cpu {
            out.insert("cpu".into(), cpu.clone().into());
        }
        if let Some(memory) = &self.memory {
            out.insert("memory".into(), memory.clone().into());
        }
        Value::Object(out)
    }
}

/// `defaultResources`: container requests and limits.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DefaultResources {
    pub requests: Option<ResourceQuantities>,
    pub limits: Option<ResourceQuantities>,
}

impl DefaultResources {
    pub fn to_json(&self) -> Value {
        let mut out = Map::new();
        if let Some(requests) = &self.requests {
            out.insert("requests".into(), requests.to_json());
        }
        if let Some(limits) = &self.limits {
            out.insert("limits".into(), limits.to_json());
        }
        Value::Object(out)
    }
}

/// The parsed provider config (zod's output type). Fields are in schema order.
#[derive(Debug, Clone, PartialEq)]
pub struct KubernetesConfig {
    pub in_cluster: bool,
    /// Inline kubeconfig YAML. Any string passes the schema (a blank one fails later, when the
    /// cluster client is built).
    pub kubeconfig: Option<String>,
    pub namespace_prefix: String,
    pub company_slug: Option<String>,
    /// As written (a scheme kept): the image references get [`image_reference::parse_image_registry`]'s
    /// prefix of it, without the scheme.
    pub image_registry: Option<String>,
    /// `runtimeImages` (an addition, issue #37): adapter type to a full image reference, in the
    /// order JS lists the keys. Merged over the table in force; `imageRegistry` does not rewrite
    /// these.
    pub runtime_images: Option<StringMap>,
    pub image_allow_list: Vec<String>,
    pub image_pull_secrets: Vec<String>,
    pub egress_allow_fqdns: Vec<String>,
    pub egress_allow_cidrs: Vec<String>,
    pub egress_mode: EgressMode,
    pub paperclip_server_pod_selector: StringMap,
    pub default_resources: Option<DefaultResources>,
    pub runtime_class_name: Option<String>,
    pub service_account_annotations: StringMap,
    /// A JS number: validated integral and `>= 0`, not bounded above.
    pub job_ttl_seconds_after_finished: f64,
    /// A JS number: validated integral and `> 0`, not bounded above.
    pub pod_activity_deadline_sec: f64,
    /// `unschedulableGraceSec` (an addition, issue #37): how long the Sandbox ready-wait lets
    /// the pod stay unschedulable (60 s when absent). A JS number: validated integral and
    /// `>= 1`.
    pub unschedulable_grace_sec: Option<f64>,
    pub adapter_type: String,
    pub adapters: Option<Vec<AdapterRegistryEntry>>,
    pub backend: Backend,
}

impl KubernetesConfig {
    /// `kubernetesProviderConfigSchema.safeParse(raw)`.
    pub fn parse(raw: &Value) -> Result<KubernetesConfig, ZodIssues> {
        schema::parse_provider_config(Some(raw))
    }

    /// [`Self::parse`] for a value that may be `undefined` (a hook called without `config`).
    pub fn parse_input(raw: Option<&Value>) -> Result<KubernetesConfig, ZodIssues> {
        schema::parse_provider_config(raw)
    }
}

/// `normalizedConfig` as the original returns it: schema key order, defaults filled in,
/// unknown keys gone, optional keys that were not supplied absent. Written from the typed config
/// (no `Value` tree built only to be written out).
pub struct Normalized<'a>(pub &'a KubernetesConfig);

impl Serialize for Normalized<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let config = self.0;
        let mut out = serializer.serialize_map(None)?;
        out.serialize_entry("inCluster", &config.in_cluster)?;
        if let Some(kubeconfig) = &config.kubeconfig {
            out.serialize_entry("kubeconfig", kubeconfig)?;
        }
        out.serialize_entry("namespacePrefix", &config.namespace_prefix)?;
        if let Some(slug) = &config.company_slug {
            out.serialize_entry("companySlug", slug)?;
        }
        if let Some(registry) = &config.image_registry {
            out.serialize_entry("imageRegistry", registry)?;
        }
        if let Some(images) = &config.runtime_images {
            out.serialize_entry("runtimeImages", &Entries(images))?;
        }
        out.serialize_entry("imageAllowList", &config.image_allow_list)?;
        out.serialize_entry("imagePullSecrets", &config.image_pull_secrets)?;
        out.serialize_entry("egressAllowFqdns", &config.egress_allow_fqdns)?;
        out.serialize_entry("egressAllowCidrs", &config.egress_allow_cidrs)?;
        out.serialize_entry("egressMode", config.egress_mode.as_str())?;
        out.serialize_entry(
            "paperclipServerPodSelector",
            &Entries(&config.paperclip_server_pod_selector),
        )?;
        if let Some(resources) = &config.default_resources {
            out.serialize_entry("defaultResources", &resources.to_json())?;
        }
        if let Some(class) = &config.runtime_class_name {
            out.serialize_entry("runtimeClassName", class)?;
        }
        out.serialize_entry(
            "serviceAccountAnnotations",
            &Entries(&config.service_account_annotations),
        )?;
        out.serialize_entry(
            "jobTtlSecondsAfterFinished",
            &number::json_value(config.job_ttl_seconds_after_finished),
        )?;
        out.serialize_entry(
            "podActivityDeadlineSec",
            &number::json_value(config.pod_activity_deadline_sec),
        )?;
        if let Some(grace) = config.unschedulable_grace_sec {
            out.serialize_entry("unschedulableGraceSec", &number::json_value(grace))?;
        }
        out.serialize_entry("adapterType", &config.adapter_type)?;
        if let Some(adapters) = &config.adapters {
            let adapters: Value = adapters.iter().map(AdapterRegistryEntry::to_json).collect();
            out.serialize_entry("adapters", &adapters)?;
        }
        out.serialize_entry("backend", config.backend.as_str())?;
        out.end()
    }
}

/// A string map as a JSON object, in its order.
struct Entries<'a>(&'a StringMap);

impl Serialize for Entries<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().map(|(key, value)| (key, value)))
    }
}
