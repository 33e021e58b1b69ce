//! The emulator's modules form a tree (issue #31 item 4), and it keeps the provider and core
//! crates' size limits (no file over 600 lines, no function over 120): it is test
//! infrastructure, read as often as the code it tests.

sandbox_core::shape_tests!();
