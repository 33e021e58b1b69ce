//! The Kubernetes provider against a real control plane: etcd, kube-apiserver and
//! kube-controller-manager built from the Go module proxy (`scripts/real-apiserver/build.sh`)
//! and started on 127.0.0.1 by `scripts/real-apiserver/control-plane.sh`, with the
//! agent-sandbox `Sandbox` CRD in its v0.4.x and v0.5.x shapes and Cilium's
//! `CiliumNetworkPolicy` CRD (`crds/`).
//!
//! - `provider`: the hooks against the real server (objects as built, discovery, first write
//!   wins, cleanup by listing, the server's own 403/404/422);
//! - `probe`: the probe's checks against RBAC as the operator's guide writes it (`docs/rbac/`),
//!   and on a cluster without agent-sandbox;
//! - `conformance`: the same requests to the emulator and to the real server, compared.

mod conformance;
mod control_plane;
mod probe;
mod provider;
#[path = "../support/rbac_apply.rs"]
mod rbac_apply;
// Each target uses part of it.
#[allow(dead_code)]
#[path = "../support/rbac.rs"]
mod rbac_support;
mod support;
