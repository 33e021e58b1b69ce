//! Support for the providers' reliability soaks (`tests/soak.rs` in each provider crate): a
//! seeded RNG that replays a run from its printed seed, and the size and seed settings both
//! soaks read from the environment. Like [`crate::golden`], test support that ships with the
//! crate so that both providers share one copy.

/// xorshift64*: seeded, dependency-free, replayable from the printed seed.
pub struct SoakRng(u64);

impl SoakRng {
    pub fn new(seed: u64) -> Self {
        SoakRng(seed.max(1))
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform enough in `0..n` for fault picking.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

/// `PAPERCLIP_SOAK_SEED`, or a fresh seed from the clock.
pub fn seed() -> u64 {
    match std::env::var("PAPERCLIP_SOAK_SEED") {
        Ok(s) => s.parse().expect("PAPERCLIP_SOAK_SEED is a u64"),
        Err(_) => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64),
    }
}

/// `PAPERCLIP_SOAK_LIFECYCLES=N`, else `long` for `PAPERCLIP_SOAK=long`, else `default`.
pub fn lifecycles(default: usize, long: usize) -> usize {
    if let Ok(n) = std::env::var("PAPERCLIP_SOAK_LIFECYCLES") {
        return n.parse().expect("PAPERCLIP_SOAK_LIFECYCLES is a count");
    }
    match std::env::var("PAPERCLIP_SOAK").as_deref() {
        Ok("long") => long,
        _ => default,
    }
}
