//! Ending a command whose execute timed out.
//!
//! Kubernetes exec has no kill, and closing the exec's stream ends nothing: a command whose
//! watchdog fired runs on in the pod. So an execute runs its command in a process group of its
//! own, recorded in a pid file under `/tmp` (the agent pod's writable `emptyDir`), and when the
//! call's deadline passes a second, short exec signals that group: `TERM`, then `KILL` after a
//! grace period, then removes the file. A command that ends normally removes its file itself
//! (the wrapper does, after the command).
//!
//! The group comes from `setsid` (busybox and util-linux both have it): the wrapper shell runs
//! it as a foreground child, which is never a process group leader, so `setsid` makes a new
//! session and process group and execs the command in the same process (no fork, no early
//! return), and the shell waits for it and passes its status on (`128 + N` for a signal). An
//! image without `setsid` runs the command without a group of its own, and the file then names
//! the command's pid alone: the kill reaches that process but not what it started.

/// The pid file of one execute: `/tmp/paperclip-exec-<id>.pid`.
pub fn pid_file(id: &str) -> String {
    format!("/tmp/paperclip-exec-{id}.pid")
}

/// How long the kill exec waits between `TERM` and `KILL`, in tenths of a second (2 s).
pub const KILL_GRACE_TENTHS: u32 = 20;

/// The bound of the whole kill exec (connect, `TERM`, the grace period, `KILL`): it can never
/// hold a timed-out execute longer than this.
pub const KILL_EXEC_TIMEOUT_MS: u64 = 5_000;

/// The group wrapper, run as `/bin/sh -c GROUP_SCRIPT /bin/sh <pid file> <argv…>`: runs `argv`
/// in a process group of its own whose id it records in the pid file (as the `kill` target
/// `-<pgid>`; without `setsid`, the pid), and removes the file once the command has ended. Its
/// exit status is the command's. A file that cannot be written does not stop the command.
pub const GROUP_SCRIPT: &str = r#"f=$1; shift; if command -v setsid >/dev/null 2>&1; then setsid /bin/sh -c '{ echo "-$$" > "$1"; } 2>/dev/null; shift; exec "$@"' /bin/sh "$f" "$@"; else /bin/sh -c '{ echo "$$" > "$1"; } 2>/dev/null; shift; exec "$@"' /bin/sh "$f" "$@"; fi; s=$?; rm -f "$f"; exit $s"#;

/// The kill exec's script, run as `/bin/sh -c KILL_SCRIPT /bin/sh <pid file>`: nothing when the
/// file is gone (the command ended); otherwise `TERM` to the recorded group, up to
/// [`KILL_GRACE_TENTHS`] tenths of a second for it to end (whole seconds where `sleep` takes no
/// fraction), `KILL`, and the file removed.
pub const KILL_SCRIPT: &str = r#"f=$1; [ -f "$f" ] || exit 0; t=$(cat "$f"); if [ -n "$t" ]; then kill -TERM "$t" 2>/dev/null; n=0; while [ $n -lt 20 ] && kill -0 "$t" 2>/dev/null; do sleep 0.1 2>/dev/null || { sleep 1; n=$((n+9)); }; n=$((n+1)); done; kill -KILL "$t" 2>/dev/null; fi; rm -f "$f""#;

/// The argv that runs `argv` (sent as it is, after the wrapper's own words) in a group recorded
/// in `pid_file`.
pub fn group_argv(pid_file: &str, argv: &[String]) -> Vec<String> {
    let mut wrapped = vec![
        "/bin/sh".to_string(),
        "-c".into(),
        GROUP_SCRIPT.into(),
        "/bin/sh".into(),
        pid_file.into(),
    ];
    wrapped.extend(argv.iter().cloned());
    wrapped
}

/// The kill exec's argv for the group recorded in `pid_file`.
pub fn kill_argv(pid_file: &str) -> Vec<String> {
    vec![
        "/bin/sh".into(),
        "-c".into(),
        KILL_SCRIPT.into(),
        "/bin/sh".into(),
        pid_file.into(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_argvs_are_exact() {
        let file = pid_file("0b1c");
        assert_eq!(file, "/tmp/paperclip-exec-0b1c.pid");
        let argv: Vec<String> = vec!["sleep".into(), "it's 30".into()];
        let wrapped = group_argv(&file, &argv);
        assert_eq!(
            wrapped[..4],
            ["/bin/sh", "-c", GROUP_SCRIPT, "/bin/sh"].map(String::from)
        );
        assert_eq!(
            wrapped[4..],
            [file.clone(), argv[0].clone(), argv[1].clone()]
        );
        assert_eq!(
            kill_argv(&file),
            ["/bin/sh", "-c", KILL_SCRIPT, "/bin/sh", &file].map(String::from)
        );
        assert!(KILL_SCRIPT.contains(&format!("[ $n -lt {KILL_GRACE_TENTHS} ]")));
    }

    /// The wrapper, run by this machine's `/bin/sh`: the command's argv, stdin, output and
    /// status pass through; it runs as the leader of a group of its own, recorded in the file
    /// while it runs, and the file is gone afterwards.
    #[test]
    fn the_wrapper_runs_the_command_in_a_recorded_group() {
        use std::io::Write;
        use std::process::{Command, Stdio};
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("g.pid").to_str().unwrap().to_string();
        let script = r#"read line; echo "$line|$1|$#"; echo err >&2; echo "$(cut -d' ' -f5 /proc/$$/stat) $$"; cat "$0"; exit 7"#;
        let argv: Vec<String> = ["/bin/sh", "-c", script, &file, "a b"]
            .map(String::from)
            .to_vec();
        let wrapped = group_argv(&file, &argv);
        let mut child = Command::new(&wrapped[0])
            .args(&wrapped[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(b"in\n").unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(7));
        assert_eq!(String::from_utf8_lossy(&out.stderr), "err\n");
        let stdout = String::from_utf8(out.stdout).unwrap();
        let lines: Vec<&str> = stdout.lines().collect();
        assert_eq!(lines[0], "in|a b|1");
        let (pgid, pid) = lines[1].split_once(' ').unwrap();
        assert_eq!(pgid, pid, "the command leads its own group");
        assert_eq!(lines[2], format!("-{pid}"), "the file names the group");
        assert!(!std::path::Path::new(&file).exists(), "the file is removed");
    }
}
