//! The troubleshooting table of `docs/operators.md`, generated from the Kubernetes entries, so
//! that the operator's guide covers every catalogued message and never disagrees with
//! `docs/errors.md` (a test, `tests/operators.rs`, keeps the marked section of the guide equal
//! to [`render_operator_troubleshooting`]).
//!
//! The entries are grouped by where an operator meets them (the kind of message first, then the
//! first hook that raises it), in catalogue order within a group; each row gives the message, a
//! link to its full entry, what it means with its usual causes, and what to do.

use std::fmt::Write;

use sandbox_core::Hook;

use crate::{Entry, Kind, Provider, provider_entries};

/// The line that opens the generated section in `docs/operators.md`.
pub const OPERATOR_SECTION_START: &str = "<!-- troubleshooting:start (generated from crates/error-catalog; do not edit by hand. Regenerate: UPDATE_DOCS=1 cargo test -p error-catalog --test operators) -->";
/// The line that closes it.
pub const OPERATOR_SECTION_END: &str = "<!-- troubleshooting:end -->";

/// Where an operator meets a message: the groups of the table, in the order they are shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Group {
    Config,
    Cluster,
    Acquire,
    Execute,
    Sync,
    SyncDiagnostic,
    Resume,
    Teardown,
    Login,
    Warning,
    Other,
    NotShown,
}

impl Group {
    const ALL: [Group; 12] = [
        Group::Config,
        Group::Cluster,
        Group::Acquire,
        Group::Execute,
        Group::Sync,
        Group::SyncDiagnostic,
        Group::Resume,
        Group::Teardown,
        Group::Login,
        Group::Warning,
        Group::Other,
        Group::NotShown,
    ];

    fn title(self) -> &'static str {
        match self {
            Group::Config => "Configuration (validation, and every hook that reads the config)",
            Group::Cluster => "Probe, health, credentials and the API server",
            Group::Acquire => "Acquiring a lease",
            Group::Execute => "Running a command, and waiting for the sandbox pod",
            Group::Sync => "File sync",
            Group::SyncDiagnostic => {
                "In-pod sync diagnostics (the word after the colon of a sync failure)"
            }
            Group::Resume => "Resuming a lease (the reason a lease is not resumed)",
            Group::Teardown => "Releasing and destroying a lease",
            Group::Login => "Login terminal",
            Group::Warning => "Warnings (the run goes on)",
            Group::Other => "Other",
            Group::NotShown => {
                "Not shown by the hooks (library texts kept from the original; listed so that every message is here)"
            }
        }
    }

    fn of(entry: &Entry) -> Group {
        match entry.kind {
            Kind::Internal => return Group::NotShown,
            Kind::Warning => return Group::Warning,
            Kind::Diagnostic => return Group::SyncDiagnostic,
            Kind::Validation => return Group::Config,
            Kind::Thrown | Kind::Returned | Kind::Session => {}
        }
        match entry.hooks.iter().find_map(|raiser| raiser.hook()) {
            Some(Hook::ValidateConfig) => Group::Config,
            Some(Hook::Health | Hook::Probe) => Group::Cluster,
            Some(Hook::AcquireLease) => Group::Acquire,
            Some(Hook::Execute) => Group::Execute,
            Some(Hook::SyncIn | Hook::SyncOut) => Group::Sync,
            Some(Hook::ResumeLease) => Group::Resume,
            Some(Hook::ReleaseLease | Hook::DestroyLease) => Group::Teardown,
            Some(
                Hook::LoginPtyOpen | Hook::LoginPtyInput | Hook::LoginPtyStop | Hook::LoginPtyClose,
            ) => Group::Login,
            _ => Group::Other,
        }
    }
}

/// The generated section of `docs/operators.md`, from [`OPERATOR_SECTION_START`] to
/// [`OPERATOR_SECTION_END`] (both lines included, each followed by a newline). Deterministic.
pub fn render_operator_troubleshooting() -> String {
    let entries = provider_entries(Provider::Kubernetes);
    let mut out = String::new();
    let _ = writeln!(out, "{OPERATOR_SECTION_START}");
    let _ = writeln!(
        out,
        "\n{} messages. Each links to its full entry in [errors.md](errors.md).",
        entries.len()
    );
    for group in Group::ALL {
        let rows: Vec<&Entry> = entries.iter().filter(|e| Group::of(e) == group).collect();
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(out, "\n#### {}\n", group.title());
        out.push_str("| Message | What it means | What to do |\n|---|---|---|\n");
        for e in rows {
            let _ = writeln!(
                out,
                "| {}<br>[{}](errors.md#{}) | {} | {} |",
                message_cell(e.template),
                e.code,
                e.code.to_ascii_lowercase(),
                meaning_cell(e),
                cell(e.fix)
            );
        }
    }
    let _ = writeln!(out, "\n{OPERATOR_SECTION_END}");
    out
}

/// The meaning, then its usual causes.
fn meaning_cell(e: &Entry) -> String {
    let mut text = cell(e.meaning);
    if !e.causes.is_empty() {
        let causes: Vec<String> = e.causes.iter().map(|c| cell(c)).collect();
        let _ = write!(text, "<br>*Usually:* {}", causes.join(" · "));
    }
    text
}

/// Prose in a table cell: pipes escaped, line breaks as `<br>`.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', "<br>")
}

/// A message template as inline code in a table cell. A template may hold line breaks (written
/// as `\n` in the contract) and backticks; both must survive a one-line cell.
fn message_cell(template: &str) -> String {
    let one_line = template.replace('\n', "\\n").replace('|', "\\|");
    let fence = "`".repeat(longest_backtick_run(&one_line) + 1);
    if fence.len() > 1 || one_line.starts_with('`') || one_line.ends_with('`') {
        format!("{fence} {one_line} {fence}")
    } else {
        format!("{fence}{one_line}{fence}")
    }
}

fn longest_backtick_run(text: &str) -> usize {
    text.split(|c| c != '`').map(str::len).max().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kubernetes_entry_has_one_row() {
        let table = render_operator_troubleshooting();
        for e in provider_entries(Provider::Kubernetes) {
            let link = format!("[{}](errors.md#", e.code);
            assert_eq!(table.matches(&link).count(), 1, "{}", e.code);
        }
        assert!(!table.contains("CREATEOS_"));
    }

    #[test]
    fn cells_survive_pipes_backticks_and_line_breaks() {
        assert_eq!(message_cell("a | b"), "`a \\| b`");
        assert_eq!(message_cell("one `x` two"), "`` one `x` two ``");
        assert_eq!(message_cell("a\nb"), "`a\\nb`");
        assert_eq!(cell("x | y\nz"), "x \\| y<br>z");
    }

    #[test]
    fn rows_are_one_line_each() {
        let table = render_operator_troubleshooting();
        for line in table.lines().filter(|l| l.starts_with("| `")) {
            assert_eq!(line.matches("](errors.md#").count(), 1, "{line}");
        }
    }
}
