//! The fast-upload interceptor (`upload-interceptor.ts` @ 58d1b192).
//!
//! `@paperclipai/adapter-utils` writes a file through many `sh -c` execs: create a temp file,
//! append base64 chunks with `printf`, decode into the target. Each exec is a websocket round
//! trip, so the interceptor recognises exactly those three scripts, buffers the chunks in the
//! worker and lets execute write the file with one exec at the end. Anything else, or a chunk
//! or finalize without an init, passes through to a normal exec.

use std::collections::HashMap;

/// The temp file suffix of the protocol.
const TEMP_SUFFIX: &str = ".paperclip-upload.b64";
/// The buffer cap, in decoded bytes (100 MiB).
pub const MAX_BUFFER_BYTES: u64 = 100 * 1024 * 1024;

/// The message of a fast upload whose buffered payload passed [`MAX_BUFFER_BYTES`] (B17 in the
/// error reference).
pub fn buffer_cap_message(target_path: &str) -> String {
    format!(
        "Fast upload buffer cap exceeded for {target_path}; retry the upload with a smaller payload."
    )
}

/// What execute does with one `sh -c` script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UploadDecision {
    /// Acknowledge without touching the pod.
    Ack { reason: String },
    /// Write `payload` to `target_path` with one exec.
    Flush {
        target_path: String,
        payload: Vec<u8>,
    },
    /// The buffer cap was exceeded; the buffer is dropped.
    Error { message: String },
    /// Run the script as it is.
    Passthrough { reason: &'static str },
}

#[derive(Debug, Default)]
struct BufferedUpload {
    target_path: String,
    chunks: String,
}

/// One lease's interceptor: buffers by temp path.
#[derive(Debug)]
pub struct FastUploadInterceptor {
    buffers: HashMap<String, BufferedUpload>,
    max_buffer_bytes: u64,
}

impl Default for FastUploadInterceptor {
    fn default() -> Self {
        Self::new(MAX_BUFFER_BYTES)
    }
}

impl FastUploadInterceptor {
    pub fn new(max_buffer_bytes: u64) -> Self {
        Self {
            buffers: HashMap::new(),
            max_buffer_bytes,
        }
    }

    pub fn pending_count(&self) -> usize {
        self.buffers.len()
    }

    /// `decide(command)`.
    pub fn decide(&mut self, command: &str) -> UploadDecision {
        if let Some((dir, target)) = match_init(command) {
            if js_compat::path::dirname(target) != dir {
                return UploadDecision::Passthrough {
                    reason: "init dir/target mismatch",
                };
            }
            self.buffers.insert(
                format!("{target}{TEMP_SUFFIX}"),
                BufferedUpload {
                    target_path: target.to_string(),
                    chunks: String::new(),
                },
            );
            return UploadDecision::Ack {
                reason: format!("init upload to {target}"),
            };
        }
        if let Some((chunk, target)) = match_chunk(command) {
            let temp = format!("{target}{TEMP_SUFFIX}");
            let Some(upload) = self.buffers.get_mut(&temp) else {
                return UploadDecision::Passthrough {
                    reason: "chunk without prior init",
                };
            };
            // `total + chunk > max * 4 / 3` in JS numbers.
            let total = (upload.chunks.len() + chunk.len()) as f64;
            if total > (self.max_buffer_bytes as f64 * 4.0) / 3.0 {
                let target_path = upload.target_path.clone();
                self.buffers.remove(&temp);
                return UploadDecision::Error {
                    message: buffer_cap_message(&target_path),
                };
            }
            upload.chunks.push_str(chunk);
            return UploadDecision::Ack {
                reason: format!("buffered {} base64 chars", chunk.len()),
            };
        }
        if let Some(target) = match_finalize(command) {
            let temp = format!("{target}{TEMP_SUFFIX}");
            let Some(upload) = self.buffers.remove(&temp) else {
                return UploadDecision::Passthrough {
                    reason: "finalize without buffered state",
                };
            };
            return UploadDecision::Flush {
                target_path: upload.target_path,
                payload: js_compat::base64::decode_lenient(&upload.chunks),
            };
        }
        UploadDecision::Passthrough {
            reason: "no upload pattern",
        }
    }
}

/// Splits `'<quoted>'` off the front of `s`: the quoted text is non-empty and has no `'`.
fn quoted(s: &str) -> Option<(&str, &str)> {
    let rest = s.strip_prefix('\'')?;
    let end = rest.find('\'')?;
    (end > 0).then(|| (&rest[..end], &rest[end + 1..]))
}

/// A quoted temp path `<T>.paperclip-upload.b64` → `T` (non-empty).
fn temp_target(quoted_path: &str) -> Option<&str> {
    quoted_path
        .strip_suffix(TEMP_SUFFIX)
        .filter(|t| !t.is_empty())
}

/// `mkdir -p '<D>' && rm -f '<T>.paperclip-upload.b64' && : > '<T>.paperclip-upload.b64'`.
fn match_init(command: &str) -> Option<(&str, &str)> {
    let (dir, rest) = quoted(command.strip_prefix("mkdir -p ")?)?;
    let (temp, rest) = quoted(rest.strip_prefix(" && rm -f ")?)?;
    let target = temp_target(temp)?;
    let expected = format!(" && : > '{target}{TEMP_SUFFIX}'");
    (rest == expected).then_some((dir, target))
}

/// `printf '%s' '<base64>' >> '<T>.paperclip-upload.b64'`.
fn match_chunk(command: &str) -> Option<(&str, &str)> {
    let (chunk, rest) = quoted(command.strip_prefix("printf '%s' ")?)?;
    if !chunk
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
    {
        return None;
    }
    let (temp, rest) = quoted(rest.strip_prefix(" >> ")?)?;
    (rest.is_empty()).then_some(())?;
    Some((chunk, temp_target(temp)?))
}

/// `base64 -d < '<T>.paperclip-upload.b64' > '<T>' && rm -f '<T>.paperclip-upload.b64'`.
fn match_finalize(command: &str) -> Option<&str> {
    let (temp, rest) = quoted(command.strip_prefix("base64 -d < ")?)?;
    let target = temp_target(temp)?;
    let expected = format!(" > '{target}' && rm -f '{target}{TEMP_SUFFIX}'");
    (rest == expected).then_some(target)
}

/// The flush script: `mkdir -p '<dir>' && head -c <L> | base64 -d > '<target>'` (no escaping:
/// the patterns exclude `'`).
pub fn flush_script(target_path: &str, base64_len: usize) -> String {
    let dir = target_path
        .rfind('/')
        .map_or("", |index| &target_path[..index]);
    format!("mkdir -p '{dir}' && head -c {base64_len} | base64 -d > '{target_path}'")
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: &str = "/workspace/a/file.txt";

    fn init(dir: &str, target: &str) -> String {
        format!(
            "mkdir -p '{dir}' && rm -f '{target}.paperclip-upload.b64' && : > '{target}.paperclip-upload.b64'"
        )
    }

    fn chunk(data: &str, target: &str) -> String {
        format!("printf '%s' '{data}' >> '{target}.paperclip-upload.b64'")
    }

    fn finalize(target: &str) -> String {
        format!(
            "base64 -d < '{target}.paperclip-upload.b64' > '{target}' && rm -f '{target}.paperclip-upload.b64'"
        )
    }

    #[test]
    fn the_whole_protocol_buffers_and_flushes() {
        let mut interceptor = FastUploadInterceptor::default();
        assert_eq!(
            interceptor.decide(&init("/workspace/a", T)),
            UploadDecision::Ack {
                reason: format!("init upload to {T}")
            }
        );
        let encoded = js_compat::base64::encode("héllo world".as_bytes());
        let (a, b) = encoded.split_at(8);
        assert_eq!(
            interceptor.decide(&chunk(a, T)),
            UploadDecision::Ack {
                reason: "buffered 8 base64 chars".into()
            }
        );
        assert!(matches!(
            interceptor.decide(&chunk(b, T)),
            UploadDecision::Ack { .. }
        ));
        assert_eq!(
            interceptor.decide(&finalize(T)),
            UploadDecision::Flush {
                target_path: T.into(),
                payload: "héllo world".as_bytes().to_vec()
            }
        );
        assert_eq!(interceptor.pending_count(), 0);
        assert_eq!(
            interceptor.decide(&finalize(T)),
            UploadDecision::Passthrough {
                reason: "finalize without buffered state"
            }
        );
    }

    #[test]
    fn passthroughs() {
        let mut interceptor = FastUploadInterceptor::default();
        assert_eq!(
            interceptor.decide(&init("/workspace/b", T)),
            UploadDecision::Passthrough {
                reason: "init dir/target mismatch"
            }
        );
        assert_eq!(
            interceptor.decide(&chunk("QQ==", T)),
            UploadDecision::Passthrough {
                reason: "chunk without prior init"
            }
        );
        assert_eq!(
            interceptor.decide("echo hi"),
            UploadDecision::Passthrough {
                reason: "no upload pattern"
            }
        );
        // Mismatched temp paths and trailing text are not the protocol.
        let bad =
            "mkdir -p '/w' && rm -f '/w/x.paperclip-upload.b64' && : > '/w/y.paperclip-upload.b64'";
        assert_eq!(
            interceptor.decide(bad),
            UploadDecision::Passthrough {
                reason: "no upload pattern"
            }
        );
        let trailing = format!("{}\n", init("/workspace/a", T));
        assert!(matches!(
            interceptor.decide(&trailing),
            UploadDecision::Passthrough { .. }
        ));
        assert!(matches!(
            interceptor.decide("printf '%s' 'a b' >> '/w/x.paperclip-upload.b64'"),
            UploadDecision::Passthrough { .. }
        ));
    }

    #[test]
    fn the_cap_drops_the_buffer() {
        let mut interceptor = FastUploadInterceptor::new(3);
        interceptor.decide(&init("/workspace/a", T));
        assert!(matches!(
            interceptor.decide(&chunk("QUJD", T)),
            UploadDecision::Ack { .. }
        ));
        assert_eq!(
            interceptor.decide(&chunk("QQ==", T)),
            UploadDecision::Error {
                message: "Fast upload buffer cap exceeded for /workspace/a/file.txt; retry the upload with a smaller payload.".into()
            }
        );
        assert_eq!(interceptor.pending_count(), 0);
    }

    #[test]
    fn flush_script_matches_the_original() {
        assert_eq!(
            flush_script("/workspace/a/f.txt", 8),
            "mkdir -p '/workspace/a' && head -c 8 | base64 -d > '/workspace/a/f.txt'"
        );
    }
}
