//! Warnings for `egressMode: standard`, which cannot enforce FQDN rules
//! (validateConfig and acquire report them).
//!
//! The destination list is the adapter's FQDNs followed by the config's `egressAllowFqdns`.
//! validateConfig returns its warning (using the config's adapter type); acquire prints its own
//! wording with `console.warn` (using the run's effective adapter type).

use crate::config::{EgressMode, KubernetesConfig};

/// The FQDNs a lease must reach, when standard mode has to warn about them.
fn fqdns_needing_warning(config: &KubernetesConfig, adapter_fqdns: &[String]) -> Option<String> {
    if config.egress_mode != EgressMode::Standard {
        return None;
    }
    let total: Vec<&str> = adapter_fqdns
        .iter()
        .chain(&config.egress_allow_fqdns)
        .map(String::as_str)
        .collect();
    (!total.is_empty()).then(|| total.join(", "))
}

/// The warning `onEnvironmentValidateConfig` returns, if any.
pub fn validate_config_warning(
    config: &KubernetesConfig,
    adapter_fqdns: &[String],
) -> Option<String> {
    let fqdns = fqdns_needing_warning(config, adapter_fqdns)?;
    Some(if config.egress_allow_cidrs.is_empty() {
        format!(
            r#"egressMode=standard cannot enforce FQDN-based egress rules (Kubernetes NetworkPolicy is CIDR-only). To keep the configured FQDNs reachable ({fqdns}) without operator intervention, the plugin will allow public IPv4 egress on TCP 80/443 with private/link-local/loopback/multicast ranges excluded. This is broader than exact FQDN allow-listing — switch egressMode to "cilium" (requires Cilium CNI) for precise enforcement, or set egressAllowCidrs explicitly to override the fallback."#
        )
    } else {
        format!(
            "egressMode=standard cannot enforce FQDN-based egress rules. The following FQDNs are reachable only via the operator-supplied egressAllowCidrs: {fqdns}. Switch egressMode to \"cilium\" (requires Cilium CNI) for exact FQDN allow-listing."
        )
    })
}

/// The line `onEnvironmentAcquireLease` writes with `console.warn`, if any.
pub fn acquire_console_warning(
    config: &KubernetesConfig,
    adapter_fqdns: &[String],
) -> Option<String> {
    let fqdns = fqdns_needing_warning(config, adapter_fqdns)?;
    Some(if config.egress_allow_cidrs.is_empty() {
        format!(
            "[plugin-kubernetes] egressMode=standard cannot enforce FQDN-based egress rules; falling back to public-IPv4 (TCP 80/443) with private/link-local ranges excluded so the configured FQDNs ({fqdns}) remain reachable. Switch egressMode to \"cilium\" for exact FQDN allow-listing."
        )
    } else {
        format!(
            "[plugin-kubernetes] egressMode=standard cannot enforce FQDN-based egress rules. The following FQDNs are reachable only via operator-supplied egressAllowCidrs: {fqdns}. Switch egressMode to \"cilium\" for exact FQDN allow-listing."
        )
    })
}
