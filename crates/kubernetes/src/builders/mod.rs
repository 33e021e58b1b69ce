//! Pure builders: every object the provider creates in a cluster, and the names, labels, images
//! and env that go into them. Nothing here talks to a cluster; the orchestrators send what these
//! functions return.
//!
//! Manifests are `serde_json::Value`s whose keys are in the order the original emits them, so
//! they serialise byte-for-byte like the original's request bodies.

pub mod adapter_env;
pub mod cilium;
pub mod images;
pub mod job;
pub mod labels;
pub mod naming;
pub mod network_policy;
pub mod pod_template;
pub mod runtime_images;
pub mod sandbox_cr;
pub mod scoped_egress;
pub mod string_map;

pub use adapter_env::{build_adapter_env, build_adapter_env_from_process};
pub use cilium::{CiliumNetworkPolicyInput, build_cilium_network_policy_manifest};
pub use images::{
    ImagePullPolicy, glob_match, image_pull_policy_for, resolve_image, resolve_image_pull_policy,
};
pub use job::{JobManifestInput, build_job_manifest};
pub use labels::{LabelsInput, paperclip_labels};
pub use naming::{new_run_name, new_run_ulid_dns, run_secret_name, scoped_policy_name};
pub use network_policy::{
    NetworkPolicyInput, NetworkPolicyManifests, build_network_policy_manifests,
};
pub use pod_template::{ContainerResources, TENANT_SERVICE_ACCOUNT};
pub use runtime_images::{
    check_image_reference, configured_runtime_images, invalid_runtime_image_error, runtime_image,
};
pub use sandbox_cr::{
    HardStop, SandboxApiVersion, SandboxCrManifestInput, build_sandbox_cr_manifest,
};
pub use scoped_egress::{
    ScopedEgressPolicy, ScopedEgressPolicyInput, ScopedNetworkEgressGrant, ScopedPolicyBaseRules,
    ScopedPolicyKind, append_network_egress_deny_hint, build_scoped_network_egress_policy,
    parse_scoped_network_egress_grant,
};
