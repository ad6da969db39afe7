//! Hash functions and the deterministic random source every model uses.
//!
//! [`PaperHash`] is the hash of the multi-hash paper (000, section 5.3), which is the
//! stratified sampler's hash (001, section 3.5):
//!
//! ```text
//! npc = flip(randomize(pc)); nv = randomize(value); index = xor_fold(npc ^ nv, bits)
//! ```
//!
//! `randomize` looks each byte up in a 256-entry table of random bytes, `flip` reverses the
//! bytes, and `xor_fold` xors the `bits`-wide chunks together.  Independent hash functions
//! use independent random tables.  Because `xor_fold` is linear over xor, the index is the
//! xor of one folded contribution per input byte; we precompute those contributions so a
//! hash costs 16 independent loads and xors instead of 16 lookups, shifts and a fold loop.
//! A contribution depends only on the byte's value and where it lands in `npc ^ nv`: pc
//! byte i lands at byte 7 - i (flipped), value byte i at byte i, so the 16 input bytes
//! share 8 rows of 256 entries, row j for a byte landing at bit 8j.  Up to four 16-bit
//! indices (one per hash function) are packed into one `u64` so a 4-table multi-hash
//! computes all its indices with 16 loads.  The result is bit-identical to evaluating the
//! paper's formula directly (a unit test checks).
//!
//! The paper hashes `<pc, value>` of a single profile type.  Our streams mix kinds, so a
//! per-kind random 64-bit signature is xor-ed into `npc ^ nv` before folding.

use crate::tuple::Tuple;
use std::hash::{BuildHasherDefault, Hasher};

/// SplitMix64: a small, fast, deterministic generator.  Every randomized model seeds one
/// from its spec's `seed` so runs are reproducible.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator from a seed.
    pub const fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform integer in `0..n` (`n > 0`), by multiply-shift (bias below 2^-32 for the
    /// sizes used here).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// A uniform float in `[0, 1)`.
    #[inline]
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// `xor_fold(v, n)`: split `v` into `n`-bit chunks and xor them together.
#[inline]
pub fn xor_fold(mut v: u64, bits: u32) -> u64 {
    debug_assert!((1..=63).contains(&bits));
    let mask = (1u64 << bits) - 1;
    let mut out = 0;
    while v != 0 {
        out ^= v & mask;
        v >>= bits;
    }
    out
}

/// Rows of a hash table: one per byte of `npc ^ nv` (see the module doc).
const ROWS: usize = 8;

/// A bank of `n` independent instances of the paper's hash, each folding to `bits` bits
/// (at most 16).  See the module doc.
#[derive(Clone, Debug)]
pub struct PaperHash {
    n: usize,
    bits: u32,
    words: usize,
    /// Per word, `[row 0..8][byte 0..256]`: row j holds what a byte landing at bit 8j of
    /// `npc ^ nv` contributes (pc byte i uses row 7 - i, value byte i row i).
    /// Fixed-size arrays so the hot loop indexes without bounds checks.  Empty for a bank
    /// of one function, which has only `narrow`.
    table: Vec<Box<[[u64; 256]; ROWS]>>,
    /// The same for a bank of one function, in 16-bit entries: 4 KB, so it stays in L1
    /// beside the model's counters (stratified, tagged, single hash).
    narrow: Option<Box<[[u16; 256]; ROWS]>>,
    /// `[kind][word]`.
    kind_sig: Vec<u64>,
    /// The raw random byte tables, kept so the direct formula can be checked in tests.
    #[cfg(test)]
    raw: Vec<[u8; 256]>,
    #[cfg(test)]
    raw_kind: Vec<[u64; 3]>,
}

/// `m` (below 2^16) in each of a word's four 16-bit lanes.
const fn lanes(m: u64) -> u64 {
    m * 0x0001_0001_0001_0001
}

/// Rotates each 16-bit lane of `w`, a `bits`-bit value, left by `c < bits` within its
/// `bits` bits.  (The right shift moves the next lane's low bits into this lane at bit
/// `16 - bits + c` or above, at least `c`, where the mask clears them.)
#[inline(always)]
fn rotate_lanes(w: u64, c: u32, bits: u32) -> u64 {
    if c == 0 {
        return w;
    }
    let low = lanes((1 << (bits - c)) - 1);
    let high = lanes((1 << c) - 1);
    ((w & low) << c) | ((w >> (bits - c)) & high)
}

impl PaperHash {
    /// `n` independent hash functions with `bits`-bit outputs, from `seed`.
    pub fn new(n: usize, bits: u32, seed: u64) -> Self {
        assert!(n >= 1 && (1..=16).contains(&bits));
        let words = n.div_ceil(4);
        let mut rng = SplitMix64::new(seed ^ 0x7061_7065_725f_6861);
        let mut raw = Vec::with_capacity(n);
        let mut raw_kind = Vec::with_capacity(n);
        for _ in 0..n {
            let mut t = [0u8; 256];
            for b in t.iter_mut() {
                *b = rng.next_u64() as u8;
            }
            raw.push(t);
            raw_kind.push([rng.next_u64(), rng.next_u64(), rng.next_u64()]);
        }
        // `xor_fold` is linear: a byte at bit 0 folds to the xor of its set bits' folds,
        // bit i landing at `i % bits`; built a power of two at a time (255 xors).
        let mut fold0 = [0u64; 256];
        for i in 0..8 {
            let bit = 1u64 << (i % bits);
            for j in 0..1usize << i {
                fold0[(1 << i) | j] = fold0[j] ^ bit;
            }
        }
        // Row 0 of each word: lane f holds function f's folded random byte, re-based on
        // the zero byte (a zero byte, such as the high bytes of small values and pcs,
        // then contributes nothing). A byte at bit 8j folds to the same bits rotated
        // left by 8j within `bits` bits, so row j is row 0 with every lane rotated.
        let row0 = |w: usize| -> [u64; 256] {
            let mut row = [0u64; 256];
            for (f, t) in raw.iter().enumerate().skip(4 * w).take(4) {
                let lane = 16 * (f % 4) as u32;
                for (x, &r) in row.iter_mut().zip(t.iter()) {
                    *x |= fold0[r as usize] << lane;
                }
            }
            let zero = row[0];
            row.iter_mut().for_each(|x| *x ^= zero);
            row
        };
        let shift = |j: usize| (8 * j as u32) % bits;
        // The kind constants.  The rows' old zero entries, which re-basing moves into
        // them, cancel: each row serves two byte positions (pc byte 7 - j and value
        // byte j), so its zero entry is xor-ed in twice.
        let mut kind_sig = vec![0u64; 3 * words];
        for (f, ks) in raw_kind.iter().enumerate() {
            let (w, lane) = (f / 4, 16 * (f % 4) as u32);
            for k in 0..3 {
                kind_sig[k * words + w] |= xor_fold(ks[k], bits) << lane;
            }
        }
        let (table, narrow) = if n == 1 {
            let row = row0(0);
            let mut t: Box<[[u16; 256]; ROWS]> = Box::new([[0; 256]; ROWS]);
            for (j, out) in t.iter_mut().enumerate() {
                for (x, &y) in out.iter_mut().zip(row.iter()) {
                    *x = rotate_lanes(y, shift(j), bits) as u16;
                }
            }
            (Vec::new(), Some(t))
        } else {
            let table = (0..words)
                .map(|w| {
                    let row = row0(w);
                    let mut t: Box<[[u64; 256]; ROWS]> = Box::new([[0; 256]; ROWS]);
                    for (j, out) in t.iter_mut().enumerate() {
                        let c = shift(j);
                        for (x, &y) in out.iter_mut().zip(row.iter()) {
                            *x = rotate_lanes(y, c, bits);
                        }
                    }
                    t
                })
                .collect();
            (table, None)
        };
        PaperHash {
            n,
            bits,
            words,
            table,
            narrow,
            kind_sig,
            #[cfg(test)]
            raw,
            #[cfg(test)]
            raw_kind,
        }
    }

    /// Number of hash functions.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Never true: a bank holds at least one function.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Output width in bits.
    pub fn bits(&self) -> u32 {
        self.bits
    }

    /// Word `w` of the packed indices: hash function `4w + j` is in bits `16j..16j+16`.
    #[inline]
    pub fn word(&self, t: &Tuple, w: usize) -> u64 {
        if let Some(tab) = &self.narrow {
            return Self::narrow_word(tab, self.kind_sig[t.kind as usize] as u16, t) as u64;
        }
        Self::wide_word(
            &self.table[w],
            self.kind_sig[t.kind as usize * self.words + w],
            t,
        )
    }

    /// [`PaperHash::word`] for word 0 as a closure holding its table and per-kind
    /// constants, for hot loops: nothing is re-fetched through `self` per tuple.  For a
    /// bank of two or more functions (one function: [`PaperHash::single_fn`]).
    #[inline]
    pub fn word0_fn(&self) -> impl Fn(&Tuple) -> u64 + Copy + '_ {
        // Four entries (the last unused) so `kind & 3` indexes without a bounds check.
        let sig = [0, 1, 2, 0].map(|k| self.kind_sig[k * self.words]);
        let wide: &[[u64; 256]; ROWS] = self.wide0();
        move |t: &Tuple| sig[t.kind as usize & 3] ^ fold16(wide, t.a, t.b)
    }

    /// The single function's index as a closure over the narrow (4 KB) table, for hot
    /// loops over a one-function bank.
    #[inline]
    pub fn single_fn(&self) -> impl Fn(&Tuple) -> u16 + Copy + '_ {
        let tab: &[[u16; 256]; ROWS] = self.narrow.as_deref().expect("a one-function bank");
        let sig = [0, 1, 2, 0].map(|k| self.kind_sig[k] as u16);
        move |t: &Tuple| sig[t.kind as usize & 3] ^ fold16(tab, t.a, t.b)
    }

    /// Calls `f(i, &block[i], word 0)` for each tuple of `block` in order: the words of
    /// [`PaperHash::word0_fn`], computed without looking up the byte positions that are
    /// zero in every tuple of the block.  Which positions those are is decided once per
    /// call, so callers pass blocks of [`BLOCK`] tuples rather than whole batches.  For a
    /// bank of two or more functions (one function: [`PaperHash::for_each_single`]).
    #[inline(always)]
    pub fn for_each_word0(&self, block: &[Tuple], f: impl FnMut(usize, &Tuple, u64)) {
        let sig = [0, 1, 2, 0].map(|k| self.kind_sig[k * self.words]);
        for_each_sparse(self.wide0(), sig, block, f);
    }

    /// Word 0's table (a bank of two or more functions has one per word).
    #[inline(always)]
    fn wide0(&self) -> &[[u64; 256]; ROWS] {
        self.table
            .first()
            .expect("a bank of two or more functions (one function: the narrow table)")
    }

    /// [`PaperHash::for_each_word0`] for a one-function bank, over the narrow table
    /// ([`PaperHash::single_fn`] over a block).
    #[inline(always)]
    pub fn for_each_single(&self, block: &[Tuple], f: impl FnMut(usize, &Tuple, u16)) {
        let tab: &[[u16; 256]; ROWS] = self.narrow.as_deref().expect("a one-function bank");
        let sig = [0, 1, 2, 0].map(|k| self.kind_sig[k] as u16);
        for_each_sparse(tab, sig, block, f);
    }

    // All 16 byte positions are looked up unconditionally (a zero byte reads its row's
    // 0 entry, which `new` made 0): sixteen independent loads and no data-dependent
    // loop, whose trip count (the operands' widths) would mispredict.
    #[inline(always)]
    fn wide_word(tab: &[[u64; 256]; ROWS], sig: u64, t: &Tuple) -> u64 {
        sig ^ fold16(tab, t.a, t.b)
    }

    #[inline(always)]
    fn narrow_word(tab: &[[u16; 256]; ROWS], sig: u16, t: &Tuple) -> u16 {
        sig ^ fold16(tab, t.a, t.b)
    }

    /// The index of hash function `f` (convenience; hot paths use [`PaperHash::word`]).
    pub fn index(&self, t: &Tuple, f: usize) -> u64 {
        (self.word(t, f / 4) >> (16 * (f % 4))) & 0xffff
    }

    /// The paper's formula evaluated directly, for checking the table form.
    #[cfg(test)]
    fn direct(&self, t: &Tuple, f: usize) -> u64 {
        let r = &self.raw[f];
        let randomize = |x: u64| -> u64 {
            let mut out = 0;
            for i in 0..8 {
                out |= (r[((x >> (8 * i)) & 0xff) as usize] as u64) << (8 * i);
            }
            out
        };
        let npc = randomize(t.a).swap_bytes();
        let nv = randomize(t.b);
        xor_fold(npc ^ nv ^ self.raw_kind[f][t.kind as usize], self.bits)
    }
}

/// Tuples per block for the block hashers ([`PaperHash::for_each_word0`]): long enough to
/// amortize choosing the block's shape, short enough that one wide value in a stream of
/// small ones costs the full hash for few tuples.
pub const BLOCK: usize = 64;

/// The bytes a global pc (function index << 32 | offset, see [`crate::tuple`]) has
/// non-zero in practice: the offset's low two bytes and the function's low byte.
const PC_SHAPE: u64 = 0x0000_00ff_0000_ffff;
/// Bit i set for byte i of [`PC_SHAPE`].
const PC_BYTES: u8 = 0b0001_0011;
/// Bit i set for bytes 0..6: values below 2^48.
const LOW6_BYTES: u8 = 0b0011_1111;
const ALL_BYTES: u8 = 0xff;

/// Runs `f(i, &block[i], hash)` over a block with the hash `sig[kind] ^ fold(a, b)`, where
/// the fold looks up only the byte positions that are non-zero somewhere in the block.
///
/// Why: a zero byte contributes nothing (`PaperHash::new` re-based every row on its
/// zero byte), and real streams are full of them: a pc has at most 3 non-zero bytes and
/// most values fit in 6, so 9 lookups instead of 16 give the same hash.  Choosing per
/// block rather than per tuple keeps the inner loop branch-free: one well-predicted
/// dispatch per `BLOCK` tuples instead of a data-dependent branch per tuple.  The shapes
/// are compile-time byte masks so each inner loop is straight-line code.
#[inline(always)]
fn for_each_sparse<T: Word>(
    tab: &[[T; 256]; ROWS],
    sig: [T; 4],
    block: &[Tuple],
    mut f: impl FnMut(usize, &Tuple, T),
) {
    let (mut oa, mut ob) = (0u64, 0u64);
    for t in block {
        oa |= t.a;
        ob |= t.b;
    }
    let b_shape = if ob & !PC_SHAPE == 0 {
        PC_BYTES
    } else if ob >> 48 == 0 {
        LOW6_BYTES
    } else {
        ALL_BYTES
    };
    match (oa & !PC_SHAPE == 0, b_shape) {
        (true, PC_BYTES) => run::<T, PC_BYTES, PC_BYTES>(tab, sig, block, &mut f),
        (true, LOW6_BYTES) => run::<T, PC_BYTES, LOW6_BYTES>(tab, sig, block, &mut f),
        (true, _) => run::<T, PC_BYTES, ALL_BYTES>(tab, sig, block, &mut f),
        // A wide `a` is rare (not a pc); one loop serves both narrower `b` shapes.
        (false, PC_BYTES | LOW6_BYTES) => run::<T, ALL_BYTES, LOW6_BYTES>(tab, sig, block, &mut f),
        (false, _) => run::<T, ALL_BYTES, ALL_BYTES>(tab, sig, block, &mut f),
    }
}

#[inline(always)]
fn run<T: Word, const AM: u8, const BM: u8>(
    tab: &[[T; 256]; ROWS],
    sig: [T; 4],
    block: &[Tuple],
    f: &mut impl FnMut(usize, &Tuple, T),
) {
    for (i, t) in block.iter().enumerate() {
        f(
            i,
            t,
            sig[t.kind as usize & 3] ^ fold_sparse::<T, AM, BM>(tab, t.a, t.b),
        );
    }
}

/// [`fold16`] over the byte positions in the masks `AM` (of `a`) and `BM` (of `b`) only;
/// equal to it when every other byte is zero.
#[inline(always)]
fn fold_sparse<T: Word, const AM: u8, const BM: u8>(tab: &[[T; 256]; ROWS], a: u64, b: u64) -> T {
    let mut x = T::default();
    let mut y = T::default();
    for i in 0..8 {
        if AM >> i & 1 != 0 {
            x = x ^ tab[7 - i][(a >> (8 * i)) as u8 as usize];
        }
        if BM >> i & 1 != 0 {
            y = y ^ tab[i][(b >> (8 * i)) as u8 as usize];
        }
    }
    x ^ y
}

/// A packed hash word: `u64` (four 16-bit lanes) or `u16` (one function).
pub trait Word: Copy + Default + std::ops::BitXor<Output = Self> {}
impl Word for u64 {}
impl Word for u16 {}

/// Xors `tab[7 - i][byte i of a]` and `tab[i][byte i of b]` over all 16 bytes.
#[inline(always)]
fn fold16<T: Copy + std::ops::BitXor<Output = T>>(tab: &[[T; 256]; ROWS], a: u64, b: u64) -> T {
    // Two bytes per 16-bit step (x86 reads both from a register's low byte pairs).
    let pair =
        |x: u64, r0: usize, r1: usize| tab[r0][x as u8 as usize] ^ tab[r1][(x >> 8) as u8 as usize];
    let pa = pair(a, 7, 6) ^ pair(a >> 16, 5, 4);
    let pb = pair(a >> 32, 3, 2) ^ pair(a >> 48, 1, 0);
    let va = pair(b, 0, 1) ^ pair(b >> 16, 2, 3);
    let vb = pair(b >> 32, 4, 5) ^ pair(b >> 48, 6, 7);
    (pa ^ pb) ^ (va ^ vb)
}

/// A cheap, good-enough mixer for indexing software-side tables (accumulator index,
/// associative second level, exact counters).  Not part of any modeled hardware.
#[inline]
pub fn mix(t: &Tuple) -> u64 {
    let h = (t.a ^ ((t.kind as u64) << 61)).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ t.b.rotate_left(32).wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
    h ^ (h >> 29)
}

/// FxHash-style hasher for `HashMap<Tuple, _>` in the exact counters; std's SipHash would
/// dominate the oracle's cost.
#[derive(Default, Clone, Copy, Debug)]
pub struct FxHasher(u64);

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.write_u64(i as u64);
    }
    #[inline]
    fn write_isize(&mut self, i: isize) {
        self.write_u64(i as u64);
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.0 ^ (self.0 >> 32)
    }
}

/// `HashMap` keyed by tuples with [`FxHasher`].
pub type TupleMap<V> = std::collections::HashMap<Tuple, V, BuildHasherDefault<FxHasher>>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tuple::Kind;

    #[test]
    fn table_form_equals_the_paper_formula() {
        let single = PaperHash::new(1, 11, 5);
        let mut rng0 = SplitMix64::new(2);
        for _ in 0..2000 {
            let t = Tuple::new(
                Kind::ALL[rng0.below(3) as usize],
                rng0.next_u64(),
                rng0.next_u64(),
            );
            assert_eq!(
                single.index(&t, 0),
                single.direct(&t, 0),
                "narrow table on {t}"
            );
        }
        let h = PaperHash::new(6, 9, 42);
        let mut rng = SplitMix64::new(1);
        for _ in 0..2000 {
            let t = Tuple::new(
                Kind::ALL[rng.below(3) as usize],
                rng.next_u64(),
                rng.below(1000),
            );
            for f in 0..6 {
                assert_eq!(h.index(&t, f), h.direct(&t, f), "function {f} on {t}");
            }
        }
    }

    #[test]
    fn block_hashes_equal_the_per_tuple_words() {
        // Every block shape (pc-shaped, 6-byte and full operands) and mixes of them.
        let mut rng = SplitMix64::new(11);
        let mut draw = |shape: u64| -> u64 {
            match shape {
                0 => Tuple::pc(1 + rng.below(200) as u32, 4 * rng.below(10_000) as u32),
                1 => rng.next_u64() >> 16,
                2 => rng.next_u64(),
                _ => rng.below(1000),
            }
        };
        let (wide, single) = (PaperHash::new(4, 9, 8), PaperHash::new(1, 11, 8));
        for round in 0..64u64 {
            let block: Vec<Tuple> = (0..BLOCK as u64)
                .map(|i| {
                    let (sa, sb) = (round % 4, (round / 4) % 4);
                    // Every 16th round, one tuple of the block breaks its shape.
                    let odd = round % 16 == 15 && i == 7;
                    let a = draw(if odd { 2 } else { sa });
                    let b = draw(if odd { 2 } else { sb });
                    Tuple::new(Kind::ALL[(i % 3) as usize], a, b)
                })
                .collect();
            wide.for_each_word0(&block, |i, t, w| {
                assert_eq!(t, &block[i]);
                assert_eq!(w, wide.word(t, 0), "wide, round {round}, {t}");
            });
            single.for_each_single(&block, |i, t, w| {
                assert_eq!(t, &block[i]);
                assert_eq!(w as u64, single.word(t, 0), "single, round {round}, {t}");
            });
        }
    }

    #[test]
    fn xor_fold_folds() {
        assert_eq!(xor_fold(0xABCD, 8), 0xAB ^ 0xCD);
        assert_eq!(xor_fold(0b1_0000_0001, 4), 0b1 ^ 0b1);
    }

    #[test]
    fn hash_spreads_sequential_pcs_evenly() {
        // The paper's reason for the hash: nearby pcs and small values must spread.
        let h = PaperHash::new(1, 9, 7);
        let mut buckets = vec![0u32; 512];
        for pc in 0..64u64 {
            for v in 0..256u64 {
                buckets[h.index(&Tuple::value(Tuple::pc(1, pc as u32), v), 0) as usize] += 1;
            }
        }
        let max = *buckets.iter().max().unwrap();
        // 16384 tuples over 512 buckets: mean 32; a bad hash piles them up.
        assert!(max < 80, "max bucket {max}");
    }

    #[test]
    fn independent_functions_differ() {
        let h = PaperHash::new(4, 9, 3);
        let t = Tuple::value(0x1_0000_0004, 17);
        let idx: Vec<u64> = (0..4).map(|f| h.index(&t, f)).collect();
        let mut same = 0;
        let mut rng = SplitMix64::new(9);
        for _ in 0..1000 {
            let u = Tuple::value(rng.next_u64(), rng.next_u64());
            if h.index(&u, 0) == h.index(&u, 1) {
                same += 1;
            }
        }
        assert!(same < 20, "functions 0 and 1 agree on {same}/1000 tuples");
        assert!(idx.iter().all(|&i| i < 512));
    }
}
