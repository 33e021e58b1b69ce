//! Tests of the Kubernetes emulator itself, over raw HTTP and raw WebSockets (so they check
//! the wire format, not a client's interpretation of it). The kube-rs realism check lives in
//! `tests/kubernetes_kube_rs.rs`.

mod api;
mod binary;
#[path = "../shared/binary.rs"]
mod binary_util;
#[path = "../shared/client.rs"]
mod client;
mod common;
mod controllers;
mod exec;
mod faults;
mod watch;
