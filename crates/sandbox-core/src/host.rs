//! What a provider may tell the host while it works: the `ctx` pieces of the plugin SDK.
//!
//! The napi layer implements [`HostSink`] with ThreadsafeFunctions into the worker's `ctx`;
//! Rust tests implement it with a recorder. Every method is fire-and-forget except
//! [`HostSink::execution_log`], which resolves once the chunk has been handed to the host so that
//! a fast producer is paced by the consumer instead of queueing unbounded output.

use std::future::Future;
use std::pin::Pin;

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogLevel {
    Debug,
    Info,
    Warn,
    Error,
}

impl LogLevel {
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Warn => "warn",
            LogLevel::Error => "error",
        }
    }
}

/// The two streams of `ctx.execution.log`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputStream {
    Stdout,
    Stderr,
}

impl OutputStream {
    pub fn as_str(self) -> &'static str {
        match self {
            OutputStream::Stdout => "stdout",
            OutputStream::Stderr => "stderr",
        }
    }
}

/// The host side of a running hook.
pub trait HostSink: Send + Sync {
    /// `ctx.logger.<level>(message)`.
    fn log(&self, level: LogLevel, message: &str);

    /// `ctx.execution.log(stream, chunk)`: live output of the execute call this sink belongs to.
    fn execution_log(&self, stream: OutputStream, chunk: String) -> BoxFuture<'_, ()>;

    /// `ctx.loginPty.output(hostRouteId, workerSessionId, chunk)`.
    fn login_output(&self, host_route_id: &str, worker_session_id: &str, chunk: String);

    /// `ctx.loginPty.exit(hostRouteId, workerSessionId, exitCode)`.
    fn login_exit(&self, host_route_id: &str, worker_session_id: &str, exit_code: Option<i32>);

    /// `ctx.duplexChannel.data(hostRouteId, workerSessionId, bytes)`.
    fn duplex_data(&self, host_route_id: &str, worker_session_id: &str, chunk: Vec<u8>);

    /// `ctx.duplexChannel.exit(hostRouteId, workerSessionId, exitCode, transportClosed)`.
    fn duplex_exit(
        &self,
        host_route_id: &str,
        worker_session_id: &str,
        exit_code: Option<i32>,
        transport_closed: bool,
    );
}

/// A sink that drops everything: for hooks that have nothing to report, and for tests.
#[derive(Debug, Default, Clone, Copy)]
pub struct NullSink;

impl HostSink for NullSink {
    fn log(&self, _level: LogLevel, _message: &str) {}

    fn execution_log(&self, _stream: OutputStream, _chunk: String) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }

    fn login_output(&self, _host_route_id: &str, _worker_session_id: &str, _chunk: String) {}

    fn login_exit(&self, _host_route_id: &str, _worker_session_id: &str, _exit_code: Option<i32>) {}

    fn duplex_data(&self, _host_route_id: &str, _worker_session_id: &str, _chunk: Vec<u8>) {}

    fn duplex_exit(
        &self,
        _host_route_id: &str,
        _worker_session_id: &str,
        _exit_code: Option<i32>,
        _transport_closed: bool,
    ) {
    }
}
