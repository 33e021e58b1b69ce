//! The shared half of the providers' `tests/hook_table.rs`: the error catalogue names the hooks
//! that raise each message by [`Hook`] value, and every hook it names for a provider's messages
//! must be a hook of that provider's table. Each provider's test hands over its table and the
//! catalogue's names (the catalogue crate depends on this one, so it cannot be read from here).

use crate::Hook;

/// Fails the test at the first `(code, hook)` whose hook is not in `table`, naming both.
pub fn assert_named_hooks_in_table<'a>(
    provider: &str,
    table: &[Hook],
    named: impl IntoIterator<Item = (&'a str, Hook)>,
) {
    for (code, hook) in named {
        assert!(
            table.contains(&hook),
            "{code}: {hook} is not a hook of the {provider} provider"
        );
    }
}
