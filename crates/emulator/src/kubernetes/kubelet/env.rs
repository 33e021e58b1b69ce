//! What a container runs with, as the kubelet resolves it: its environment from `env` and
//! `envFrom` (Secrets decoded; a missing one is a `CreateContainerConfigError`), its working
//! directory, and its argv with the configured command overrides.

use base64::Engine;
use serde_json::Value;

use super::spec::containers_of;
use crate::kubernetes::pod_runtime::ContainerEnv;
use crate::kubernetes::state::App;
use crate::kubernetes::store::ObjKey;

pub const PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// `tini -- cmd…` → `cmd…`, then the configured argv[0] overrides.
pub fn effective_argv(app: &App, argv: Vec<String>) -> Vec<String> {
    let mut argv = argv;
    if argv.len() >= 2 && argv[0].rsplit('/').next() == Some("tini") && argv[1] == "--" {
        argv.drain(..2);
    }
    let overrides = app.settings().command_overrides;
    if let Some(first) = argv.first()
        && let Some(repl) = overrides.get(first)
    {
        let mut out = repl.clone();
        out.extend(argv.into_iter().skip(1));
        return out;
    }
    argv
}

/// Every container's context, or why one cannot start yet.
pub fn container_envs(app: &App, ns: &str, pod: &Value) -> Result<Vec<ContainerEnv>, ConfigError> {
    containers_of(pod)
        .iter()
        .map(|c| {
            let mut argv = str_list(&c["command"]);
            argv.extend(str_list(&c["args"]));
            Ok(ContainerEnv {
                name: c["name"].as_str().unwrap_or_default().to_string(),
                env: resolve_env(app, ns, pod, c)?,
                cwd: c["workingDir"].as_str().unwrap_or("/").to_string(),
                argv,
            })
        })
        .collect()
}

fn str_list(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Why a container cannot start yet (`CreateContainerConfigError`).
pub type ConfigError = String;

fn decode_secret(v: &Value) -> String {
    let raw = v.as_str().unwrap_or_default();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(raw)
        .unwrap_or_default();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Resolves `env` and `envFrom` like the kubelet (later entries win; `envFrom` first).
fn resolve_env(
    app: &App,
    ns: &str,
    pod: &Value,
    c: &Value,
) -> Result<Vec<(String, String)>, ConfigError> {
    let mut out: Vec<(String, String)> = vec![("PATH".into(), PATH.into())];
    let mut set = |k: String, v: String| {
        out.retain(|(key, _)| *key != k);
        out.push((k, v));
    };
    let lookup = |plural: &str, name: &str| app.store.get(&ObjKey::new("", plural, ns, name));
    if let Some(Value::Array(from)) = c.get("envFrom") {
        for src in from {
            let prefix = src["prefix"].as_str().unwrap_or_default();
            for (plural, field, is_secret) in [
                ("secrets", "secretRef", true),
                ("configmaps", "configMapRef", false),
            ] {
                let Some(r) = src.get(field) else { continue };
                let name = r["name"].as_str().unwrap_or_default();
                match lookup(plural, name) {
                    Some(obj) => {
                        if let Some(Value::Object(data)) = obj.get("data") {
                            for (k, v) in data {
                                let value = if is_secret {
                                    decode_secret(v)
                                } else {
                                    v.as_str().unwrap_or_default().to_string()
                                };
                                set(format!("{prefix}{k}"), value);
                            }
                        }
                    }
                    None if r["optional"] == true => {}
                    None => {
                        let what = if is_secret { "secret" } else { "configmap" };
                        return Err(format!("{what} \"{name}\" not found"));
                    }
                }
            }
        }
    }
    if let Some(Value::Array(env)) = c.get("env") {
        for e in env {
            let name = e["name"].as_str().unwrap_or_default().to_string();
            if let Some(v) = e.get("value").and_then(Value::as_str) {
                set(name, v.to_string());
                continue;
            }
            let Some(from) = e.get("valueFrom") else {
                set(name, String::new());
                continue;
            };
            for (plural, field, is_secret) in [
                ("secrets", "secretKeyRef", true),
                ("configmaps", "configMapKeyRef", false),
            ] {
                let Some(r) = from.get(field) else { continue };
                let obj_name = r["name"].as_str().unwrap_or_default();
                let key = r["key"].as_str().unwrap_or_default();
                let value = lookup(plural, obj_name).and_then(|o| o["data"].get(key).cloned());
                match value {
                    Some(v) if is_secret => set(name.clone(), decode_secret(&v)),
                    Some(v) => set(name.clone(), v.as_str().unwrap_or_default().to_string()),
                    None if r["optional"] == true => {}
                    None => {
                        let what = if is_secret { "secret" } else { "configmap" };
                        return Err(format!("couldn't find key {key} in {what} {ns}/{obj_name}"));
                    }
                }
            }
            if let Some(f) = from.get("fieldRef") {
                let path = format!(
                    "/{}",
                    f["fieldPath"]
                        .as_str()
                        .unwrap_or_default()
                        .replace('.', "/")
                );
                let v = pod
                    .pointer(&path)
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                set(name.clone(), v.to_string());
            }
        }
    }
    if !out.iter().any(|(k, _)| k == "HOME") {
        out.push(("HOME".into(), "/root".into()));
    }
    Ok(out)
}
