//! [`PodExec`]: how a hook runs commands in a pod (buffered, streaming, tty), and its
//! production implementation over a [`KubeCluster`]'s client. Tests plug in scripted execs.

use std::sync::Arc;

use sandbox_core::BoxFuture;

use super::transport::{
    AGENT_CONTAINER, ExecOutput, ExecRequest, OutputTap, StreamingIo, StreamingOutput, exec_in_pod,
    exec_in_pod_streaming,
};
use super::tty::{TtyEvents, TtySession, open_tty_exec};
use crate::cluster::KubeCluster;
use crate::error::Error;

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
