//! The last bytes of an output stream, held once: the tail an execute result keeps
//! ([`super::RESULT_TAIL_BYTES`]) while the whole stream goes to the live output.
//!
//! A ring of at most `keep` bytes, grown as output arrives (a short output never costs the
//! whole tail's room), the oldest bytes dropped as new ones come. The accumulator it replaces
//! let the buffer reach twice the tail before moving the last tail to its front, so a long
//! output held two tails (16 MiB of 8 MiB) while it was read, and its final cut needed the
//! stream to end more than a tail past the last move to start at a character.

use std::collections::VecDeque;

/// The last `keep` bytes pushed, and whether any were dropped before them.
pub struct OutputTail {
    ring: VecDeque<u8>,
    keep: usize,
    dropped: bool,
}

impl OutputTail {
    pub fn new(keep: usize) -> Self {
        Self {
            ring: VecDeque::new(),
            keep,
            dropped: false,
        }
    }

    /// Appends `bytes`, dropping the oldest bytes beyond `keep`.
    pub fn push(&mut self, bytes: &[u8]) {
        let bytes = match bytes.len().checked_sub(self.keep) {
            Some(0) | None => bytes,
            Some(head) => {
                self.dropped = true;
                &bytes[head..]
            }
        };
        let over = (self.ring.len() + bytes.len()).saturating_sub(self.keep);
        if over > 0 {
            self.dropped = true;
            self.ring.drain(..over);
        }
        self.grow_to(self.ring.len() + bytes.len());
        self.ring.extend(bytes);
    }

    /// Room for `needed` bytes: doubling as a vector would, but never past `keep`, so that the
    /// ring, which wraps through all of its room, never touches more memory than the tail.
    fn grow_to(&mut self, needed: usize) {
        let room = self.ring.capacity();
        if needed > room {
            let target = room.saturating_mul(2).clamp(needed, self.keep.max(needed));
            self.ring.reserve_exact(target - self.ring.len());
        }
    }

    /// How much room the ring has taken.
    #[cfg(test)]
    fn room(&self) -> usize {
        self.ring.capacity()
    }

    /// The kept bytes and whether a head was dropped. A cut tail starts at a character: the
    /// continuation bytes of a character split by the cut (at most three) are left out.
    pub fn finish(self) -> (Vec<u8>, bool) {
        // In place: at most a rotation of the ring, no second buffer.
        let mut bytes = Vec::from(self.ring);
        if self.dropped {
            let split = bytes
                .iter()
                .take(3)
                .take_while(|byte| **byte & 0xC0 == 0x80)
                .count();
            bytes.drain(..split);
        }
        bytes.shrink_to_fit();
        (bytes, self.dropped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pushed(keep: usize, pieces: &[&[u8]]) -> (Vec<u8>, bool) {
        let mut tail = OutputTail::new(keep);
        for piece in pieces {
            tail.push(piece);
        }
        tail.finish()
    }

    #[test]
    fn keeps_everything_within_the_tail() {
        assert_eq!(
            pushed(8, &[b"ab", b"", b"cdef"]),
            (b"abcdef".to_vec(), false)
        );
        assert_eq!(pushed(6, &[b"abc", b"def"]), (b"abcdef".to_vec(), false));
        assert_eq!(pushed(6, &[b"abcdef"]), (b"abcdef".to_vec(), false));
        assert_eq!(pushed(6, &[]), (Vec::new(), false));
    }

    #[test]
    fn keeps_the_last_bytes_of_every_way_of_arriving() {
        let data: Vec<u8> = (0..200u8).map(|i| b'a' + i % 26).collect();
        for keep in [1, 7, 26, 64, 199, 200] {
            for piece in [1, 3, 16, 64, 200] {
                let pieces: Vec<&[u8]> = data.chunks(piece).collect();
                let (kept, dropped) = pushed(keep, &pieces);
                assert_eq!(
                    kept,
                    &data[data.len() - keep..],
                    "keep {keep}, pieces of {piece}"
                );
                assert_eq!(dropped, keep < data.len());
            }
        }
        assert_eq!(pushed(3, &[b"abcdefgh"]), (b"fgh".to_vec(), true));
        assert_eq!(
            pushed(3, &[b"ab", b"cdefgh", b"i"]),
            (b"ghi".to_vec(), true)
        );
    }

    #[test]
    fn a_cut_tail_starts_at_a_character() {
        // `é` is two bytes, `☃` three, `😀` four: a cut inside each, and cuts between them.
        let cases: [(usize, &[&str], &str, bool); 6] = [
            (5, &["aéé"], "aéé", false),
            (3, &["aéé"], "é", true),
            (4, &["x☃☃"], "☃", true),
            (5, &["x😀😀"], "😀", true),
            (7, &["x😀", "😀"], "😀", true),
            // A tail cut exactly at a character keeps it whole.
            (4, &["é", "é", "é"], "éé", true),
        ];
        for (keep, pieces, kept, dropped) in cases {
            let pieces: Vec<&[u8]> = pieces.iter().map(|piece| piece.as_bytes()).collect();
            assert_eq!(
                pushed(keep, &pieces),
                (kept.as_bytes().to_vec(), dropped),
                "keep {keep} of {pieces:?}"
            );
        }
    }

    #[test]
    fn never_takes_more_room_than_the_tail() {
        let keep = 1000;
        let mut tail = OutputTail::new(keep);
        for round in 0..500 {
            tail.push(&[b'x'; 97]);
            assert!(tail.room() <= keep, "round {round}: room {}", tail.room());
        }
        let (kept, dropped) = tail.finish();
        assert_eq!((kept.len(), dropped), (keep, true));
        // A short output takes only what it needs.
        let mut short = OutputTail::new(1 << 20);
        short.push(b"hello");
        assert!(short.room() < 1024);
    }
}
