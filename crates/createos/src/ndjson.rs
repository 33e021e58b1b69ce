//! The NDJSON frame reader of both streaming endpoints (`/exec?stream=true`, process output).
//!
//! Bytes are decoded as UTF-8 (malformed bytes become U+FFFD) and split on `\n`. A line, or the
//! unterminated remainder after a chunk, longer than 1 048 576 UTF-16 units is refused; blank
//! lines are skipped; every other line must be a JSON object. Frames are handed out one at a
//! time, so a frame after the one that ends the stream is never looked at.

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::messages;
use js_compat::{json, string, utf8::Utf8Decoder};

/// Longest frame, in UTF-16 units of decoded text (the original compared JS string lengths).
pub const MAX_FRAME_UNITS: usize = 1_048_576;

/// A source of body chunks (a `reqwest::Response`, or a test's byte list).
pub trait ChunkSource: Send {
    /// The next chunk, `Ok(None)` at the end, `Err` when the transfer broke.
    fn next_chunk(
        &mut self,
    ) -> impl std::future::Future<Output = Result<Option<bytes::Bytes>>> + Send;
}

impl ChunkSource for reqwest::Response {
    async fn next_chunk(&mut self) -> Result<Option<bytes::Bytes>> {
        // Node's fetch rejects a body read on a broken connection with `TypeError: terminated`.
        self.chunk()
            .await
            .map_err(|_| Error::type_error(messages::TERMINATED))
    }
}

pub struct NdjsonReader<S> {
    source: Option<S>,
    decoder: Utf8Decoder,
    pending: String,
    /// Start of the unread part of `pending`.
    offset: usize,
    /// The remainder check runs once per chunk, after its complete lines.
    remainder_checked: bool,
}

impl NdjsonReader<reqwest::Response> {
    /// Reads the frames of a streaming response. A response without a body (204/205, which
    /// fetch exposes as `body: null`) is refused.
    pub fn from_response(response: reqwest::Response) -> Result<Self> {
        if matches!(response.status().as_u16(), 204 | 205) {
            return Err(Error::msg(messages::EMPTY_PROCESS_STREAM));
        }
        Ok(Self::new(response))
    }
}

impl<S: ChunkSource> NdjsonReader<S> {
    pub fn new(source: S) -> Self {
        Self {
            source: Some(source),
            decoder: Utf8Decoder::new(),
            pending: String::new(),
            offset: 0,
            remainder_checked: true,
        }
    }

    /// The next frame, or `None` at the end of the stream.
    pub async fn next(&mut self) -> Result<Option<Map<String, Value>>> {
        loop {
            if let Some(newline) = self.pending[self.offset..].find('\n') {
                let start = self.offset;
                let end = start + newline;
                self.offset = end + 1;
                let line = &self.pending[start..end];
                if line.len() > MAX_FRAME_UNITS && string::utf16_len(line) > MAX_FRAME_UNITS {
                    return Err(Error::msg(messages::FRAME_TOO_LARGE));
                }
                if string::trim(line).is_empty() {
                    continue;
                }
                return parse_frame(line).map(Some);
            }
            let rest = &self.pending[self.offset..];
            if !self.remainder_checked {
                self.remainder_checked = true;
                if rest.len() > MAX_FRAME_UNITS && string::utf16_len(rest) > MAX_FRAME_UNITS {
                    return Err(Error::msg(messages::FRAME_TOO_LARGE));
                }
            }
            let Some(source) = self.source.as_mut() else {
                // The end: a non-blank remainder is the last frame.
                if string::trim(rest).is_empty() {
                    return Ok(None);
                }
                let frame = parse_frame(rest);
                self.offset = self.pending.len();
                return frame.map(Some);
            };
            let chunk = source.next_chunk().await?;
            self.pending.drain(..self.offset);
            self.offset = 0;
            match chunk {
                Some(bytes) => self.decoder.decode_into(&bytes, &mut self.pending),
                None => {
                    let text = self.decoder.finish();
                    self.pending.push_str(&text);
                    // Dropping the response releases the connection.
                    self.source = None;
                }
            }
            self.remainder_checked = false;
        }
    }
}

fn parse_frame(line: &str) -> Result<Map<String, Value>> {
    match json::parse(line) {
        Some(Value::Object(frame)) => Ok(frame),
        _ => Err(Error::msg(messages::INVALID_FRAME)),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use super::*;
    use sandbox_core::ProviderError;
    use serde_json::json;

    struct Chunks(VecDeque<Result<Option<bytes::Bytes>>>);

    impl ChunkSource for Chunks {
        async fn next_chunk(&mut self) -> Result<Option<bytes::Bytes>> {
            self.0.pop_front().unwrap_or(Ok(None))
        }
    }

    fn reader(chunks: Vec<&[u8]>) -> NdjsonReader<Chunks> {
        NdjsonReader::new(Chunks(
            chunks
                .into_iter()
                .map(|c| Ok(Some(bytes::Bytes::copy_from_slice(c))))
                .collect(),
        ))
    }

    async fn all(mut r: NdjsonReader<Chunks>) -> std::result::Result<Vec<Value>, String> {
        let mut out = Vec::new();
        loop {
            match r.next().await {
                Ok(Some(frame)) => out.push(Value::Object(frame)),
                Ok(None) => return Ok(out),
                Err(e) => return Err(ProviderError::from(e).message),
            }
        }
    }

    #[tokio::test]
    async fn frames_split_across_chunks_and_blank_lines() {
        let r = reader(vec![
            b"\xEF\xBB\xBF{\"a\":1}\n\n  \r\n{\"b\":",
            b"\"\xC3",
            b"\xA9\"}\r\n{\"c\":3}",
        ]);
        assert_eq!(
            all(r).await.unwrap(),
            vec![json!({"a":1}), json!({"b":"é"}), json!({"c":3})]
        );
    }

    #[tokio::test]
    async fn invalid_and_oversized_frames() {
        assert_eq!(
            all(reader(vec![b"[1]\n"])).await.unwrap_err(),
            messages::INVALID_FRAME
        );
        assert_eq!(
            all(reader(vec![b"null\n"])).await.unwrap_err(),
            messages::INVALID_FRAME
        );
        let big = format!("{{\"x\":\"{}\"}}\n", "a".repeat(MAX_FRAME_UNITS));
        assert_eq!(
            all(reader(vec![big.as_bytes()])).await.unwrap_err(),
            messages::FRAME_TOO_LARGE
        );
        // Exactly at the limit is fine.
        let edge = format!("\"{}\"", "a".repeat(MAX_FRAME_UNITS - 2));
        let line = format!("{edge}\n");
        assert_eq!(
            all(reader(vec![line.as_bytes()])).await.unwrap_err(),
            messages::INVALID_FRAME
        );
        // An unterminated remainder over the limit fails after the complete lines.
        let mut r = reader(vec![
            b"{\"first\":1}\n",
            "b".repeat(MAX_FRAME_UNITS + 1).as_bytes(),
        ]);
        assert_eq!(
            r.next().await.unwrap(),
            Some(json!({"first":1}).as_object().unwrap().clone())
        );
        assert_eq!(
            ProviderError::from(r.next().await.unwrap_err()).message,
            messages::FRAME_TOO_LARGE
        );
    }

    #[tokio::test]
    async fn broken_transfer_is_terminated() {
        let r = NdjsonReader::new(Chunks(
            vec![
                Ok(Some(bytes::Bytes::from_static(b"{\"a\":1}\n"))),
                Err(Error::type_error(messages::TERMINATED)),
            ]
            .into(),
        ));
        assert_eq!(all(r).await.unwrap_err(), messages::TERMINATED);
    }
}
