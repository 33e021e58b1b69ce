//! What an exit code usually means on Kubernetes (G-exec2: the note execute adds to
//! stderr).
//!
//! The exec API reports an exit code and no signal, so 137 and 143 (128 + SIGKILL / SIGTERM, the
//! codes a shell gives a killed child) cannot be told apart from a command that returns them by
//! itself. The execute result therefore never claims a signal (`signal: null`); it appends a
//! short explanation to stderr instead, saying what the code usually means and that it is not
//! proof. The upstream tests fix what the notes must say (`SIGKILL` and `memory limit` for 137,
//! `SIGTERM` for 143, "reports no signal"), not their exact words; these words are ours and are
//! catalogued in docs/errors.md.

/// Appended for exit code 137.
pub const EXIT_137_HINT: &str = "Exit code 137 usually means the process was killed with SIGKILL, most often by the out-of-memory killer after the container exceeded its memory limit. The Kubernetes exec status reports no signal, so this is not proof of a kill.";

/// Appended for exit code 143.
pub const EXIT_143_HINT: &str = "Exit code 143 usually means the process was stopped with SIGTERM, for example because its pod is being deleted or evicted. The Kubernetes exec status reports no signal, so this is not proof of a termination.";

/// The note of a command whose pod was deleted under it (issue #38): it replaces the 137/143
/// note (the code comes from the deletion, not from memory or the command), and is the whole
/// stderr of an exec whose connection closed with the pod. Its words are ours.
pub fn pod_deleted_note(namespace: &str, pod: &str) -> String {
    format!(
        "The pod {namespace}/{pod} was deleted while the command ran (an eviction, a node drain or a manual delete), and the command ended with it; it was not re-run. The lease's Sandbox starts a new pod, and the next execute waits for it and runs there."
    )
}

/// `stderr` with [`pod_deleted_note`] on a line of its own at the end.
pub fn append_pod_deleted_note(mut stderr: String, namespace: &str, pod: &str) -> String {
    if !stderr.is_empty() && !stderr.ends_with('\n') {
        stderr.push('\n');
    }
    stderr.push_str(&pod_deleted_note(namespace, pod));
    stderr.push('\n');
    stderr
}

/// The note for `exit_code`, if it has one.
pub fn exit_status_hint(exit_code: i64) -> Option<&'static str> {
    match exit_code {
        137 => Some(EXIT_137_HINT),
        143 => Some(EXIT_143_HINT),
        _ => None,
    }
}

/// `stderr` with the exit code's note on a line of its own at the end (after a newline when
/// `stderr` does not end with one); any other exit code leaves `stderr` exactly as it was.
pub fn append_exit_status_hint(mut stderr: String, exit_code: i64) -> String {
    if let Some(hint) = exit_status_hint(exit_code) {
        if !stderr.is_empty() && !stderr.ends_with('\n') {
            stderr.push('\n');
        }
        stderr.push_str(hint);
        stderr.push('\n');
    }
    stderr
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_say_what_the_upstream_tests_require() {
        let killed = append_exit_status_hint("boom\n".into(), 137);
        assert!(killed.starts_with("boom\nExit code 137"));
        for word in ["SIGKILL", "memory limit", "reports no signal"] {
            assert!(killed.contains(word), "{word}");
        }
        let stopped = append_exit_status_hint(String::new(), 143);
        assert!(stopped.contains("SIGTERM") && stopped.contains("reports no signal"));
        assert!(stopped.ends_with(".\n"));
        assert_eq!(
            append_exit_status_hint("no newline".into(), 137),
            format!("no newline\n{EXIT_137_HINT}\n")
        );
    }

    #[test]
    fn the_pod_deleted_note_is_exact_and_on_its_own_line() {
        let note = "The pod ns/p was deleted while the command ran (an eviction, a node drain or a manual delete), and the command ended with it; it was not re-run. The lease's Sandbox starts a new pod, and the next execute waits for it and runs there.";
        assert_eq!(pod_deleted_note("ns", "p"), note);
        assert_eq!(
            append_pod_deleted_note("x".into(), "ns", "p"),
            format!("x\n{note}\n")
        );
        assert_eq!(
            append_pod_deleted_note(String::new(), "ns", "p"),
            format!("{note}\n")
        );
    }

    #[test]
    fn other_codes_leave_stderr_untouched() {
        for code in [0, 1, 2, 128, 136, 138, 142, 255] {
            assert_eq!(
                append_exit_status_hint("usage: ls\n".into(), code),
                "usage: ls\n"
            );
            assert_eq!(append_exit_status_hint(String::new(), code), "");
        }
    }
}
