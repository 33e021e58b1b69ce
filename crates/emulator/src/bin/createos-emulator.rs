//! `createos-emulator`: runs the CreateOS emulator as a process for Node tests and `npm start`.
//!
//! Contract: prints exactly one JSON line to stdout once it is serving —
//! `{"url":"http://127.0.0.1:PORT","apiKey":"…","controlUrl":"http://127.0.0.1:PORT/_emulator","pid":N}`
//! — then serves until its stdin reaches EOF (the parent closed it or died) or it receives
//! SIGTERM/SIGINT, and exits 0 after killing every sandboxed process and removing its
//! directories. Start-up failures (e.g. bubblewrap missing) go to stderr with exit code 2.

use std::time::Duration;

use emulator::{CreateOsEmulator, EmulatorOptions};
use tokio::io::AsyncReadExt;
use tokio::signal::unix::{SignalKind, signal};

const USAGE: &str = "usage: createos-emulator [--api-key KEY] [--port N] [--transition-ms N] \
[--heartbeat-ms N] [--journal-bytes N] [--max-body-bytes N] [--work-dir DIR] [--no-stdin]";

fn parse_args() -> Result<(EmulatorOptions, bool), String> {
    let mut opts = EmulatorOptions::default();
    let mut watch_stdin = true;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "--no-stdin" {
            watch_stdin = false;
            continue;
        }
        if flag == "--help" || flag == "-h" {
            return Err(USAGE.into());
        }
        let value = args
            .next()
            .ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))?;
        let num = || {
            value
                .parse::<u64>()
                .map_err(|_| format!("{flag}: not a number: {value}"))
        };
        match flag.as_str() {
            "--api-key" => opts.api_key = Some(value.clone()),
            "--port" => opts.port = num()? as u16,
            "--transition-ms" => opts.transition_delay = Duration::from_millis(num()?),
            "--heartbeat-ms" => opts.heartbeat_interval = Duration::from_millis(num()?),
            "--journal-bytes" => opts.journal_limit_bytes = num()? as usize,
            "--max-body-bytes" => opts.max_request_body_bytes = num()? as usize,
            "--work-dir" => opts.work_dir = Some(value.clone().into()),
            _ => return Err(format!("unknown option {flag}\n{USAGE}")),
        }
    }
    Ok((opts, watch_stdin))
}

#[tokio::main]
async fn main() {
    let (opts, watch_stdin) = match parse_args() {
        Ok(parsed) => parsed,
        Err(msg) => {
            eprintln!("{msg}");
            std::process::exit(2);
        }
    };
    let emulator = match CreateOsEmulator::start(opts).await {
        Ok(e) => e,
        Err(e) => {
            eprintln!("createos-emulator: {e}");
            std::process::exit(2);
        }
    };
    // Handlers first, so a SIGTERM right after the ready line is a clean shutdown.
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
    let mut int = signal(SignalKind::interrupt()).expect("SIGINT handler");
    let url = emulator.base_url();
    let ready = serde_json::json!({
        "url": url,
        "apiKey": emulator.api_key(),
        "controlUrl": format!("{url}/_emulator"),
        "pid": std::process::id(),
    });
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
    emulator.shutdown().await;
    // Exit explicitly: tokio's stdin reader is a blocking thread that would keep the runtime
    // (and so the process) alive until stdin closes.
    std::process::exit(0);
}
