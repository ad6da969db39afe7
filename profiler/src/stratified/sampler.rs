//! The sampler components of 001 section 3 at run time: `R_r`, `P_r`, `CR_r` leaves under
//! zero or more `H[.]_n` hash splitters.
//!
//! Nested splitters compose by mixed radix: `H[H[X]_m]_n` sends a tuple to substream
//! `h_outer(t) * m + h_inner(t)`, each level with its own independent instance of the
//! paper's hash.  Every substream has its own leaf state (one counter), which is exactly
//! the paper's counter table for `H[P_r]_n` (Figure 5).
//!
//! A splitter whose `n` is not a power of two (the paper's are) takes the 16-bit hash
//! modulo `n`: with q = floor(2^16 / n) the first 2^16 mod n substreams get q + 1 of
//! the hash's values and the rest q, a bias of at most 1/q (about 0.1% for n = 100;
//! none for powers of two).

use crate::hash::{BLOCK, PaperHash, SplitMix64};
use crate::spec::SamplerExpr;
use crate::tuple::Tuple;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Leaf {
    Random,
    Periodic,
    CountedRandom,
}

#[derive(Debug)]
struct Level {
    hash: PaperHash,
    n: usize,
    mask: Option<usize>,
}

/// A runnable sampler.
#[derive(Debug)]
pub struct Sampler {
    levels: Vec<Level>,
    leaf: Leaf,
    r: u64,
    /// 2^64 / r: a draw below this selects with probability 1/r.
    cutoff: u64,
    counters: Vec<u32>,
    rng: SplitMix64,
}

impl Sampler {
    /// Builds `expr` with hash functions and random draws derived from `seed`.
    pub fn new(expr: &SamplerExpr, seed: u64) -> Self {
        let mut levels = Vec::new();
        let mut x = expr;
        let mut strata = 1usize;
        while let SamplerExpr::Hash(inner, n) = x {
            let bits = (usize::BITS - (n.max(&2) - 1).leading_zeros()).clamp(1, 16);
            levels.push(Level {
                hash: PaperHash::new(
                    1,
                    bits,
                    seed.wrapping_add(0x5717 * (levels.len() as u64 + 1)),
                ),
                n: *n,
                mask: n.is_power_of_two().then_some(n - 1),
            });
            strata *= n;
            x = inner;
        }
        let (leaf, r) = match *x {
            SamplerExpr::Random(r) => (Leaf::Random, r),
            SamplerExpr::Periodic(r) => (Leaf::Periodic, r),
            SamplerExpr::CountedRandom(r) => (Leaf::CountedRandom, r),
            SamplerExpr::Hash(..) => unreachable!("the loop above strips every splitter"),
        };
        let cutoff = if r <= 1 { u64::MAX } else { u64::MAX / r };
        let needs_counters = leaf != Leaf::Random;
        Sampler {
            levels,
            leaf,
            r,
            cutoff,
            counters: vec![0; if needs_counters { strata } else { 0 }],
            rng: SplitMix64::new(seed ^ 0x5A3B_11E5_0000_0001),
        }
    }

    /// Substreams (counters) the sampler keeps.
    pub fn strata(&self) -> usize {
        self.counters.len().max(1)
    }

    /// The sampling rate r.
    pub fn rate(&self) -> u64 {
        self.r
    }

    /// Whether messages carry counted lengths (`CR`) rather than the implied r.
    pub fn counted(&self) -> bool {
        self.leaf == Leaf::CountedRandom
    }

    /// The substream `t` belongs to.
    #[inline]
    pub fn stratum_of(&self, t: &Tuple) -> usize {
        let mut s = 0;
        for l in &self.levels {
            let raw = (l.hash.word(t, 0) & 0xffff) as usize;
            let i = match l.mask {
                Some(m) => raw & m,
                None => raw % l.n,
            };
            s = s * l.n + i;
        }
        s
    }

    /// Feeds one tuple; `Some(count)` when it is selected, with the count its message
    /// carries (r, or for `CR` the elements since the substream's last sample).
    #[inline]
    pub fn sample(&mut self, t: &Tuple) -> Option<u64> {
        match self.leaf {
            Leaf::Random => (self.rng.next_u64() < self.cutoff || self.r == 1).then_some(self.r),
            Leaf::Periodic => {
                let s = self.stratum_of(t);
                let c = &mut self.counters[s];
                *c += 1;
                if *c as u64 >= self.r {
                    *c = 0;
                    Some(self.r)
                } else {
                    None
                }
            }
            Leaf::CountedRandom => {
                let s = self.stratum_of(t);
                let c = &mut self.counters[s];
                *c += 1;
                if self.rng.next_u64() < self.cutoff || self.r == 1 {
                    let n = *c as u64;
                    *c = 0;
                    Some(n)
                } else {
                    None
                }
            }
        }
    }

    /// Feeds `batch` in order, calling `on(tuple, count, stratum)` for every selected
    /// tuple: the same selections as [`Sampler::sample`] on each tuple, with the stratum
    /// reported only for counted samplers (0 otherwise).  The paper's default shape, one
    /// splitter over `P_r`, runs as a tight loop: a hash, a counter bump and a rare
    /// selection.
    #[inline]
    pub fn sample_batch(&mut self, batch: &[Tuple], mut on: impl FnMut(Tuple, u64, usize)) {
        if let ([level], Leaf::Periodic, Some(m)) = (&self.levels[..], self.leaf, self.mask0()) {
            // A power-of-two splitter: the masked index is below `m + 1`, the length of
            // the slice, so the counter update needs no bounds check.
            let r = self.r;
            let counters = &mut self.counters[..=m];
            // Block by block, so the hash skips the byte positions a block never uses
            // (see `PaperHash::for_each_single`).
            for block in batch.chunks(BLOCK) {
                level.hash.for_each_single(block, |_, &t, h| {
                    let c = &mut counters[h as usize & m];
                    *c += 1;
                    if *c as u64 >= r {
                        *c = 0;
                        on(t, r, 0);
                    }
                });
            }
            return;
        }
        if let ([level], Leaf::Periodic) = (&self.levels[..], self.leaf) {
            let r = self.r;
            let counters = &mut self.counters[..];
            let hash = level.hash.single_fn();
            let (mask, n) = (level.mask, level.n);
            for &t in batch {
                let raw = hash(&t) as usize;
                let s = match mask {
                    Some(m) => raw & m,
                    None => raw % n,
                };
                let c = &mut counters[s];
                *c += 1;
                if *c as u64 >= r {
                    *c = 0;
                    on(t, r, 0);
                }
            }
            return;
        }
        let counted = self.counted();
        for &t in batch {
            if let Some(count) = self.sample(&t) {
                let stratum = if counted { self.stratum_of(&t) } else { 0 };
                on(t, count, stratum);
            }
        }
    }

    /// The mask of a lone power-of-two splitter's index, when its counters are kept.
    fn mask0(&self) -> Option<usize> {
        let m = self.levels.first()?.mask?;
        (m < self.counters.len()).then_some(m)
    }

    /// Modeled counter-table bits: one ceil(log2(r+1))-bit counter per substream
    /// (`R_r` keeps none).
    pub fn state_bits(&self) -> usize {
        let width = (u64::BITS - self.r.leading_zeros()) as usize;
        self.counters.len() * width
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periodic_selects_every_rth_of_each_substream() {
        let mut s = Sampler::new(&SamplerExpr::parse("P_4").unwrap(), 1);
        let picks: Vec<bool> = (0..12)
            .map(|i| s.sample(&Tuple::value(i, 0)).is_some())
            .collect();
        assert_eq!(picks.iter().filter(|p| **p).count(), 3);
        assert!(picks[3] && picks[7] && picks[11]);
    }

    #[test]
    fn hash_splitting_is_per_tuple_deterministic() {
        let mut s = Sampler::new(&SamplerExpr::parse("H[P_2]_64").unwrap(), 1);
        // A tuple alone in its substream is selected on its 2nd, 4th, ... occurrence.
        let t = Tuple::value(5, 5);
        let got: Vec<Option<u64>> = (0..4).map(|_| s.sample(&t)).collect();
        assert_eq!(got, vec![None, Some(2), None, Some(2)]);
        assert_eq!(s.strata(), 64);
    }

    #[test]
    fn counted_random_messages_sum_to_the_stream_length() {
        let mut s = Sampler::new(&SamplerExpr::parse("CR_8").unwrap(), 3);
        let total: u64 = (0..10_000)
            .filter_map(|i| s.sample(&Tuple::value(i, 0)))
            .sum();
        assert!(total <= 10_000 && total > 9_900, "{total}");
    }

    #[test]
    fn random_selects_about_one_in_r() {
        let mut s = Sampler::new(&SamplerExpr::parse("R_10").unwrap(), 9);
        let n = (0..100_000)
            .filter(|&i| s.sample(&Tuple::value(i, 0)).is_some())
            .count();
        assert!((9_000..11_000).contains(&n), "{n}");
    }
}
