//! Ordinary commands: one streaming `/exec?stream=true` call per command, and for an execute
//! whose deadline passed one more exec that ends it (`end`).

pub mod end;
pub mod script;
pub mod stream;
pub mod tail;

pub use script::{CommandSpec, command_script, script_for_params, shell_quote};
pub use stream::{ExecOutcome, execute_command, execute_script, execute_stream};
