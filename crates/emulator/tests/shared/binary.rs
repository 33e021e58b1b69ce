//! Running an emulator binary the way the Node helpers do: stdin and stdout piped, the ready
//! line read first, and the exit awaited after stdin closes or a signal.

use std::ffi::OsStr;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// Starts `bin` with `args` (killed when dropped) and returns it with its parsed ready line.
pub async fn start_binary<I, S>(bin: &str, args: I) -> (Child, Value)
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut child = Command::new(bin)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = lines.next_line().await.unwrap().expect("a ready line");
    let ready = serde_json::from_str(&line).expect("one JSON line");
    (child, ready)
}

/// The child's exit status; panics unless it exits within 10 s.
pub async fn exit_status(child: &mut Child) -> ExitStatus {
    tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .expect("exits in time")
        .unwrap()
}
