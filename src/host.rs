//! The ctx bridge: [`sandbox_core::HostSink`] over ThreadsafeFunctions into the worker's `ctx`.
//!
//! Two lifetimes meet here. The logger, login-PTY and duplex callbacks live as long as the
//! provider (they route by ids, not by async context), so they are *weak*: they never keep the
//! worker alive after `shutdown`. The execution-log callback belongs to one execute call and was
//! bound to that call's async context by plugin-kit (so the SDK stamps the host's invocation id on
//! every chunk); it is *strong* and dropped when the call settles.
//!
//! Streamed output goes through [`crate::execution_log`], which batches and bounds it.

// napi's .d.ts generator cannot see through type aliases, so the callback types of
// `HostCallbacks` are spelled out in full.
#![allow(clippy::type_complexity)]

use std::sync::Arc;

use napi::Status;
use napi::bindgen_prelude::{Buffer, FnArgs};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi_derive::napi;
use sandbox_core::{BoxFuture, HostSink, LogLevel, OutputStream};

use crate::execution_log::{ExecutionLog, ExecutionLogCallback};

/// A long-lived callback: not callee-handled (JS gets plain arguments), weak (unref'd). The
/// struct fields spell the type out because napi's .d.ts generator cannot see through aliases.
type WeakCallback<Args> = ThreadsafeFunction<Args, (), Args, Status, false, true>;

/// The `ctx` callbacks a provider keeps. Every one is optional so that tests can pass a subset;
/// plugin-kit wraps each in a try/catch, so a throwing callback cannot crash the worker.
#[napi(object, object_to_js = false)]
pub struct HostCallbacks {
    /// `(level, message)` for `ctx.logger`.
    pub log: Option<
        ThreadsafeFunction<
            FnArgs<(String, String)>,
            (),
            FnArgs<(String, String)>,
            Status,
            false,
            true,
        >,
    >,
    /// `(hostRouteId, workerSessionId, chunk)` for `ctx.loginPty.output`.
    pub login_output: Option<
        ThreadsafeFunction<
            FnArgs<(String, String, String)>,
            (),
            FnArgs<(String, String, String)>,
            Status,
            false,
            true,
        >,
    >,
    /// `(hostRouteId, workerSessionId, exitCode | null)` for `ctx.loginPty.exit`.
    pub login_exit: Option<
        ThreadsafeFunction<
            FnArgs<(String, String, Option<i32>)>,
            (),
            FnArgs<(String, String, Option<i32>)>,
            Status,
            false,
            true,
        >,
    >,
    /// `(hostRouteId, workerSessionId, bytes)` for `ctx.duplexChannel.data`.
    pub duplex_data: Option<
        ThreadsafeFunction<
            FnArgs<(String, String, Buffer)>,
            (),
            FnArgs<(String, String, Buffer)>,
            Status,
            false,
            true,
        >,
    >,
    /// `(hostRouteId, workerSessionId, exitCode | null, transportClosed)` for
    /// `ctx.duplexChannel.exit`.
    pub duplex_exit: Option<
        ThreadsafeFunction<
            FnArgs<(String, String, Option<i32>, bool)>,
            (),
            FnArgs<(String, String, Option<i32>, bool)>,
            Status,
            false,
            true,
        >,
    >,
}

/// The provider-lifetime half of the bridge.
pub struct JsHost {
    callbacks: Option<HostCallbacks>,
}

impl JsHost {
    pub fn new(callbacks: Option<HostCallbacks>) -> Arc<Self> {
        Arc::new(Self { callbacks })
    }

    /// A sink for one hook call; `execution_log` is that call's bound `ctx.execution.log`.
    pub fn for_call(self: &Arc<Self>, execution_log: Option<ExecutionLogCallback>) -> CallSink {
        CallSink {
            host: Arc::clone(self),
            execution_log: execution_log.map(ExecutionLog::new),
        }
    }

    fn fire<Args: 'static + napi::bindgen_prelude::JsValuesTupleIntoVec>(
        callback: Option<&WeakCallback<Args>>,
        args: Args,
    ) {
        if let Some(callback) = callback {
            // Fire-and-forget: `Closing` after shutdown is expected and harmless.
            let _ = callback.call(args, ThreadsafeFunctionCallMode::NonBlocking);
        }
    }
}

/// [`HostSink`] for one hook call.
pub struct CallSink {
    host: Arc<JsHost>,
    execution_log: Option<ExecutionLog>,
}

impl CallSink {
    /// Resolves once every chunk of streamed output has been handed to the host; see
    /// [`ExecutionLog::delivered`].
    pub async fn delivered(&self) {
        if let Some(log) = &self.execution_log {
            log.delivered().await;
        }
    }
}

impl HostSink for CallSink {
    fn log(&self, level: LogLevel, message: &str) {
        let callbacks = self.host.callbacks.as_ref();
        JsHost::fire(
            callbacks.and_then(|c| c.log.as_ref()),
            FnArgs::from((level.as_str().to_owned(), message.to_owned())),
        );
    }

    fn execution_log(&self, stream: OutputStream, chunk: String) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if let Some(log) = &self.execution_log {
                log.send(stream, chunk).await;
            }
        })
    }

    fn login_output(&self, host_route_id: &str, worker_session_id: &str, chunk: String) {
        let callbacks = self.host.callbacks.as_ref();
        JsHost::fire(
            callbacks.and_then(|c| c.login_output.as_ref()),
            FnArgs::from((
                host_route_id.to_owned(),
                worker_session_id.to_owned(),
                chunk,
            )),
        );
    }

    fn login_exit(&self, host_route_id: &str, worker_session_id: &str, exit_code: Option<i32>) {
        let callbacks = self.host.callbacks.as_ref();
        JsHost::fire(
            callbacks.and_then(|c| c.login_exit.as_ref()),
            FnArgs::from((
                host_route_id.to_owned(),
                worker_session_id.to_owned(),
                exit_code,
            )),
        );
    }

    fn duplex_data(&self, host_route_id: &str, worker_session_id: &str, chunk: Vec<u8>) {
        let callbacks = self.host.callbacks.as_ref();
        JsHost::fire(
            callbacks.and_then(|c| c.duplex_data.as_ref()),
            FnArgs::from((
                host_route_id.to_owned(),
                worker_session_id.to_owned(),
                Buffer::from(chunk),
            )),
        );
    }

    fn duplex_exit(
        &self,
        host_route_id: &str,
        worker_session_id: &str,
        exit_code: Option<i32>,
        transport_closed: bool,
    ) {
        let callbacks = self.host.callbacks.as_ref();
        JsHost::fire(
            callbacks.and_then(|c| c.duplex_exit.as_ref()),
            FnArgs::from((
                host_route_id.to_owned(),
                worker_session_id.to_owned(),
                exit_code,
                transport_closed,
            )),
        );
    }
}
