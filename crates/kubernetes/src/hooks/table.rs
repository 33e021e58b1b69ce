//! The hook table of the Kubernetes provider: every hook it implements, and the method each one
//! forwards to. Hooks this provider does not implement (interactive setup, templates, duplex
//! channels) are absent, so the worker does not advertise them.

use std::sync::Arc;

use sandbox_core::hook::{resolves, resolves_maybe};
use sandbox_core::{Hook, HookFuture, HostSink, Provider};
use serde_json::Value;

use crate::provider::KubernetesProvider;

impl Provider for KubernetesProvider {
    fn setup(&self, sink: &dyn HostSink) {
        KubernetesProvider::setup(self, sink);
    }

    fn call<'a>(
        &'a self,
        hook: Hook,
        params: &'a Value,
        sink: Arc<dyn HostSink>,
    ) -> Option<HookFuture<'a>> {
        // A worker that starts after one died mid-sync removes that one's temp dirs; not from a
        // synchronous hook, which answers on the JS thread and starts no thread.
        if !hook.is_synchronous() {
            self.sweep_dead_workers_sync_dirs();
        }
        Some(match hook {
            Hook::Health => resolves(async move { Ok(self.health()) }),
            Hook::ValidateConfig => resolves(async move { self.validate_config(params) }),
            Hook::Probe => resolves(async move { self.probe(params, &*sink).await }),
            Hook::AcquireLease => resolves(async move { self.acquire_lease(params, &*sink).await }),
            Hook::ResumeLease => resolves(async move { self.resume_lease(params, &*sink).await }),
            Hook::ReleaseLease => {
                resolves_maybe(async move { self.release_lease(params, &*sink).await })
            }
            Hook::DestroyLease => {
                resolves_maybe(async move { self.destroy_lease(params, &*sink).await })
            }
            Hook::RealizeWorkspace => {
                resolves(async move { self.realize_workspace(params, &*sink).await })
            }
            Hook::Execute => resolves(async move { self.execute(params, &*sink).await }),
            Hook::SyncIn => resolves(async move { self.sync_in(params, &*sink).await }),
            Hook::SyncOut => resolves(async move { self.sync_out(params, &*sink).await }),
            Hook::LoginPtyOpen => resolves(self.login_pty_open(params, sink)),
            Hook::LoginPtyInput => {
                resolves_maybe(async move { self.login_pty_input(params, &*sink).await })
            }
            Hook::LoginPtyStop => {
                resolves_maybe(async move { self.login_pty_stop(params, &*sink).await })
            }
            Hook::LoginPtyClose => {
                resolves(async move { self.login_pty_close(params, &*sink).await })
            }
            Hook::StartInteractiveSetup
            | Hook::GetInteractiveSetup
            | Hook::CancelInteractiveSetup
            | Hook::CaptureTemplate
            | Hook::DeleteTemplate
            | Hook::DuplexChannelOpen
            | Hook::DuplexChannelWrite
            | Hook::DuplexChannelStop
            | Hook::DuplexChannelClose => return None,
        })
    }

    /// Resolves with `null`, as the hook did before the table.
    fn shutdown(&self) -> HookFuture<'_> {
        resolves(async move {
            KubernetesProvider::shutdown(self, &Value::Null, &sandbox_core::NullSink).await
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The exact advertised list is asserted against the forked worker; here, that the table
    /// leaves out exactly the hook families the Kubernetes provider does not have.
    #[test]
    fn the_table_leaves_out_setup_templates_and_duplex_channels() {
        let hooks = Provider::hooks(&KubernetesProvider::new());
        assert_eq!(hooks.len(), 15);
        assert!(!hooks.contains(&Hook::DuplexChannelOpen));
        assert!(!hooks.contains(&Hook::CaptureTemplate));
        assert!(hooks.contains(&Hook::LoginPtyClose));
    }

    /// The napi layer runs the synchronous hooks on the JS thread, polling each call once; a
    /// call that did not complete there would take the slower path through the runtime.
    #[test]
    fn synchronous_hooks_complete_on_the_first_poll() {
        let provider = KubernetesProvider::new();
        let cases = [
            Value::Null,
            json!({}),
            json!({ "config": { "kubeconfig": "apiVersion: v1", "companySlug": "acme", "egressMode": "standard" } }),
            json!({ "config": { "backend": "job" } }),
            json!({ "config": { "namespacePrefix": 7 } }),
        ];
        sandbox_core::hook::assert_synchronous_hooks_complete_at_once(&provider, &cases);
    }
}
