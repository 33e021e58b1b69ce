//! The crate's shape (issue #31 item 4): its modules form a tree, and no file or function has
//! grown past the size a reader can hold at once.

use sandbox_core::module_graph::{self as shape, MAX_FILE_LINES, MAX_FN_LINES};

#[test]
fn no_module_imports_one_that_imports_it_back() {
    shape::assert_no_cycles(&shape::src_dir(env!("CARGO_MANIFEST_DIR")));
}

#[test]
fn no_file_over_600_lines_and_no_function_over_120() {
    let src = shape::src_dir(env!("CARGO_MANIFEST_DIR"));
    shape::assert_within(&src, MAX_FILE_LINES, MAX_FN_LINES);
}
