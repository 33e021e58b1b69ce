//! The scripts that end a timed-out execute's command (`createos::exec::end`), run by this
//! machine's `bash` as the sandbox's `bash -lc` and `bash -c` run them: the wrapped command
//! sees what it saw before, and the end script (or the wrapper's death) ends it and everything
//! in its group, however it started. The FIFO lives in a test directory instead of `/tmp`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use createos::exec::end::{END_REQUEST_TIMEOUT_MS, end_script, wrap};
use createos::exec::{CommandSpec, command_script};
use sandbox_core::poll::poll;

/// Runs `script` as `bash -lc` with `stdin`.
fn run(script: &str, stdin: &str) -> Output {
    let mut child = Command::new("bash")
        .args(["-lc", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("bash runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// Runs the end script for `control` as `bash -c`, as the second request does.
fn end(control: &str) -> Output {
    Command::new("bash")
        .args(["-c", &end_script(control).unwrap()])
        .output()
        .expect("bash runs")
}

/// A command's script as the execute hook builds it (`cd`, `exec env`).
fn script(dir: &Path, program: &str) -> String {
    command_script(
        &CommandSpec {
            command: "bash".into(),
            args: vec!["-c".into(), program.into(), "arg0".into(), "x'y z".into()],
            cwd: Some(dir.to_str().unwrap().into()),
            env: vec![("GREETING".into(), "hello 'world'".into())],
        },
        None,
        None,
    )
    .unwrap()
}

/// The names the test directory holds, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Whether `pid` is a process that still runs (a zombie waiting for its reaper has ended).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let state = stat[stat.rfind(')')? + 2..].chars().next()?;
            Some(state != 'Z' && state != 'X')
        })
        .unwrap_or(false)
}

/// The pids a command wrote to `file`, one a line, once it has written `count`.
async fn pids(file: &Path, count: usize) -> Vec<u32> {
    poll("the command to record its pids", Duration::from_secs(10))
        .until(|| {
            let text = std::fs::read_to_string(file).ok()?;
            let pids: Vec<u32> = text.lines().filter_map(|l| l.trim().parse().ok()).collect();
            (pids.len() == count).then_some(pids)
        })
        .await
}

/// A scratch directory on the host (removed on drop) and the FIFO's name in it.
struct Dir {
    path: PathBuf,
    control: String,
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

fn dir() -> Dir {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!("createos-end-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&path).unwrap();
    let control = path
        .join("paperclip-exec-test")
        .to_str()
        .unwrap()
        .to_owned();
    Dir { path, control }
}

#[test]
fn a_wrapped_command_sees_what_it_saw_before() {
    let d = dir();
    let program = r#"read -r first; rest=$(cat); printf '%s|%s|%s|%s|%s|%s\n' "$first" "$rest" "$GREETING" "$1" "$(pwd)" "$SHLVL"; echo err >&2; exit 7"#;
    let original = script(&d.path, program);
    let before = run(&original, "one\ntwo\n");
    let after = run(&wrap(&original, &d.control).unwrap(), "one\ntwo\n");
    assert_eq!(before.status.code(), Some(7));
    assert_eq!(after.status.code(), Some(7));
    assert_eq!(String::from_utf8_lossy(&after.stderr), "err\n");
    assert_eq!(after.stdout, before.stdout);
    assert_eq!(
        String::from_utf8_lossy(&after.stdout)
            .rsplit_once('|')
            .unwrap()
            .0,
        format!("one|two|hello 'world'|x'y z|{}", d.path.display())
    );
    assert!(listing(&d.path).is_empty(), "{:?}", listing(&d.path));

    // A failing `cd` exits as it did; a signal is reported as bash reports it, 128 + N.
    let missing = command_script(
        &CommandSpec {
            cwd: Some(d.path.join("missing").to_str().unwrap().into()),
            ..CommandSpec::new("true")
        },
        None,
        None,
    )
    .unwrap();
    assert_eq!(
        run(&wrap(&missing, &d.control).unwrap(), "").status.code(),
        Some(1)
    );
    let killed = script(&d.path, "echo out; kill -KILL $$");
    let after = run(&wrap(&killed, &d.control).unwrap(), "");
    assert_eq!(after.status.code(), Some(137));
    assert_eq!(String::from_utf8_lossy(&after.stdout), "out\n");
    assert_eq!(String::from_utf8_lossy(&after.stderr), "", "no job notice");
    assert!(listing(&d.path).is_empty(), "{:?}", listing(&d.path));
}

#[test]
fn without_a_fifo_the_command_runs_as_before() {
    let d = dir();
    let original = script(&d.path, "cat; exit 4");
    let control = d.path.join("no-such-dir/paperclip-exec-test");
    let after = run(&wrap(&original, control.to_str().unwrap()).unwrap(), "in\n");
    assert_eq!(after.status.code(), Some(4));
    assert_eq!(String::from_utf8_lossy(&after.stdout), "in\n");
    assert!(listing(&d.path).is_empty());
}

/// Starts the wrapped `program` in the background; it records its pids in `pids`.
fn start(d: &Dir, program: &str) -> std::process::Child {
    let original = script(&d.path, program);
    Command::new("bash")
        .args(["-lc", &wrap(&original, &d.control).unwrap()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Ignores `TERM`, and leaves a child of its own running in the background.
const STUBBORN: &str = "trap '' TERM; sleep 300 & echo $! > pids; echo $$ >> pids; exec sleep 301";

#[tokio::test]
async fn the_end_script_ends_the_command_and_what_it_started() {
    let d = dir();
    let mut wrapper = start(&d, STUBBORN);
    let pids = pids(&d.path.join("pids"), 2).await;
    let started = Instant::now();
    let ended = end(&d.control);
    assert!(ended.status.success(), "{ended:?}");
    assert!(
        started.elapsed() < Duration::from_millis(END_REQUEST_TIMEOUT_MS),
        "the end script does not wait for the command"
    );
    poll("the command and its child to end", Duration::from_secs(10))
        .until(|| pids.iter().all(|pid| !running(*pid)))
        .await;
    poll("the wrapper to exit", Duration::from_secs(10))
        .until(|| wrapper.try_wait().unwrap().is_some())
        .await;
    assert_eq!(listing(&d.path), ["pids"]);
}

#[tokio::test]
async fn the_wrapper_killed_from_outside_takes_the_command_along() {
    let d = dir();
    let mut wrapper = start(
        &d,
        "sleep 300 & echo $! > pids; echo $$ >> pids; exec sleep 301",
    );
    let pids = pids(&d.path.join("pids"), 2).await;
    wrapper.kill().unwrap();
    wrapper.wait().unwrap();
    poll("the command and its child to end", Duration::from_secs(10))
        .until(|| pids.iter().all(|pid| !running(*pid)))
        .await;
    poll("the FIFO to be removed", Duration::from_secs(10))
        .until(|| listing(&d.path) == ["pids"])
        .await;
}

#[tokio::test]
async fn an_end_that_comes_first_keeps_the_command_from_starting() {
    let d = dir();
    let control = d.control.clone();
    let ending = std::thread::spawn(move || end(&control));
    poll(
        "the end script to take the FIFO's name",
        Duration::from_secs(10),
    )
    .until(|| Path::new(&d.control).exists())
    .await;
    let original = script(&d.path, "echo ran > marker");
    let after = run(&wrap(&original, &d.control).unwrap(), "");
    assert_eq!(after.status.code(), Some(143));
    assert!(ending.join().unwrap().status.success());
    assert!(listing(&d.path).is_empty(), "{:?}", listing(&d.path));
}

#[test]
fn an_end_after_the_command_ended_leaves_nothing() {
    let d = dir();
    let original = script(&d.path, "echo ran");
    assert!(
        run(&wrap(&original, &d.control).unwrap(), "")
            .status
            .success()
    );
    let started = Instant::now();
    assert!(end(&d.control).status.success());
    assert!(started.elapsed() < Duration::from_millis(END_REQUEST_TIMEOUT_MS));
    assert!(listing(&d.path).is_empty(), "{:?}", listing(&d.path));
}

#[test]
fn docs_wire_parity_shows_the_scripts_as_they_are_sent() {
    let doc = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/wire-parity.md"),
    )
    .unwrap();
    let block = |script: String| {
        script
            .lines()
            .map(|line| format!("  {line}"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert!(doc.contains(&block(wrap("S", "F").unwrap())), "the wrapper");
    assert!(
        doc.contains(&block(end_script("F").unwrap())),
        "the end script"
    );
}
