//! A managed process's bounded output journal: numbered chunks for `connect?after=N` replay.
//! When the byte limit is exceeded the oldest chunks are evicted; asking for output from
//! before the eviction point is the service's "output offset expired" (410).

use std::collections::VecDeque;

use bytes::Bytes;

#[derive(Debug, Clone)]
pub struct Chunk {
    pub seq: u64,
    pub stream: &'static str,
    pub data: Bytes,
}

#[derive(Debug)]
pub struct Journal {
    chunks: VecDeque<Chunk>,
    bytes: usize,
    limit: usize,
    newest_seq: u64,
}

/// The requested offset's output is gone.
#[derive(Debug, PartialEq, Eq)]
pub struct Evicted;

impl Journal {
    pub fn new(limit: usize) -> Self {
        Journal {
            chunks: VecDeque::new(),
            bytes: 0,
            limit: limit.max(1),
            newest_seq: 0,
        }
    }

    pub fn push(&mut self, stream: &'static str, data: Bytes) -> u64 {
        self.newest_seq += 1;
        self.bytes += data.len();
        self.chunks.push_back(Chunk {
            seq: self.newest_seq,
            stream,
            data,
        });
        // Keep at least the newest chunk so a live reader never misses it.
        while self.bytes > self.limit && self.chunks.len() > 1 {
            let old = self.chunks.pop_front().expect("non-empty");
            self.bytes -= old.data.len();
        }
        self.newest_seq
    }

    pub fn newest_seq(&self) -> u64 {
        self.newest_seq
    }

    /// Sequence number of the oldest chunk still held (newest + 1 when empty).
    pub fn oldest_seq(&self) -> u64 {
        self.chunks.front().map_or(self.newest_seq + 1, |c| c.seq)
    }

    /// Chunks with `seq > after`, or [`Evicted`] if some of them are gone.
    pub fn after(&self, after: u64) -> Result<Vec<Chunk>, Evicted> {
        if after < self.newest_seq && after + 1 < self.oldest_seq() {
            return Err(Evicted);
        }
        Ok(self
            .chunks
            .iter()
            .filter(|c| c.seq > after)
            .cloned()
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_oldest_and_reports_expired_offsets() {
        let mut j = Journal::new(10);
        for _ in 0..4 {
            j.push("stdout", Bytes::from_static(b"abcd"));
        }
        assert_eq!(j.newest_seq(), 4);
        assert_eq!(j.oldest_seq(), 3);
        assert_eq!(j.after(0).unwrap_err(), Evicted);
        assert_eq!(j.after(1).unwrap_err(), Evicted);
        assert_eq!(j.after(2).unwrap().len(), 2);
        assert!(j.after(4).unwrap().is_empty());
        assert!(j.after(9).unwrap().is_empty());
    }
}
