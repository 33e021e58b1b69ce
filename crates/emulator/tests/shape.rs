//! The emulator's modules form a tree (issue #31 item 4). It is test infrastructure, so the
//! size limits of the provider and core crates do not apply to it.

use sandbox_core::module_graph as shape;

#[test]
fn no_module_imports_one_that_imports_it_back() {
    shape::assert_no_cycles(&shape::src_dir(env!("CARGO_MANIFEST_DIR")));
}
