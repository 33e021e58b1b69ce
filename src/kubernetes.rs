//! `KubernetesProvider`: the napi face of `crates/kubernetes`.

use std::sync::Arc;

use napi_derive::napi;
use serde_json::Value;

use crate::guard;
use crate::host::{HostCallbacks, JsHost};
use crate::outcome::Outcome;

#[napi(js_name = "KubernetesProvider")]
pub struct JsKubernetesProvider {
    provider: kubernetes::KubernetesProvider,
    #[allow(dead_code)] // used by the lease hooks as they land
    host: Arc<JsHost>,
}

#[napi]
impl JsKubernetesProvider {
    #[napi(constructor)]
    pub fn new(host: Option<HostCallbacks>) -> Self {
        Self {
            provider: kubernetes::KubernetesProvider::new(),
            host: JsHost::new(host),
        }
    }

    /// `onHealth`.
    #[napi(catch_unwind)]
    pub fn health(&self) -> Outcome {
        guard::sync(|| Outcome::value(self.provider.health()))
    }

    /// `onEnvironmentValidateConfig`: synchronous, it never touches a cluster.
    #[napi(catch_unwind)]
    pub fn validate_config(&self, params: Value) -> Outcome {
        guard::sync(|| self.provider.validate_config(&params).into())
    }
}
