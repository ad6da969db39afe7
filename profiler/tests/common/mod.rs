//! What the profiler's golden tests share: the hash their recorded values
//! are of.

use toyvm_profiler::Tuple;

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
