//! A host sink that records the session notifications in order and can be awaited.

use std::sync::Mutex;
use std::time::Duration;

use sandbox_core::{BoxFuture, HostSink, LogLevel, OutputStream};

use crate::common::no_canary;

#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    Log(String),
    Output {
        route: String,
        session: String,
        text: String,
    },
    LoginExit {
        route: String,
        session: String,
        code: Option<i32>,
    },
    Data {
        route: String,
        session: String,
        bytes: Vec<u8>,
    },
    DuplexExit {
        route: String,
        session: String,
        code: Option<i32>,
        transport_closed: bool,
    },
}

#[derive(Default)]
pub struct SessionSink {
    events: Mutex<Vec<Event>>,
    changed: tokio::sync::Notify,
}

impl SessionSink {
    pub fn events(&self) -> Vec<Event> {
        self.events.lock().unwrap().clone()
    }

    fn push(&self, event: Event) {
        self.events.lock().unwrap().push(event);
        self.changed.notify_waiters();
    }

    /// Resolves once `pred` holds for the events so far (fails the test after 60 s).
    pub async fn until(&self, what: &str, pred: impl Fn(&[Event]) -> bool) {
        let wait = async {
            loop {
                let changed = self.changed.notified();
                if pred(&self.events()) {
                    return;
                }
                changed.await;
            }
        };
        if tokio::time::timeout(Duration::from_secs(60), wait)
            .await
            .is_err()
        {
            panic!("timed out waiting for {what}; events: {:#?}", self.events());
        }
    }

    pub fn logs(&self) -> Vec<String> {
        self.events()
            .into_iter()
            .filter_map(|e| match e {
                Event::Log(line) => Some(line),
                _ => None,
            })
            .collect()
    }

    /// The login output of a session, concatenated.
    pub fn output(&self, session: &str) -> String {
        self.events()
            .into_iter()
            .filter_map(|e| match e {
                Event::Output {
                    session: s, text, ..
                } if s == session => Some(text),
                _ => None,
            })
            .collect()
    }

    /// The duplex data of a session, concatenated.
    pub fn data(&self, session: &str) -> Vec<u8> {
        self.events()
            .into_iter()
            .filter_map(|e| match e {
                Event::Data {
                    session: s, bytes, ..
                } if s == session => Some(bytes),
                _ => None,
            })
            .flatten()
            .collect()
    }

    /// The exit notifications of a session (login or duplex), as `(route, code)`.
    pub fn exits(&self, session: &str) -> Vec<(String, Option<i32>)> {
        self.events()
            .into_iter()
            .filter_map(|e| match e {
                Event::LoginExit {
                    route,
                    session: s,
                    code,
                } if s == session => Some((route, code)),
                Event::DuplexExit {
                    route,
                    session: s,
                    code,
                    ..
                } if s == session => Some((route, code)),
                _ => None,
            })
            .collect()
    }

    pub async fn exited(&self, session: &str) -> Option<i32> {
        self.until(&format!("the exit of {session}"), |events| {
            events.iter().any(|e| {
                matches!(e, Event::LoginExit { session: s, .. } | Event::DuplexExit { session: s, .. } if s == session)
            })
        })
        .await;
        self.exits(session)[0].1
    }

    pub fn assert_no_canary(&self) {
        for event in self.events() {
            no_canary(&format!("{event:?}"));
            if let Event::Data { bytes, .. } = event {
                no_canary(&String::from_utf8_lossy(&bytes));
            }
        }
    }
}

impl HostSink for SessionSink {
    fn log(&self, level: LogLevel, message: &str) {
        assert_eq!(level, LogLevel::Info);
        self.push(Event::Log(message.to_owned()));
    }

    fn execution_log(&self, _: OutputStream, _: String) -> BoxFuture<'_, ()> {
        panic!("session hooks never write execution logs");
    }

    fn login_output(&self, route: &str, session: &str, text: String) {
        self.push(Event::Output {
            route: route.into(),
            session: session.into(),
            text,
        });
    }

    fn login_exit(&self, route: &str, session: &str, code: Option<i32>) {
        self.push(Event::LoginExit {
            route: route.into(),
            session: session.into(),
            code,
        });
    }

    fn duplex_data(&self, route: &str, session: &str, bytes: Vec<u8>) {
        assert!(!bytes.is_empty() && bytes.len() <= 196_608);
        self.push(Event::Data {
            route: route.into(),
            session: session.into(),
            bytes,
        });
    }

    fn duplex_exit(&self, route: &str, session: &str, code: Option<i32>, transport_closed: bool) {
        self.push(Event::DuplexExit {
            route: route.into(),
            session: session.into(),
            code,
            transport_closed,
        });
    }
}
