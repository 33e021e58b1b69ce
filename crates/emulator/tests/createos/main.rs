//! Tests of the CreateOS emulator itself, against real sandboxed processes over real HTTP.

mod binary;
#[path = "../shared/binary.rs"]
mod binary_util;
#[path = "../shared/client.rs"]
mod client;
mod common;
mod exec;
mod faults;
mod files;
mod lifecycle;
mod processes;
