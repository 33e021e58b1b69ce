//! The crate's shape (issue #31 item 4): its modules form a tree, and no file or function has
//! grown past the size a reader can hold at once.

sandbox_core::shape_tests!();
