//! The emulator binaries' process contract: start-up failures go to stderr with exit code 2;
//! once serving, exactly one JSON line on stdout; then serve until stdin reaches EOF (the
//! parent closed it or died) or SIGTERM/SIGINT arrives.

use std::fmt::Display;

use serde_json::Value;
use tokio::io::AsyncReadExt;
use tokio::signal::unix::{SignalKind, signal};

/// The value that follows `flag` on the command line.
pub fn flag_value(
    args: &mut impl Iterator<Item = String>,
    flag: &str,
    usage: &str,
) -> Result<String, String> {
    args.next()
        .ok_or_else(|| format!("{flag} needs a value\n{usage}"))
}

/// `value` (of `flag`) as a number.
pub fn flag_number(flag: &str, value: &str) -> Result<u64, String> {
    value
        .parse::<u64>()
        .map_err(|_| format!("{flag}: not a number: {value}"))
}

/// Prints `message` to stderr and exits with code 2 (bad arguments, failed start-up).
// The emulator binaries' start-up errors: writing them to stderr is this function's job.
#[allow(clippy::print_stderr)]
pub fn exit_with_error(message: impl Display) -> ! {
    eprintln!("{message}");
    std::process::exit(2);
}

/// Prints `ready` as one line to stdout, then waits until stdin reaches EOF (unless
/// `watch_stdin` is false) or the process receives SIGTERM or SIGINT.
// The emulator binaries' ready line: printing it to stdout is their contract with the tests.
#[allow(clippy::print_stdout)]
pub async fn announce_and_wait(ready: &Value, watch_stdin: bool) {
    // Handlers first, so a SIGTERM right after the ready line is a clean shutdown.
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
    let mut int = signal(SignalKind::interrupt()).expect("SIGINT handler");
    println!("{ready}");
    let stdin_closed = async {
        if !watch_stdin {
            return std::future::pending::<()>().await;
        }
        let mut stdin = tokio::io::stdin();
        let mut buf = [0u8; 256];
        while let Ok(1..) = stdin.read(&mut buf).await {}
    };
    tokio::select! {
        _ = stdin_closed => {}
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}

/// Exits 0 once the emulator has shut down. Explicitly: tokio's stdin reader is a blocking
/// thread that would keep the runtime (and so the process) alive until stdin closes.
pub fn exit_cleanly() -> ! {
    std::process::exit(0);
}
