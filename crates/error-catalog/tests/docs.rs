//! docs/errors.md is generated from the catalogue and must not go stale.
//! Regenerate with `UPDATE_DOCS=1 cargo test -p error-catalog --test docs`.

use std::path::PathBuf;

use error_catalog::{entries, render_markdown};

fn doc_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/errors.md")
}

#[test]
fn docs_errors_md_is_up_to_date() {
    let expected = render_markdown();
    let path = doc_path();
    if std::env::var_os("UPDATE_DOCS").is_some_and(|v| !v.is_empty() && v != "0") {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("create docs/");
        std::fs::write(&path, &expected).expect("write docs/errors.md");
        return;
    }
    let actual = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        actual == expected,
        "docs/errors.md is stale or missing; regenerate it with \
         `UPDATE_DOCS=1 cargo test -p error-catalog --test docs`"
    );
}

#[test]
fn the_doc_has_a_section_per_entry() {
    let doc = render_markdown();
    for e in entries() {
        assert!(
            doc.contains(&format!("\n### {}\n", e.code)),
            "{} has no section",
            e.code
        );
    }
}
