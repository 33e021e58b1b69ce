//! What a hook runs against: a connector that turns a parsed config into a cluster, as one
//! hook call uses it (API calls and pod exec).
//!
//! Production uses [`KubeConnector`] (kube-rs, the per-credential client cache); tests plug in
//! scripted clusters and execs.

use std::sync::Arc;

use sandbox_core::BoxFuture;

use crate::cluster::{ClientCache, ClusterApi, KubeCluster};
use crate::config::KubernetesConfig;
use crate::error::Error;
use crate::exec::PodExec;

/// A cluster as one hook call uses it.
#[derive(Clone)]
pub struct Connection {
    pub api: Arc<dyn ClusterApi>,
    pub exec: Arc<dyn PodExec>,
}

/// `createKubeConfig` + `makeKubeClients`.
pub trait ClusterConnector: Send + Sync {
    fn connect<'a>(
        &'a self,
        config: &'a KubernetesConfig,
    ) -> BoxFuture<'a, Result<Connection, Error>>;
}

/// The real connector: kube-rs clients from its own per-credential cache. Each provider owns
/// one, so two plugins made by `createPlugin()` in one process share no clients.
#[derive(Default, Clone)]
pub struct KubeConnector {
    clients: Arc<ClientCache>,
}

impl ClusterConnector for KubeConnector {
    fn connect<'a>(
        &'a self,
        config: &'a KubernetesConfig,
    ) -> BoxFuture<'a, Result<Connection, Error>> {
        Box::pin(async move {
            let handle = self.clients.client_for(config).await?;
            let cluster = Arc::new(KubeCluster::new(handle));
            Ok(Connection {
                api: cluster.clone(),
                exec: cluster,
            })
        })
    }
}
