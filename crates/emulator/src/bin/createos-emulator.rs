//! `createos-emulator`: runs the CreateOS emulator as a process for Node tests and `npm start`.
//!
//! Contract: prints exactly one JSON line to stdout once it is serving —
//! `{"url":"http://127.0.0.1:PORT","apiKey":"…","otherApiKeys":[…],"controlUrl":"http://127.0.0.1:PORT/_emulator","pid":N}`
//! — then serves until its stdin reaches EOF (the parent closed it or died) or it receives
//! SIGTERM/SIGINT, and exits 0 after killing every sandboxed process and removing its
//! directories. Start-up failures (e.g. bubblewrap missing) go to stderr with exit code 2.

use std::time::Duration;

use emulator::common::lifecycle;
use emulator::{CreateOsEmulator, EmulatorOptions};

const USAGE: &str = "usage: createos-emulator [--api-key KEY] [--other-api-key KEY]... [--port N] \
[--transition-ms N] [--heartbeat-ms N] [--journal-bytes N] [--max-body-bytes N] [--tombstones N] \
[--work-dir DIR] [--no-stdin]";

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
        let value = lifecycle::flag_value(&mut args, &flag, USAGE)?;
        let num = || lifecycle::flag_number(&flag, &value);
        match flag.as_str() {
            "--api-key" => opts.api_key = Some(value.clone()),
            // Each is another user, who cannot see the primary user's sandboxes.
            "--other-api-key" => opts.other_api_keys.push(value.clone()),
            "--tombstones" => opts.tombstone_limit = num()? as usize,
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
    let (opts, watch_stdin) = parse_args().unwrap_or_else(|msg| lifecycle::exit_with_error(msg));
    let emulator = CreateOsEmulator::start(opts)
        .await
        .unwrap_or_else(|e| lifecycle::exit_with_error(format!("createos-emulator: {e}")));
    let url = emulator.base_url();
    let ready = serde_json::json!({
        "url": url,
        "apiKey": emulator.api_key(),
        "otherApiKeys": emulator.other_api_keys(),
        "controlUrl": format!("{url}/_emulator"),
        "pid": std::process::id(),
    });
    lifecycle::announce_and_wait(&ready, watch_stdin).await;
    emulator.shutdown().await;
    lifecycle::exit_cleanly();
}
