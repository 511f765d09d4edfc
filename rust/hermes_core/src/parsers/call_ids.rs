//! Call ids for calls whose format carries none (`call_` and 24 random alphanumerics, as OpenAI's
//! API writes them).

/// A per-stream id generator, seeded differently for every stream of the process.
pub(crate) struct CallIds {
    rng: u64,
}

impl CallIds {
    pub(crate) fn new() -> Self {
        CallIds { rng: random_seed() }
    }

    pub(crate) fn next(&mut self) -> String {
        const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
        let mut id = String::with_capacity(29);
        id.push_str("call_");
        for _ in 0..24 {
            // xorshift64*: ids only need to be unique within a conversation, not secret.
            self.rng ^= self.rng >> 12;
            self.rng ^= self.rng << 25;
            self.rng ^= self.rng >> 27;
            let r = self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D);
            id.push(ALPHABET[(r >> 58) as usize % ALPHABET.len()] as char);
        }
        id
    }
}

fn random_seed() -> u64 {
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.finish() | 1
}
