//! The Kubernetes provider against a real single-node cluster on this machine: containerd, runc,
//! CNI, kubelet, kube-scheduler, the real control plane and the real kubernetes-sigs/agent-sandbox
//! controller (v1.0.1, `agents.x-k8s.io/v1beta1`), started by `scripts/real-cluster/node.sh`
//! (see `node`). Part of `cargo test --workspace`; it needs root, and builds the node's binaries
//! and images into the cache the first time.
//!
//! - `node`: the harness (build if missing, one node per test process, the kubeconfig and the
//!   image config to merge into a provider config);
//! - `lifecycle`: the provider's hooks on the node, each test checking by listing that nothing
//!   its lease made is left.
//! - `harness`: the recording sink and the lease helper the tests below share;
//! - `exec`: execute (streamed output, exit codes, cwd/env, stdin, timeouts);
//! - `backends`: the Job backend, resume after the pod was deleted, a pod that never becomes ready.

mod backends;
mod conformance;
mod exec;
mod harness;
mod lifecycle;
mod login;
// Each target uses part of it.
#[allow(dead_code)]
#[path = "../support/login.rs"]
mod login_support;
mod node;
mod stdin;
mod sync;
#[path = "../support/timed_out.rs"]
mod timed_out;
// The raw-request helpers and bounded waits of the real control plane's tests.
#[allow(dead_code)]
#[path = "../real_apiserver/support.rs"]
mod support;
