//! Properties of every derived object name: each is a name Kubernetes accepts (a DNS-1123 label
//! where the object kind requires one, a DNS-1123 subdomain otherwise), the same input always
//! gives the same name, and inputs the original tells apart get different names.

use kubernetes::builders::naming::{
    MAX_OBJECT_NAME_LENGTH, ULID_RANDOM_CHARS, new_run_name, run_secret_name, scoped_policy_name,
};
use kubernetes::builders::scoped_egress::{
    ADAPTER_EGRESS_POLICY_SUFFIX, TASK_EGRESS_POLICY_SUFFIX,
};
use kubernetes::{KubernetesConfig, derive_company_slug, derive_tenant_namespace};
use proptest::prelude::*;
use serde_json::json;

/// RFC 1123 label as Kubernetes checks it: at most 63 of `[a-z0-9-]`, alphanumeric at both ends.
fn is_dns1123_label(name: &str) -> bool {
    let bytes = name.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 63
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && bytes[0].is_ascii_alphanumeric()
        && bytes[bytes.len() - 1].is_ascii_alphanumeric()
}

/// RFC 1123 subdomain as Kubernetes checks it: at most 253 characters, dot-separated parts each
/// of `[a-z0-9-]` with alphanumeric ends (parts are not limited to 63 here).
fn is_dns1123_subdomain(name: &str) -> bool {
    name.len() <= MAX_OBJECT_NAME_LENGTH
        && name.split('.').all(|part| {
            let bytes = part.as_bytes();
            !bytes.is_empty()
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
                && bytes[0].is_ascii_alphanumeric()
                && bytes[bytes.len() - 1].is_ascii_alphanumeric()
        })
}

/// Wall-clock times a run can be created at (up to the year 10889, below 32^10 ms).
fn clock() -> impl Strategy<Value = f64> {
    (0u64..(1u64 << 48)).prop_map(|ms| ms as f64)
}

fn random_digits() -> impl Strategy<Value = Vec<u32>> {
    proptest::collection::vec(0u32..32, ULID_RANDOM_CHARS)
}

fn run_name(now_ms: f64, digits: &[u32]) -> String {
    let mut digits = digits.iter().copied();
    new_run_name(now_ms, || digits.next().expect("16 digits"))
}

/// A workload name as Kubernetes allows one (a subdomain without dots), of any length the API
/// server takes.
fn workload_name() -> impl Strategy<Value = String> {
    "[a-z0-9]([a-z0-9-]{0,300}[a-z0-9])?"
}

fn default_config() -> KubernetesConfig {
    KubernetesConfig::parse(&json!({"inCluster": true})).expect("valid config")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn run_and_secret_names_are_dns_labels(now_ms in clock(), digits in random_digits()) {
        let run = run_name(now_ms, &digits);
        prop_assert_eq!(run.len(), 29);
        prop_assert!(is_dns1123_label(&run), "{}", run);
        prop_assert!(is_dns1123_label(&run_secret_name(&run)));
        for suffix in [TASK_EGRESS_POLICY_SUFFIX, ADAPTER_EGRESS_POLICY_SUFFIX] {
            let policy = scoped_policy_name(&run, suffix);
            prop_assert_eq!(&policy, &format!("{run}{suffix}"), "run names are never capped");
            prop_assert!(is_dns1123_label(&policy));
        }
    }

    #[test]
    fn run_names_are_stable(now_ms in clock(), digits in random_digits()) {
        prop_assert_eq!(run_name(now_ms, &digits), run_name(now_ms, &digits));
    }

    #[test]
    fn run_names_are_distinct(a in (clock(), random_digits()), b in (clock(), random_digits())) {
        prop_assume!(a != b);
        prop_assert_ne!(run_name(a.0, &a.1), run_name(b.0, &b.1));
    }

    #[test]
    fn run_names_sort_by_creation_time(a in clock(), b in clock(), digits in random_digits()) {
        prop_assume!(a < b);
        prop_assert!(run_name(a, &digits) < run_name(b, &digits));
    }

    #[test]
    fn scoped_policy_names_are_capped_subdomains(workload in workload_name()) {
        for suffix in [TASK_EGRESS_POLICY_SUFFIX, ADAPTER_EGRESS_POLICY_SUFFIX] {
            let name = scoped_policy_name(&workload, suffix);
            prop_assert!(is_dns1123_subdomain(&name), "{}", name);
            prop_assert!(name.ends_with(suffix));
            prop_assert_eq!(&name, &scoped_policy_name(&workload, suffix));
            // The tail, where a run name's random part sits, always survives.
            let tail = &workload[workload.len().saturating_sub(25)..];
            prop_assert!(name[..name.len() - suffix.len()].ends_with(tail));
        }
    }

    #[test]
    fn scoped_policy_names_tell_workloads_apart(a in workload_name(), b in workload_name()) {
        // The cap keeps the head and the last 25 characters, so names that differ there differ.
        let cut = |w: &str| if w.len() + TASK_EGRESS_POLICY_SUFFIX.len() <= MAX_OBJECT_NAME_LENGTH {
            w.to_string()
        } else {
            format!("{}|{}", &w[..MAX_OBJECT_NAME_LENGTH - TASK_EGRESS_POLICY_SUFFIX.len() - 26], &w[w.len() - 25..])
        };
        prop_assume!(cut(&a) != cut(&b));
        prop_assert_ne!(scoped_policy_name(&a, TASK_EGRESS_POLICY_SUFFIX), scoped_policy_name(&b, TASK_EGRESS_POLICY_SUFFIX));
    }

    #[test]
    fn tenant_namespaces_are_dns_labels(company_id in any::<String>()) {
        let slug = derive_company_slug(&company_id);
        prop_assert!(is_dns1123_label(&slug), "{:?} -> {:?}", company_id, slug);
        let namespace = derive_tenant_namespace(&default_config(), &company_id);
        prop_assert!(is_dns1123_label(&namespace), "{:?} -> {:?}", company_id, namespace);
        prop_assert_eq!(&namespace, &derive_tenant_namespace(&default_config(), &company_id));
    }

    #[test]
    fn long_company_ids_are_dns_labels(company_id in "[A-Za-z0-9 _.-]{40,200}") {
        let namespace = derive_tenant_namespace(&default_config(), &company_id);
        prop_assert!(is_dns1123_label(&namespace), "{:?} -> {:?}", company_id, namespace);
    }

    #[test]
    fn distinct_company_ids_get_distinct_namespaces(a in "[a-z0-9]([a-z0-9-]{0,120}[a-z0-9])?", b in "[a-z0-9]([a-z0-9-]{0,120}[a-z0-9])?") {
        // Ids already in slug form are told apart: short ones verbatim, long ones by a hash of the
        // whole id (the original conflates only ids that differ in case or in punctuation runs).
        prop_assume!(a != b);
        prop_assert_ne!(derive_tenant_namespace(&default_config(), &a), derive_tenant_namespace(&default_config(), &b));
    }

    #[test]
    fn long_ids_sharing_a_prefix_are_told_apart(prefix in "[a-z0-9]{60}", a in "[a-z0-9]{1,20}", b in "[a-z0-9]{1,20}") {
        prop_assume!(a != b);
        let (a, b) = (format!("{prefix}{a}"), format!("{prefix}{b}"));
        prop_assert_ne!(derive_company_slug(&a), derive_company_slug(&b));
    }

    #[test]
    fn uuids_are_kept_whole(uuid in "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}") {
        prop_assert_eq!(derive_tenant_namespace(&default_config(), &uuid), format!("paperclip-{uuid}"));
    }
}
