//! How the fault tests of `real_cluster_faults` reach into the node: its processes found by
//! name (a stopped process is frozen with SIGSTOP and continued by a guard), the API server made
//! unreachable by iptables rules on loopback addresses only (deleted by a guard), and
//! `node.sh restart` (a component stopped and started again by the running node), and a slow
//! proxy in front of the API server (a worker killed between a request's effect and its answer).

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::node::node;
use crate::support;

// --- the node's processes -------------------------------------------------------------------

/// The pids whose `comm` is `name` and whose command line contains `needle`.
pub fn pids_of(name: &str, needle: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if comm.trim_end() == name && cmdline.contains(needle) {
            found.push(pid);
        }
    }
    found
}

pub fn the_one(name: &str, needle: &str) -> u32 {
    let pids = pids_of(name, needle);
    assert_eq!(pids.len(), 1, "{name} with {needle:?}: {pids:?}");
    pids[0]
}

/// The node's API server port, from its kubeconfig.
pub fn api_port(kubeconfig: &str) -> u16 {
    let server = kubeconfig
        .lines()
        .find_map(|l| l.trim().strip_prefix("server: "))
        .expect("a server in the kubeconfig");
    server.rsplit(':').next().unwrap().parse().unwrap()
}

pub fn apiserver_pid(port: u16) -> u32 {
    the_one("kube-apiserver", &format!("--secure-port {port} "))
}

/// etcd: the control plane's (the API server's parent started both).
pub fn etcd_pid(apiserver: u32) -> u32 {
    let parent = ppid(apiserver);
    let pids: Vec<u32> = pids_of("etcd", "--data-dir")
        .into_iter()
        .filter(|pid| ppid(*pid) == parent)
        .collect();
    assert_eq!(
        pids.len(),
        1,
        "etcd beside kube-apiserver {apiserver}: {pids:?}"
    );
    pids[0]
}

pub fn ppid(pid: u32) -> u32 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // (the fields after the command name, which is in parentheses)
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    after.split(' ').nth(1).unwrap().parse().unwrap()
}

/// `kill -NAME pid`; whether it was sent.
pub fn signal(name: &str, pid: u32) -> bool {
    Command::new("kill")
        .arg(format!("-{name}"))
        .arg(pid.to_string())
        .status()
        .is_ok_and(|status| status.success())
}

/// A stopped process, continued when dropped whatever the test did.
pub struct Stopped(u32);

impl Stopped {
    pub fn stop(pid: u32) -> Stopped {
        assert!(signal("STOP", pid), "kill -STOP {pid}");
        Stopped(pid)
    }
}

/// (never a panic in a drop, which may run while a failed test unwinds)
impl Drop for Stopped {
    fn drop(&mut self) {
        signal("CONT", self.0);
    }
}

/// Loopback packets to and from the API server's port dropped (local addresses only), the
/// rules deleted when dropped.
pub struct Unreachable(u16);

impl Unreachable {
    fn rules(port: u16) -> [Vec<String>; 2] {
        ["--dport", "--sport"].map(|which| {
            [
                "INPUT",
                "-i",
                "lo",
                "-s",
                "127.0.0.1",
                "-d",
                "127.0.0.1",
                "-p",
                "tcp",
                which,
            ]
            .iter()
            .map(|s| s.to_string())
            .chain([port.to_string(), "-j".into(), "DROP".into()])
            .collect()
        })
    }

    pub fn start(port: u16) -> Unreachable {
        let guard = Unreachable(port);
        for rule in Self::rules(port) {
            assert!(iptables("-I", &rule), "iptables -I {rule:?}");
        }
        guard
    }
}

/// (never a panic in a drop; node.sh's teardown restores iptables should a rule stay)
impl Drop for Unreachable {
    fn drop(&mut self) {
        for rule in Self::rules(self.0) {
            iptables("-D", &rule);
        }
    }
}

/// `iptables -w OP RULE…`; whether it succeeded.
pub fn iptables(op: &str, rule: &[String]) -> bool {
    Command::new("iptables")
        .args(["-w", op])
        .args(rule)
        .status()
        .is_ok_and(|status| status.success())
}

// --- restarts (node.sh restart) -----------------------------------------------------------------

/// The running node's directory (node.sh records it in /run for the next start's cleanup; one
/// node at a time on a host), checked to be this process's node by its admin kubeconfig.
pub fn node_dir(kubeconfig: &str) -> PathBuf {
    let dir = std::fs::read_to_string("/run/paperclip-real-node.dir")
        .expect("node.sh records the running node's directory");
    let dir = PathBuf::from(dir.trim());
    let own = std::fs::read_to_string(dir.join("control-plane/admin.kubeconfig")).unwrap();
    assert_eq!(
        own,
        kubeconfig,
        "{} is not this process's node",
        dir.display()
    );
    dir
}

/// `node.sh restart NAME DIR --down SECS`: NAME stopped, kept down, started again (on a thread:
/// it takes as long as the fault lasts).
pub async fn restart(name: &'static str, down_secs: u64) {
    let dir = node_dir(&node().await.kubeconfig);
    let script = support::repo_root().join("scripts/real-cluster/node.sh");
    let output = tokio::task::spawn_blocking(move || {
        Command::new("bash")
            .arg(&script)
            .args(["restart", name])
            .arg(&dir)
            .args(["--down", &down_secs.to_string()])
            .output()
            .expect("bash runs node.sh")
    })
    .await
    .unwrap();
    assert!(
        output.status.success(),
        "node.sh restart {name}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A TCP forwarder on 127.0.0.1 to the API server's `port` that holds back every chunk the
/// server sends for `delay`: a worker connected through it gets each answer late, so that it
/// can be killed after a request took effect and before it learnt so. Its port; it forwards
/// until the test process ends.
pub async fn slow_proxy(port: u16, delay: Duration) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let local = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            tokio::spawn(async move {
                let Ok(server) = TcpStream::connect(("127.0.0.1", port)).await else {
                    return;
                };
                let (mut from_client, mut to_client) = client.into_split();
                let (mut from_server, mut to_server) = server.into_split();
                let up = tokio::io::copy(&mut from_client, &mut to_server);
                let down = async {
                    let mut buf = vec![0u8; 64 * 1024];
                    while let Ok(n @ 1..) = from_server.read(&mut buf).await {
                        tokio::time::sleep(delay).await;
                        if to_client.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                };
                let _ = tokio::join!(up, down);
            });
        }
    });
    local
}
