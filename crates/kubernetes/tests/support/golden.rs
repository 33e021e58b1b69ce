//! Running golden vectors grouped by the function they test: each group's pass count on
//! stderr, then every mismatch listed. For `golden_builders` and `golden_cluster`.

use std::collections::BTreeMap;
use std::fmt::Display;

use sandbox_core::golden::{Case, mismatches};
use serde_json::Value;

/// Runs every group of cases, reports each group's pass count, and panics with every mismatch
/// listed after running all of them.
// Test support: the per-function pass counts are the test's report (tests may print).
#[allow(clippy::print_stderr)]
pub fn assert_groups_pass<K: Display>(
    groups: &BTreeMap<K, Vec<Case>>,
    mut run: impl FnMut(&Case) -> Value,
) {
    let mut failures = Vec::new();
    for (function, cases) in groups {
        let failed = mismatches(cases, &mut run);
        eprintln!(
            "{function}: {}/{} pass",
            cases.len() - failed.len(),
            cases.len()
        );
        failures.extend(failed);
    }
    assert!(
        failures.is_empty(),
        "{} cases differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The cluster-facing functions of `kubernetes/builders.json`, which `golden_cluster.rs` runs
/// against the scripted cluster; `golden_builders.rs` runs the file's other (pure) functions.
pub const CLUSTER_FUNCTIONS: &[&str] = &[
    "createPerRunSecret",
    "ensureTenant",
    "createScopedNetworkEgressPolicy",
    "createScopedNetworkEgressPolicyOrReleaseWorkload",
    "getJobStatus",
    "findPodForJob",
    "getSandboxCrStatus",
    "findPodForSandbox",
    "waitForSandboxReady",
    "checkLeaseResumable",
    "destroyLeaseResources",
];
