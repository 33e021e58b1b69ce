//! The host's side of login PTYs for the tests: a sink that forwards every login output chunk
//! and exit, in order, to a channel (`ctx.loginPty` as the host sees it), and a terminal that
//! reads that channel with bounded waits. One copy for the login-manager, emulator and
//! real-node tests, each including this file with `#[path]`.

use std::time::{Duration, Instant};

use sandbox_core::{BoxFuture, HostSink, LogLevel, OutputStream};
use tokio::sync::mpsc;

/// What the sink forwards: `(route, session, chunk)` or `(route, session, exit code)`.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    Output(String, String, String),
    Exit(String, String, Option<i32>),
}

/// Forwards login output and exits to a channel; drops execute output and duplex traffic. A
/// log line containing `secret` (when one is set) fails the test.
pub struct ChannelSink {
    events: mpsc::UnboundedSender<Event>,
    secret: Option<&'static str>,
}

impl ChannelSink {
    pub fn new(events: mpsc::UnboundedSender<Event>) -> Self {
        ChannelSink {
            events,
            secret: None,
        }
    }

    /// A sink that also checks that no log line carries `secret`.
    pub fn guarding(events: mpsc::UnboundedSender<Event>, secret: &'static str) -> Self {
        ChannelSink {
            events,
            secret: Some(secret),
        }
    }
}

impl HostSink for ChannelSink {
    fn log(&self, _: LogLevel, m: &str) {
        if let Some(secret) = self.secret {
            assert!(!m.contains(secret));
        }
    }
    fn execution_log(&self, _: OutputStream, _: String) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
    fn login_output(&self, r: &str, s: &str, c: String) {
        let _ = self.events.send(Event::Output(r.into(), s.into(), c));
    }
    fn login_exit(&self, r: &str, s: &str, code: Option<i32>) {
        let _ = self.events.send(Event::Exit(r.into(), s.into(), code));
    }
    fn duplex_data(&self, _: &str, _: &str, _: Vec<u8>) {}
    fn duplex_exit(&self, _: &str, _: &str, _: Option<i32>, _: bool) {}
}

/// Reads a [`ChannelSink`]'s events: all output so far in `seen`, each wait bounded by
/// `patience`.
pub struct Terminal {
    pub events: mpsc::UnboundedReceiver<Event>,
    /// The `(route, session)` every output chunk must come from; `None`: any `route-…` and
    /// `pty-…` pair.
    pub expect: Option<(String, String)>,
    pub seen: String,
    patience: Duration,
}

impl Terminal {
    pub fn new(events: mpsc::UnboundedReceiver<Event>, patience: Duration) -> Self {
        Terminal {
            events,
            expect: None,
            seen: String::new(),
            patience,
        }
    }

    /// From now on, output must come from `session` on `route`.
    pub fn expect_session(&mut self, route: &str, session: &str) {
        self.expect = Some((route.to_string(), session.to_string()));
    }

    /// Reads output until `done(all output)` holds (bounded); panics on an exit first.
    pub async fn until(&mut self, what: &str, done: impl Fn(&str) -> bool) {
        let deadline = Instant::now() + self.patience;
        while !done(&self.seen) {
            let left = deadline.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, self.events.recv()).await {
                Ok(Some(Event::Output(route, session, chunk))) => {
                    match &self.expect {
                        Some(expected) => assert_eq!(&(route, session), expected),
                        None => {
                            assert!(route.starts_with("route-") && session.starts_with("pty-"))
                        }
                    }
                    self.seen.push_str(&chunk)
                }
                Ok(Some(Event::Exit(_, _, code))) => {
                    panic!("exit {code:?} waiting for {what}; seen {:?}", self.seen)
                }
                Ok(None) => panic!("sink closed waiting for {what}"),
                Err(_) => panic!("timed out waiting for {what}; seen {:?}", self.seen),
            }
        }
    }

    /// The session's exit `(route, session, code)` (bounded), the output before it kept.
    pub async fn exit(&mut self) -> (String, String, Option<i32>) {
        loop {
            match tokio::time::timeout(self.patience, self.events.recv()).await {
                Ok(Some(Event::Output(_, _, chunk))) => self.seen.push_str(&chunk),
                Ok(Some(Event::Exit(r, s, code))) => return (r, s, code),
                other => panic!("no exit: {other:?}; seen {:?}", self.seen),
            }
        }
    }
}
