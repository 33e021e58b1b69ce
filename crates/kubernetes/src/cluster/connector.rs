//! What the hooks run against: a connector that turns a parsed config into a cluster, as one
//! hook call uses it (API calls and pod exec).
//!
//! Production uses [`KubeConnector`] (kube-rs, the per-credential client cache); tests plug in
//! scripted clusters and execs.

use std::sync::Arc;

use sandbox_core::BoxFuture;

use super::ClusterApi;
use super::client::KubeCluster;
use super::credentials::ClientCache;
use crate::config::KubernetesConfig;
use crate::error::Error;
use crate::exec::tty::{TtyEvents, TtySession, open_tty_exec};
use crate::exec::{
    AGENT_CONTAINER, ExecOutput, ExecRequest, OutputTap, StreamingIo, StreamingOutput, exec_in_pod,
    exec_in_pod_streaming,
};

/// The message of the default [`PodExec::exec_streaming`] / [`PodExec::open_tty`] of an exec
/// that cannot stream (test doubles that only script buffered execs).
pub const STREAMING_UNSUPPORTED: &str = "this pod exec does not support streaming";

/// Runs execs in a pod: buffered (`execInPod`), streaming (`execInPodStreaming`, container
/// `agent`) and interactive tty sessions (the login PTY).
pub trait PodExec: Send + Sync {
    fn exec(
        &self,
        request: ExecRequest,
        tap: Option<OutputTap>,
    ) -> BoxFuture<'_, Result<ExecOutput, Error>>;

    /// `execInPodStreaming(kc, namespace, pod, "agent", argv, io)`.
    fn exec_streaming<'a>(
        &'a self,
        _namespace: &'a str,
        _pod: &'a str,
        _argv: &'a [String],
        _io: StreamingIo<'a>,
    ) -> BoxFuture<'a, Result<StreamingOutput, Error>> {
        Box::pin(async { Err(Error::Transport(STREAMING_UNSUPPORTED.into())) })
    }

    /// Opens a tty exec in container `agent`; output and the exit go to `events`.
    fn open_tty<'a>(
        &'a self,
        _namespace: &'a str,
        _pod: &'a str,
        _argv: Vec<String>,
        _events: Arc<dyn TtyEvents>,
    ) -> BoxFuture<'a, Result<Arc<TtySession>, Error>> {
        Box::pin(async { Err(Error::Transport(STREAMING_UNSUPPORTED.into())) })
    }
}

impl PodExec for KubeCluster {
    fn exec(
        &self,
        request: ExecRequest,
        tap: Option<OutputTap>,
    ) -> BoxFuture<'_, Result<ExecOutput, Error>> {
        Box::pin(async move {
            exec_in_pod(self.client(), self.redactor(), &request, tap.as_ref()).await
        })
    }

    fn exec_streaming<'a>(
        &'a self,
        namespace: &'a str,
        pod: &'a str,
        argv: &'a [String],
        io: StreamingIo<'a>,
    ) -> BoxFuture<'a, Result<StreamingOutput, Error>> {
        Box::pin(exec_in_pod_streaming(
            self.client(),
            self.redactor(),
            namespace,
            pod,
            AGENT_CONTAINER,
            argv,
            io,
        ))
    }

    fn open_tty<'a>(
        &'a self,
        namespace: &'a str,
        pod: &'a str,
        argv: Vec<String>,
        events: Arc<dyn TtyEvents>,
    ) -> BoxFuture<'a, Result<Arc<TtySession>, Error>> {
        Box::pin(async move {
            open_tty_exec(
                self.client(),
                self.redactor(),
                namespace,
                pod,
                &argv,
                events,
            )
            .await
        })
    }
}

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
