//! `onEnvironmentProbe`: the original's result (`{ok, summary, metadata: {namespace, provider,
//! error?}}`) from the original's request (the tenant namespace's pod list), and then what it
//! never checked (an addition, docs/wire-parity.md): the Sandbox API, every permission the
//! config needs, the tenant namespace, the adapter and its runtime images. Each check is a line
//! of the summary (the first line stays the original's, or says how many checks failed) and an
//! entry of `metadata.checks`; `ok` is false when any fails. `metadata.adapter` carries the
//! config's adapter (its image and probe command) for `paperclip-sandbox check --deep`.
//!
//! The probe never throws for cluster errors, and answers within its bound
//! ([`api_bound::PROBE`], under the host's 30 s): every request is cut at the bound, the
//! cluster checks run at once, and the whole probe is cut a moment after the bound too.

use std::time::Duration;

use sandbox_core::{HostSink, ProviderResult};
use serde_json::{Map, Value, json};

use super::INVALID_CONFIG_SUMMARY;
use super::lifecycle::{PROBE_FAILED_SUMMARY, probe_ok_summary};
use crate::builders::runtime_images::{
    check_image_reference, configured_runtime_images, invalid_runtime_image_error, runtime_image,
};
use crate::cluster::probe_checks::{Check, Report, cluster_checks, one_line};
use crate::cluster::{ClusterApi, api_bound};
use crate::config::KubernetesConfig;
use crate::config::adapters::adapter_defaults_with_images;
use crate::lease::precheck::tenant_namespace;
use crate::provider::KubernetesProvider;

/// How long after its bound the whole probe is cut, should anything but a request hang.
const BACKSTOP_MS: u64 = 1_000;

/// The first summary line when the cluster answered but a check failed.
pub fn probe_checks_failed_summary(failed: usize, total: usize, namespace: &str) -> String {
    format!(
        "Kubernetes cluster reachable, but {failed} of {total} checks failed. Tenant namespace: {namespace}."
    )
}

pub fn runtime_image_valid_line(adapter_type: &str, image: &str) -> String {
    format!("Runtime image for adapter \"{adapter_type}\": {image} is a valid reference.")
}

impl KubernetesProvider {
    /// `onEnvironmentProbe({config, companyId})`: never throws for cluster errors.
    pub async fn probe(&self, params: &Value, _sink: &dyn HostSink) -> ProviderResult<Value> {
        let config = match KubernetesConfig::parse_input(params.get("config")) {
            Ok(config) => config,
            Err(issues) => {
                return Ok(json!({
                    "ok": false,
                    "summary": INVALID_CONFIG_SUMMARY,
                    "metadata": { "errors": issues.messages() },
                }));
            }
        };
        let namespace = tenant_namespace(&config, params.get("companyId"))?;
        let (local, adapter) = local_checks(&config);
        let ms = api_bound::bound_ms(params, api_bound::PROBE);
        let reached = api_bound::with_api_bound(ms, async {
            let connection = self.connect(&config).await.map_err(|e| e.message)?;
            reach_and_check(connection.api.as_ref(), &config, &namespace).await
        });
        let answered = tokio::time::timeout(Duration::from_millis(ms + BACKSTOP_MS), reached)
            .await
            .unwrap_or_else(|_| Err(api_bound::api_timeout_message(ms)));
        Ok(match answered {
            Ok(cluster) => reachable(&namespace, cluster, local, adapter),
            Err(error) => unreachable(&namespace, &error, local, adapter),
        })
    }
}

/// The original's request (a 404 counts as reachable, and so does a 403 now: the server
/// answered, and the permission checks name what is missing), then the cluster checks.
/// `Err` is the original's probe failure, with its message.
pub async fn reach_and_check(
    api: &dyn ClusterApi,
    config: &KubernetesConfig,
    namespace: &str,
) -> Result<Report, String> {
    match api
        .list_namespaced_pod(json!({"namespace": namespace}))
        .await
    {
        Ok(_) => {}
        Err(err) if err.is_not_found() || err.http_status() == Some(403) => {}
        Err(err) => return Err(err.to_string()),
    }
    Ok(cluster_checks(api, config.backend, config.egress_mode, namespace).await)
}

/// The checks that need no cluster: the config's adapter resolves, and every runtime image the
/// config can run is a valid reference. Also the adapter `check --deep` runs.
pub fn local_checks(config: &KubernetesConfig) -> (Report, Option<Value>) {
    let mut report = Report::default();
    let adapter_type = config.adapter_type.as_str();
    let adapter = match adapter_defaults_with_images(
        adapter_type,
        config.adapters.as_deref(),
        config.runtime_images.as_ref(),
    ) {
        Ok(defaults) => Some(json!({
            "adapterType": adapter_type,
            "runtimeImage": runtime_image(config, adapter_type, &defaults),
            "probeCommand": defaults.probe_command,
        })),
        Err(err) => {
            let check = Check::new("adapter", false, err.message).with("adapterType", adapter_type);
            report.extend(Report::single(check));
            None
        }
    };
    for (adapter_type, image) in configured_runtime_images(config) {
        let check = match check_image_reference(&image) {
            Ok(()) => Check::new(
                "runtimeImage",
                true,
                runtime_image_valid_line(&adapter_type, &image),
            )
            .with("image", image.as_str()),
            Err(reason) => Check::new(
                "runtimeImage",
                false,
                invalid_runtime_image_error(&adapter_type, &image, &reason).message,
            ),
        };
        report.extend(Report::single(check.with("adapterType", adapter_type)));
    }
    (report, adapter)
}

/// `{namespace, provider, error?}` as the original has them, then the checks and the adapter.
fn metadata(
    namespace: &str,
    error: Option<&str>,
    checks: &[Check],
    adapter: Option<Value>,
) -> Map<String, Value> {
    let mut metadata = Map::new();
    metadata.insert("namespace".into(), json!(namespace));
    metadata.insert("provider".into(), json!("kubernetes"));
    if let Some(error) = error {
        metadata.insert("error".into(), json!(error));
    }
    metadata.insert(
        "checks".into(),
        Value::Array(checks.iter().map(Check::to_json).collect()),
    );
    if let Some(adapter) = adapter {
        metadata.insert("adapter".into(), adapter);
    }
    metadata
}

/// The cluster answered: the original's summary when every check passed.
fn reachable(namespace: &str, mut report: Report, local: Report, adapter: Option<Value>) -> Value {
    report.extend(local);
    let failed = report.failed();
    let first = if failed == 0 {
        probe_ok_summary(namespace)
    } else {
        probe_checks_failed_summary(failed, report.checks.len(), namespace)
    };
    let mut lines = vec![first];
    lines.extend(report.lines);
    json!({
        "ok": failed == 0,
        "summary": lines.join("\n"),
        "metadata": metadata(namespace, None, &report.checks, adapter),
    })
}

/// The original's failure (`metadata.error`), its error also on the summary's second line.
fn unreachable(namespace: &str, error: &str, local: Report, adapter: Option<Value>) -> Value {
    let mut checks = vec![Check::new("apiServer", false, error)];
    checks.extend(local.checks);
    let mut lines = vec![PROBE_FAILED_SUMMARY.to_string(), one_line(error)];
    lines.extend(local.lines);
    json!({
        "ok": false,
        "summary": lines.join("\n"),
        "metadata": metadata(namespace, Some(error), &checks, adapter),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::ApiMethod;
    use crate::cluster::permissions::needed;
    use crate::cluster::rbac_yaml::SERVER_NAMESPACE;
    use crate::cluster::testing::{ScriptedCluster, ScriptedReply};
    use crate::config::Backend;
    use crate::error::Error;

    const NS: &str = "paperclip-acme";

    fn config(extra: Value) -> KubernetesConfig {
        let mut raw = json!({"kubeconfig": "k", "companySlug": "acme"});
        for (key, value) in extra.as_object().unwrap() {
            raw[key] = value.clone();
        }
        KubernetesConfig::parse(&raw).unwrap_or_else(|e| panic!("{:?}", e.messages()))
    }

    fn healthy() -> ScriptedCluster {
        ScriptedCluster::new().script(
            ApiMethod::GetApiVersions,
            vec![ScriptedReply::Returns(json!({"groups": [
                {"name": "agents.x-k8s.io", "versions": [{"version": "v1beta1"}]}]}))],
        )
    }

    async fn probe_over(cluster: &ScriptedCluster, config: &KubernetesConfig) -> Value {
        let (local, adapter) = local_checks(config);
        match reach_and_check(cluster, config, NS).await {
            Ok(report) => reachable(NS, report, local, adapter),
            Err(error) => unreachable(NS, &error, local, adapter),
        }
    }

    fn lines(result: &Value) -> Vec<String> {
        result["summary"]
            .as_str()
            .unwrap()
            .split('\n')
            .map(str::to_string)
            .collect()
    }

    #[tokio::test]
    async fn a_cluster_that_can_run_leases_keeps_the_originals_first_line() {
        let config = config(json!({}));
        let result = probe_over(&healthy(), &config).await;
        assert_eq!(result["ok"], true, "{result}");
        let lines = lines(&result);
        assert_eq!(
            lines[0],
            "Kubernetes cluster reachable. Tenant namespace: paperclip-acme."
        );
        let images = configured_runtime_images(&config);
        assert_eq!(lines.len(), 4 + images.len(), "{lines:?}");
        assert_eq!(
            lines[4],
            runtime_image_valid_line("claude_local", &images[0].1)
        );
        let metadata = result["metadata"].as_object().unwrap();
        let keys: Vec<&str> = metadata.keys().map(String::as_str).collect();
        assert_eq!(keys, ["namespace", "provider", "checks", "adapter"]);
        assert_eq!(metadata["provider"], "kubernetes");
        assert_eq!(
            metadata["adapter"],
            json!({"adapterType": "claude_local", "runtimeImage": images[0].1,
                "probeCommand": ["claude", "--version"]})
        );
        let checks = metadata["checks"].as_array().unwrap();
        let count = needed(Backend::SandboxCr, config.egress_mode).len();
        assert_eq!(checks.len(), 1 + count + 1 + images.len());
        assert!(checks.iter().all(|c| c["ok"] == true));
    }

    #[tokio::test]
    async fn a_failed_check_makes_ok_false_and_counts_in_the_first_line() {
        let config = config(json!({}));
        let cluster = healthy().denying(&["create secrets"]);
        let result = probe_over(&cluster, &config).await;
        assert_eq!(result["ok"], false);
        let total = result["metadata"]["checks"].as_array().unwrap().len();
        assert_eq!(
            lines(&result)[0],
            format!(
                "Kubernetes cluster reachable, but 1 of {total} checks failed. Tenant namespace: paperclip-acme."
            )
        );
        assert!(lines(&result).contains(&"Permission missing: create secrets in namespace paperclip-acme, to each run's Secret with the adapter's keys (pc-<run>-env), deleted with the lease.".to_string()));
        assert!(result["metadata"].get("error").is_none());
    }

    #[tokio::test]
    async fn the_originals_failure_when_the_pod_list_fails_but_a_403_goes_on() {
        let config = config(json!({}));
        let cluster = healthy().script(
            ApiMethod::ListNamespacedPod,
            vec![ScriptedReply::Throws(Error::new(
                401,
                "HTTP-Code: 401\nMessage: Unauthorized",
            ))],
        );
        let result = probe_over(&cluster, &config).await;
        assert_eq!(result["ok"], false);
        assert_eq!(
            result["metadata"]["error"],
            "HTTP-Code: 401\nMessage: Unauthorized"
        );
        let lines = lines(&result);
        assert_eq!(
            lines[0..2],
            [
                "Kubernetes cluster probe failed.",
                "HTTP-Code: 401 Message: Unauthorized"
            ]
        );
        assert_eq!(result["metadata"]["checks"][0]["check"], "apiServer");
        assert_eq!(cluster.calls().len(), 1, "nothing asked after the failure");
        let keys: Vec<&str> = result["metadata"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            ["namespace", "provider", "error", "checks", "adapter"]
        );

        for code in [403, 404] {
            let cluster = healthy()
                .script(
                    ApiMethod::ListNamespacedPod,
                    vec![ScriptedReply::Throws(Error::new(code, "pods"))],
                )
                .denying(if code == 403 { &["list pods"] } else { &[] });
            let result = probe_over(&cluster, &config).await;
            assert_eq!(result["ok"], code == 404, "{result}");
            assert!(result["metadata"].get("error").is_none());
        }
    }

    #[tokio::test]
    async fn a_hung_api_server_is_cut_at_the_bound() {
        let config = config(json!({}));
        let hung = healthy().script(
            ApiMethod::CreateSelfSubjectAccessReview,
            vec![ScriptedReply::Hangs],
        );
        let report = api_bound::with_api_bound(50, reach_and_check(&hung, &config, NS))
            .await
            .unwrap();
        let count = needed(Backend::SandboxCr, config.egress_mode).len();
        assert!(
            report.lines.contains(&format!(
                "Permissions: {count} could not be checked: {}",
                api_bound::api_timeout_message(50)
            )),
            "{:?}",
            report.lines
        );
        let hung = healthy().script(ApiMethod::ListNamespacedPod, vec![ScriptedReply::Hangs]);
        let err = api_bound::with_api_bound(50, reach_and_check(&hung, &config, NS))
            .await
            .unwrap_err();
        assert_eq!(err, api_bound::api_timeout_message(50));
    }

    #[test]
    fn runtime_images_and_the_adapter_are_checked_without_the_cluster() {
        let named = config(json!({"runtimeImages": {"codex_local": "ghcr.io/acme/codex:1"}}));
        let (report, adapter) = local_checks(&named);
        assert_eq!(report.failed(), 0, "{:?}", report.lines);
        assert!(report.lines.contains(&runtime_image_valid_line(
            "codex_local",
            "ghcr.io/acme/codex:1"
        )));
        assert_eq!(adapter.unwrap()["adapterType"], "claude_local");

        let invalid = config(json!({"runtimeImages": {"codex_local": "ghcr.io/Acme/codex:1"}}));
        let (report, _) = local_checks(&invalid);
        assert_eq!(report.failed(), 1, "{:?}", report.lines);
        let bad = report.checks.iter().find(|c| !c.ok).unwrap();
        assert!(
            bad.message.starts_with("Kubernetes runtime image for adapter \"codex_local\" is not a valid image reference: \"ghcr.io/Acme/codex:1\""),
            "{}",
            bad.message
        );
        assert_eq!(bad.details["adapterType"], "codex_local");
    }

    #[test]
    fn the_rbac_binds_the_namespace_the_egress_policy_names() {
        assert_eq!(SERVER_NAMESPACE, super::super::PAPERCLIP_SERVER_NAMESPACE);
    }
}
