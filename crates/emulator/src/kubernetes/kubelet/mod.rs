//! The "kubelet": every pod gets a private bubblewrap root (its own writable `/workspace`,
//! `/tmp`, home and every `volumeMounts` path), its containers' environment resolved from
//! `env`/`envFrom` (waiting for missing Secrets like a real kubelet), and, when the container
//! has a command, that command really running; `pods/exec` runs in the same root. Each
//! container has one pid namespace, held open from the pod's start to its end: the container's
//! command and every exec in it join that namespace, as `runc exec` joins a container, so an exec
//! sees (and can signal) what earlier execs left running, and what a command leaves behind lives
//! on after its exec until the pod ends.
//!
//! The pod's processes and files are a [`PodRuntime`](crate::kubernetes::pod_runtime::PodRuntime),
//! one layer down, so that the shared state can hold it. Here, bottom to top: `spec` (reading a
//! pod's spec), `env` (a container's resolved context), `pod_status` (the statuses written),
//! `root` (the pod's private root), `run` (the loop that drives a pod). This module only
//! declares them and re-exports what the rest of the emulator uses.

mod env;
mod pod_status;
mod root;
mod run;
mod spec;

pub use env::effective_argv;
pub use run::{fail_pod, run_pod};
pub use spec::container_named;
