//! The error catalogue names the hooks that raise each Kubernetes message by `Hook` value: every one
//! of them must be a hook of this provider's table (the check: `sandbox_core::hook_table`).

use error_catalog::{Provider as Catalogued, provider_entries};
use sandbox_core::Provider;
use sandbox_core::hook_table::assert_named_hooks_in_table;

#[test]
fn the_catalogue_names_only_hooks_of_the_table() {
    let named = provider_entries(Catalogued::Kubernetes)
        .iter()
        .flat_map(|entry| {
            let hooks = entry.hooks.iter().filter_map(|raiser| raiser.hook());
            hooks.map(|hook| (entry.code, hook))
        });
    assert_named_hooks_in_table(
        "Kubernetes",
        &kubernetes::KubernetesProvider::new().hooks(),
        named,
    );
}
