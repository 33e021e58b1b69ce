//! The one shape every asynchronous hook method has: parse the params' JSON text, clone the
//! provider handle, build the call's host sink, run the provider's hook under the panic guard,
//! and hand back the [`Outcome`] as JSON text.
//!
//! [`Outcome`]: crate::outcome::Outcome

/// `params` is the hook's params as JSON text (see [`crate::outcome`]); the macro evaluates to the
/// outcome's JSON text.
///
/// `forward_hook!(self, method, params)`, or for execute `forward_hook!(execute self, params,
/// execution_log)` where `execution_log` is the call's bound `ctx.execution.log` (it evaluates to
/// an [`crate::outcome::ExecuteOutcome`]). Sessions
/// (login PTY, duplex) outlive their open call: `forward_hook!(session self, method, params)`
/// hands the provider a shared sink it may keep, and `forward_hook!(no_sink self, method,
/// params)` forwards a hook that reports nothing.
#[macro_export]
macro_rules! forward_hook {
    ($this:ident, $method:ident, $params:ident) => {{
        let $params = match $crate::outcome::parse_params(&$params) {
            Ok(params) => params,
            Err(failed) => return failed,
        };
        let provider = ::std::sync::Arc::clone(&$this.provider);
        let sink = $this.host.for_call(None);
        $crate::guard::run(async move { provider.$method(&$params, &sink).await.into() })
            .await
            .into_json()
    }};
    (session $this:ident, $method:ident, $params:ident) => {{
        let $params = match $crate::outcome::parse_params(&$params) {
            Ok(params) => params,
            Err(failed) => return failed,
        };
        let provider = ::std::sync::Arc::clone(&$this.provider);
        let sink: ::std::sync::Arc<dyn sandbox_core::HostSink> =
            ::std::sync::Arc::new($this.host.for_call(None));
        $crate::guard::run(async move { provider.$method(&$params, sink).await.into() })
            .await
            .into_json()
    }};
    (no_sink $this:ident, $method:ident, $params:ident) => {{
        let $params = match $crate::outcome::parse_params(&$params) {
            Ok(params) => params,
            Err(failed) => return failed,
        };
        let provider = ::std::sync::Arc::clone(&$this.provider);
        $crate::guard::run(async move { provider.$method(&$params).await.into() })
            .await
            .into_json()
    }};
    (execute $this:ident, $params:ident, $execution_log:expr) => {{
        let $params = match $crate::outcome::parse_params(&$params) {
            Ok(params) => params,
            Err(failed) => return $crate::outcome::ExecuteOutcome::Json(failed),
        };
        let provider = ::std::sync::Arc::clone(&$this.provider);
        let sink = $this.host.for_call(Some($execution_log));
        $crate::guard::run(async move {
            let outcome = provider.execute(&$params, &sink).await;
            sink.delivered().await;
            outcome.into()
        })
        .await
        .into()
    }};
}
