//! How streamed execute output is grouped on its way to `ctx.execution.log`: the queue of one
//! execute call's chunks, and the batches it hands out.
//!
//! Only one batch is on its way to the host at a time. A chunk that arrives while nothing is on
//! its way goes out at once, alone, so output that arrives slowly reaches the host chunk by
//! chunk with no added delay. Chunks that arrive while a batch is on its way wait in the queue,
//! and the next batch takes them from the front, in order, up to [`OutputQueue`]'s batch bound.
//! Inside a batch, adjacent chunks of the *same* stream are joined into one chunk (one
//! `execute.log` call), never across streams, and never past the join bound; a chunk larger
//! than a bound on its own goes out alone and whole. The host accepts any chunking of a stream (each
//! chunk at most 1,000,000 UTF-16 units, which a bound of fewer bytes guarantees, since a UTF-8
//! byte is at most one unit), and the concatenation per stream is unchanged.
//!
//! Each chunk carries a cost (the napi layer's byte budget); a batch carries the sum of its
//! chunks' costs so that its budget can be returned once the host has taken it.
//!
//! The napi layer drives this queue from its ThreadsafeFunction ([`OutputQueue::push`] when a
//! provider hands over a chunk, [`OutputQueue::finish`] when a batch has been taken); it is
//! plain data so that the batching rules are tested here without Node.

use std::collections::VecDeque;

use crate::OutputStream;

/// One batch for the host: chunks in order, adjacent ones of a stream already joined.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct OutputBatch {
    pub chunks: Vec<(OutputStream, String)>,
    /// The sum of the costs of the chunks that went into it.
    pub cost: usize,
}

/// One execute call's queue of output chunks; see the module docs.
#[derive(Debug)]
pub struct OutputQueue {
    queued: VecDeque<(OutputStream, String, usize)>,
    /// Bytes queued (the text of `queued`).
    queued_bytes: usize,
    in_flight: bool,
    batch_bytes: usize,
    join_bytes: usize,
}

impl OutputQueue {
    /// A queue whose batches hold at most `batch_bytes` bytes of text, and whose joined chunks
    /// at most `join_bytes` (a larger chunk goes alone, whole).
    pub fn new(batch_bytes: usize, join_bytes: usize) -> Self {
        Self {
            queued: VecDeque::new(),
            queued_bytes: 0,
            in_flight: false,
            batch_bytes: batch_bytes.max(1),
            join_bytes: join_bytes.max(1),
        }
    }

    /// Queues a chunk. Returns the batch to send now when nothing was on its way (the chunk
    /// alone); `None` when a batch is on its way and the chunk waits for the next one.
    pub fn push(&mut self, stream: OutputStream, text: String, cost: usize) -> Option<OutputBatch> {
        if self.in_flight {
            self.queued_bytes += text.len();
            self.queued.push_back((stream, text, cost));
            return None;
        }
        self.in_flight = true;
        Some(OutputBatch {
            chunks: vec![(stream, text)],
            cost,
        })
    }

    /// The batch on its way has been taken: returns the next one to send (what queued up
    /// meanwhile), or `None` when the queue is empty and the next chunk may go out at once.
    pub fn finish(&mut self) -> Option<OutputBatch> {
        if self.queued.is_empty() {
            self.in_flight = false;
            return None;
        }
        Some(self.take())
    }

    /// Whether a batch is on its way.
    pub fn in_flight(&self) -> bool {
        self.in_flight
    }

    /// Bytes waiting for the next batch.
    pub fn queued_bytes(&self) -> usize {
        self.queued_bytes
    }

    /// The next batch: queued chunks from the front while they fit the bound (at least one).
    fn take(&mut self) -> OutputBatch {
        let mut batch = OutputBatch::default();
        let mut bytes = 0;
        while let Some((_, text, _)) = self.queued.front() {
            if !batch.chunks.is_empty() && bytes + text.len() > self.batch_bytes {
                break;
            }
            let Some((stream, text, cost)) = self.queued.pop_front() else {
                break;
            };
            bytes += text.len();
            self.queued_bytes -= text.len();
            batch.cost += cost;
            match batch.chunks.last_mut() {
                Some((last, joined))
                    if *last == stream && joined.len() + text.len() <= self.join_bytes =>
                {
                    joined.push_str(&text)
                }
                _ => batch.chunks.push((stream, text)),
            }
        }
        batch
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use OutputStream::{Stderr, Stdout};

    fn chunk(stream: OutputStream, text: &str) -> (OutputStream, String) {
        (stream, text.to_owned())
    }

    #[test]
    fn a_chunk_with_nothing_on_its_way_goes_out_at_once_and_alone() {
        let mut queue = OutputQueue::new(16, 16);
        // A slow trickle: each chunk is taken before the next arrives.
        for text in ["a", "b", "c"] {
            let batch = queue.push(Stdout, text.into(), 1).expect("sent at once");
            assert_eq!(batch.chunks, vec![chunk(Stdout, text)]);
            assert_eq!(batch.cost, 1);
            assert!(queue.in_flight());
            assert_eq!(queue.finish(), None);
            assert!(!queue.in_flight());
        }
    }

    #[test]
    fn chunks_queued_behind_a_batch_are_joined_per_stream_in_order() {
        let mut queue = OutputQueue::new(64, 64);
        assert!(queue.push(Stdout, "first".into(), 5).is_some());
        for (stream, text) in [
            (Stdout, "a1"),
            (Stdout, "a2"),
            (Stderr, "e1"),
            (Stderr, "e2"),
            (Stdout, "a3"),
        ] {
            assert_eq!(queue.push(stream, text.into(), 2), None);
        }
        assert_eq!(queue.queued_bytes(), 10);
        let batch = queue.finish().expect("queued chunks go next");
        assert_eq!(
            batch.chunks,
            vec![
                chunk(Stdout, "a1a2"),
                chunk(Stderr, "e1e2"),
                chunk(Stdout, "a3")
            ]
        );
        assert_eq!(batch.cost, 10);
        assert_eq!(queue.queued_bytes(), 0);
        assert_eq!(queue.finish(), None);
    }

    #[test]
    fn a_batch_never_exceeds_its_bound_and_an_oversized_chunk_goes_alone_and_whole() {
        let mut queue = OutputQueue::new(8, 8);
        assert!(queue.push(Stdout, "x".into(), 1).is_some());
        for text in ["aaa", "bbb", "ccc", "dddddddddddd", "e"] {
            assert_eq!(queue.push(Stdout, text.into(), text.len()), None);
        }
        let mut seen = Vec::new();
        while let Some(batch) = queue.finish() {
            let bytes: usize = batch.chunks.iter().map(|(_, t)| t.len()).sum();
            assert!(bytes <= 8 || batch.chunks.len() == 1, "{batch:?}");
            assert_eq!(batch.cost, bytes);
            seen.push(batch.chunks);
        }
        assert_eq!(
            seen,
            vec![
                vec![chunk(Stdout, "aaabbb")],
                vec![chunk(Stdout, "ccc")],
                vec![chunk(Stdout, "dddddddddddd")],
                vec![chunk(Stdout, "e")],
            ]
        );
    }

    #[test]
    fn a_batch_may_carry_several_joined_chunks_each_within_the_join_bound() {
        let mut queue = OutputQueue::new(32, 8);
        assert!(queue.push(Stdout, "x".into(), 1).is_some());
        for text in ["aaa", "bbb", "ccc", "ddd", "eeeeeeeeeeee", "f"] {
            assert_eq!(queue.push(Stdout, text.into(), text.len()), None);
        }
        let batch = queue.finish().expect("queued");
        assert_eq!(
            batch.chunks,
            vec![
                chunk(Stdout, "aaabbb"),
                chunk(Stdout, "cccddd"),
                chunk(Stdout, "eeeeeeeeeeee"),
                chunk(Stdout, "f"),
            ]
        );
        assert_eq!(batch.cost, 25);
        assert_eq!(queue.finish(), None);
    }

    proptest::proptest! {
        /// Whatever arrives and whenever the host takes batches: the chunks sent are the
        /// chunks that arrived, in order, each sent chunk a run of consecutive chunks of one
        /// stream; a run of several stays within the join bound and a batch of several within
        /// the batch bound; every cost comes back once.
        #[test]
        fn batching_keeps_every_stream_whole_and_in_order(
            events in proptest::collection::vec((0u8..3, "[a-z]{1,12}"), 1..200),
            batch_bound in 1usize..60,
            join_bound in 1usize..40,
        ) {
            let mut queue = OutputQueue::new(batch_bound, join_bound);
            let mut sent: Vec<OutputBatch> = Vec::new();
            let mut arrived: Vec<(OutputStream, String)> = Vec::new();
            for (event, text) in events {
                match event {
                    // The host takes the batch on its way.
                    2 => sent.extend(queue.finish()),
                    stream => {
                        let stream = if stream == 0 { Stdout } else { Stderr };
                        arrived.push((stream, text.clone()));
                        let cost = text.len();
                        sent.extend(queue.push(stream, text, cost));
                    }
                }
            }
            while let Some(batch) = queue.finish() {
                sent.push(batch);
            }
            proptest::prop_assert!(!queue.in_flight());
            let mut next = 0;
            for batch in &sent {
                let first = next;
                let mut bytes = 0;
                for (stream, text) in &batch.chunks {
                    let start = next;
                    let mut joined = String::new();
                    while joined.len() < text.len() {
                        proptest::prop_assert!(next < arrived.len());
                        proptest::prop_assert_eq!(arrived[next].0, *stream);
                        joined.push_str(&arrived[next].1);
                        next += 1;
                    }
                    proptest::prop_assert_eq!(&joined, text);
                    proptest::prop_assert!(next - start == 1 || text.len() <= join_bound);
                    bytes += text.len();
                }
                proptest::prop_assert!(next - first == 1 || bytes <= batch_bound);
                let cost: usize = arrived[first..next].iter().map(|(_, t)| t.len()).sum();
                proptest::prop_assert_eq!(batch.cost, cost);
            }
            proptest::prop_assert_eq!(next, arrived.len());
        }
    }
}
