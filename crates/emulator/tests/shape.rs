//! The emulator's modules form a tree (issue #31 item 4). It is test infrastructure, so the
//! size limits of the provider and core crates do not apply to it.

sandbox_core::shape_tests!(cycles_only);
