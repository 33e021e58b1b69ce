//! One frame of `/processes/{pid}/connect?after=N`, judged against the follower's cursor.

use js_compat::value;
use serde_json::{Map, Value};

use super::messages;
use crate::error::{Error, Result};

/// `Number.MAX_SAFE_INTEGER`.
const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

/// The stream a data frame belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputKind {
    Stdout,
    Stderr,
    Pty,
}

/// How a process ended, as the service reported it.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessExit {
    /// `exit_code` when it is a JSON number, else `None` (killed by a signal).
    pub exit_code: Option<Value>,
    /// `signal` when it is a string (an exit frame keeps `""`; wait recovery makes it `None`).
    pub signal: Option<String>,
}

impl ProcessExit {
    /// The exit code as the host sink takes it: an integral code in `i32` range, else `None`.
    pub fn host_exit_code(&self) -> Option<i32> {
        let code = self.exit_code.as_ref()?.as_f64()?;
        (code.fract() == 0.0 && code >= f64::from(i32::MIN) && code <= f64::from(i32::MAX))
            .then_some(code as i32)
    }

    /// `${exitCode ?? "signal"}` of the original's log line.
    pub fn code_text(&self) -> String {
        match &self.exit_code {
            Some(code) => value::to_string(code),
            None => "signal".to_owned(),
        }
    }
}

/// What a frame means for the follower.
#[derive(Debug, PartialEq)]
pub enum Event {
    /// A heartbeat, or output already delivered (a replay after reconnecting).
    Skip,
    /// The next output chunk: deliver it, then the cursor becomes `seq`.
    Data {
        seq: u64,
        kind: OutputKind,
        bytes: Vec<u8>,
    },
    Exit(ProcessExit),
}

/// `^SIG[A-Z0-9]+$`.
pub(crate) fn is_signal_name(text: &str) -> bool {
    text.strip_prefix("SIG").is_some_and(|rest| {
        !rest.is_empty()
            && rest
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
    })
}

/// An integer `exit_code` or a signal name; a missing status otherwise.
pub(crate) fn check_exit_status(exit_code: Option<&Value>, signal: Option<&Value>) -> Result<()> {
    let code_ok = exit_code.is_some_and(value::is_integer);
    let signal_ok = matches!(signal, Some(Value::String(s)) if is_signal_name(s));
    if code_ok || signal_ok {
        Ok(())
    } else {
        Err(Error::msg(messages::EXIT_STATUS_MISSING))
    }
}

/// The number if it is one (`typeof x === "number" ? x : null`).
pub(crate) fn number(value: Option<&Value>) -> Option<Value> {
    value.filter(|v| v.is_number()).cloned()
}

pub fn interpret(frame: &Map<String, Value>, cursor: u64) -> Result<Event> {
    match frame.get("type").and_then(Value::as_str) {
        Some("heartbeat") => Ok(Event::Skip),
        Some("data") => {
            let seq = match frame.get("seq").and_then(Value::as_f64) {
                Some(seq) if seq.fract() == 0.0 && (1.0..=MAX_SAFE_INTEGER).contains(&seq) => {
                    seq as u64
                }
                _ => return Err(Error::msg(messages::SEQUENCE_INVALID)),
            };
            if seq <= cursor {
                return Ok(Event::Skip);
            }
            if seq != cursor + 1 {
                return Err(Error::msg(messages::SEQUENCE_GAP));
            }
            let kind = match frame.get("stream").and_then(Value::as_str) {
                Some("stdout") => OutputKind::Stdout,
                Some("stderr") => OutputKind::Stderr,
                Some("pty") => OutputKind::Pty,
                _ => return Err(Error::msg(messages::OUTPUT_INVALID)),
            };
            let bytes = frame
                .get("data_base64")
                .and_then(Value::as_str)
                .and_then(js_compat::base64::decode_canonical)
                .ok_or_else(|| Error::msg(messages::OUTPUT_INVALID))?;
            Ok(Event::Data { seq, kind, bytes })
        }
        Some("exit") => {
            let (code, signal) = (frame.get("exit_code"), frame.get("signal"));
            check_exit_status(code, signal)?;
            Ok(Event::Exit(ProcessExit {
                exit_code: number(code),
                signal: signal.and_then(Value::as_str).map(str::to_owned),
            }))
        }
        Some("error") => Err(Error::msg(
            if frame.get("error").and_then(Value::as_str) == Some("output_offset_expired") {
                messages::OUTPUT_EVICTED
            } else {
                messages::STREAM_ERROR
            },
        )),
        _ => Err(Error::msg(messages::UNKNOWN_EVENT)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(frame: Value, cursor: u64) -> std::result::Result<Event, String> {
        interpret(frame.as_object().unwrap(), cursor)
            .map_err(|e| sandbox_core::ProviderError::from(e).message)
    }

    #[test]
    fn data_frames_follow_the_cursor() {
        let data = |seq: Value, stream: &str, b64: &str| json!({ "type": "data", "seq": seq, "stream": stream, "data_base64": b64 });
        assert_eq!(
            run(data(json!(1), "pty", "aGk="), 0),
            Ok(Event::Data {
                seq: 1,
                kind: OutputKind::Pty,
                bytes: b"hi".to_vec()
            })
        );
        assert_eq!(
            run(data(json!(2.0), "stdout", ""), 1).unwrap(),
            Event::Data {
                seq: 2,
                kind: OutputKind::Stdout,
                bytes: vec![]
            }
        );
        // Replayed output is skipped before anything else is checked.
        assert_eq!(run(data(json!(1), "bogus", "!"), 1), Ok(Event::Skip));
        assert_eq!(
            run(data(json!(3), "stdout", ""), 1).unwrap_err(),
            messages::SEQUENCE_GAP
        );
        for seq in [
            json!(0),
            json!(-1),
            json!(1.5),
            json!("1"),
            json!(null),
            json!(9_007_199_254_740_992u64),
        ] {
            assert_eq!(
                run(data(seq, "stdout", ""), 0).unwrap_err(),
                messages::SEQUENCE_INVALID
            );
        }
        assert_eq!(
            run(data(json!(1), "tty", ""), 0).unwrap_err(),
            messages::OUTPUT_INVALID
        );
        assert_eq!(
            run(data(json!(1), "stdout", "aGk"), 0).unwrap_err(),
            messages::OUTPUT_INVALID
        );
        assert_eq!(
            run(json!({ "type": "data", "seq": 1, "stream": "stdout" }), 0).unwrap_err(),
            messages::OUTPUT_INVALID
        );
    }

    #[test]
    fn exits_errors_and_unknown_frames() {
        assert_eq!(
            run(json!({ "type": "exit", "exit_code": 0, "signal": null }), 0),
            Ok(Event::Exit(ProcessExit {
                exit_code: Some(json!(0)),
                signal: None
            }))
        );
        assert_eq!(
            run(
                json!({ "type": "exit", "exit_code": null, "signal": "SIGKILL" }),
                0
            ),
            Ok(Event::Exit(ProcessExit {
                exit_code: None,
                signal: Some("SIGKILL".into())
            }))
        );
        for frame in [
            json!({ "type": "exit" }),
            json!({ "type": "exit", "exit_code": 1.5 }),
            json!({ "type": "exit", "signal": "SIGterm" }),
            json!({ "type": "exit", "signal": "SIG" }),
        ] {
            assert_eq!(run(frame, 0).unwrap_err(), messages::EXIT_STATUS_MISSING);
        }
        assert_eq!(
            run(
                json!({ "type": "error", "error": "output_offset_expired" }),
                0
            )
            .unwrap_err(),
            messages::OUTPUT_EVICTED
        );
        assert_eq!(
            run(json!({ "type": "error", "error": "boom" }), 0).unwrap_err(),
            messages::STREAM_ERROR
        );
        assert_eq!(run(json!({ "type": "heartbeat" }), 0), Ok(Event::Skip));
        assert_eq!(
            run(json!({ "hb": true }), 0).unwrap_err(),
            messages::UNKNOWN_EVENT
        );
        assert_eq!(
            run(json!({ "type": 1 }), 0).unwrap_err(),
            messages::UNKNOWN_EVENT
        );
    }

    #[test]
    fn exit_codes_for_the_host_and_the_log() {
        let exit = |code: Value| ProcessExit {
            exit_code: number(Some(&code)),
            signal: None,
        };
        assert_eq!(exit(json!(3)).host_exit_code(), Some(3));
        assert_eq!(exit(json!(3)).code_text(), "3");
        assert_eq!(exit(json!(null)).code_text(), "signal");
        assert_eq!(exit(json!(null)).host_exit_code(), None);
    }
}
