//! The in-pod `sh -c` scripts of native file sync (strings verbatim from the
//! original's streaming file-sync). Lines are joined with `\n`; every step fails loud with a
//! diagnostic token on stderr and an exit code from 40 to 48; the transfer error reports both.

use crate::exec::command::sh_quote;

use js_compat::path;

/// `canonicalizerPreamble(quotedRoot)`, with one change: each canonicaliser is chosen by
/// trying it (`realpath -- /`) rather than by `command -v`. BusyBox's `realpath` (Alpine and
/// other BusyBox-based images) takes `--` for a path and fails, so the original's choice made
/// every sync there fail with exit 41 (`cannot resolve root`), although BusyBox's
/// `readlink -f --` works; found on the real node, whose agent image is BusyBox-based.
pub fn preamble(root: &str) -> Vec<String> {
    let quoted_root = sh_quote(root);
    let mut lines: Vec<String> = [
        r#"if realpath -- / >/dev/null 2>&1; then _pc_resolve() { realpath -- "$1"; };"#,
        r#"elif readlink -f -- / >/dev/null 2>&1; then _pc_resolve() { readlink -f -- "$1"; };"#,
        r#"else echo "no path canonicalizer available" >&2; exit 40; fi;"#,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    lines.push(format!(
        r#"_pc_root=$(_pc_resolve {quoted_root}) || {{ echo "cannot resolve root" >&2; exit 41; }};"#
    ));
    lines.extend(
        [
            "_pc_confine_ancestor() {",
            "  _pc_a=$1;",
            r#"  while [ ! -e "$_pc_a" ] && [ ! -L "$_pc_a" ]; do"#,
            r#"    _pc_p=$(dirname "$_pc_a");"#,
            r#"    [ "$_pc_p" = "$_pc_a" ] && break;"#,
            "    _pc_a=$_pc_p;",
            "  done;",
            r#"  _pc_ar=$(_pc_resolve "$_pc_a") || return 42;"#,
            r#"  case "$_pc_ar/" in "$_pc_root"/*) return 0 ;; *) return 42 ;; esac;"#,
            "};",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    lines
}

fn resolve_and_check(var: &str, what: &str) -> [String; 2] {
    [
        format!(r#"{var}=$(_pc_resolve {what}) || {{ echo "ESCAPE" >&2; exit 42; }};"#),
        format!(r#"case "${var}/" in "$_pc_root"/*) : ;; *) echo "ESCAPE" >&2; exit 42 ;; esac;"#),
    ]
}

/// `(mode & 0o7777)` in octal, zero-padded to 3 (`mode` is a JS number: ToInt32 first).
pub fn octal_mode(mode: f64) -> String {
    let int = if mode.is_finite() {
        (mode.trunc() as i64) as i32
    } else {
        0
    };
    format!("{:03o}", int & 0o7777)
}

/// One file mapping of a syncIn batch, as the script needs it.
#[derive(Debug, Clone)]
pub struct InboundFile {
    pub target_path: String,
    pub mode: Option<f64>,
}

/// The syncIn file-batch script.
pub fn sync_in_files(
    root: &str,
    remote_stage: &str,
    files: &[InboundFile],
    archive_bytes: u64,
) -> String {
    let stage = sh_quote(remote_stage);
    let mut parents: Vec<String> = Vec::new();
    for file in files {
        let parent = path::dirname(&file.target_path);
        if !parents.contains(&parent) {
            parents.push(parent);
        }
    }
    let mut s = preamble(root);
    s.push(format!("trap 'rm -rf {stage}' EXIT;"));
    s.push(format!(
        r#"mkdir -p -m 700 {stage} || {{ echo "stage mkdir failed" >&2; exit 46; }};"#
    ));
    for dir in &parents {
        let q = sh_quote(dir);
        s.push(format!(
            r#"_pc_confine_ancestor {q} || {{ echo "ESCAPE" >&2; exit 42; }};"#
        ));
        s.push(format!(
            r#"mkdir -p {q} || {{ echo "mkdir failed" >&2; exit 46; }};"#
        ));
    }
    for dir in &parents {
        s.extend(resolve_and_check("_pc_d", &sh_quote(dir)));
    }
    s.push(format!(
        r#"head -c {archive_bytes} | tar -xf - -C {stage} || {{ echo "extract failed" >&2; exit 43; }};"#
    ));
    for (i, file) in files.iter().enumerate() {
        let staged = sh_quote(&path::join(remote_stage, &i.to_string()));
        if let Some(mode) = file.mode {
            s.push(format!(
                r#"chmod {} {staged} || {{ echo "chmod failed" >&2; exit 48; }};"#,
                octal_mode(mode)
            ));
        }
        let parent = sh_quote(&path::dirname(&file.target_path));
        let base = sh_quote(path::basename(&file.target_path));
        s.extend(resolve_and_check("_pc_tgt_dir", &parent));
        s.push(r#"exec 8<"$_pc_tgt_dir" || { echo "open failed" >&2; exit 47; };"#.into());
        s.extend(resolve_and_check("_pc_fd_dir", "/proc/self/fd/8"));
        s.push(format!(
            r#"mv -f {staged} /proc/self/fd/8/{base} || {{ echo "rename failed" >&2; exit 44; }};"#
        ));
        s.push("exec 8>&-;".into());
    }
    drained(&s.join("\n"), archive_bytes)
}

/// The syncIn directory script.
pub fn sync_in_directory(root: &str, target: &str, archive_bytes: u64) -> String {
    let q = sh_quote(target);
    let mut s = preamble(root);
    s.push(format!(
        r#"_pc_confine_ancestor {q} || {{ echo "ESCAPE" >&2; exit 42; }};"#
    ));
    s.push(format!(
        r#"mkdir -p {q} || {{ echo "mkdir failed" >&2; exit 46; }};"#
    ));
    s.extend(resolve_and_check("_pc_real", &q));
    s.push(r#"exec 9<"$_pc_real" || { echo "open failed" >&2; exit 46; };"#.into());
    s.extend(resolve_and_check("_pc_fd_real", "/proc/self/fd/9"));
    s.push(format!(
        r#"head -c {archive_bytes} | tar -xf - -C /proc/self/fd/9 || {{ echo "extract failed" >&2; exit 43; }};"#
    ));
    s.push("exec 9>&-;".into());
    drained(&s.join("\n"), archive_bytes)
}

/// A sync-in script run as `head -c N | { ( <script>\n); s=$?; cat >/dev/null; exit $s; }`: the
/// original runs the script alone, reading its archive with its own `head -c N | tar`.
///
/// The script runs in a subshell, so that its `exit`s (and its `EXIT` trap) end the subshell
/// only; then `cat` reads whatever of the N bytes it left, and the exit status is the script's.
/// Without it, a script that exits before its `head -c N | tar` (ESCAPE, a failed `mkdir`, exit
/// 40 to 46) reads none of its stdin: on a real node (containerd) the exec's stdin copy blocks
/// once the pipe is full, and with a large archive (50 MiB) the status frame never comes until
/// the exec's timeout (`podActivityDeadlineSec`); a small one fits in the pipe and is answered
/// at once. The script itself is unchanged: its `head -c N` reads the N bytes from the outer
/// one's pipe, which ends after them, so `tar` sees exactly the archive, and the drain ends at
/// that end too (it cannot wait on the client's stdin, which is never closed). The prefix is on
/// the script's first line, so the shell's own messages keep their line numbers
/// (docs/wire-parity.md).
fn drained(script: &str, archive_bytes: u64) -> String {
    format!("head -c {archive_bytes} | {{ ( {script}\n); s=$?; cat >/dev/null; exit $s; }}")
}

/// The syncOut file-batch script.
pub fn sync_out_files(root: &str, remote_stage: &str, sources: &[String]) -> String {
    let stage = sh_quote(remote_stage);
    let mut s = preamble(root);
    s.push(format!("trap 'rm -rf {stage}' EXIT;"));
    s.push(format!(
        r#"mkdir -p -m 700 {stage} || {{ echo "stage mkdir failed" >&2; exit 46; }};"#
    ));
    for (i, source) in sources.iter().enumerate() {
        let snapshot = sh_quote(&path::join(remote_stage, &i.to_string()));
        s.extend(resolve_and_check("_pc_real", &sh_quote(source)));
        // Opening a FIFO for reading blocks until a writer appears (until the exec timeout,
        // `podActivityDeadlineSec`): an existing non-regular source is refused before the
        // open, on the same line so the shell's own messages keep their line numbers.
        s.push(r#"{ [ ! -e "$_pc_real" ] || [ -f "$_pc_real" ] || { echo "NOTREG" >&2; exit 45; }; }; exec 7<"$_pc_real" || { echo "REPLACED" >&2; exit 45; };"#.into());
        s.extend(resolve_and_check("_pc_fd_real", "/proc/self/fd/7"));
        s.push(r#"[ -f /proc/self/fd/7 ] || { echo "NOTREG" >&2; exit 45; };"#.into());
        s.push(format!(
            r#"cp -- /proc/self/fd/7 {snapshot} || {{ echo "snapshot copy failed" >&2; exit 43; }};"#
        ));
        s.push("exec 7>&-;".into());
    }
    let names: Vec<String> = (0..sources.len())
        .map(|i| sh_quote(&i.to_string()))
        .collect();
    s.push(format!(
        r#"tar -c --no-xattrs -f - -C {stage} -- {} || {{ echo "tar failed" >&2; exit 43; }};"#,
        names.join(" ")
    ));
    s.join("\n")
}

/// The syncOut directory script.
pub fn sync_out_directory(
    root: &str,
    source: &str,
    exclude: &[String],
    follow_symlinks: bool,
) -> String {
    let exclude_flags: Vec<String> = std::iter::once("._*".to_string())
        .chain(exclude.iter().cloned())
        .map(|e| format!("--exclude {}", sh_quote(&e)))
        .collect();
    let mut s = preamble(root);
    s.extend(resolve_and_check("_pc_real", &sh_quote(source)));
    s.push(r#"exec 9<"$_pc_real" || { echo "open failed" >&2; exit 46; };"#.into());
    s.extend(resolve_and_check("_pc_fd_real", "/proc/self/fd/9"));
    s.push(r#"cd /proc/self/fd/9 || { echo "cd failed" >&2; exit 46; };"#.into());
    s.push("set -- *".into());
    s.push(
        r#"if [ "$#" -eq 1 ] && [ "$1" = "*" ] && [ ! -e "$1" ] && [ ! -L "$1" ]; then set --; fi"#
            .into(),
    );
    s.push(
        r#"for entry in .[!.]* ..?*; do [ -e "$entry" ] || [ -L "$entry" ] || continue; set -- "$@" "$entry"; done"#
            .into(),
    );
    if follow_symlinks {
        s.push(repeated_directory_walk(source, exclude));
    }
    s.push(format!(
        r#"if [ "$#" -eq 0 ]; then dd if=/dev/zero bs=1024 count=1 2>/dev/null; else tar -c --no-xattrs {}{} -f - -- "$@" || {{ echo "tar failed" >&2; exit 43; }}; fi"#,
        if follow_symlinks { "-h " } else { "" },
        exclude_flags.join(" ")
    ));
    s.push("exec 9>&-;".into());
    s.join("\n")
}

/// The exit code of a followed tree that reaches a directory twice (not one of the original's).
pub const REPEATED_DIRECTORY_EXIT: i64 = 49;
/// The stderr prefix of [`REPEATED_DIRECTORY_EXIT`], before the repeated path.
pub const REPEATED_DIRECTORY_TOKEN: &str = "REPEATED ";

/// Before `tar -h` (which follows `a -> .` until it crashes, the archive growing all along):
/// walk the tree as it will, following links, excluded names pruned, and stop at the first
/// directory reached twice (device and inode), or at the first loop GNU `find -L` reports
/// itself (it reports a loop before it prunes, so a loop whose name is excluded is passed
/// over); exit [`REPEATED_DIRECTORY_EXIT`] naming it. Without GNU `find` (no `-printf`)
/// nothing is found and `tar` runs as before.
fn repeated_directory_walk(source: &str, exclude: &[String]) -> String {
    let patterns: Vec<String> = std::iter::once("._*".to_string())
        .chain(exclude.iter().cloned())
        .map(|e| sh_quote(&e))
        .collect();
    let prune: Vec<String> = patterns.iter().map(|p| format!("-name {p}")).collect();
    let first_repeat = concat!(
        r#"awk '/^D [0-9]+:[0-9]+ / { if (seen[$2]++) { sub(/^D [^ ]* /, ""); print "D " substr($0, 1, 512); exit } next } "#,
        r#"/File system loop detected; / { sub(/^.*File system loop detected; ./, ""); "#,
        r#"sub(/. is part of the same file system loop as .*$/, ""); print "L " substr($0, 1, 512); fflush() }'"#,
    );
    // A reported loop is passed over when its name matches an excluded pattern (each pattern
    // held in `$_pc_x`, unquoted in `case`, is a glob, as `tar --exclude` reads it).
    let not_excluded = format!(
        r#"{{ while IFS= read -r _pc_l; do case "$_pc_l" in "L "*) _pc_b=${{_pc_l##*/}}; _pc_skip=; for _pc_x in {}; do case "$_pc_b" in $_pc_x) _pc_skip=1 ;; esac; done; [ -n "$_pc_skip" ] && continue ;; esac; printf '%s\n' "${{_pc_l#? }}"; break; done; }}"#,
        patterns.join(" ")
    );
    format!(
        r#"_pc_rep=$(LC_ALL=C find -L . \( {} \) -prune -o -type d -printf 'D %D:%i %p\n' 2>&1 | {first_repeat} | {not_excluded}); if [ -n "$_pc_rep" ]; then printf '{REPEATED_DIRECTORY_TOKEN}%s/%s\n' {} "${{_pc_rep#./}}" >&2; exit {REPEATED_DIRECTORY_EXIT}; fi"#,
        prune.join(" -o "),
        sh_quote(source.trim_end_matches('/')),
    )
}

/// The post-upload wrapper (the commands run after a syncIn operation): `$1` is the cwd, `$2` the verbatim command.
pub fn post_upload_wrapper(root: &str) -> String {
    let mut s = preamble(root);
    s.extend(resolve_and_check("_pc_real", r#""$1""#));
    s.push(r#"exec 9<"$_pc_real" || { echo "open failed" >&2; exit 46; };"#.into());
    s.extend(resolve_and_check("_pc_fd_real", "/proc/self/fd/9"));
    s.push(r#"cd /proc/self/fd/9 || { echo "cd failed" >&2; exit 46; };"#.into());
    s.push(r#"exec /bin/sh -c "$2" pc-post-upload;"#.into());
    s.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `realpath` that takes `--` for a path (BusyBox's): the preamble tries it, finds it
    /// fails and resolves with `readlink -f --` instead; with none that works, exit 40.
    #[test]
    fn a_realpath_that_refuses_dashdash_falls_back_to_readlink() {
        use std::os::unix::fs::PermissionsExt;
        let bin = tempfile::tempdir().unwrap();
        let fake = |name: &str, body: &str| {
            let path = bin.path().join(name);
            std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        };
        fake(
            "realpath",
            r#"[ "$1" = -- ] && { echo "realpath: --: No such file or directory" >&2; exit 1; }; exit 0"#,
        );
        let run = |root: &str| {
            let script = format!("{}\necho \"$_pc_root\"", preamble(root).join("\n"));
            let path = format!("{}:/usr/bin:/bin", bin.path().display());
            std::process::Command::new("/bin/sh")
                .args(["-c", &script])
                .env("PATH", path)
                .output()
                .unwrap()
        };
        let out = run("/tmp/../tmp");
        assert!(out.status.success(), "{out:?}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "/tmp\n");
        fake("readlink", "exit 1");
        let out = run("/tmp");
        assert_eq!(out.status.code(), Some(40), "{out:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            "no path canonicalizer available\n"
        );
    }

    /// A sync-in refused before its `head -c N | tar` still reads its N bytes, from a stdin that
    /// is never closed (as an exec's), and answers with the refusal's exit code and message; one
    /// that extracts gets exactly the archive and exits 0.
    #[test]
    fn a_refused_sync_in_reads_its_whole_archive_and_keeps_its_exit_code() {
        use std::io::Write;
        use std::process::{Command, Stdio};
        let root = tempfile::tempdir().unwrap();
        let root_path = root.path().display().to_string();
        let run = |script: String, stdin: Vec<u8>| {
            let mut child = Command::new("/bin/sh")
                .args(["-c", &script])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let mut input = child.stdin.take().unwrap();
            // All of it is written (the pod read it) before the exit; stdin stays open after.
            input.write_all(&stdin).unwrap();
            let out = child.wait_with_output().unwrap();
            drop(input);
            out
        };
        // 4 MiB of something that is not read as an archive: far more than a pipe holds.
        let big = 4 * 1024 * 1024;
        let out = run(
            sync_in_directory(&root_path, "/elsewhere/d", big),
            vec![7u8; big as usize],
        );
        assert_eq!(out.status.code(), Some(42), "{out:?}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), "ESCAPE\n");
        // An archive that extracts, followed by bytes past N that are not the script's to read.
        let src = tempfile::tempdir().unwrap();
        std::fs::write(src.path().join("f.txt"), b"hello").unwrap();
        let archive = Command::new("tar")
            .args(["-cf", "-", "-C", &src.path().display().to_string(), "f.txt"])
            .output()
            .unwrap()
            .stdout;
        let target = format!("{root_path}/d");
        let mut stdin = archive.clone();
        stdin.extend_from_slice(b"not for the script");
        let out = run(
            sync_in_directory(&root_path, &target, archive.len() as u64),
            stdin,
        );
        assert!(out.status.success(), "{out:?}");
        assert_eq!(std::fs::read(format!("{target}/f.txt")).unwrap(), b"hello");
    }

    #[test]
    fn modes_are_octal_padded() {
        assert_eq!(octal_mode(0o600 as f64), "600");
        assert_eq!(octal_mode(0o7 as f64), "007");
        assert_eq!(octal_mode(0o104755 as f64), "4755");
        assert_eq!(octal_mode(420.9), "644");
    }

    #[test]
    fn scripts_quote_paths_and_keep_the_exit_codes() {
        let script = sync_in_files(
            "/workspace",
            "/workspace/.paperclip-upload-x",
            &[InboundFile {
                target_path: "/workspace/it's/a.txt".into(),
                mode: Some(384.0),
            }],
            2048,
        );
        assert!(script.contains(r#"_pc_root=$(_pc_resolve '/workspace') || { echo "cannot resolve root" >&2; exit 41; };"#));
        assert!(script.contains(
            r#"_pc_confine_ancestor '/workspace/it'\''s' || { echo "ESCAPE" >&2; exit 42; };"#
        ));
        assert!(script.contains("head -c 2048 | tar -xf - -C '/workspace/.paperclip-upload-x' || { echo \"extract failed\" >&2; exit 43; };"));
        // The whole script reads its archive inside the drain: what it leaves is read after it.
        assert!(script.starts_with("head -c 2048 | { ( if realpath -- / >/dev/null 2>&1; then"));
        assert!(script.ends_with("exec 8>&-;\n); s=$?; cat >/dev/null; exit $s; }"));
        let dir = sync_in_directory("/workspace", "/workspace/d", 4096);
        assert!(dir.starts_with("head -c 4096 | { ( if realpath -- / >/dev/null 2>&1; then"));
        assert!(dir.contains("head -c 4096 | tar -xf - -C /proc/self/fd/9 || { echo \"extract failed\" >&2; exit 43; };"));
        assert!(dir.ends_with("exec 9>&-;\n); s=$?; cat >/dev/null; exit $s; }"));
        assert!(script.contains("chmod 600 '/workspace/.paperclip-upload-x/0' || { echo \"chmod failed\" >&2; exit 48; };"));
        assert!(script.contains("mv -f '/workspace/.paperclip-upload-x/0' /proc/self/fd/8/'a.txt' || { echo \"rename failed\" >&2; exit 44; };"));
        let out = sync_out_directory("/workspace", "/workspace/d", &["node_modules".into()], true);
        assert!(out.contains("else tar -c --no-xattrs -h --exclude '._*' --exclude 'node_modules' -f - -- \"$@\" || { echo \"tar failed\" >&2; exit 43; }; fi"));
        // Following links, the tree is walked first (excluded names pruned); not otherwise.
        assert!(out.contains(r#"find -L . \( -name '._*' -o -name 'node_modules' \) -prune"#));
        assert!(out.contains(
            r#"printf 'REPEATED %s/%s\n' '/workspace/d' "${_pc_rep#./}" >&2; exit 49; fi"#
        ));
        let plain = sync_out_directory("/workspace", "/workspace/d", &[], false);
        assert!(!plain.contains("find -L") && !plain.contains("exit 49"));
        let wrapper = post_upload_wrapper("/workspace");
        assert!(wrapper.ends_with("exec /bin/sh -c \"$2\" pc-post-upload;"));
    }
}
