//! What the profiler's golden tests share: the hash their recorded values
//! are of, and what a model's interval end feeds it.

use toyvm_profiler::{Profiler, Tuple};

/// 64-bit FNV-1a over the little-endian bytes of what it is given.
pub struct Fnv(pub u64);

impl Fnv {
    pub fn new() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }

    pub fn u64(&mut self, x: u64) {
        for b in x.to_le_bytes() {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x0100_0000_01b3);
        }
    }

    pub fn tuple(&mut self, t: &Tuple) {
        self.u64(t.kind as u64);
        self.u64(t.a);
        self.u64(t.b);
    }
}

/// Ends model `m`'s interval `k` and hashes what it reports: every
/// estimate, the candidates in the model's order, its state bytes and its
/// overhead. (Each test crate compiles this module: `golden.rs` hashes
/// whole candidate lists instead.)
#[allow(dead_code)]
pub fn end_interval<P: Profiler + ?Sized>(h: &mut Fnv, k: usize, m: &mut P) {
    let mut out = Vec::new();
    let mut est = Vec::new();
    m.end_interval_into(&mut |t, c| est.push((t, c)), &mut out);
    h.u64(k as u64);
    h.u64(est.len() as u64);
    for (t, c) in &est {
        h.tuple(t);
        h.u64(*c);
    }
    h.u64(out.len() as u64);
    for c in &out {
        h.tuple(&c.tuple);
        h.u64(c.count);
    }
    h.u64(m.state_bytes() as u64);
    let o = m.overhead();
    h.u64(o.messages);
    h.u64(o.cycles);
}
