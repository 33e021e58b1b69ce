//! The real single-node cluster the tests run against, started once per test process by
//! `scripts/real-cluster/node.sh` and shared by the tests: containerd, kubelet, scheduler, the
//! control plane of `scripts/real-apiserver/control-plane.sh` and the kubernetes-sigs/agent-sandbox
//! controller, with locally built images (no registry).
//!
//! Reuse: [`node`] hands out a started node (its admin kubeconfig, and [`Node::image_config`],
//! the config keys that point the provider at the node's agent image). When the binaries or the
//! images are not in the cache yet, [`node`] builds them first (`scripts/real-cluster/build.sh`,
//! one build, cached outside the repository, with a progress line on stderr saying what and about
//! how long). What cannot be had fails the test with the reason (not root, a missing Debian package:
//! the script names what to install); nothing skips.
//!
//! The script runs until its standard input closes. The pipe to it is held in a static, so it
//! closes when this test process exits however it exits (a failed test, a panic, a signal), and
//! the script then stops every component and restores the host (mounts, cgroups, sysctls,
//! iptables, interfaces).
//!
//! `PAPERCLIP_K8S_TEST_KUBECONFIG` (a kubeconfig file) points the tests at another cluster that
//! has the agent-sandbox controller instead; `PAPERCLIP_K8S_TEST_IMAGE` is then the agent image
//! (it must have `/usr/bin/tini`, `/bin/sh` and the tools of the provider's in-pod scripts).

use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Mutex, OnceLock};

use serde_json::{Value, json};

use crate::support::{repo_root, start_up};

/// A running node (it lives as long as the test process).
pub struct Node {
    /// Admin (`system:masters`) kubeconfig YAML, the CA inline.
    pub kubeconfig: String,
    /// The agent image the node has (imported into containerd, never pulled).
    pub agent_image: String,
    /// The `imageRegistry` under which the claude_local built-in image is the agent image too
    /// (imported under that name by `scripts/real-cluster/images.sh`, never pulled), and that
    /// name (`None` for an external cluster).
    pub agent_registry: Option<String>,
    pub agent_registry_image: Option<String>,
    /// The node's name (`None` for an external cluster).
    pub node_name: Option<String>,
    /// The pod sandbox image the node has (no `/usr/bin/tini`, no `/bin/sh`; `None` for an
    /// external cluster). This and the two below are read by `real_cluster_readiness` and the
    /// readiness bench, not by every target that includes this file.
    #[allow(dead_code)]
    pub pause_image: Option<String>,
    /// The pid of the node's agent-sandbox controller (`None` for an external cluster).
    #[allow(dead_code)]
    pub controller_pid: Option<u32>,
    /// The agent-sandbox release the node runs (`None` for an external cluster).
    #[allow(dead_code)]
    pub agent_sandbox_version: Option<String>,
    /// Held only so that the script's stdin stays open while this process runs.
    _script: Option<Mutex<(Child, ChildStdin)>>,
}

impl Node {
    /// The provider config keys that make the agent pods run the node's image (merge them into
    /// the config): the default adapter's registry entry with `runtimeImage` replaced. Its tag
    /// is not a floating one, so the pull policy is `IfNotPresent` and nothing is pulled.
    pub fn image_config(&self) -> Value {
        json!({"adapters": [{"adapterType": "claude_local", "runtimeImage": self.agent_image}]})
    }

    /// A provider config for this node: the kubeconfig inline, `company_slug`, `backend`, the
    /// image keys of [`Node::image_config`], and `extra` merged over them.
    pub fn provider_config(&self, company_slug: &str, backend: &str, extra: Value) -> Value {
        let mut config = json!({"kubeconfig": self.kubeconfig, "companySlug": company_slug,
            "backend": backend});
        for (key, value) in self
            .image_config()
            .as_object()
            .unwrap()
            .iter()
            .chain(extra.as_object().into_iter().flatten())
        {
            config[key] = value.clone();
        }
        config
    }
}

static NODE: OnceLock<Node> = OnceLock::new();

/// The node, started on first use (built first if needed).
pub async fn node() -> &'static Node {
    tokio::task::spawn_blocking(|| NODE.get_or_init(start))
        .await
        .expect("node start-up did not panic")
}

fn start() -> Node {
    if let Ok(path) = std::env::var("PAPERCLIP_K8S_TEST_KUBECONFIG") {
        let kubeconfig = std::fs::read_to_string(&path).unwrap_or_else(|error| {
            panic!("PAPERCLIP_K8S_TEST_KUBECONFIG={path} is unreadable: {error}")
        });
        let agent_image = std::env::var("PAPERCLIP_K8S_TEST_IMAGE").expect(
            "PAPERCLIP_K8S_TEST_KUBECONFIG is set: PAPERCLIP_K8S_TEST_IMAGE must name the agent \
             image (with /usr/bin/tini, /bin/sh and the tools of the in-pod scripts)",
        );
        return Node {
            kubeconfig,
            agent_image,
            agent_registry: None,
            agent_registry_image: None,
            node_name: None,
            pause_image: None,
            controller_pid: None,
            agent_sandbox_version: None,
            _script: None,
        };
    }
    let script = repo_root().join("scripts/real-cluster/node.sh");
    // Root and the Debian packages, before a build that can take half an hour.
    let check = Command::new("bash")
        .arg(&script)
        .arg("check")
        .output()
        .expect("bash runs scripts/real-cluster/node.sh");
    assert!(
        check.status.success(),
        "the real node cannot run here, so these tests cannot run (they never skip): {}",
        String::from_utf8_lossy(&check.stderr).trim()
    );
    build();
    let (child, stdin, ready) = start_up(
        Command::new("bash")
            .arg(&script)
            .arg("up")
            .env("PAPERCLIP_NODE_NO_BUILD", "1"),
        "the real node's node.sh",
    );
    let kubeconfig_path = ready["kubeconfig"].as_str().expect("a kubeconfig path");
    Node {
        kubeconfig: std::fs::read_to_string(kubeconfig_path).expect("readable kubeconfig"),
        agent_image: ready["images"]["agent"]
            .as_str()
            .expect("the agent image")
            .to_string(),
        agent_registry: ready["images"]["agentRegistry"].as_str().map(String::from),
        agent_registry_image: ready["images"]["agentRegistryImage"]
            .as_str()
            .map(String::from),
        node_name: ready["node"].as_str().map(String::from),
        pause_image: ready["images"]["pause"].as_str().map(String::from),
        controller_pid: ready["pids"]["agentSandboxController"]
            .as_u64()
            .and_then(|pid| u32::try_from(pid).ok()),
        agent_sandbox_version: ready["agentSandboxVersion"].as_str().map(String::from),
        _script: Some(Mutex::new((child, stdin))),
    }
}

/// Builds what is missing (a no-op when all is cached); the build's progress lines go to stderr.
fn build() {
    let script = repo_root().join("scripts/real-cluster/build.sh");
    let status = Command::new("bash")
        .arg(&script)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .status()
        .expect("bash runs scripts/real-cluster/build.sh");
    assert!(
        status.success(),
        "building the real node's binaries and images failed ({status}); the reason is on stderr above"
    );
}
