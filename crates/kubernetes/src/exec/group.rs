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

/// The kill exec's argv for several commands of one container at once (worker shutdown ends
/// every execute in flight, [`crate::lease::calls`]), `["/bin/sh", "-c", K]`: K reads the group
/// recorded in each of `pid_files` that is still there, sends them `TERM`, waits up to
/// [`KILL_GRACE_TENTHS`] tenths of a second while any of them lives, sends `KILL` to them all,
/// and removes the files.
pub fn kill_all_argv(pid_files: &[String]) -> Vec<String> {
    let files: Vec<String> = pid_files.iter().map(|f| sh_quote(f)).collect();
    let script = format!(
        r#"t=; for f in {}; do [ -f "$f" ] && t="$t $(cat "$f")"; done; [ -n "$t" ] || exit 0; kill -TERM $t 2>/dev/null; a() {{ for p in $t; do kill -0 "$p" 2>/dev/null && return 0; done; return 1; }}; n=0; while [ $n -lt {KILL_GRACE_TENTHS} ] && a; do sleep 0.1 2>/dev/null || {{ sleep 1; n=$((n+9)); }}; n=$((n+1)); done; kill -KILL $t 2>/dev/null; rm -f {}"#,
        files.join(" "),
        files.join(" ")
    );
    vec!["/bin/sh".into(), "-c".into(), script]
}

/// The directory and name prefix of every pid file ([`pid_file`]): what [`kill_left_argv`] globs.
pub const PID_FILE_PREFIX: &str = "/tmp/paperclip-exec-";

/// The kill exec's argv for the commands other workers left in a container (a new worker
/// resuming a lease after the one that ran them died, issue #38), `["/bin/sh", "-c", K]`: K
/// reads every pid file ([`PID_FILE_PREFIX`]`*.pid`) whose name does not start with
/// `keep_prefix` (this worker's own), takes each recorded target that is a process or group
/// number above 1 (a file with anything else is only removed), sends them `TERM`, waits up to
/// [`KILL_GRACE_TENTHS`] tenths of a second while any of them lives, sends `KILL`, removes
/// those files, and prints the targets it signalled.
pub fn kill_left_argv(keep_prefix: &str) -> Vec<String> {
    kill_left_argv_in(PID_FILE_PREFIX, keep_prefix)
}

/// [`kill_left_argv`] over the pid files named `<prefix>*.pid`.
fn kill_left_argv_in(prefix: &str, keep_prefix: &str) -> Vec<String> {
    let keep = sh_quote(keep_prefix);
    let all = sh_quote(prefix);
    let script = format!(
        r#"t=; for f in {all}*.pid; do case "$f" in {keep}*) continue;; esac; [ -f "$f" ] || continue; p=$(cat "$f" 2>/dev/null); case "${{p#-}}" in ''|*[!0-9]*) ;; *) [ "${{p#-}}" -gt 1 ] && t="$t $p";; esac; done; if [ -n "$t" ]; then kill -TERM $t 2>/dev/null; a() {{ for p in $t; do kill -0 "$p" 2>/dev/null && return 0; done; return 1; }}; n=0; while [ $n -lt {KILL_GRACE_TENTHS} ] && a; do sleep 0.1 2>/dev/null || {{ sleep 1; n=$((n+9)); }}; n=$((n+1)); done; kill -KILL $t 2>/dev/null; fi; for f in {all}*.pid; do case "$f" in {keep}*) continue;; esac; rm -f "$f"; done; echo $t"#
    );
    vec!["/bin/sh".into(), "-c".into(), script]
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use std::process::{Child, Command, Stdio};

    /// `sh -c script` in the group wrapper, recording its group in `pid_file`.
    fn start(pid_file: &str, script: &str) -> Child {
        let argv: Vec<String> = ["/bin/sh", "-c", script].map(String::from).to_vec();
        let wrapped = group_argv(pid_file, &argv);
        Command::new(&wrapped[0])
            .args(&wrapped[1..])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    }

    /// Whether a wrapper has written its group to `file`.
    fn recorded(file: &str) -> bool {
        std::fs::read_to_string(file).is_ok_and(|t| !t.trim().is_empty())
    }

    /// Waits (10 s at most) until every wrapper of `files` has recorded its group.
    fn wait_recorded(files: &[&str]) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !files.iter().all(|f| recorded(f)) {
            assert!(
                std::time::Instant::now() < deadline,
                "the wrappers record their groups"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }

    #[test]
    fn the_argvs_are_exact() {
        let file = pid_file("0b1c");
        assert_eq!(file, "/tmp/paperclip-exec-0b1c.pid");
        let argv: Vec<String> = vec!["sleep".into(), "it's 30".into()];
        let group = r#"g=; command -v setsid >/dev/null 2>&1 && g=setsid; $g /bin/sh -c '{ echo "$1$$" > '\''/tmp/paperclip-exec-0b1c.pid'\''; } 2>/dev/null; exec '\''sleep'\'' '\''it'\''\'\'''\''s 30'\''' /bin/sh "${g:+-}"; s=$?; rm -f '/tmp/paperclip-exec-0b1c.pid'; exit $s"#;
        assert_eq!(group_argv(&file, &argv), ["/bin/sh", "-c", group]);
        let kill = r#"f='/tmp/paperclip-exec-0b1c.pid'; [ -f "$f" ] || exit 0; t=$(cat "$f"); if [ -n "$t" ]; then kill -TERM "$t" 2>/dev/null; n=0; while [ $n -lt 20 ] && kill -0 "$t" 2>/dev/null; do sleep 0.1 2>/dev/null || { sleep 1; n=$((n+9)); }; n=$((n+1)); done; kill -KILL "$t" 2>/dev/null; fi; rm -f "$f""#;
        assert_eq!(kill_argv(&file), ["/bin/sh", "-c", kill]);
        let all = r#"t=; for f in '/a.pid' '/b c.pid'; do [ -f "$f" ] && t="$t $(cat "$f")"; done; [ -n "$t" ] || exit 0; kill -TERM $t 2>/dev/null; a() { for p in $t; do kill -0 "$p" 2>/dev/null && return 0; done; return 1; }; n=0; while [ $n -lt 20 ] && a; do sleep 0.1 2>/dev/null || { sleep 1; n=$((n+9)); }; n=$((n+1)); done; kill -KILL $t 2>/dev/null; rm -f '/a.pid' '/b c.pid'"#;
        assert_eq!(
            kill_all_argv(&["/a.pid".into(), "/b c.pid".into()]),
            ["/bin/sh", "-c", all]
        );
    }

    /// The shutdown kill, run by this machine's `/bin/sh` on two wrapped commands (one of them
    /// deaf to `TERM`) and a pid file whose command already ended: both groups end, every file
    /// is removed.
    #[test]
    fn the_kill_of_several_commands_ends_every_group() {
        let dir = tempfile::tempdir().unwrap();
        let file = |n: &str| dir.path().join(n).to_str().unwrap().to_string();
        let (a, b, gone) = (file("a.pid"), file("b.pid"), file("gone.pid"));
        let mut first = start(&a, "sleep 300 & sleep 301");
        let mut second = start(&b, "trap '' TERM; while :; do sleep 1; done");
        wait_recorded(&[&a, &b]);
        let argv = kill_all_argv(&[a.clone(), b.clone(), gone]);
        let status = Command::new(&argv[0]).args(&argv[1..]).status().unwrap();
        assert!(status.success());
        // Both wrappers pass on their command's end by a signal.
        assert_eq!(first.wait().unwrap().code(), Some(128 + 15));
        assert_eq!(second.wait().unwrap().code(), Some(128 + 9));
        assert!(!Path::new(&a).exists() && !Path::new(&b).exists());
    }

    /// The resume's kill, run by this machine's `/bin/sh` over a directory of its own: the
    /// groups recorded by other workers end (one of them deaf to `TERM`), this worker's own
    /// command runs on, and a file naming no group (or pid 1) is only removed.
    #[test]
    fn the_kill_of_what_other_workers_left_spares_this_workers_commands() {
        let dir = tempfile::tempdir().unwrap();
        let prefix = format!("{}/paperclip-exec-", dir.path().to_str().unwrap());
        let file = |n: &str| format!("{prefix}{n}.pid");
        let (old_a, old_b, mine) = (file("w1-a"), file("w2-b"), file("me-c"));
        let (bogus, init) = (file("w1-x"), file("w1-y"));
        std::fs::write(&bogus, "-1; rm -rf /\n").unwrap();
        std::fs::write(&init, "-1\n").unwrap();
        let mut first = start(&old_a, "sleep 300 & sleep 301");
        let mut second = start(&old_b, "trap '' TERM; while :; do sleep 1; done");
        let mut own = start(&mine, "sleep 302");
        wait_recorded(&[&old_a, &old_b, &mine]);
        let argv = kill_left_argv_in(&prefix, &format!("{prefix}me-"));
        let out = Command::new(&argv[0]).args(&argv[1..]).output().unwrap();
        assert!(out.status.success());
        let said = String::from_utf8(out.stdout).unwrap();
        assert_eq!(said.split_whitespace().count(), 2, "{said}");
        assert_eq!(first.wait().unwrap().code(), Some(128 + 15));
        assert_eq!(second.wait().unwrap().code(), Some(128 + 9));
        for gone in [&old_a, &old_b, &bogus, &init] {
            assert!(!Path::new(gone).exists(), "{gone}");
        }
        assert!(
            own.try_wait().unwrap().is_none(),
            "this worker's command runs on"
        );
        assert!(recorded(&mine));
        let argv = kill_argv(&mine);
        assert!(
            Command::new(&argv[0])
                .args(&argv[1..])
                .status()
                .unwrap()
                .success()
        );
        assert_eq!(own.wait().unwrap().code(), Some(128 + 15));
        assert_eq!(
            kill_left_argv("/tmp/paperclip-exec-w-")[2],
            kill_left_argv_in(PID_FILE_PREFIX, "/tmp/paperclip-exec-w-")[2]
        );
    }

    /// The wrapper, run by this machine's `/bin/sh`: the command's argv, stdin, output and
    /// status pass through; it runs as the leader of a group of its own, recorded in the file
    /// while it runs, and the file is gone afterwards.
    #[test]
    fn the_wrapper_runs_the_command_in_a_recorded_group() {
        use std::io::Write;
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
