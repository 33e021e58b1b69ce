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
//! session and process group and execs an inner shell in the same process (no fork, no early
//! return), which records its pid and execs the command; the wrapper waits for it and passes
//! its status on (`128 + N` for a signal). An image without `setsid` runs the command without a
//! group of its own, and the file then names the command's pid alone: the kill reaches that
//! process but not what it started.

use super::command::sh_quote;

/// The pid file of one execute: `/tmp/paperclip-exec-<id>.pid`.
pub fn pid_file(id: &str) -> String {
    format!("/tmp/paperclip-exec-{id}.pid")
}

/// How long the kill exec waits between `TERM` and `KILL`, in tenths of a second (2 s).
pub const KILL_GRACE_TENTHS: u32 = 20;

/// The bound of the whole kill exec (connect, `TERM`, the grace period, `KILL`): it can never
/// hold a timed-out execute longer than this.
pub const KILL_EXEC_TIMEOUT_MS: u64 = 5_000;

/// The group wrapper's argv, `["/bin/sh", "-c", W]`: W runs `argv` (the original's whole
/// argv, each word quoted as `shQuote` quotes it) in a process group of its own whose id it
/// records in `pid_file` (as the `kill` target `-<pgid>`; without `setsid`, the pid), and
/// removes the file once the command has ended. Its exit status is the command's. A file that
/// cannot be written does not stop the command. W takes no arguments of its own, so any
/// `sh -c <script>` runs it.
///
/// `W = g=; command -v setsid >/dev/null 2>&1 && g=setsid; $g /bin/sh -c S /bin/sh "${g:+-}"; s=$?; rm -f 'F'; exit $s`,
/// `S` being `{ echo "$1$$" > 'F'; } 2>/dev/null; exec 'argv0' 'argv1' …`, quoted.
pub fn group_argv(pid_file: &str, argv: &[String]) -> Vec<String> {
    let file = sh_quote(pid_file);
    let words: Vec<String> = argv.iter().map(|a| sh_quote(a)).collect();
    let inner = format!(
        r#"{{ echo "$1$$" > {file}; }} 2>/dev/null; exec {}"#,
        words.join(" ")
    );
    let script = format!(
        r#"g=; command -v setsid >/dev/null 2>&1 && g=setsid; $g /bin/sh -c {} /bin/sh "${{g:+-}}"; s=$?; rm -f {file}; exit $s"#,
        sh_quote(&inner)
    );
    vec!["/bin/sh".into(), "-c".into(), script]
}

/// The kill exec's argv for the group recorded in `pid_file`, `["/bin/sh", "-c", K]`: K does
/// nothing when the file is gone (the command ended); otherwise it sends `TERM` to the recorded
/// group, waits up to [`KILL_GRACE_TENTHS`] tenths of a second for it to end (whole seconds where
/// `sleep` takes no fraction), sends `KILL`, and removes the file.
pub fn kill_argv(pid_file: &str) -> Vec<String> {
    let script = format!(
        r#"f={}; [ -f "$f" ] || exit 0; t=$(cat "$f"); if [ -n "$t" ]; then kill -TERM "$t" 2>/dev/null; n=0; while [ $n -lt {KILL_GRACE_TENTHS} ] && kill -0 "$t" 2>/dev/null; do sleep 0.1 2>/dev/null || {{ sleep 1; n=$((n+9)); }}; n=$((n+1)); done; kill -KILL "$t" 2>/dev/null; fi; rm -f "$f""#,
        sh_quote(pid_file)
    );
    vec!["/bin/sh".into(), "-c".into(), script]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_argvs_are_exact() {
        let file = pid_file("0b1c");
        assert_eq!(file, "/tmp/paperclip-exec-0b1c.pid");
        let argv: Vec<String> = vec!["sleep".into(), "it's 30".into()];
        let group = r#"g=; command -v setsid >/dev/null 2>&1 && g=setsid; $g /bin/sh -c '{ echo "$1$$" > '\''/tmp/paperclip-exec-0b1c.pid'\''; } 2>/dev/null; exec '\''sleep'\'' '\''it'\''\'\'''\''s 30'\''' /bin/sh "${g:+-}"; s=$?; rm -f '/tmp/paperclip-exec-0b1c.pid'; exit $s"#;
        assert_eq!(group_argv(&file, &argv), ["/bin/sh", "-c", group]);
        let kill = r#"f='/tmp/paperclip-exec-0b1c.pid'; [ -f "$f" ] || exit 0; t=$(cat "$f"); if [ -n "$t" ]; then kill -TERM "$t" 2>/dev/null; n=0; while [ $n -lt 20 ] && kill -0 "$t" 2>/dev/null; do sleep 0.1 2>/dev/null || { sleep 1; n=$((n+9)); }; n=$((n+1)); done; kill -KILL "$t" 2>/dev/null; fi; rm -f "$f""#;
        assert_eq!(kill_argv(&file), ["/bin/sh", "-c", kill]);
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
