//! The crate's shape (issue #31 item 4): its modules form a tree in the layering `lib.rs`
//! documents, and no file or function has grown past the size a reader can hold at once.

use std::path::PathBuf;

use sandbox_core::module_graph::{self as shape, MAX_FILE_LINES, MAX_FN_LINES, module_graph};

fn src() -> PathBuf {
    shape::src_dir(env!("CARGO_MANIFEST_DIR"))
}

/// The layers of `lib.rs`'s docs, top first: a module may refer to its own layer's peers only
/// when that adds no cycle, and to any layer below it, never to one above.
const LAYERS: &[&[&str]] = &[
    &["hooks"],
    &["provider"],
    &["lease", "login", "sync"],
    &["exec"],
    &["cluster"],
    &["builders"],
    &["config", "error"],
];

fn layer_of(module: &str) -> usize {
    LAYERS
        .iter()
        .position(|layer| layer.contains(&module))
        .unwrap_or_else(|| panic!("module `{module}` is in no layer of LAYERS; add it"))
}

#[test]
fn no_module_imports_one_that_imports_it_back() {
    shape::assert_no_cycles(&src());
}

#[test]
fn every_top_level_module_refers_only_downward() {
    let graph = module_graph(&src(), &[]).unwrap();
    let mut upward = Vec::new();
    for (from, targets) in &graph.edges {
        for (to, refs) in targets {
            if layer_of(to) < layer_of(from) {
                let first = &refs[0];
                upward.push(format!(
                    "{from} -> {to}: {}:{} `{}`",
                    first.file.display(),
                    first.line,
                    first.path
                ));
            }
        }
    }
    for node in &graph.nodes {
        layer_of(node);
    }
    assert!(
        upward.is_empty(),
        "upward references:\n{}",
        upward.join("\n")
    );
}

#[test]
fn no_file_over_600_lines_and_no_function_over_120() {
    shape::assert_within(&src(), MAX_FILE_LINES, MAX_FN_LINES);
}
