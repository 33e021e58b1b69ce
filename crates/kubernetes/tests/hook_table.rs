//! The error catalogue names the hooks that raise each Kubernetes message by `Hook` value: every one
//! of them must be a hook of this provider's table.

use error_catalog::{Provider as Catalogued, provider_entries};
use sandbox_core::Provider;

#[test]
fn the_catalogue_names_only_hooks_of_the_table() {
    let hooks = kubernetes::KubernetesProvider::new().hooks();
    for entry in provider_entries(Catalogued::Kubernetes) {
        for raiser in entry.hooks {
            if let Some(hook) = raiser.hook() {
                assert!(
                    hooks.contains(&hook),
                    "{}: {hook} is not a hook of the Kubernetes provider",
                    entry.code
                );
            }
        }
    }
}
