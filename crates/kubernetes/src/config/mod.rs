//! The provider config: the zod schema of the original (`types.ts` @ a8f79c9), its typed result
//! and its normalised JSON form.
//!
//! * [`KubernetesConfig::parse`] is `schema.safeParse`: the typed config, or zod's issues.
//! * [`KubernetesConfig::into_json`] is the parsed object as the original returns it as
//!   `normalizedConfig`: schema key order, defaults filled in, unknown keys gone, optional keys
//!   that were not supplied absent.
//! * [`adapters`]: the adapter runtime defaults (built-in table, or the `adapters` registry of
//!   the config) that the schema checks `adapterType` against and acquire runs with.

pub mod adapters;
mod patterns;
mod schema;
pub mod zod;

use serde_json::{Map, Value};

use adapters::string_map_json;
pub use adapters::{AdapterRegistryEntry, StringMap};
use js_compat::number;
pub use patterns::{is_valid_label_key, is_valid_label_value};
pub use schema::parse_adapter_registry;
pub use zod::{Issue, ZodIssues};

/// How egress to FQDNs is enforced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EgressMode {
    /// CiliumNetworkPolicy with FQDN rules.
    Cilium,
    /// Kubernetes NetworkPolicy, which is CIDR-only.
    Standard,
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
    pub image_registry: Option<String>,
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

    /// The normalised config (`normalizedConfig`), keys in schema order. Consumes the config:
    /// validation answers with it and needs it no more, so its strings (the kubeconfig among
    /// them, often kilobytes) move into the JSON instead of being copied.
    pub fn into_json(self) -> Value {
        let strings = |list: Vec<String>| list.into_iter().map(Value::String).collect::<Value>();
        // Room for every key up front: growing the map rehashes it at 4, 8 and 16 entries.
        let mut out = Map::with_capacity(Self::NORMALIZED_KEYS);
        out.insert("inCluster".into(), self.in_cluster.into());
        if let Some(kubeconfig) = self.kubeconfig {
            out.insert("kubeconfig".into(), kubeconfig.into());
        }
        out.insert("namespacePrefix".into(), self.namespace_prefix.into());
        if let Some(slug) = self.company_slug {
            out.insert("companySlug".into(), slug.into());
        }
        if let Some(registry) = self.image_registry {
            out.insert("imageRegistry".into(), registry.into());
        }
        out.insert("imageAllowList".into(), strings(self.image_allow_list));
        out.insert("imagePullSecrets".into(), strings(self.image_pull_secrets));
        out.insert("egressAllowFqdns".into(), strings(self.egress_allow_fqdns));
        out.insert("egressAllowCidrs".into(), strings(self.egress_allow_cidrs));
        out.insert("egressMode".into(), self.egress_mode.as_str().into());
        out.insert(
            "paperclipServerPodSelector".into(),
            string_map_json(&self.paperclip_server_pod_selector),
        );
        if let Some(resources) = &self.default_resources {
            out.insert("defaultResources".into(), resources.to_json());
        }
        if let Some(class) = self.runtime_class_name {
            out.insert("runtimeClassName".into(), class.into());
        }
        out.insert(
            "serviceAccountAnnotations".into(),
            string_map_json(&self.service_account_annotations),
        );
        out.insert(
            "jobTtlSecondsAfterFinished".into(),
            number::json_value(self.job_ttl_seconds_after_finished),
        );
        out.insert(
            "podActivityDeadlineSec".into(),
            number::json_value(self.pod_activity_deadline_sec),
        );
        out.insert("adapterType".into(), self.adapter_type.into());
        if let Some(adapters) = &self.adapters {
            out.insert(
                "adapters".into(),
                adapters.iter().map(AdapterRegistryEntry::to_json).collect(),
            );
        }
        out.insert("backend".into(), self.backend.as_str().into());
        Value::Object(out)
    }

    /// How many keys `normalizedConfig` can have: every field of the schema.
    const NORMALIZED_KEYS: usize = 20;
}
