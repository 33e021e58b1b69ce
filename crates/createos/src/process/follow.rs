//! `followProcess`: the output of a managed process through `connect?after=N`, resumed with
//! replay after a dropped connection, and the exit recovered from `wait` when the stream keeps
//! ending early.
//!
//! - A connect answered 410 means the journal no longer holds the cursor (evicted). Other API
//!   answers below 500 (except 429) fail at once; 5xx, 429 and transport failures are retried
//!   after 250 ms, four attempts in a row at most.
//! - A body that breaks off (a transport failure, `TypeError: terminated` in the original) counts
//!   as the end of the stream. After four ends in a row without an exit frame the exit is taken
//!   from `wait`, and accepted only when every journaled frame was delivered; otherwise one more
//!   window of four connections (after 1 s) may deliver the missing tail.
//! - Output already delivered (`seq <= cursor`) is skipped, so a replay never repeats it.

use std::time::Duration;

use reqwest::Method;
use sandbox_core::ErrorClass;
use serde_json::Value;

use super::frames::{Event, OutputKind, ProcessExit, check_exit_status, interpret, number};
use super::messages;
use crate::client::{Body, CreateOsClient, identifier_str, object};
use crate::error::{Error, Result};
use crate::ndjson::NdjsonReader;
use crate::signal::Signal;

/// Connections (or stream ends) in a row before giving up or recovering.
const MAX_RECONNECTS: u32 = 3;
const RECONNECT_DELAY: Duration = Duration::from_millis(250);
const REPLAY_WINDOW_DELAY: Duration = Duration::from_millis(1000);
/// `Number.MAX_SAFE_INTEGER`.
const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

/// Follows process `process_id` of sandbox `sandbox_id` until it exits, handing each output
/// chunk to `on_data` in order. Runs until the process exits or `signal` fires.
pub async fn follow_process(
    client: &CreateOsClient,
    sandbox_id: &str,
    process_id: &str,
    signal: &Signal,
    mut on_data: impl FnMut(OutputKind, Vec<u8>) + Send,
) -> Result<ProcessExit> {
    let base = format!(
        "/sandboxes/{}/processes/{}",
        identifier_str(sandbox_id)?,
        identifier_str(process_id)?
    );
    let mut cursor = 0u64;
    let mut reconnects = 0u32;
    let mut recovered: Option<(ProcessExit, u64)> = None;
    loop {
        signal.throw_if_aborted()?;
        let path = format!("{base}/connect?after={cursor}");
        let response = match client
            .request(Method::GET, &path, Body::Empty, Some(signal))
            .await
        {
            Ok(response) => response,
            Err(error) => {
                if error.is_status(410) {
                    return Err(Error::msg(messages::OUTPUT_EVICTED));
                }
                let permanent = error.status().is_some_and(|s| s < 500 && s != 429);
                if signal.is_aborted() || permanent {
                    return Err(error);
                }
                reconnects += 1;
                if reconnects > MAX_RECONNECTS {
                    return Err(Error::msg(messages::OUTPUT_CONNECTION_FAILED));
                }
                signal.sleep(RECONNECT_DELAY).await?;
                continue;
            }
        };
        match consume(response, &mut cursor, signal, &mut on_data).await {
            Ok(Some(exit)) => return Ok(exit),
            Ok(None) => {}
            // A connection that broke off mid-body ends this stream like a clean end.
            Err(Error::Other(error))
                if error.class == ErrorClass::TypeError && !signal.is_aborted() => {}
            Err(error) => return Err(error),
        }
        reconnects += 1;
        if reconnects > MAX_RECONNECTS {
            if let Some((exit, newest_seq)) = &recovered {
                if cursor == *newest_seq {
                    return Ok(exit.clone());
                }
                return Err(Error::msg(messages::REPLAY_INCOMPLETE));
            }
            let (exit, newest_seq) = recover_exit(client, &base, cursor, signal).await?;
            if cursor == newest_seq {
                return Ok(exit);
            }
            recovered = Some((exit, newest_seq));
            reconnects = 0;
            signal.sleep(REPLAY_WINDOW_DELAY).await?;
            continue;
        }
        signal.sleep(RECONNECT_DELAY).await?;
    }
}

/// Reads one connection's frames: `Some(exit)` at an exit frame, `None` when the body ended.
async fn consume(
    response: reqwest::Response,
    cursor: &mut u64,
    signal: &Signal,
    on_data: &mut (impl FnMut(OutputKind, Vec<u8>) + Send),
) -> Result<Option<ProcessExit>> {
    let mut frames = NdjsonReader::from_response(response)?;
    loop {
        let frame = tokio::select! {
            frame = frames.next() => frame?,
            reason = signal.aborted() => return Err(reason.to_error().into()),
        };
        let Some(frame) = frame else {
            return Ok(None);
        };
        match interpret(&frame, *cursor)? {
            Event::Skip => {}
            Event::Data { seq, kind, bytes } => {
                on_data(kind, bytes);
                *cursor = seq;
            }
            Event::Exit(exit) => return Ok(Some(exit)),
        }
    }
}

/// `GET wait?scope=tree&timeout_ms=30000`, repeated while it answers 408: the exit and the
/// newest journaled sequence number.
async fn recover_exit(
    client: &CreateOsClient,
    base: &str,
    cursor: u64,
    signal: &Signal,
) -> Result<(ProcessExit, u64)> {
    let path = format!("{base}/wait?scope=tree&timeout_ms=30000");
    let details = loop {
        match client.json(Method::GET, &path, None, Some(signal)).await {
            Ok(details) => break details,
            Err(error) if error.is_status(408) && !signal.is_aborted() => {}
            Err(error) => return Err(error),
        }
    };
    let output = object(details.get("output"))?;
    let newest_seq = match output.get("newest_seq").and_then(Value::as_f64) {
        Some(n) if n.fract() == 0.0 && n.abs() <= MAX_SAFE_INTEGER && n >= cursor as f64 => {
            n as u64
        }
        _ => return Err(Error::msg(messages::JOURNAL_INVALID)),
    };
    let (code, signal_name) = (details.get("exit_code"), details.get("signal"));
    check_exit_status(code, signal_name)?;
    let exit = ProcessExit {
        exit_code: number(code),
        signal: signal_name
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned),
    };
    Ok((exit, newest_seq))
}
