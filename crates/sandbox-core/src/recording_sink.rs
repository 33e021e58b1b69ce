//! A [`HostSink`] that records what a hook reports (log lines and streamed execute output), for
//! tests that assert on it: one copy for every provider test that needs it.

use std::sync::Mutex;

use crate::{BoxFuture, HostSink, LogLevel, OutputStream};

/// Records log lines and execute output in arrival order; login and duplex traffic is dropped
/// (tests of sessions use sinks of their own that forward it).
#[derive(Default)]
pub struct RecordingSink {
    pub logs: Mutex<Vec<(LogLevel, String)>>,
    pub output: Mutex<Vec<(OutputStream, String)>>,
}

impl RecordingSink {
    /// Everything streamed on `stream` so far, concatenated.
    pub fn streamed(&self, stream: OutputStream) -> String {
        let output = self.output.lock().unwrap();
        output
            .iter()
            .filter(|(s, _)| *s == stream)
            .map(|(_, c)| c.as_str())
            .collect()
    }

    /// Every log line and chunk, as one text to search (e.g. for a secret that must not leak).
    pub fn everything(&self) -> String {
        format!(
            "{:?}{:?}",
            self.logs.lock().unwrap(),
            self.output.lock().unwrap()
        )
    }
}

impl HostSink for RecordingSink {
    fn log(&self, level: LogLevel, message: &str) {
        self.logs.lock().unwrap().push((level, message.to_string()));
    }
    fn execution_log(&self, stream: OutputStream, chunk: String) -> BoxFuture<'_, ()> {
        self.output.lock().unwrap().push((stream, chunk));
        Box::pin(async {})
    }
    fn login_output(&self, _: &str, _: &str, _: String) {}
    fn login_exit(&self, _: &str, _: &str, _: Option<i32>) {}
    fn duplex_data(&self, _: &str, _: &str, _: Vec<u8>) {}
    fn duplex_exit(&self, _: &str, _: &str, _: Option<i32>, _: bool) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_logs_and_output_in_order() {
        let sink = RecordingSink::default();
        sink.log(LogLevel::Warn, "careful");
        // The chunk is recorded when the call is made; its future has nothing left to do.
        drop(sink.execution_log(OutputStream::Stdout, "a".into()));
        drop(sink.execution_log(OutputStream::Stderr, "x".into()));
        drop(sink.execution_log(OutputStream::Stdout, "b".into()));
        assert_eq!(sink.streamed(OutputStream::Stdout), "ab");
        assert_eq!(sink.streamed(OutputStream::Stderr), "x");
        assert!(sink.everything().contains("careful"));
    }
}
