//! The kube-rs side of the provider: client construction from the provider config (spec §3.4)
//! and [`KubeCluster`], the [`ClusterApi`](crate::cluster::ClusterApi) implementation that the
//! orchestration code runs against a real API server.
//!
//! Credentials never leave this module: the kubeconfig text is only hashed (the cache key) and
//! parsed, and every error message built from a client-side failure is scrubbed of the
//! kubeconfig's secrets before it can reach an error, a log or a result.

mod cluster;
mod credentials;

pub use cluster::{KubeCluster, api_error_from_kube};
pub use credentials::{
    CREATE_KUBE_CONFIG_REQUIRES_CREDENTIALS, ClientCache, CredentialSource, KubeClientHandle,
    Redactor,
};
