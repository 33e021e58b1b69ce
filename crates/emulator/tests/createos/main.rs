//! Tests of the CreateOS emulator itself, against real sandboxed processes over real HTTP.

mod binary;
mod common;
mod exec;
mod faults;
mod files;
mod lifecycle;
mod processes;
