//! A pod's private root: which directories it gets of its own (`/tmp`, home, `/workspace` and
//! every `volumeMounts` path; the system directories come from the host read-only) and making
//! it under the emulator's work directory.

use serde_json::Value;

use super::spec::containers_of;
use crate::kubernetes::pod_runtime::ContainerEnv;
use crate::kubernetes::state::App;
use crate::kubernetes::store::ObjKey;
use crate::sandbox_runner::SandboxRoot;

/// The private directories of a pod's root with their modes.
fn private_dirs(pod: &Value, envs: &[ContainerEnv]) -> Vec<(String, u32)> {
    let mut dirs: Vec<(String, u32)> = vec![
        ("/tmp".into(), 0o1777),
        ("/root".into(), 0o700),
        ("/workspace".into(), 0o777),
        ("/home".into(), 0o755),
        ("/var/tmp".into(), 0o1777),
        ("/run".into(), 0o755),
    ];
    for c in containers_of(pod) {
        for m in c["volumeMounts"].as_array().into_iter().flatten() {
            if let Some(p) = m["mountPath"].as_str()
                && !p.starts_with("/usr")
                && !p.starts_with("/etc")
                && p != "/"
            {
                let mode = if p == "/tmp" { 0o1777 } else { 0o777 };
                dirs.push((p.to_string(), mode));
            }
        }
    }
    for c in envs {
        if let Some((_, home)) = c.env.iter().find(|(k, _)| k == "HOME")
            && home.starts_with('/')
            && !home.starts_with("/usr")
            && !home.starts_with("/etc")
        {
            dirs.push((home.clone(), 0o777));
        }
    }
    dirs
}

/// Makes the root of pod `key` (uid `uid`); `None` if the blocking task did not finish
/// (the runtime is shutting down), `Some(Err)` if the root could not be made.
pub async fn create_root(
    app: &App,
    key: &ObjKey,
    uid: &str,
    pod: &Value,
    envs: &[ContainerEnv],
) -> Option<std::io::Result<SandboxRoot>> {
    let dirs = private_dirs(pod, envs);
    let path = app
        .work_dir
        .join("pods")
        .join(format!("{}-{}", key.name, &uid[..8]));
    let bwrap = app.bwrap.clone();
    tokio::task::spawn_blocking(move || {
        // `pods/` exists from start-up; if shutdown already removed it, this fails (no leak).
        let borrowed: Vec<(&str, u32)> = dirs.iter().map(|(d, m)| (d.as_str(), *m)).collect();
        SandboxRoot::create(&bwrap, path, &borrowed)
    })
    .await
    .ok()
}
