//! Ending an execute's command whose deadline passed.
//!
//! The original aborts the NDJSON stream of `POST /sandboxes/{id}/exec?stream=true` and sends
//! nothing more. What the service then does to the command is not documented (the vendor's
//! client only says it cancels the body "so the server-side command … is torn down"), so a
//! timed-out command may run on in the sandbox, holding its files, ports and locks when the
//! agent retries. This provider ends it itself, with one more request.
//!
//! **Why not the process API.** `DELETE /sandboxes/{id}/processes/{pid}?grace_ms=…` ends a
//! managed process's tree, but only a command started as a managed process has a `pid`: the
//! streaming exec returns none, and the vendor's client (`@nodeops-createos/sandbox` 0.7.1,
//! whose wire types its maintainers check against the live control plane) defines the exec
//! request as `{cmd, args, stream}` and does not model `/processes` at all. Running every
//! command as a managed process would change every execute on the wire (create, connect,
//! stdin close, delete: more requests, each spaced 300 ms by the pacer) and would pass its
//! output through the service's process journal, which evicts output a slow reader has not
//! fetched yet; v0.3.0 moved ordinary commands off that path to the streaming exec.
//!
//! **Why not quite the Kubernetes way.** There a second exec signals a process group recorded
//! in a pid file. That needs the second exec to see the first one's processes, which nothing
//! documents for CreateOS (our emulator runs each command in a pid namespace of its own). What
//! the provider already relies on is that the commands of one sandbox share its files (stdin
//! and sync archives are staged in `/tmp` by the files API and read by an exec). So the kill
//! is done from inside the command's own exec, by a watcher that the second exec wakes through
//! a FIFO in `/tmp`: both requests are the exec the pinned client defines.
//!
//! The command's script (the original's, unchanged) runs inside the wrapper [`wrap`] makes, as
//! `bash -lc` ran it before:
//!
//! - the wrapper makes the FIFO `/tmp/paperclip-exec-<uuid>` under a private name, starts the
//!   watcher reading it, holds it open, and only then gives it its public name (`ln`, which
//!   fails if the name exists: an [`end_script`] that came first left it there, and the command
//!   is not started);
//! - it runs the script as a job of its own (`set -m`: a process group whose id is the job's
//!   pid, so the watcher can signal everything it starts), tells the watcher that pid, and
//!   waits for it. The job sees the original's stdin, output, directory, environment (`SHLVL`
//!   as the original's `exec` left it) and exit status (`128 + N` for a signal, as `bash`
//!   reports it);
//! - the watcher, in a group of its own, waits for one line: `done` (the command ended: it
//!   exits), `kill` (the second request), or the end of the FIFO (every writer gone: the
//!   wrapper was killed from outside, which is how the original's command ended when the
//!   service tore its exec down). On the last two it sends `TERM` to the command's group, waits
//!   up to [`KILL_GRACE_TENTHS`] tenths of a second for it to end, sends `KILL`, and removes the
//!   FIFO.
//!
//! When the execute's deadline passes, [`end_command`] sends one one-shot exec,
//! `/bin/bash -c` [`end_script`], bounded by [`END_REQUEST_TIMEOUT_MS`]: it writes `kill` into
//! the FIFO and removes it (nothing waits for the command: the watcher ends it in the sandbox).
//! If there is no FIFO yet, it leaves one in its place for up to [`TOMBSTONE_TENTHS`] tenths of
//! a second, so that a wrapper starting late does not run the command; then removes it. The
//! answer of the execute is the one it always was; the second request's outcome changes
//! nothing. Without `mkfifo` or `ln` in the image, or without a writable `/tmp`, the command
//! runs as before and cannot be ended this way.

use reqwest::Method;
use serde_json::json;

use super::script::shell_quote;
use crate::client::{CreateOsClient, identifier_str};
use crate::error::Result;
use crate::signal::Signal;

/// How long the watcher waits between `TERM` and `KILL`, in tenths of a second (2 s).
pub const KILL_GRACE_TENTHS: u32 = 20;

/// How long the second request keeps the FIFO's name taken when it finds no FIFO, in tenths
/// of a second (1 s).
pub const TOMBSTONE_TENTHS: u32 = 10;

/// The bound of the second request (the pacer's turn included): a timed-out execute answers
/// at most this long after its deadline.
pub const END_REQUEST_TIMEOUT_MS: u64 = 5_000;

/// The FIFO of one command: `/tmp/paperclip-exec-<id>`.
pub fn control_path(id: &str) -> String {
    format!("/tmp/paperclip-exec-{id}")
}

/// The watcher's script (see the module docs); `$f` and `$p` are the FIFO's public and private
/// names, `$c` the command's pid and group.
fn watcher() -> String {
    [
        "c=; k=; while read -r l; do case $l in done) exit 0 ;; kill) k=1 ;; *) c=$l ;; esac;",
        r#"[ -n "$k" ] && [ -n "$c" ] && break; done; [ -n "$c" ] || exit 0;"#,
        r#"kill -TERM -"$c"; n=0;"#,
        &format!(
            r#"while [ $n -lt {KILL_GRACE_TENTHS} ] && kill -0 -"$c"; do sleep 0.1; n=$((n+1)); done;"#
        ),
        r#"kill -0 -"$c" && kill -KILL -"$c"; rm -f -- "$f" "$p""#,
    ]
    .join(" ")
}

/// `script` (a wrapper script as `command_script` builds it) run so that [`end_script`] for
/// `control` can end it: the text sent as `bash -lc`'s script.
pub fn wrap(script: &str, control: &str) -> Result<String> {
    let control = shell_quote(control)?;
    Ok([
        &format!(r#"f={control}; p="$f.new"; w="#),
        r#"if mkfifo -m 600 -- "$p" 2>/dev/null; then"#,
        &format!(
            r#"set -m; {{ {}; }} <"$p" >/dev/null 2>&1 & set +m"#,
            watcher()
        ),
        r#"exec 9>"$p" 9<>"$p""#,
        r#"if ln -- "$p" "$f" 2>/dev/null; then w=1; elif [ -e "$f" ]; then rm -f -- "$p" "$f"; echo done >&9; exit 143; else echo done >&9; exec 9>&-; fi"#,
        r#"rm -f -- "$p""#,
        "fi",
        "set -m; (SHLVL=$((SHLVL - 1))",
        script,
        ") <&0 9>&- & c=$!; set +m",
        r#"[ -z "$w" ] || echo "$c" >&9"#,
        "exec >/dev/null 2>&1",
        r#"wait "$c"; s=$?"#,
        r#"if [ -n "$w" ]; then rm -f -- "$f"; echo done >&9; exec 9>&-; wait; fi"#,
        "exit $s",
    ]
    .join("\n"))
}

/// The second request's script, run as `/bin/bash -c`: wakes the watcher of the command
/// wrapped for `control`, or keeps a command that has not started yet from starting.
pub fn end_script(control: &str) -> Result<String> {
    let control = shell_quote(control)?;
    Ok([
        &format!("f={control}"),
        &format!(
            r#"if mkfifo -m 600 -- "$f" 2>/dev/null; then n=0; while [ -p "$f" ] && [ $n -lt {TOMBSTONE_TENTHS} ]; do sleep 0.1; n=$((n+1)); done; rm -f -- "$f"; exit 0; fi"#
        ),
        r#"[ -p "$f" ] || exit 0"#,
        r#"{ exec 8<>"$f"; echo kill >&8; exec 8>&-; } 2>/dev/null; rm -f -- "$f" "$f.new""#,
    ]
    .join("\n"))
}

/// Ends the command wrapped for `control` in sandbox `sandbox_id`: one
/// `POST /sandboxes/{id}/exec` with `{"cmd":"/bin/bash","args":["-c",end_script]}`, under a
/// deadline of its own. Whatever it answers (or not) is ignored: the execute it follows answers
/// that it timed out either way.
pub async fn end_command(client: &CreateOsClient, sandbox_id: &str, control: &str) {
    let (Ok(id), Ok(script)) = (identifier_str(sandbox_id), end_script(control)) else {
        return;
    };
    let deadline = Signal::timeout(END_REQUEST_TIMEOUT_MS);
    let body = json!({ "cmd": "/bin/bash", "args": ["-c", script] });
    let _ = client
        .json(
            Method::POST,
            &format!("/sandboxes/{id}/exec"),
            Some(body),
            Some(&deadline),
        )
        .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scripts_are_exact() {
        let control = control_path("0b1c");
        assert_eq!(control, "/tmp/paperclip-exec-0b1c");
        let watcher = r#"c=; k=; while read -r l; do case $l in done) exit 0 ;; kill) k=1 ;; *) c=$l ;; esac; [ -n "$k" ] && [ -n "$c" ] && break; done; [ -n "$c" ] || exit 0; kill -TERM -"$c"; n=0; while [ $n -lt 20 ] && kill -0 -"$c"; do sleep 0.1; n=$((n+1)); done; kill -0 -"$c" && kill -KILL -"$c"; rm -f -- "$f" "$p""#;
        let wrapped = [
            r#"f='/tmp/paperclip-exec-0b1c'; p="$f.new"; w="#,
            r#"if mkfifo -m 600 -- "$p" 2>/dev/null; then"#,
            &format!(r#"set -m; {{ {watcher}; }} <"$p" >/dev/null 2>&1 & set +m"#),
            r#"exec 9>"$p" 9<>"$p""#,
            r#"if ln -- "$p" "$f" 2>/dev/null; then w=1; elif [ -e "$f" ]; then rm -f -- "$p" "$f"; echo done >&9; exit 143; else echo done >&9; exec 9>&-; fi"#,
            r#"rm -f -- "$p""#,
            "fi",
            "set -m; (SHLVL=$((SHLVL - 1))",
            r#"cd -- '/w' || exit"#,
            r#"exec env  'echo' 'it'"'"'s'"#,
            ") <&0 9>&- & c=$!; set +m",
            r#"[ -z "$w" ] || echo "$c" >&9"#,
            "exec >/dev/null 2>&1",
            r#"wait "$c"; s=$?"#,
            r#"if [ -n "$w" ]; then rm -f -- "$f"; echo done >&9; exec 9>&-; wait; fi"#,
            "exit $s",
        ]
        .join("\n");
        let script = "cd -- '/w' || exit\nexec env  'echo' 'it'\"'\"'s'";
        assert_eq!(wrap(script, &control).unwrap(), wrapped);
        let end = [
            "f='/tmp/paperclip-exec-0b1c'",
            r#"if mkfifo -m 600 -- "$f" 2>/dev/null; then n=0; while [ -p "$f" ] && [ $n -lt 10 ]; do sleep 0.1; n=$((n+1)); done; rm -f -- "$f"; exit 0; fi"#,
            r#"[ -p "$f" ] || exit 0"#,
            r#"{ exec 8<>"$f"; echo kill >&8; exec 8>&-; } 2>/dev/null; rm -f -- "$f" "$f.new""#,
        ]
        .join("\n");
        assert_eq!(end_script(&control).unwrap(), end);
        // The path is quoted like every other value, and NUL refused like every other value.
        assert!(
            wrap("true", "/tmp/it's")
                .unwrap()
                .starts_with(r#"f='/tmp/it'"'"'s';"#)
        );
        assert!(wrap("true", "/tmp/\0").is_err());
        assert!(end_script("/tmp/\0").is_err());
    }
}
