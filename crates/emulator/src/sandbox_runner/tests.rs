//! The runner against the real bwrap: commands joining a container's pid namespace.

use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::time::timeout;

use super::bwrap::Bwrap;
use super::root::SandboxRoot;
use super::spawn::{IoMode, LaunchSpec, LaunchedIo};

/// Every wait here ends well before this, or the test fails saying which.
const DEADLINE: Duration = Duration::from_secs(20);

/// A command that joined a container's namespace carries no parent-death signal, so the exit of
/// the bwrap process above it cannot kill it: it dies with its namespace, as a `kubectl exec`'s
/// process does with its container.
///
/// Why it matters: to enter the namespace bwrap forks an intermediate child that exits at once.
/// With `--die-with-parent` a command that set its parent-death signal before that child was
/// gone was SIGKILLed by its exit, at a random point of its run: under load one `echo ok` in a
/// burst of 200 execs ended 137 with its output written, and a pod's main command died in its
/// first milliseconds (the kills traced to the exiting intermediate child). That scheduling
/// cannot be forced in a test; what decides it can: whether the command dies when the process
/// it set the signal against (here bwrap itself, killed on purpose) exits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_in_a_joined_namespace_outlives_its_bwrap_and_dies_with_the_namespace() {
    let bwrap = Bwrap::locate().expect("bubblewrap must work here: the emulators run on it");
    let dir = tempfile::tempdir().unwrap();
    let root = SandboxRoot::create(&bwrap, dir.path().join("root"), &[("/tmp", 0o1777)]).unwrap();
    let path = vec![("PATH".to_string(), "/usr/bin:/bin".to_string())];
    let mut ns = bwrap
        .spawn_pid_namespace(root.path(), "joined", &path)
        .unwrap();
    let spec = LaunchSpec {
        root: root.path(),
        hostname: "joined",
        cwd: "/",
        env: path.clone(),
        argv: vec!["sh".into(), "-c".into(), "echo started; exec cat".into()],
        io: IoMode::Pipes { stdin: true },
    };
    let launched = bwrap.launch_in(spec, Some(ns.fd())).unwrap();
    let LaunchedIo::Pipes {
        stdin: Some(mut stdin),
        stdout,
        ..
    } = launched.io
    else {
        unreachable!("pipes with stdin were asked for")
    };
    let mut stdout = BufReader::new(stdout).lines();
    let mut next_line = async || {
        timeout(DEADLINE, stdout.next_line())
            .await
            .expect("the command answers within the deadline")
            .unwrap()
    };
    assert_eq!(next_line().await.as_deref(), Some("started"));

    // Only bwrap, the launcher: not the command's session.
    let bwrap_pid = launched.tree.leader_pid();
    kill(Pid::from_raw(bwrap_pid), Signal::SIGKILL).unwrap();
    let mut child = launched.child;
    timeout(DEADLINE, launched.tree.wait(&mut child))
        .await
        .expect("a killed bwrap is reaped within the deadline");

    stdin.write_all(b"still here\n").await.unwrap();
    assert_eq!(
        next_line().await.as_deref(),
        Some("still here"),
        "the command died with its bwrap: it was launched with a parent-death signal"
    );

    // The namespace's end takes it: its output ends.
    ns.kill();
    assert_eq!(next_line().await, None);
}
