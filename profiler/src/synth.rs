//! Synthetic tuple streams with known statistics, for tests, benchmarks and studying the
//! models away from any VM: Zipf-distributed value tuples with a noise tail, and a
//! program-like edge stream (a random walk over loops with biased branches).

use crate::hash::SplitMix64;
use crate::tuple::Tuple;

/// Draws ranks `0..n` with probability proportional to `1 / (rank + 1)^s`.
#[derive(Debug, Clone)]
pub struct Zipf {
    cdf: Vec<f64>,
    rng: SplitMix64,
}

impl Zipf {
    /// `n` ranks, exponent `s`, seeded.
    pub fn new(n: usize, s: f64, seed: u64) -> Self {
        let mut acc = 0.0;
        let cdf = (1..=n.max(1))
            .map(|k| {
                acc += 1.0 / (k as f64).powf(s);
                acc
            })
            .collect();
        Zipf {
            cdf,
            rng: SplitMix64::new(seed),
        }
    }

    /// The next rank.
    pub fn next_rank(&mut self) -> usize {
        let total = *self.cdf.last().expect("n >= 1");
        let u = self.rng.unit() * total;
        self.cdf
            .partition_point(|&c| c <= u)
            .min(self.cdf.len() - 1)
    }
}

/// The value tuple standing for Zipf rank `r`: load pcs spread over functions and
/// offsets, values spread over the range, so neighbouring ranks do not share hash bits.
pub fn rank_tuple(r: usize) -> Tuple {
    let r = r as u64;
    let pc = Tuple::pc(1 + (r % 13) as u32, ((r / 13) % 4096) as u32 * 4);
    Tuple::value(pc, r.wrapping_mul(0x9E37_79B9) >> 7)
}

/// `len` value tuples from a Zipf(`s`) distribution over `distinct` tuples.
pub fn zipf_stream(len: usize, distinct: usize, s: f64, seed: u64) -> Vec<Tuple> {
    let mut z = Zipf::new(distinct, s, seed);
    (0..len).map(|_| rank_tuple(z.next_rank())).collect()
}

/// A Zipf stream where a share `noise` of the tuples is replaced by never-repeating
/// ones: the noisy streams of the multi-hash paper, many distinct tuples that never
/// become candidates.
pub fn noisy_zipf_stream(len: usize, distinct: usize, s: f64, noise: f64, seed: u64) -> Vec<Tuple> {
    let mut z = Zipf::new(distinct, s, seed);
    let mut rng = SplitMix64::new(seed ^ 0xA5A5);
    (0..len)
        .map(|i| {
            if rng.unit() < noise {
                Tuple::value(
                    Tuple::pc(100 + (i % 7) as u32, (rng.below(1 << 16) * 4) as u32),
                    rng.next_u64(),
                )
            } else {
                rank_tuple(z.next_rank())
            }
        })
        .collect()
}

/// A program-like edge stream: `functions` functions of `blocks` blocks; block j spans
/// offsets `4j..4j+3`, ends in a branch at `4j+3` that falls through to `4j+4` or jumps
/// to the start of another block with a per-branch bias; the last block jumps back to
/// block 0.  Control moves to another function every few hundred branches.
pub fn program_edges(len: usize, functions: u32, blocks: u32, seed: u64) -> Vec<Tuple> {
    let mut rng = SplitMix64::new(seed);
    const BIASES: [f64; 5] = [0.02, 0.1, 0.5, 0.9, 0.98];
    let mut cfg = Vec::new();
    for _ in 0..functions {
        let f: Vec<(f64, u32)> = (0..blocks)
            .map(|j| {
                let back = if j > 0 { rng.below(j as u64) as u32 } else { 0 };
                let target = if rng.unit() < 0.6 {
                    back
                } else {
                    (j + 2 + rng.below(3) as u32).min(blocks - 1)
                };
                (BIASES[rng.below(5) as usize], target)
            })
            .collect();
        cfg.push(f);
    }
    let (mut f, mut j) = (0u32, 0u32);
    let mut out = Vec::with_capacity(len);
    while out.len() < len {
        if rng.below(300) == 0 {
            f = rng.below(functions as u64) as u32;
            j = 0;
        }
        let branch = Tuple::pc(f, 4 * j + 3);
        let (bias, target) = cfg[f as usize][j as usize];
        let next = if j == blocks - 1 {
            0
        } else if rng.unit() < bias {
            target
        } else {
            j + 1
        };
        out.push(Tuple::edge(branch, Tuple::pc(f, 4 * next)));
        j = next;
    }
    out
}
