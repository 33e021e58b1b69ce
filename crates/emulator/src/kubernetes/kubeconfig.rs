//! TLS material and kubeconfigs: a throwaway CA (rcgen, aws-lc-rs) that signs a server certificate
//! for `127.0.0.1` and `localhost`, a rustls acceptor (aws-lc-rs provider, HTTP/1.1 only), and
//! kubeconfig YAML carrying the server URL, the CA and the bearer token.

use std::sync::Arc;

use base64::Engine;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// A CA and the server certificate it signed.
pub struct TlsMaterial {
    pub ca_pem: String,
    pub acceptor: TlsAcceptor,
}

pub fn generate() -> Result<TlsMaterial, String> {
    let err = |e: rcgen::Error| e.to_string();
    let ca_key = KeyPair::generate().map_err(err)?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(err)?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "kubernetes-emulator-ca");
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_cert = ca_params.self_signed(&ca_key).map_err(err)?;
    let issuer = Issuer::new(ca_params, ca_key);

    let server_key = KeyPair::generate().map_err(err)?;
    let mut params = CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
        .map_err(err)?;
    params
        .distinguished_name
        .push(DnType::CommonName, "kube-apiserver");
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    let server_cert = params.signed_by(&server_key, &issuer).map_err(err)?;

    let provider = Arc::new(tokio_rustls::rustls::crypto::aws_lc_rs::default_provider());
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(server_key.serialize_der()));
    let chain: Vec<CertificateDer<'static>> =
        vec![server_cert.der().clone(), ca_cert.der().clone()];
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| e.to_string())?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsMaterial {
        ca_pem: ca_cert.pem(),
        acceptor: TlsAcceptor::from(Arc::new(config)),
    })
}

/// A kubeconfig for `server` (the CA is embedded for `https://` URLs).
pub fn kubeconfig_yaml(server: &str, token: &str, ca_pem: Option<&str>, namespace: &str) -> String {
    let ca = match ca_pem {
        Some(pem) if server.starts_with("https://") => format!(
            "    certificate-authority-data: {}",
            base64::engine::general_purpose::STANDARD.encode(pem)
        ),
        _ => String::new(),
    };
    let lines = [
        "apiVersion: v1".to_string(),
        "kind: Config".to_string(),
        "clusters:".to_string(),
        "- name: emulator".to_string(),
        "  cluster:".to_string(),
        format!("    server: {server}"),
        ca,
        "users:".to_string(),
        "- name: emulator".to_string(),
        "  user:".to_string(),
        format!("    token: \"{token}\""),
        "contexts:".to_string(),
        "- name: emulator".to_string(),
        "  context:".to_string(),
        "    cluster: emulator".to_string(),
        "    user: emulator".to_string(),
        format!("    namespace: {namespace}"),
        "current-context: emulator".to_string(),
        "preferences: {}".to_string(),
    ];
    lines
        .iter()
        .filter(|l| !l.is_empty())
        .map(|l| format!("{l}\n"))
        .collect()
}
