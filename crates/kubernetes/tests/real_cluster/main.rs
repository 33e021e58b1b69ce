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
//! - `backends`: the Job backend, resume after the pod was deleted, a pod that never becomes ready;
//! - `rbac`: a lifecycle on both backends with exactly the operator's RBAC (`docs/rbac/`), and
//!   the probe naming a permission taken off it.
//! - `images`: issue #37's image references: `imageRegistry` with and without a scheme runs the
//!   node's image, `runtimeImages` runs an adapter outside the built-ins, an invalid reference is
//!   refused before the cluster is touched.
//! - `lease_end`: issue #38's lease ends: an abandoned lease deleted by the real controller at
//!   its `shutdownTime` with its pod, Secret and policies (the real garbage collector), a lease
//!   in use outliving the end it was made with, a lease without an end getting one.
//! - `pod_faults`: issue #38 item 6: a pod deleted under a command (named, and the next execute
//!   runs on the new pod) and a worker killed during a command (its command ended on resume).

mod backends;
mod conformance;
mod exec;
mod harness;
mod images;
mod lease_end;
mod lifecycle;
mod login;
// Each target uses part of it.
#[allow(dead_code)]
#[path = "../support/login.rs"]
mod login_support;
mod node;
mod pod_faults;
mod rbac;
#[path = "../support/rbac_apply.rs"]
mod rbac_apply;
// Each target uses part of it.
#[allow(dead_code)]
#[path = "../support/rbac.rs"]
mod rbac_support;
mod stdin;
mod sync;
#[path = "../support/timed_out.rs"]
mod timed_out;
// The raw-request helpers and bounded waits of the real control plane's tests.
#[allow(dead_code)]
#[path = "../real_apiserver/support.rs"]
mod support;
