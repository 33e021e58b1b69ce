//! The troubleshooting table of `docs/operators.md` is generated from the catalogue and must not
//! go stale: the section between its markers is exactly [`render_operator_troubleshooting`].
//! Regenerate it with `UPDATE_DOCS=1 cargo test -p error-catalog --test operators` (the prose
//! around the markers is the guide's own and is left as it is).

use std::path::PathBuf;

use error_catalog::{
    OPERATOR_SECTION_END, OPERATOR_SECTION_START, Provider, provider_entries,
    render_operator_troubleshooting,
};

fn guide_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/operators.md")
}

/// The guide split around its generated section: (before, section, after).
fn split(guide: &str) -> (&str, &str, &str) {
    let start = guide
        .find(OPERATOR_SECTION_START)
        .expect("docs/operators.md has no troubleshooting:start marker");
    let end_marker = guide[start..]
        .find(OPERATOR_SECTION_END)
        .map(|i| start + i)
        .expect("docs/operators.md has no troubleshooting:end marker after the start");
    let mut end = end_marker + OPERATOR_SECTION_END.len();
    if guide[end..].starts_with('\n') {
        end += 1;
    }
    (&guide[..start], &guide[start..end], &guide[end..])
}

#[test]
fn the_guides_troubleshooting_table_is_up_to_date() {
    let path = guide_path();
    let guide = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let (before, section, after) = split(&guide);
    let expected = render_operator_troubleshooting();
    if std::env::var_os("UPDATE_DOCS").is_some_and(|v| !v.is_empty() && v != "0") {
        if section != expected {
            std::fs::write(&path, format!("{before}{expected}{after}"))
                .expect("write docs/operators.md");
        }
        return;
    }
    assert!(
        section == expected,
        "the troubleshooting table of docs/operators.md is stale; regenerate it with \
         `UPDATE_DOCS=1 cargo test -p error-catalog --test operators`"
    );
}

#[test]
fn the_guide_links_every_kubernetes_code_once_in_its_table() {
    let table = render_operator_troubleshooting();
    for e in provider_entries(Provider::Kubernetes) {
        let link = format!("[{}](errors.md#{})", e.code, e.code.to_ascii_lowercase());
        assert_eq!(table.matches(&link).count(), 1, "{}", e.code);
    }
}
