//! `createKubeConfig`, the cluster credentials (the pod's service account when `inCluster`, else
//! the inline kubeconfig's current context), and the per-credential client cache.

use std::collections::HashMap;
use std::sync::Mutex;

use kube::config::{KubeConfigOptions, Kubeconfig};
use sha2::{Digest, Sha256};

use crate::config::KubernetesConfig;
use crate::error::Error;

/// A8: neither `inCluster` nor a non-blank kubeconfig.
pub const CREATE_KUBE_CONFIG_REQUIRES_CREDENTIALS: &str =
    "createKubeConfig requires either inCluster=true or a kubeconfig string";

/// Where a client's credentials come from. `inCluster` wins over a kubeconfig.
#[derive(Clone, PartialEq, Eq)]
pub enum CredentialSource {
    InCluster,
    Kubeconfig(String),
}

impl std::fmt::Debug for CredentialSource {
    /// Never prints the kubeconfig.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CredentialSource::InCluster => f.write_str("InCluster"),
            CredentialSource::Kubeconfig(_) => f.write_str("Kubeconfig(<redacted>)"),
        }
    }
}

impl CredentialSource {
    /// `createKubeConfig({inCluster, kubeconfig})`'s choice, or A8.
    pub fn from_config(config: &KubernetesConfig) -> Result<Self, Error> {
        if config.in_cluster {
            return Ok(CredentialSource::InCluster);
        }
        match config.kubeconfig.as_deref() {
            Some(text) if !text.trim().is_empty() => Ok(CredentialSource::Kubeconfig(text.into())),
            _ => Err(Error::unanswered(CREATE_KUBE_CONFIG_REQUIRES_CREDENTIALS)),
        }
    }

    /// The cache key: a SHA-256 over the source kind and the exact kubeconfig text.
    fn cache_key(&self) -> [u8; 32] {
        let mut hasher = Sha256::new();
        match self {
            CredentialSource::InCluster => hasher.update(b"in-cluster\0"),
            CredentialSource::Kubeconfig(text) => {
                hasher.update(b"kubeconfig\0");
                hasher.update(text.as_bytes());
            }
        }
        hasher.finalize().into()
    }

    /// Scrubs this source's secrets out of client-side error text.
    pub fn redactor(&self) -> Redactor {
        match self {
            CredentialSource::InCluster => Redactor::default(),
            CredentialSource::Kubeconfig(text) => Redactor::for_kubeconfig(text),
        }
    }
}

/// Removes credential material from a message: every token of the kubeconfig text that could
/// be a secret (long enough to be one) is replaced by `[REDACTED]`.
#[derive(Clone, Default)]
pub struct Redactor {
    secrets: Vec<String>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Redactor({} secrets)", self.secrets.len())
    }
}

impl Redactor {
    const MIN_SECRET_LEN: usize = 8;

    fn for_kubeconfig(text: &str) -> Self {
        let is_separator = |c: char| {
            c.is_whitespace() || matches!(c, '"' | '\'' | ',' | '{' | '}' | '[' | ']' | '#')
        };
        let mut secrets: Vec<String> = text
            .split(is_separator)
            .flat_map(|word| {
                // `key: value` lines: the value alone is the secret, but keep the whole word too.
                let value = word.rsplit(':').next().unwrap_or(word);
                [word.to_string(), value.to_string()]
            })
            .filter(|s| s.len() >= Self::MIN_SECRET_LEN && !is_url_like(s))
            .collect();
        // Longest first, so a secret containing another is replaced whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.dedup();
        Self { secrets }
    }

    /// `message` with every known secret replaced.
    pub fn redact(&self, message: &str) -> String {
        let mut out = message.to_string();
        for secret in &self.secrets {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), "[REDACTED]");
            }
        }
        out
    }
}

/// Server URLs are not secrets and appear in useful messages (connection refused).
fn is_url_like(word: &str) -> bool {
    word.starts_with("https://") || word.starts_with("http://") || word.starts_with("//")
}

/// A kubeconfig whose user token cannot be sent as an HTTP header. Library internals must not
/// reach users, and without this check tower-http's panic text `token is not valid header:
/// InvalidHeaderValue` did.
pub const KUBECONFIG_TOKEN_INVALID: &str = "Kubernetes kubeconfig user token is not a valid HTTP header value (it contains a line break or another control character); paste the token again without them.";

/// The message of a kubeconfig the YAML parser refused: where, and what in plain words. The
/// parser's own text quotes the kubeconfig's lines around the error (secrets included) and
/// names its own options (`set DuplicateKeyPolicy in Options if acceptable`), so only the
/// position is taken from it.
pub fn kubeconfig_yaml_message(parser_text: &str) -> String {
    let position = parser_text
        .split_once("line ")
        .and_then(|(_, rest)| {
            let (line, rest) = rest.split_once(" column ")?;
            let column: String = rest.chars().take_while(char::is_ascii_digit).collect();
            (line.chars().all(|c| c.is_ascii_digit()) && !line.is_empty() && !column.is_empty())
                .then(|| format!("line {line}, column {column}"))
        })
        .unwrap_or_else(|| "position unknown".to_string());
    let reason = if parser_text.contains("duplicate mapping key") {
        "a key appears twice in the same mapping"
    } else {
        "it is not a well-formed kubeconfig"
    };
    format!(
        "Kubernetes kubeconfig could not be read as YAML ({position}): {reason}; fix it and save the environment again."
    )
}

/// A ready client and what is needed to report about it.
#[derive(Clone)]
pub struct KubeClientHandle {
    pub client: kube::Client,
    /// `apiServerUrl(kc)`: the cluster URL, or `in-cluster` when it is empty.
    pub server_url: String,
    pub redactor: Redactor,
}

impl std::fmt::Debug for KubeClientHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeClientHandle")
            .field("server_url", &self.server_url)
            .finish_non_exhaustive()
    }
}

/// Clients by credential source (hash of the exact source). A failed construction is not
/// cached, so a fixed kubeconfig or a recovered in-cluster mount is picked up on the next call.
#[derive(Default)]
pub struct ClientCache {
    clients: Mutex<HashMap<[u8; 32], KubeClientHandle>>,
}

impl ClientCache {
    pub fn new() -> Self {
        Self::default()
    }

    /// The client for `config`'s credentials, built on first use.
    pub async fn client_for(&self, config: &KubernetesConfig) -> Result<KubeClientHandle, Error> {
        let source = CredentialSource::from_config(config)?;
        let key = source.cache_key();
        if let Some(handle) = self.lock().get(&key) {
            return Ok(handle.clone());
        }
        let handle = build_client(&source).await?;
        Ok(self.lock().entry(key).or_insert(handle).clone())
    }

    /// Drops every cached client (shutdown).
    pub fn clear(&self) {
        self.lock().clear();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<[u8; 32], KubeClientHandle>> {
        self.clients
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }
}

/// Makes aws-lc-rs the process's default rustls crypto provider, once, before the first kube
/// client is built (kube's TLS config takes the process default). The CreateOS provider installs
/// the same one before its first HTTP client; whichever comes first wins, and the other's attempt
/// is a no-op: the default can be set only once per process, and aws-lc-rs is the only provider
/// compiled in.
fn install_crypto_provider() {
    // An error means a default is installed already: the same provider, the only one built in.
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
}

/// Builds a client: in-cluster service-account config, or the inline kubeconfig's current
/// context. Errors carry no HTTP status and are scrubbed of the kubeconfig's secrets.
pub async fn build_client(source: &CredentialSource) -> Result<KubeClientHandle, Error> {
    install_crypto_provider();
    let redactor = source.redactor();
    let scrub = |err: &dyn std::fmt::Display| Error::unanswered(redactor.redact(&err.to_string()));
    let config = match source {
        CredentialSource::InCluster => kube::Config::incluster().map_err(|e| scrub(&e))?,
        CredentialSource::Kubeconfig(text) => {
            let kubeconfig = Kubeconfig::from_yaml(text)
                .map_err(|e| Error::unanswered(kubeconfig_yaml_message(&e.to_string())))?;
            kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .map_err(|e| scrub(&e))?
        }
    };
    let server_url = config.cluster_url.to_string();
    let server_url = if server_url.is_empty() {
        "in-cluster".to_string()
    } else {
        server_url
    };
    // tower-http panics on a bearer token that is not a header value (a pasted line break):
    // refuse it here with a message that says what to fix.
    if let Some(token) = &config.auth_info.token {
        use secrecy::ExposeSecret;
        if http::HeaderValue::from_str(&format!("Bearer {}", token.expose_secret())).is_err() {
            return Err(Error::unanswered(KUBECONFIG_TOKEN_INVALID));
        }
    }
    let client = kube::Client::try_from(config).map_err(|e| scrub(&e))?;
    Ok(KubeClientHandle {
        client,
        server_url,
        redactor,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config(raw: serde_json::Value) -> KubernetesConfig {
        KubernetesConfig::parse(&raw).unwrap()
    }

    #[test]
    fn blank_kubeconfig_needs_credentials() {
        let err =
            CredentialSource::from_config(&config(json!({"kubeconfig": "  \n "}))).unwrap_err();
        assert_eq!(err.to_string(), CREATE_KUBE_CONFIG_REQUIRES_CREDENTIALS);
        assert_eq!(err.http_status(), None);
    }

    #[test]
    fn in_cluster_wins_and_debug_never_prints_the_kubeconfig() {
        let source =
            CredentialSource::from_config(&config(json!({"inCluster": true, "kubeconfig": "x"})))
                .unwrap();
        assert_eq!(source, CredentialSource::InCluster);
        let source = CredentialSource::Kubeconfig("token: CANARY-secret-123".into());
        assert!(!format!("{source:?}").contains("CANARY"));
    }

    #[test]
    fn redactor_scrubs_kubeconfig_words() {
        let redactor = Redactor::for_kubeconfig(
            "users:\n- name: u\n  user:\n    token: CANARY-TOKEN-abcdef\nclusters:\n- cluster:\n    server: https://10.0.0.1:6443\n",
        );
        assert_eq!(
            redactor.redact("bad value CANARY-TOKEN-abcdef at https://10.0.0.1:6443"),
            "bad value [REDACTED] at https://10.0.0.1:6443"
        );
    }

    #[tokio::test]
    async fn malformed_kubeconfig_is_scrubbed() {
        let text = "apiVersion: v1\nusers: [ {name: u, user: {token: CANARY-TOKEN-zzzzzz}\n";
        let err = build_client(&CredentialSource::Kubeconfig(text.into()))
            .await
            .unwrap_err();
        assert!(!err.to_string().contains("CANARY"), "{}", err.to_string());
        assert_eq!(err.http_status(), None);
    }

    fn kubeconfig(user: &str) -> String {
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: k\n  cluster:\n    server: https://127.0.0.1:1\ncontexts:\n- name: c\n  context:\n    cluster: k\n    user: u\nusers:\n- name: u\n  user:\n{user}\n"
        )
    }

    /// Library texts (a panic's, a parser's hints and source excerpt) never reach users.
    #[tokio::test]
    async fn library_texts_become_messages_a_user_can_act_on() {
        let err = build_client(&CredentialSource::Kubeconfig(kubeconfig(
            "    token: \"CANARY-abc\\ndef\"",
        )))
        .await
        .unwrap_err();
        assert_eq!(err.to_string(), KUBECONFIG_TOKEN_INVALID);
        assert_eq!(
            error_catalog::explain(&err.to_string()).map(|e| e.code),
            Some("K8S_KUBECONFIG_TOKEN_INVALID")
        );
        let err = build_client(&CredentialSource::Kubeconfig(kubeconfig(
            "    token: CANARY-TOKEN-1\n    token: CANARY-TOKEN-2",
        )))
        .await
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "Kubernetes kubeconfig could not be read as YAML (line 17, column 5): a key appears twice in the same mapping; fix it and save the environment again."
        );
        let err = build_client(&CredentialSource::Kubeconfig(
            "users: [ {name: u, user: {token: CANARY}\n".into(),
        ))
        .await
        .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("Kubernetes kubeconfig could not be read as YAML (")
                && err.to_string().ends_with(
                    "): it is not a well-formed kubeconfig; fix it and save the environment again."
                ),
            "{}",
            err.to_string()
        );
        assert!(!err.to_string().contains("CANARY"));
        assert_eq!(
            error_catalog::explain(&err.to_string()).map(|e| e.code),
            Some("K8S_KUBECONFIG_YAML_INVALID")
        );
        assert_eq!(
            kubeconfig_yaml_message("no position here"),
            "Kubernetes kubeconfig could not be read as YAML (position unknown): it is not a well-formed kubeconfig; fix it and save the environment again."
        );
    }
}
