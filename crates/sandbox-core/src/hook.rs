//! The hook table: every plugin hook a native provider can implement, written once.
//!
//! The host routes traffic by the methods a worker advertises, so the list of hooks a provider
//! implements must be exact. It is derived, never kept by hand: each provider implements
//! [`Provider::call`] with one `match` over [`Hook`], and [`Provider::hooks`] is the hooks that
//! `match` answers. The table also says what each hook is ([`Hook::is_synchronous`],
//! [`Hook::streams_output`], [`Hook::takes_params`]); the napi layer exposes the trait as one
//! class and hands those facts to the JavaScript plugin kit with each name, and both derive
//! how they call a hook from them alone (no hook is special-cased by name). The error catalogue
//! names hooks by [`Hook`] value.
//!
//! `setup` and `onShutdown` are not in the table: every plugin has both, and they take no params.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use serde_json::Value;

use crate::{BoxFuture, HostSink, ProviderResult};

/// A plugin hook that takes params and resolves with a result (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Hook {
    Health,
    ValidateConfig,
    Probe,
    AcquireLease,
    ResumeLease,
    ReleaseLease,
    DestroyLease,
    RealizeWorkspace,
    Execute,
    SyncIn,
    SyncOut,
    StartInteractiveSetup,
    GetInteractiveSetup,
    CancelInteractiveSetup,
    CaptureTemplate,
    DeleteTemplate,
    LoginPtyOpen,
    LoginPtyInput,
    LoginPtyStop,
    LoginPtyClose,
    DuplexChannelOpen,
    DuplexChannelWrite,
    DuplexChannelStop,
    DuplexChannelClose,
}

impl Hook {
    /// Every hook, in the order a provider advertises them.
    pub const ALL: &'static [Hook] = &[
        Hook::Health,
        Hook::ValidateConfig,
        Hook::Probe,
        Hook::AcquireLease,
        Hook::ResumeLease,
        Hook::ReleaseLease,
        Hook::DestroyLease,
        Hook::RealizeWorkspace,
        Hook::Execute,
        Hook::SyncIn,
        Hook::SyncOut,
        Hook::StartInteractiveSetup,
        Hook::GetInteractiveSetup,
        Hook::CancelInteractiveSetup,
        Hook::CaptureTemplate,
        Hook::DeleteTemplate,
        Hook::LoginPtyOpen,
        Hook::LoginPtyInput,
        Hook::LoginPtyStop,
        Hook::LoginPtyClose,
        Hook::DuplexChannelOpen,
        Hook::DuplexChannelWrite,
        Hook::DuplexChannelStop,
        Hook::DuplexChannelClose,
    ];

    /// The hook's method name in a `definePlugin` definition (`onEnvironmentAcquireLease`).
    pub const fn js_name(self) -> &'static str {
        match self {
            Hook::Health => "onHealth",
            Hook::ValidateConfig => "onEnvironmentValidateConfig",
            Hook::Probe => "onEnvironmentProbe",
            Hook::AcquireLease => "onEnvironmentAcquireLease",
            Hook::ResumeLease => "onEnvironmentResumeLease",
            Hook::ReleaseLease => "onEnvironmentReleaseLease",
            Hook::DestroyLease => "onEnvironmentDestroyLease",
            Hook::RealizeWorkspace => "onEnvironmentRealizeWorkspace",
            Hook::Execute => "onEnvironmentExecute",
            Hook::SyncIn => "onEnvironmentSyncIn",
            Hook::SyncOut => "onEnvironmentSyncOut",
            Hook::StartInteractiveSetup => "onEnvironmentStartInteractiveSetup",
            Hook::GetInteractiveSetup => "onEnvironmentGetInteractiveSetup",
            Hook::CancelInteractiveSetup => "onEnvironmentCancelInteractiveSetup",
            Hook::CaptureTemplate => "onEnvironmentCaptureTemplate",
            Hook::DeleteTemplate => "onEnvironmentDeleteTemplate",
            Hook::LoginPtyOpen => "onLoginPtyOpen",
            Hook::LoginPtyInput => "onLoginPtyInput",
            Hook::LoginPtyStop => "onLoginPtyStop",
            Hook::LoginPtyClose => "onLoginPtyClose",
            Hook::DuplexChannelOpen => "onDuplexChannelOpen",
            Hook::DuplexChannelWrite => "onDuplexChannelWrite",
            Hook::DuplexChannelStop => "onDuplexChannelStop",
            Hook::DuplexChannelClose => "onDuplexChannelClose",
        }
    }

    /// Whether the hook is pure computation on its params in every provider: no I/O, no
    /// waiting, no runtime (health and config validation, as the originals' are). Its call
    /// completes the first time it is polled, so the napi layer runs it to its end on the calling
    /// thread instead of handing it to the async runtime and back; a call that did not complete
    /// there would still finish on the runtime. Each provider's tests assert that its calls of
    /// these hooks complete on the first poll.
    pub const fn is_synchronous(self) -> bool {
        matches!(self, Hook::Health | Hook::ValidateConfig)
    }

    /// Whether the hook streams output to the host while it runs (`ctx.execution.log`, bound
    /// to the call's invocation): the execute hook.
    pub const fn streams_output(self) -> bool {
        matches!(self, Hook::Execute)
    }

    /// Whether the host passes the hook params: every hook but `onHealth`, which the SDK calls
    /// with none.
    pub const fn takes_params(self) -> bool {
        !matches!(self, Hook::Health)
    }

    /// The hook whose [`js_name`](Hook::js_name) this is.
    pub fn from_js_name(name: &str) -> Option<Hook> {
        Hook::ALL
            .iter()
            .copied()
            .find(|hook| hook.js_name() == name)
    }
}

impl std::fmt::Display for Hook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.js_name())
    }
}

/// What a hook resolves with: `Some(value)` (JSON `null` included), or `None` for JavaScript's
/// `undefined`, which is what the lease-release and session hooks of the originals resolve with.
pub type HookResult = ProviderResult<Option<HookValue>>;

/// A hook's value: a JSON tree, or a typed value (a validate result written from the parsed
/// config, a health answer) that serializes itself, so that no `Value` tree is built only to be
/// written out and dropped. How either crosses to JavaScript is the napi layer's business alone.
pub enum HookValue {
    Tree(Value),
    Typed(Box<dyn erased_serde::Serialize + Send + Sync>),
}

impl HookValue {
    /// A typed value.
    pub fn typed(value: impl serde::Serialize + Send + Sync + 'static) -> Self {
        HookValue::Typed(Box::new(value))
    }

    /// The value as a tree, whichever form it came in (tests, and results looked into).
    pub fn into_value(self) -> Value {
        match self {
            HookValue::Tree(value) => value,
            HookValue::Typed(typed) => typed_value(typed.as_ref()),
        }
    }

    /// The same, borrowed.
    pub fn to_value(&self) -> Value {
        match self {
            HookValue::Tree(value) => value.clone(),
            HookValue::Typed(typed) => typed_value(typed.as_ref()),
        }
    }
}

/// A typed value's tree. Our typed values are objects of strings, numbers and booleans, which
/// always serialize; were one ever to fail, the failure reads as `null`, not a panic.
fn typed_value(typed: &(dyn erased_serde::Serialize + Send + Sync)) -> Value {
    serde_json::to_value(typed).unwrap_or(Value::Null)
}

impl serde::Serialize for HookValue {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            HookValue::Tree(value) => value.serialize(serializer),
            HookValue::Typed(typed) => typed.serialize(serializer),
        }
    }
}

impl std::fmt::Debug for HookValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&self.to_value(), f)
    }
}

impl PartialEq for HookValue {
    fn eq(&self, other: &Self) -> bool {
        self.to_value() == other.to_value()
    }
}

/// The JSON text (tests and tools; the bridge writes its own).
impl std::fmt::Display for HookValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&self.to_value(), f)
    }
}

impl From<Value> for HookValue {
    fn from(value: Value) -> Self {
        HookValue::Tree(value)
    }
}

/// One running hook call.
pub type HookFuture<'a> = BoxFuture<'a, HookResult>;

/// A sandbox provider, as the napi layer drives it.
pub trait Provider: Send + Sync {
    /// `setup`: called once the worker has its ctx.
    fn setup(&self, sink: &dyn HostSink);

    /// The call of `hook`, or `None` when this provider does not implement it. Nothing runs
    /// until the future is polled (so [`hooks`](Provider::hooks) can ask without side effects).
    /// `sink` receives what the hook reports while it runs; a session hook keeps it for as
    /// long as the session lives, and an execute call streams its output to it.
    fn call<'a>(
        &'a self,
        hook: Hook,
        params: &'a Value,
        sink: Arc<dyn HostSink>,
    ) -> Option<HookFuture<'a>>;

    /// `onShutdown`: stops in-flight work within the host's grace period.
    fn shutdown(&self) -> HookFuture<'_>;

    /// The hooks this provider implements, in [`Hook::ALL`] order: exactly those
    /// [`call`](Provider::call) answers.
    fn hooks(&self) -> Vec<Hook> {
        static NO_PARAMS: Value = Value::Null;
        Hook::ALL
            .iter()
            .copied()
            .filter(|&hook| {
                self.call(hook, &NO_PARAMS, Arc::new(crate::NullSink))
                    .is_some()
            })
            .collect()
    }
}

/// A hook call that resolves with its value (`null` included): a tree or written text.
pub fn resolves<'a, T: Into<HookValue>>(
    call: impl Future<Output = ProviderResult<T>> + Send + 'a,
) -> HookFuture<'a> {
    Box::pin(async move { call.await.map(|value| Some(value.into())) })
}

/// A hook call that may resolve with `undefined` (`Ok(None)`).
pub fn resolves_maybe<'a>(
    call: impl Future<Output = ProviderResult<Option<Value>>> + Send + 'a,
) -> HookFuture<'a> {
    Box::pin(async move { call.await.map(|value| value.map(HookValue::Tree)) })
}

/// An `onHealth` answer, `{status: "ok", message}`. Both providers' answer never changes:
/// written from two static strings, it costs a health call nothing to build.
pub fn healthy(message: &'static str) -> HookValue {
    HookValue::typed(Healthy { message })
}

struct Healthy {
    message: &'static str,
}

impl serde::Serialize for Healthy {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut answer = serializer.serialize_map(Some(2))?;
        answer.serialize_entry("status", "ok")?;
        answer.serialize_entry("message", self.message)?;
        answer.end()
    }
}

/// Polls `call` once, with a waker that does nothing: its output if it completed, else the call
/// itself, to be run to its end on the async runtime (which polls it again at once, with a real
/// waker). This is how a [synchronous](Hook::is_synchronous) hook runs on the calling thread.
pub fn poll_once<F: Future + Unpin>(mut call: F) -> Result<F::Output, F> {
    let mut context = Context::from_waker(Waker::noop());
    match Pin::new(&mut call).poll(&mut context) {
        Poll::Ready(output) => Ok(output),
        Poll::Pending => Err(call),
    }
}

/// Test support: asserts that every [synchronous](Hook::is_synchronous) hook of `provider`
/// completes on its first poll for each of `params` (a call that did not would take the slower
/// path through the runtime).
#[cfg(feature = "testing")]
pub fn assert_synchronous_hooks_complete_at_once(provider: &dyn Provider, params: &[Value]) {
    for hook in Hook::ALL.iter().copied().filter(|h| h.is_synchronous()) {
        for params in params {
            let call = provider
                .call(hook, params, Arc::new(crate::NullSink))
                .expect("the provider implements every synchronous hook");
            assert!(
                poll_once(call).is_ok(),
                "{hook} with {params} did not complete on its first poll"
            );
        }
    }
}

/// The message for hook params nested deeper than the bridge carries them (JavaScript's
/// `JSON.stringify` runs out of stack, or the parser's nesting limit is reached). No host
/// sends such params; a hostile caller gets this instead of an engine or parser internal.
pub const PARAMS_TOO_DEEP: &str =
    "Hook params are nested too deeply: at most 127 levels of arrays and objects are accepted.";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_hook_has_one_distinct_js_name() {
        for hook in Hook::ALL {
            assert_eq!(Hook::from_js_name(hook.js_name()), Some(*hook));
            assert!(hook.js_name().starts_with("on"));
        }
        let mut names: Vec<_> = Hook::ALL.iter().map(|h| h.js_name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Hook::ALL.len());
        assert_eq!(Hook::from_js_name("onShutdown"), None);
        assert_eq!(Hook::from_js_name("setup"), None);
    }

    #[test]
    fn poll_once_hands_back_a_call_that_has_not_completed() {
        assert_eq!(poll_once(Box::pin(async { 7 })).ok(), Some(7));
        let mut pending = match poll_once(Box::pin(std::future::pending::<u8>())) {
            Ok(_) => panic!("a pending call completed"),
            Err(call) => call,
        };
        // Still the same call, still pending.
        let mut context = Context::from_waker(Waker::noop());
        assert!(pending.as_mut().poll(&mut context).is_pending());
    }
}
