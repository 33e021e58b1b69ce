//! The real control planes the tests run against: one per agent-sandbox CRD shape (and one
//! without agent-sandbox), each started once per test process by
//! `scripts/real-apiserver/control-plane.sh` and shared by the tests.
//!
//! The script keeps running until its standard input closes. The pipe to it is held in a
//! static, so it closes when this test process exits, however it exits (a failed test, a
//! panic, a signal), and the script then stops etcd, kube-apiserver and
//! kube-controller-manager by pid. The binaries come from `scripts/real-apiserver/build.sh`:
//! when they are not in its cache yet, the first test builds them (one build, cached outside
//! the repository, a progress line on stderr; `.ci/run` builds them ahead); a build that cannot
//! be done fails the tests with the reason, it never skips them.

use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Mutex, OnceLock};

use crate::support::{repo_root, start_up};

/// Which published shape of the agent-sandbox `Sandbox` CRD the control plane has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// agent-sandbox v0.4.x: `v1alpha1` served and stored.
    V04,
    /// agent-sandbox v0.5.x: `v1beta1` stored, `v1alpha1` only through a conversion webhook
    /// that does not exist here.
    V05,
    /// No agent-sandbox at all (a cluster it was never installed on): only Cilium's CRD.
    WithoutAgentSandbox,
}

impl Shape {
    fn crd_file(self) -> Option<&'static str> {
        match self {
            Shape::V04 => Some("agent-sandbox-v0.4.yaml"),
            Shape::V05 => Some("agent-sandbox-v0.5.yaml"),
            Shape::WithoutAgentSandbox => None,
        }
    }

    /// The Sandbox API version the provider must discover on this shape.
    pub fn sandbox_version(self) -> &'static str {
        match self {
            Shape::V04 => "v1alpha1",
            Shape::V05 => "v1beta1",
            Shape::WithoutAgentSandbox => panic!("no Sandbox API without agent-sandbox"),
        }
    }
}

/// A running control plane (it lives as long as the test process).
pub struct ControlPlane {
    /// Admin (`system:masters`) kubeconfig YAML, the CA inline.
    pub kubeconfig: String,
    /// Kubeconfig of `paperclip-limited`, a user RBAC grants nothing.
    pub limited_kubeconfig: String,
    /// Held only so that the script's stdin stays open while this process runs.
    _script: Mutex<(Child, ChildStdin)>,
}

static V04: OnceLock<ControlPlane> = OnceLock::new();
static V05: OnceLock<ControlPlane> = OnceLock::new();
static WITHOUT_AGENT_SANDBOX: OnceLock<ControlPlane> = OnceLock::new();

/// The control plane of `shape`, started on first use (blocking: call it from
/// `spawn_blocking`, or through [`control_plane`]).
fn get_blocking(shape: Shape) -> &'static ControlPlane {
    let cell = match shape {
        Shape::V04 => &V04,
        Shape::V05 => &V05,
        Shape::WithoutAgentSandbox => &WITHOUT_AGENT_SANDBOX,
    };
    cell.get_or_init(|| start(shape))
}

/// The control plane of `shape`, started on first use.
pub async fn control_plane(shape: Shape) -> &'static ControlPlane {
    tokio::task::spawn_blocking(move || get_blocking(shape))
        .await
        .expect("control plane start-up did not panic")
}

pub fn crd_path(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/real_apiserver/crds")
        .join(file)
}

/// The directory holding the three binaries, built first if they are not cached (the build's
/// progress and any failure's reason go to stderr).
fn bin_dir() -> PathBuf {
    let script = repo_root().join("scripts/real-apiserver/build.sh");
    let out = Command::new("bash")
        .arg(&script)
        .stderr(Stdio::inherit())
        .output()
        .expect("bash runs scripts/real-apiserver/build.sh");
    assert!(
        out.status.success(),
        "the real control plane could not be built, so these tests cannot run (they never skip); \
         the reason is on stderr above"
    );
    PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
}

fn start(shape: Shape) -> ControlPlane {
    let bin = bin_dir();
    let script = repo_root().join("scripts/real-apiserver/control-plane.sh");
    let mut command = Command::new("bash");
    command
        .arg(&script)
        .arg("up")
        .arg("--crd")
        .arg(crd_path("cilium-network-policy.yaml"));
    if let Some(file) = shape.crd_file() {
        command.arg("--crd").arg(crd_path(file));
    }
    let (child, stdin, ready) = start_up(
        command.env("KUBE_BIN_DIR", &bin),
        &format!("control-plane.sh ({shape:?})"),
    );
    let read = |key: &str| {
        let path = ready[key].as_str().expect("a kubeconfig path");
        std::fs::read_to_string(path).expect("readable kubeconfig")
    };
    ControlPlane {
        kubeconfig: read("kubeconfig"),
        limited_kubeconfig: read("limitedKubeconfig"),
        _script: Mutex::new((child, stdin)),
    }
}
