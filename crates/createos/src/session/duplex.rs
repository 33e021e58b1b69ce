//! `onDuplexChannelOpen/Write/Stop/Close`: an argv run on pipes (no shell, no PTY), its stdout
//! streamed to `ctx.duplexChannel.data` as bytes. Writes, stops and data act only on the exact
//! (hostRouteId, workerSessionId) pair of a live channel.

use std::sync::Arc;

use sandbox_core::{HostSink, ProviderError, ProviderResult};
use serde_json::{Value, json};

use super::{echo, id_key};
use crate::lease::state::{CWD, SessionKind};
use crate::process::messages;
use crate::process::{ManagedProcess, Mode};
use crate::provider::CreateOsProvider;
use js_compat::uuid::random_uuid;
use js_compat::value;

/// Largest `duplexChannel.data` chunk: its base64 (262 144 chars) is the host's frame limit.
pub const MAX_DATA_CHUNK: usize = 196_608;

/// The original's check: a non-empty array of non-empty strings without NUL. What else it let
/// through, or failed on, follows the JS expression it used.
fn checked_command(command: Option<&Value>) -> ProviderResult<&Vec<Value>> {
    let invalid = || ProviderError::new(messages::DUPLEX_COMMAND_INVALID);
    let not_a_function = ProviderError::not_a_function;
    match command {
        None => Err(ProviderError::cannot_read_properties("undefined", "length")),
        Some(Value::Null) => Err(ProviderError::cannot_read_properties("null", "length")),
        Some(Value::Array(items)) => {
            if items.is_empty() {
                return Err(invalid());
            }
            for item in items {
                match item {
                    Value::String(s) if s.is_empty() || s.contains('\0') => return Err(invalid()),
                    Value::String(_) => {}
                    Value::Array(inner) if inner.iter().any(|v| v == "\0") => {
                        return Err(invalid());
                    }
                    Value::Array(_) => {}
                    other if !value::truthy(Some(other)) => return Err(invalid()),
                    _ => return Err(not_a_function("entry.includes")),
                }
            }
            Ok(items)
        }
        Some(Value::String(s)) if !s.is_empty() => Err(not_a_function("params.command.some")),
        Some(Value::Object(map)) if value::truthy(map.get("length")) => {
            Err(not_a_function("params.command.some"))
        }
        Some(_) => Err(invalid()),
    }
}

impl CreateOsProvider {
    /// `onDuplexChannelOpen`: `{hostRouteId, workerSessionId}`. `sink` receives
    /// `duplexChannel.data` while the process runs and `duplexChannel.exit` once.
    pub async fn duplex_channel_open(
        &self,
        params: &Value,
        sink: Arc<dyn HostSink>,
    ) -> ProviderResult<Value> {
        if self.session_by_route(SessionKind::Duplex, params).is_some() {
            return Err(ProviderError::new(messages::DUPLEX_ROUTE_OPEN));
        }
        let command = checked_command(params.get("command"))?;
        let lease = self.state().resolve_lease(params)?;
        let lease_id = params
            .get("providerLeaseId")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let client = self.clients().client(&lease.config)?;
        let worker_session_id = format!("duplex-{}", random_uuid());
        let body = json!({ "cmd": command[0], "args": command[1..], "cwd": CWD });
        let process = ManagedProcess::create(client, lease_id, body, Mode::Pipe).await?;
        let route = id_key(params.get("hostRouteId"));
        let (entry, forget) = self.register(
            SessionKind::Duplex,
            &route,
            &worker_session_id,
            lease_id,
            &process,
        );
        let (data_sink, data_route, data_id) =
            (sink.clone(), route.clone(), worker_session_id.clone());
        let end_id = worker_session_id.clone();
        process.follow(
            move |bytes| {
                for chunk in bytes.chunks(MAX_DATA_CHUNK) {
                    data_sink.duplex_data(&data_route, &data_id, chunk.to_vec());
                }
            },
            move |result| {
                // Forgotten first: once the host has the exit, the session is gone for it.
                forget();
                let exit_code = result.ok().and_then(|exit| exit.host_exit_code());
                sink.duplex_exit(&route, &end_id, exit_code, false);
            },
        );
        self.close_if_shutting_down(&entry, &process).await;
        let mut reply = echo(params, &["hostRouteId"]);
        reply.insert("workerSessionId".into(), Value::String(worker_session_id));
        Ok(Value::Object(reply))
    }

    /// The channel of `workerSessionId`, if `hostRouteId` is exactly its route.
    fn duplex_pair(&self, params: &Value) -> Option<Arc<crate::lease::state::SessionEntry>> {
        self.session_by_id(SessionKind::Duplex, params)
            .filter(|entry| entry.host_route_id == id_key(params.get("hostRouteId")))
    }

    /// `onDuplexChannelWrite`: `data` is canonical padded base64 (the SDK's
    /// `decodeChannelBytes`); anything else is refused. A write for another pair is ignored.
    pub async fn duplex_channel_write(&self, params: &Value) -> ProviderResult<Option<Value>> {
        let Some(entry) = self.duplex_pair(params) else {
            return Ok(None);
        };
        let bytes = decode_channel_bytes(params.get("data"))
            .ok_or_else(|| ProviderError::new(messages::DUPLEX_DATA_INVALID))?;
        entry.session.write(&bytes).await?;
        Ok(None)
    }

    /// `onDuplexChannelStop`: stops the channel of the exact pair.
    pub async fn duplex_channel_stop(&self, params: &Value) -> ProviderResult<Option<Value>> {
        if let Some(entry) = self.duplex_pair(params) {
            entry.session.stop().await?;
        }
        Ok(None)
    }

    /// `onDuplexChannelClose`: closes the channel of route `hostRouteId` (stdin close, SIGTERM,
    /// tree delete). `{hostRouteId, workerSessionId}` once bound, `{hostRouteId}` otherwise.
    pub async fn duplex_channel_close(&self, params: &Value) -> ProviderResult<Value> {
        let mut reply = echo(params, &["hostRouteId"]);
        if let Some(entry) = self.session_by_route(SessionKind::Duplex, params) {
            entry.session.close().await?;
            self.forget_session(&entry);
            reply.insert(
                "workerSessionId".into(),
                Value::String(entry.worker_session_id.clone()),
            );
        }
        Ok(Value::Object(reply))
    }
}

/// The SDK's `decodeChannelBytes(value)`: the bytes of a non-empty string whose decoding
/// re-encodes to the same text, else `None` (a protocol error, never empty input).
fn decode_channel_bytes(value: Option<&Value>) -> Option<Vec<u8>> {
    match value {
        Some(Value::String(text)) if !text.is_empty() => js_compat::base64::decode_exact(text),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channel_bytes_must_round_trip() {
        let d = |v: serde_json::Value| decode_channel_bytes(Some(&v));
        assert_eq!(d(json!("aGk=")), Some(b"hi".to_vec()));
        assert_eq!(d(json!("aGkh")), Some(b"hi!".to_vec()));
        assert_eq!(d(json!("+/+/")), Some(vec![0xfb, 0xff, 0xbf]));
        for bad in [
            json!(""),
            json!("aGk"),
            json!("aGl="),
            json!("a+/="),
            json!("aGk=\n"),
            json!(" aGk="),
            json!("-_-_"),
            json!(null),
            json!(5),
            json!(["aGk="]),
        ] {
            assert_eq!(d(bad.clone()), None, "{bad}");
        }
        assert_eq!(decode_channel_bytes(None), None);
    }

    #[test]
    fn duplex_commands() {
        let check = |v: Value| checked_command(Some(&v)).map(|_| ()).map_err(|e| e.message);
        assert_eq!(check(json!(["cat"])), Ok(()));
        assert_eq!(check(json!(["sh", "-c", "cat"])), Ok(()));
        for bad in [
            json!([]),
            json!([""]),
            json!(["a\0b"]),
            json!(["cat", ""]),
            json!(["cat", null]),
            json!(""),
            json!(5),
            json!({}),
        ] {
            assert_eq!(
                check(bad.clone()),
                Err(messages::DUPLEX_COMMAND_INVALID.to_owned()),
                "{bad}"
            );
        }
        assert_eq!(
            checked_command(None).unwrap_err().message,
            "Cannot read properties of undefined (reading 'length')"
        );
        assert_eq!(
            check(json!("cat")).unwrap_err(),
            "params.command.some is not a function"
        );
        assert_eq!(
            check(json!(["cat", 5])).unwrap_err(),
            "entry.includes is not a function"
        );
    }
}
