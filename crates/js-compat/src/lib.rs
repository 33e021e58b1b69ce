//! The JavaScript and Node built-ins whose exact behaviour the providers reproduce.
//!
//! The original providers are TypeScript running on Node, and the host sees what JS produced:
//! a number printed by `Number#toString`, a zod message pretty-printed by `JSON.stringify`, a
//! deadline read by `Date.parse`, a `TypeError` worded by V8. Each module here is one built-in,
//! written once, with the values recorded from Node in its tests. Well-kept crates do the work
//! wherever they are exact; each module's doc says which crate it uses, or why none fits.
//!
//! Everything works on plain Rust values and `serde_json::Value`; nothing here knows napi or
//! either provider.

pub mod base64;
pub mod date;
pub mod json;
pub mod number;
pub mod path;
pub mod string;
pub mod uri;
pub mod utf8;
pub mod uuid;
pub mod value;
