//! The CreateOS HTTP client: `X-Api-Key`, refused redirects, a deadline per request, the pacer
//! before every request, fixed error labels and the strict envelope.
//!
//! Errors never carry a provider body, a URL or the key: a failed connection is one fixed text
//! (its cause would name the URL), a non-2xx answer is its status and a label.

mod envelope;
mod labels;
mod sandboxes;

use std::borrow::Cow;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::Method;
use reqwest::header::CONTENT_TYPE;
use sandbox_core::ProviderError;
use serde_json::{Map, Value};

use crate::config::{CreateOsConfig, resolve_api_key, resolve_api_key_from_env};
use crate::error::{Error, Result};
use crate::messages;
use crate::pacer::Pacer;
use crate::signal::{AbortReason, Signal};

pub(crate) use envelope::{identifier, identifier_str, object};
pub use sandboxes::{Desired, OWNERSHIP_NAME_PREFIX, SandboxInfo, ownership_name};

/// Where the key for the official endpoint comes from when the config has none.
#[derive(Debug, Clone, Default)]
pub enum HostApiKey {
    /// `CREATEOS_API_KEY` of this process, read at each use (as the original did).
    #[default]
    Environment,
    /// A fixed value (`None`: no host key), for tests and embedders.
    Fixed(Option<String>),
}

/// What every client of one provider shares: the HTTP connection pool, the pacer and the source
/// of the host key.
pub struct Clients {
    http: Mutex<Option<reqwest::Client>>,
    pacer: Arc<Pacer>,
    host_api_key: HostApiKey,
}

impl std::fmt::Debug for Clients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Clients")
            .field("pacer", &self.pacer)
            .finish_non_exhaustive()
    }
}

impl Clients {
    pub fn new(pacer: Arc<Pacer>, host_api_key: HostApiKey) -> Self {
        Self {
            http: Mutex::new(None),
            pacer,
            host_api_key,
        }
    }

    /// `resolveApiKey(config)`: the config's key, or the host's for the official endpoint only.
    pub fn api_key(&self, config: &CreateOsConfig) -> std::result::Result<String, ProviderError> {
        match &self.host_api_key {
            HostApiKey::Environment => resolve_api_key_from_env(config),
            HostApiKey::Fixed(key) => resolve_api_key(config, key.as_deref()),
        }
    }

    /// `new CreateosClient(config)`: fails with the key errors before any request.
    pub fn client(
        &self,
        config: &CreateOsConfig,
    ) -> std::result::Result<CreateOsClient, ProviderError> {
        let api_key = self.api_key(config)?;
        Ok(CreateOsClient {
            http: self.http()?,
            pacer: self.pacer.clone(),
            config: Arc::new(config.clone()),
            api_key,
        })
    }

    fn http(&self) -> std::result::Result<reqwest::Client, ProviderError> {
        let mut http = self.http.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(client) = http.as_ref() {
            return Ok(client.clone());
        }
        let client =
            build_http_client().map_err(|_| ProviderError::new(messages::CONNECTION_FAILED))?;
        *http = Some(client.clone());
        Ok(client)
    }
}

/// Makes aws-lc-rs the process's default rustls crypto provider, once, before the first client
/// is built (reqwest is built without a provider of its own and uses the default). The
/// Kubernetes provider installs the same one before its first kube client, whichever of the two
/// comes first wins, and the other's attempt is a no-op: the default can be set only once per
/// process, and aws-lc-rs is the only provider compiled in.
pub fn install_crypto_provider() {
    // An error means a default is installed already: the same provider, the only one built in.
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
}

fn build_http_client() -> reqwest::Result<reqwest::Client> {
    install_crypto_provider();
    reqwest::Client::builder()
        // A redirect becomes "connection failed" (fetch with `redirect: "error"`).
        .redirect(reqwest::redirect::Policy::none())
        // Node's fetch ignores proxy variables.
        .no_proxy()
        // undici's defaults: 10 s to connect, 300 s without a byte before headers or in a body.
        .connect_timeout(Duration::from_secs(10))
        .read_timeout(Duration::from_secs(300))
        .build()
}

/// A request body.
pub enum Body {
    Empty,
    /// `JSON.stringify(value)` with `Content-Type: application/json`.
    Json(Value),
    /// Raw bytes with `Content-Type: application/octet-stream` (file uploads).
    Octets(reqwest::Body),
}

/// One configured client (the original's `CreateosClient`). Cheap to clone.
#[derive(Clone)]
pub struct CreateOsClient {
    http: reqwest::Client,
    pacer: Arc<Pacer>,
    config: Arc<CreateOsConfig>,
    api_key: String,
}

impl std::fmt::Debug for CreateOsClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the key.
        f.debug_struct("CreateOsClient")
            .field("api_url", &self.config.api_url)
            .finish_non_exhaustive()
    }
}

/// The caller's signal, or a fresh per-request deadline of `timeoutMs`.
fn effective<'a>(signal: Option<&'a Signal>, timeout_ms: u64) -> Cow<'a, Signal> {
    match signal {
        Some(signal) => Cow::Borrowed(signal),
        None => Cow::Owned(Signal::timeout(timeout_ms)),
    }
}

impl CreateOsClient {
    pub fn config(&self) -> &CreateOsConfig {
        &self.config
    }

    /// Sends `method {apiUrl}/v1{path}` once the pacer allows it. `signal` bounds the wait and
    /// the response headers; without one, the request gets its own `timeoutMs` deadline.
    ///
    /// Fails with the signal's reason when it fires, `CreateOS connection failed.` for any
    /// transport failure or redirect, and an API error for any other non-2xx status (the body is
    /// dropped unread).
    pub async fn request(
        &self,
        method: Method,
        path: &str,
        body: Body,
        signal: Option<&Signal>,
    ) -> Result<reqwest::Response> {
        let signal = effective(signal, self.config.timeout_ms);
        self.send(method, path, body, &signal).await
    }

    async fn send(
        &self,
        method: Method,
        path: &str,
        body: Body,
        signal: &Signal,
    ) -> Result<reqwest::Response> {
        // Before the transport error handling: the pacer's abort errors pass through as they are
        // (and nothing was sent).
        self.pacer
            .wait(&self.config.api_url, signal)
            .await
            .map_err(Error::Unsent)?;
        let url = format!("{}/v1{}", self.config.api_url, path);
        let mut builder = self
            .http
            .request(method, url)
            .header("X-Api-Key", &self.api_key);
        builder = match body {
            Body::Empty => builder,
            Body::Json(value) => builder
                .header(CONTENT_TYPE, "application/json")
                .body(serde_json::to_vec(&value).unwrap_or_default()),
            Body::Octets(bytes) => builder
                .header(CONTENT_TYPE, "application/octet-stream")
                .body(bytes),
        };
        let sent = tokio::select! {
            sent = builder.send() => sent,
            reason = signal.aborted() => return Err(reason.to_error().into()),
        };
        let response = match sent {
            Ok(response) => response,
            Err(error) => {
                if let Some(reason) = signal.reason() {
                    return Err(reason.to_error().into());
                }
                // The cause would name the URL: drop it. A connection that was never made
                // carried nothing to the service.
                let failed = ProviderError::new(messages::CONNECTION_FAILED);
                return Err(if error.is_connect() {
                    Error::Unsent(failed)
                } else {
                    Error::Other(failed)
                });
            }
        };
        let status = response.status().as_u16();
        // fetch with `redirect: "error"` turns every redirect status into a network error.
        if matches!(status, 301 | 302 | 303 | 307 | 308) {
            return Err(Error::msg(messages::CONNECTION_FAILED));
        }
        if !(200..=299).contains(&status) {
            return Err(Error::Api {
                status,
                label: labels::label_for(path),
            });
        }
        Ok(response)
    }

    /// A JSON call: sends `body` (if any) as JSON and returns the envelope's `data` object.
    /// A body that cannot be read in time is invalid JSON, as in the original; a body cut off
    /// by an explicit stop with a reason (worker shutdown, which the original did not have)
    /// fails with that reason, so the caller reports why it stopped.
    pub async fn json(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
        signal: Option<&Signal>,
    ) -> Result<Map<String, Value>> {
        let signal = effective(signal, self.config.timeout_ms);
        let body = body.map_or(Body::Empty, Body::Json);
        let response = self.send(method, path, body, &signal).await?;
        let bytes = tokio::select! {
            bytes = response.bytes() => bytes.ok(),
            reason = signal.aborted() => match reason {
                AbortReason::Error(stopped) => return Err(stopped.into()),
                AbortReason::Timeout | AbortReason::Aborted => None,
            },
        };
        envelope::envelope_data(bytes.as_deref())
    }

    /// `PUT /sandboxes/{id}/files?path=…`: uploads `content` to `path` in the sandbox. Only the
    /// status is checked; the response body is dropped unread.
    pub async fn upload(
        &self,
        id: &str,
        path: &str,
        content: reqwest::Body,
        signal: &Signal,
    ) -> Result<()> {
        let id = identifier_str(id)?;
        let path = format!(
            "/sandboxes/{id}/files?path={}",
            js_compat::uri::encode_uri_component(path)
        );
        self.request(Method::PUT, &path, Body::Octets(content), Some(signal))
            .await
            .map(drop)
    }
}
