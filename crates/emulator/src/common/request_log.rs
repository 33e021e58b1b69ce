//! The request log's ring buffer: records in arrival order, numbered from 1 over the
//! emulator's life (not reset by `clear`), the oldest dropped beyond the limit. What a record
//! holds is each emulator's own [`Record`].

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::{Instant, SystemTime};

use serde_json::Value;

use super::util::unix_ms;

/// Bodies up to this size that parse as JSON are kept verbatim so tests can assert them.
const KEEP_JSON_BODY_BYTES: usize = 64 * 1024;

/// What the log needs of a record.
pub trait Record: Clone {
    fn seq(&self) -> u64;
    /// The response status, once known.
    fn set_status(&mut self, status: u16);
    /// Ids of the faults applied to the request.
    fn set_faults(&mut self, faults: Vec<u64>);
}

/// Implements [`Record`] for a struct with `seq: u64`, `status: Option<u16>` and
/// `faults: Vec<u64>` fields.
macro_rules! impl_record {
    ($record:ty) => {
        impl $crate::common::request_log::Record for $record {
            fn seq(&self) -> u64 {
                self.seq
            }
            fn set_status(&mut self, status: u16) {
                self.status = Some(status);
            }
            fn set_faults(&mut self, faults: Vec<u64>) {
                self.faults = faults;
            }
        }
    };
}
pub(crate) use impl_record;

/// When a request arrived: milliseconds since the emulator started (monotonic, for pacing
/// assertions) and the wall clock.
#[derive(Debug, Clone, Copy)]
pub struct Arrival {
    pub at_ms: f64,
    pub unix_ms: u64,
}

pub struct RequestLog<R> {
    started: Instant,
    limit: usize,
    inner: Mutex<(u64, VecDeque<R>)>,
}

impl<R: Record> RequestLog<R> {
    pub fn new(started: Instant, limit: usize) -> Self {
        RequestLog {
            started,
            limit: limit.max(1),
            inner: Mutex::new((0, VecDeque::new())),
        }
    }

    /// The arrival time of a request that arrives now.
    pub fn arrival(&self) -> Arrival {
        Arrival {
            at_ms: self.started.elapsed().as_secs_f64() * 1000.0,
            unix_ms: unix_ms(SystemTime::now()),
        }
    }

    /// Appends the record `make` builds from its sequence number; returns that number.
    pub fn append(&self, make: impl FnOnce(u64) -> R) -> u64 {
        let mut inner = self.inner.lock().unwrap();
        inner.0 += 1;
        let seq = inner.0;
        inner.1.push_back(make(seq));
        while inner.1.len() > self.limit {
            inner.1.pop_front();
        }
        seq
    }

    fn update(&self, seq: u64, f: impl FnOnce(&mut R)) {
        let mut inner = self.inner.lock().unwrap();
        if let Some(r) = inner.1.iter_mut().rev().find(|r| r.seq() == seq) {
            f(r);
        }
    }

    pub fn set_status(&self, seq: u64, status: u16) {
        self.update(seq, |r| r.set_status(status));
    }

    pub fn set_faults(&self, seq: u64, faults: Vec<u64>) {
        self.update(seq, |r| r.set_faults(faults));
    }

    /// Records with `seq > since`.
    pub fn snapshot(&self, since: u64) -> Vec<R> {
        let inner = self.inner.lock().unwrap();
        inner
            .1
            .iter()
            .filter(|r| r.seq() > since)
            .cloned()
            .collect()
    }

    pub fn clear(&self) {
        self.inner.lock().unwrap().1.clear();
    }
}

/// The body when it is JSON and at most 64 KiB (kept so tests can assert it).
pub fn body_json(body: &[u8]) -> Option<Value> {
    (!body.is_empty() && body.len() <= KEEP_JSON_BODY_BYTES)
        .then(|| serde_json::from_slice(body).ok())
        .flatten()
}
