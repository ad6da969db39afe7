//! The multi-hash profiler and the single-hash baseline (000, sections 5-6).
//!
//! Per tuple (000 Figures 2 and 8):
//!
//! 1. Look the tuple up in the fully associative **accumulator** (100/t entries, so every
//!    candidate of an interval fits in the worst case, section 5.2).  On a hit, count it
//!    there and, with **shielding** on, stop: the hash tables never see it again this
//!    interval.
//! 2. Otherwise hash it into each of the n tables (the paper's hash, one independent
//!    random table per hash function, [`PaperHash`]) and update its counters: all of them,
//!    or with **conservative update** (C) only those equal to the minimum (ties all
//!    incremented, section 6.1).  Counters are 24-bit and saturate.
//! 3. When every one of its counters has reached the candidate threshold T = t*L, promote
//!    it: allocate an accumulator entry (empty entries first, then replaceable ones) with
//!    its count starting at the minimum of its hash counters; mark it non-replaceable.  If
//!    no entry is free it is not promoted (and will retry on its next occurrence).  With
//!    **reset on promotion** (R) its counters are zeroed (section 5.4.2).
//! 4. At the end of the interval the candidates are the accumulator entries whose count
//!    reached T; the hash tables are zeroed.  With **retaining** (P, section 5.4.1) entries
//!    at or over T stay, marked replaceable with count 0, and the others are flushed; a
//!    retained entry whose count reaches T again becomes non-replaceable.  Without
//!    retaining, the base design of section 5.2: the accumulator "is not flushed, and
//!    instead all entries are marked as replaceable", with their counts: the paper
//!    sets counts to 0 for retaining only, and says retaining "significantly" lowers the
//!    false positives, "even more drastic" at 1M/0.1% (Fig 7). Carried counts are what
//!    makes that so: an entry whose count was at T stays a candidate in later intervals
//!    without an occurrence in them. (Clearing them instead, as this model did before,
//!    made the base design shield more tuples than retaining and gave it fewer false
//!    positives, the opposite of Fig 7; `toyvm reproduce 000-fig7` shows both effects.)
//!
//! `tables=1, reset=on, retain=on` is the paper's best single hash (BSH); the default
//! `tables=4, entries=2048, cu=on, reset=off, retain=on` is its best multi-hash.
//!
//! Inferred where the paper is silent.  (a) A promoted entry's count starts at the
//! minimum of its hash counters (the occurrences the tables saw; the paper says only that
//! an entry is allocated).  (b) When several replaceable entries could be reused, the
//! paper does not say which; we take the one with the lowest count.  (c) Mixed-kind
//! streams: the kind is folded into the hash (see [`crate::hash`]).  (d) The paper's
//! design sends nothing to software in the steady state, so messages and cycles are 0.
//! (e) A table whose size is not a power of two is indexed by the 16-bit hash modulo its
//! size, which the paper (whose tables are powers of two) never needs: with q =
//! floor(2^16 / size) the first 2^16 mod size counters get q + 1 of the hash's values and
//! the rest q, so they are hit up to 1/q more often (3% at 2,000 counters, 0 at powers of
//! two).
//!
//! Modeled state: `entries * counter_bits` bits of counters plus, per accumulator entry,
//! a 128-bit tag, 2 kind bits, the replaceable bit and a 24-bit count (20 bytes). The
//! paper's 2K 3-byte counters are its 6 KB (section 7, as here); its accumulator is 1 KB
//! per 100 entries, about 10 bytes an entry, which fits 32-bit pcs and values with a
//! 16-bit count. toyvm's tuples are two 64-bit words, so an entry's tag is twice as wide
//! and the modeled accumulator twice the paper's (2 KB at 1%, 20 KB at 0.1%).

mod accumulator;

use crate::contract::{Candidate, Overhead, Profiler};
use crate::hash::{BLOCK, PaperHash, mix};
use crate::spec::{MultiHashOptions, ProfilerSpec};
use crate::tuple::{KindSet, Tuple};
use accumulator::Accumulator;

/// The most hash tables a model may have (the spec's limit).
pub const MAX_TABLES: usize = crate::spec::MAX_TABLES;

/// Counter slots addressable by a 16-bit lane of a packed hash word.
const FAST_SPAN: usize = 1 << 16;
/// The padding of a fast model with at most this many counters (the default 4 x 512
/// and single hash's 2,048 among them): 16 KB to allocate and zero per model instead
/// of `FAST_SPAN`'s 256 KB, which was most of building one (issue 38). Its fast loop
/// masks a packed word's lanes to 12 bits for the bounds checks: one `and` more per
/// tuple that misses the accumulator.
const SMALL_SPAN: usize = 1 << 12;

/// The multi-hash (or single-hash) profiler.
#[derive(Debug)]
pub struct MultiHash {
    spec: ProfilerSpec,
    opts: MultiHashOptions,
    threshold: u64,
    hash: PaperHash,
    n: usize,
    size: usize,
    pow2: bool,
    /// Table f's counters are `f * size .. (f + 1) * size`.  When the fast path applies
    /// the vector is padded to `SMALL_SPAN` or `FAST_SPAN` entries (a power of two, at
    /// least `n * size`) so an index masked to its width needs no bounds check; only the
    /// first `n * size` are ever touched.
    counters: Vec<u32>,
    /// Whether `observe_batch` may use the specialized loop: at most four tables (one
    /// packed hash word) of a power-of-two size of at least 2 (so `bits = log2(size)`),
    /// `n * size <= FAST_SPAN`.
    fast: bool,
    /// `f * size` in lane f of a packed hash word: xor-ed into the word it turns each
    /// lane into its counter's index (a lane is below `size`, a power of two).
    lane_offsets: u64,
    max: u32,
    acc: Accumulator,
    /// Whether the accumulator is keyed by [`mix`] this interval, rather than by the
    /// packed hash word (see [`MultiHash::acc_key`]).
    mixed_keys: bool,
    /// Tuples the fast loop saw this interval, and how many the accumulator held.
    seen: u64,
    held: u64,
}

impl MultiHash {
    /// A model from its spec and options.
    pub fn new(spec: ProfilerSpec, opts: MultiHashOptions) -> Self {
        let n = opts.tables.min(MAX_TABLES);
        let size = (opts.entries / n).max(1);
        let bits = (usize::BITS - (size - 1).leading_zeros()).max(1);
        let threshold = spec.threshold_count();
        let cap = if opts.accumulator > 0 {
            opts.accumulator
        } else {
            (1.0 / spec.threshold).ceil() as usize
        };
        let max = if opts.counter_bits >= 32 {
            u32::MAX
        } else {
            (1u32 << opts.counter_bits) - 1
        };
        let pow2 = size.is_power_of_two();
        let fast = n <= 4 && pow2 && size >= 2 && n * size <= FAST_SPAN;
        let lane_offsets = (0..n.min(4))
            .map(|f| ((f * size) as u64) << (16 * f))
            .fold(0, |a, x| a | x);
        MultiHash {
            hash: PaperHash::new(n, bits, spec.seed),
            threshold,
            n,
            size,
            pow2,
            counters: vec![
                0;
                match fast {
                    true if n * size <= SMALL_SPAN => SMALL_SPAN,
                    true => FAST_SPAN,
                    false => n * size,
                }
            ],
            fast,
            lane_offsets: if fast { lane_offsets } else { 0 },
            max,
            acc: Accumulator::new(cap.clamp(1, u16::MAX as usize - 1)),
            // Models without the fast loop have no hash word in hand: always the mixer.
            mixed_keys: !fast,
            seen: 0,
            held: 0,
            spec,
            opts,
        }
    }

    /// The accumulator capacity (100/t by default).
    pub fn accumulator_entries(&self) -> usize {
        self.acc.cap
    }

    #[inline]
    fn indices(&self, t: &Tuple, idx: &mut [usize; MAX_TABLES]) {
        let reduce = |raw: usize| {
            if self.pow2 {
                raw & (self.size - 1)
            } else {
                raw % self.size
            }
        };
        if self.n <= 4 {
            // One packed word holds every index: the common case, kept branch-light.
            let word = self.hash.word(t, 0);
            for (f, slot) in idx.iter_mut().enumerate().take(self.n) {
                *slot = f * self.size + reduce(((word >> (16 * f)) & 0xffff) as usize);
            }
            return;
        }
        let mut word = 0;
        for (f, slot) in idx.iter_mut().enumerate().take(self.n) {
            if f % 4 == 0 {
                word = self.hash.word(t, f / 4);
            }
            *slot = f * self.size + reduce(((word >> (16 * (f % 4))) & 0xffff) as usize);
        }
    }

    /// The key the accumulator's index hashes `t` by. The key only places entries in
    /// the index: what the accumulator holds and counts does not depend on it, so the
    /// model may choose it by what is cheapest for the stream, interval by interval
    /// ([`MultiHash::choose_keys`]):
    /// - the packed hash word, which the fast loop computes anyway for every tuple the
    ///   accumulator does not hold: the cheaper key when most tuples miss (a wide or
    ///   cold stream: 4% of Zipf 0.8 hits, 43% of a program-like edge stream);
    /// - [`mix`], a few arithmetic operations: when most tuples hit (86-99.9% of the
    ///   tuples of fib, loop, sieve and poly), a hit then costs no paper hash at all,
    ///   and only misses compute their counters' indices.
    ///
    /// Models without the fast loop always use [`mix`].
    #[inline]
    fn acc_key(&self, t: &Tuple) -> u64 {
        if self.mixed_keys {
            mix(t)
        } else {
            self.hash.word(t, 0)
        }
    }

    /// At an interval end: key the next interval's accumulator by [`mix`] when more
    /// than 5/8 of this interval's tuples hit it, otherwise by the hash word. Decided
    /// from the stream alone, so runs stay deterministic; changing keys re-keys the
    /// (at most 100/t) entries kept, when the index is rebuilt anyway.
    fn choose_keys(&mut self) -> bool {
        let mixed = if self.fast && self.seen > 0 {
            8 * self.held > 5 * self.seen
        } else {
            self.mixed_keys
        };
        (self.seen, self.held) = (0, 0);
        let changed = mixed != self.mixed_keys;
        self.mixed_keys = mixed;
        changed
    }

    #[inline]
    fn update_tables(&mut self, t: Tuple, key: u64) {
        let mut idx = [0usize; MAX_TABLES];
        self.indices(&t, &mut idx);
        let idx = &idx[..self.n];
        let max = self.max;
        let new_min = if self.opts.conservative {
            let min = idx.iter().map(|&i| self.counters[i]).min().unwrap_or(0);
            // Branch-free: which counters equal the minimum is data-dependent and would
            // mispredict about half the time.
            let bump = (min < max) as u32;
            for &i in idx {
                let c = self.counters[i];
                self.counters[i] = c + ((c == min) as u32 & bump);
            }
            min + bump
        } else {
            let mut m = u32::MAX;
            for &i in idx {
                let c = &mut self.counters[i];
                *c = (*c + 1).min(max);
                m = m.min(*c);
            }
            m
        };
        if new_min as u64 >= self.threshold
            && self.acc.promote(t, key, new_min as u64)
            && self.opts.reset
        {
            for &i in idx {
                self.counters[i] = 0;
            }
        }
    }
}

impl Profiler for MultiHash {
    fn spec(&self) -> &ProfilerSpec {
        &self.spec
    }

    fn supported_kinds(&self) -> KindSet {
        KindSet::ALL
    }

    #[inline]
    fn observe(&mut self, t: Tuple) {
        let key = self.acc_key(&t);
        if let Some(i) = self.acc.find(&t, key) {
            self.acc.hit(i, self.threshold);
            if self.opts.shield {
                return;
            }
            // Without shielding the tables still count it, but it cannot be promoted twice.
            let promoted = self.acc.entries.len();
            self.update_tables_no_promote(t);
            debug_assert_eq!(promoted, self.acc.entries.len());
            return;
        }
        self.update_tables(t, key);
    }

    fn observe_batch(&mut self, batch: &[Tuple]) {
        if !(self.fast && self.opts.shield) {
            for &t in batch {
                self.observe(t);
            }
            return;
        }
        if self.counters.len() == SMALL_SPAN {
            self.ingest_fast::<SMALL_SPAN>(batch)
        } else {
            self.ingest_fast::<FAST_SPAN>(batch)
        }
    }

    fn end_interval_into(
        &mut self,
        estimates: &mut dyn FnMut(Tuple, u64),
        out: &mut Vec<Candidate>,
    ) {
        for e in self.acc.entries.iter().filter(|e| e.count > 0) {
            estimates(e.tuple, e.count);
            if e.count >= self.threshold {
                out.push(Candidate {
                    tuple: e.tuple,
                    count: e.count,
                });
            }
        }
        if self.choose_keys() {
            let (mixed, hash) = (self.mixed_keys, &self.hash);
            for e in &mut self.acc.entries {
                e.key = if mixed {
                    mix(&e.tuple)
                } else {
                    hash.word(&e.tuple, 0)
                };
            }
        }
        self.acc.end_interval(self.opts.retain, self.threshold);
        self.counters[..self.n * self.size].fill(0);
    }

    fn state_bytes(&self) -> usize {
        (self.n * self.size * self.opts.counter_bits as usize).div_ceil(8) + self.acc.cap * 20
    }

    fn overhead(&self) -> Overhead {
        Overhead::default()
    }
}

impl MultiHash {
    /// `observe_batch` on the fast path, with the counters padded to `SPAN`: one
    /// dispatch per batch to a loop specialized on the table count and update rule, with
    /// the hash tables and counters borrowed once.
    fn ingest_fast<const SPAN: usize>(&mut self, batch: &[Tuple]) {
        let counters: &mut [u32; SPAN] = (&mut self.counters[..])
            .try_into()
            .expect("the fast path pads the counters");
        let mut fast = Fast {
            counters,
            acc: &mut self.acc,
            lane_offsets: self.lane_offsets,
            max: self.max,
            threshold: self.threshold,
            reset: self.opts.reset,
        };
        let hash = &self.hash;
        let single = |block: &[Tuple], out: &mut [u64; BLOCK]| {
            hash.for_each_single(block, |i, _, w| out[i % BLOCK] = w.into())
        };
        let wide = |block: &[Tuple], out: &mut [u64; BLOCK]| {
            hash.for_each_word0(block, |i, _, w| out[i % BLOCK] = w)
        };
        let (single_one, wide_one) = if self.n == 1 {
            let f = hash.single_fn();
            (Some(move |t: &Tuple| f(t) as u64), None)
        } else {
            (None, Some(hash.word0_fn()))
        };
        let mixed = self.mixed_keys;
        macro_rules! go {
            ($n:literal, $cu:literal, $block:expr, $one:expr) => {
                fast.ingest::<$n, $cu>(
                    batch,
                    mixed,
                    $block,
                    $one.expect("chosen by the table count"),
                )
            };
        }
        let held = match (self.n, self.opts.conservative) {
            (1, false) => go!(1, false, single, single_one),
            (1, true) => go!(1, true, single, single_one),
            (2, false) => go!(2, false, wide, wide_one),
            (2, true) => go!(2, true, wide, wide_one),
            (3, false) => go!(3, false, wide, wide_one),
            (3, true) => go!(3, true, wide, wide_one),
            (4, false) => go!(4, false, wide, wide_one),
            _ => go!(4, true, wide, wide_one),
        };
        self.seen += batch.len() as u64;
        self.held += held as u64;
    }
}

/// The state the specialized ingest loop touches, borrowed once per batch.
struct Fast<'a, const SPAN: usize> {
    counters: &'a mut [u32; SPAN],
    acc: &'a mut Accumulator,
    lane_offsets: u64,
    max: u32,
    threshold: u64,
    reset: bool,
}

/// One block's tuples sorted by accumulator lookup, in stream order within each list.
struct Sorted {
    /// Positions of the tuples whose home index slot holds an entry with their tag
    /// (found in the accumulator, once [`Accumulator::verify`] confirms it).
    hit_at: [u8; BLOCK],
    hits: usize,
    /// Positions of the others.
    miss_at: [u8; BLOCK],
    misses: usize,
    /// Per position: the entry at the home slot, or `u16::MAX` (the low half of
    /// `EMPTY`) for none.  A miss whose home slot holds an entry may still be in the
    /// accumulator further along its probe sequence.
    entry: [u16; BLOCK],
}

impl Sorted {
    /// An empty split (every array is overwritten before it is read).
    fn new() -> Self {
        Sorted {
            hit_at: [0; BLOCK],
            hits: 0,
            miss_at: [0; BLOCK],
            misses: 0,
            entry: [0; BLOCK],
        }
    }
}

impl<const SPAN: usize> Fast<'_, SPAN> {
    /// `observe` (shielding on) over a batch for `N <= 4` power-of-two tables, with
    /// conservative update on or off: the same steps as `observe` and `update_tables`,
    /// without per-tuple option checks or bounds checks on the counters.
    ///
    /// Keyed by the hash word (`mixed_keys` false: most tuples miss), `block_hash` first
    /// fills every tuple's word, which is also its accumulator key, in one branch-free
    /// pass per block of `BLOCK` tuples; the block then runs tuple by tuple
    /// ([`Fast::in_order`]) or, when about half of the block before hit, sorted
    /// ([`Fast::sorted`]).
    ///
    /// Keyed by [`mix`] (most tuples hit), a branch-free pass computes the keys; the
    /// paper's hash (the packed counter indices) is needed only by the tuples the
    /// accumulator does not hold.  When over 5/8 of the block before hit, there is no
    /// block hash: the block runs tuple by tuple and a miss hashes itself with
    /// `one_hash` (at fib's 97% hits that skips the hash for 97% of the tuples);
    /// otherwise as above, with the words of the block pass.
    ///
    /// Returns the tuples the accumulator held.
    ///
    /// Sorting is for streams where whether a tuple is in the accumulator is close to a
    /// coin flip (at Zipf 1.2 about half the tuples are), so that branching on it per
    /// tuple mispredicts about every other tuple.  A sorted block is:
    /// 1. split by one branch-free pass over the index into a hit list and a miss list
    ///    ([`Accumulator::sort`]), the hits then checked against their entries (a
    ///    branch that always goes the same way);
    /// 2. the misses update the counters, in stream order;
    /// 3. the hits are counted in the accumulator.
    ///
    /// Reordering is exact because hits and misses touch disjoint state: a hit only
    /// counts in its accumulator entry, a miss only updates counters, until a miss is
    /// promoted.  Promotion reads the accumulator (the victim is the replaceable entry
    /// with the lowest count) and changes what later tuples find, so it first counts
    /// the hits before it and, when it succeeds, the rest of the block runs tuple by
    /// tuple in stream order ([`Fast::promote_in_block`]).
    #[inline(always)]
    fn ingest<const N: usize, const CU: bool>(
        &mut self,
        batch: &[Tuple],
        mixed_keys: bool,
        block_hash: impl Fn(&[Tuple], &mut [u64; BLOCK]),
        one_hash: impl Fn(&Tuple) -> u64,
    ) -> usize {
        let mut keys = [0u64; BLOCK];
        let mut words = [0u64; BLOCK];
        let mut sorted = Sorted::new();
        // Sorting costs a dozen instructions per tuple, which pays off only where the
        // branch would mispredict often. A block is sorted when the block before had
        // between 3/8 and 5/8 hits: 96% of the blocks of Zipf 1.2, none of Zipf 0.8 (4%
        // hits) and 9% of the program-like edge stream (43% hits, but mostly in runs
        // that the branch predictor follows). `hits` and `len` are the block before's
        // (none yet: the first block runs as a cold stream's).
        let (mut hits, mut len) = (0, 1);
        let mut held = 0;
        for block in batch.chunks(BLOCK) {
            let sort = (3 * len..=5 * len).contains(&(8 * hits));
            hits = if !mixed_keys {
                // Keyed by the hash word: every tuple's is needed.
                block_hash(block, &mut words);
                let word = |j: usize, _: &Tuple| words[j % BLOCK];
                if sort {
                    self.sorted::<N, CU>(block, &words, word, &mut sorted)
                } else {
                    self.in_order::<N, CU>(block, &words, word, 0)
                }
            } else {
                for (key, t) in keys.iter_mut().zip(block) {
                    *key = mix(t);
                }
                if 8 * hits > 5 * len {
                    self.in_order::<N, CU>(block, &keys, |_, t| one_hash(t), 0)
                } else {
                    block_hash(block, &mut words);
                    let word = |j: usize, _: &Tuple| words[j % BLOCK];
                    if sort {
                        self.sorted::<N, CU>(block, &keys, word, &mut sorted)
                    } else {
                        self.in_order::<N, CU>(block, &keys, word, 0)
                    }
                }
            };
            held += hits;
            len = block.len();
        }
        held
    }

    /// The model's steps 1-3 (see the module doc) for a block, by the lists of
    /// [`Accumulator::sort`]; the number of hits.  `word(j, t)` is the hash word of
    /// `t = block[j]`.
    #[inline(always)]
    fn sorted<const N: usize, const CU: bool>(
        &mut self,
        block: &[Tuple],
        keys: &[u64; BLOCK],
        word: impl Fn(usize, &Tuple) -> u64 + Copy,
        sorted: &mut Sorted,
    ) -> usize {
        self.acc.sort(&keys[..block.len()], sorted);
        if !self.acc.verify(block, sorted) {
            // A tuple's home slot holds another entry with an equal 15-bit tag (a few
            // lookups in a million): nothing has changed yet, so redo it in order.
            return self.in_order::<N, CU>(block, keys, word, 0);
        }
        let mut counted = 0;
        for &at in &sorted.miss_at[..sorted.misses] {
            let j = at as usize % BLOCK;
            let (t, key) = (block[j], keys[j]);
            if sorted.entry[j] != u16::MAX
                && let Some(i) = self.acc.find(&t, key)
            {
                self.acc.hit(i, self.threshold);
                continue;
            }
            let w = word(j, &t);
            let new_min = self.count::<N, CU>(w);
            if new_min as u64 >= self.threshold
                && self.promote_in_block::<N, CU>(
                    block,
                    keys,
                    word,
                    sorted,
                    &mut counted,
                    j,
                    new_min,
                    w,
                )
            {
                break;
            }
        }
        let hits = sorted.hit_at[counted..sorted.hits].iter();
        let entries = hits.map(|&at| sorted.entry[at as usize % BLOCK] as usize);
        self.acc.hit_all(entries, self.threshold);
        sorted.hits
    }

    /// The model's steps 1-3 for `block[from..]`, tuple by tuple; the number of hits.
    #[inline(always)]
    fn in_order<const N: usize, const CU: bool>(
        &mut self,
        block: &[Tuple],
        keys: &[u64; BLOCK],
        word: impl Fn(usize, &Tuple) -> u64,
        from: usize,
    ) -> usize {
        let mut hits = 0;
        for j in from..block.len() {
            let (t, key) = (block[j], keys[j % BLOCK]);
            if let Some(i) = self.acc.find(&t, key) {
                self.acc.hit(i, self.threshold);
                hits += 1;
                continue;
            }
            let w = word(j, &t);
            let new_min = self.count::<N, CU>(w);
            if new_min as u64 >= self.threshold {
                self.promote::<N>(t, key, new_min, w);
            }
        }
        hits
    }

    /// Step 2 for a tuple not in the accumulator, given its packed hash word: its new
    /// minimum counter.  (Its counters are not returned: held in an array across the
    /// threshold test, they were stored to the stack for every tuple; the rare
    /// promotion recomputes them from the word.)
    #[inline(always)]
    fn count<const N: usize, const CU: bool>(&mut self, word: u64) -> u32 {
        let idx = self.counter_indices::<N>(word);
        let max = self.max;
        if CU {
            let vals = idx.map(|i| self.counters[i]);
            let min = vals.iter().copied().min().unwrap_or(0);
            // As in `update_tables`, and shorter: every counter is at least `min`, so
            // bumping those equal to `min` (unless saturated) is raising every counter
            // to at least `new_min`: one compare-and-move per counter instead of a
            // compare, a mask and an add.
            let new_min = min + (min < max) as u32;
            for (&i, &c) in idx.iter().zip(vals.iter()) {
                self.counters[i] = c.max(new_min);
            }
            new_min
        } else {
            let mut m = u32::MAX;
            for &i in &idx {
                let c = &mut self.counters[i];
                *c = (*c + 1).min(max);
                m = m.min(*c);
            }
            m
        }
    }

    /// The counters of a tuple with the packed hash word `word`.  A lane is below
    /// `n * size <= SPAN` (see `lane_offsets`), so the mask, which spares the bounds
    /// checks, never changes it: one `and` of the whole word (none for `FAST_SPAN`).
    #[inline(always)]
    fn counter_indices<const N: usize>(&self, word: u64) -> [usize; N] {
        let word = (word ^ self.lane_offsets) & ((SPAN as u64 - 1) * 0x0001_0001_0001_0001);
        std::array::from_fn(|f| (word >> (16 * f)) as u16 as usize)
    }

    /// Step 3 for the miss at position `j` of `block`: counts the block's hits before
    /// it (those from `*counted` on), then promotes it.  When that succeeds, finishes
    /// the block in stream order and returns true; when no entry is free, nothing
    /// changed and the block goes on.
    #[cold]
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn promote_in_block<const N: usize, const CU: bool>(
        &mut self,
        block: &[Tuple],
        keys: &[u64; BLOCK],
        word: impl Fn(usize, &Tuple) -> u64,
        sorted: &Sorted,
        counted: &mut usize,
        j: usize,
        new_min: u32,
        w: u64,
    ) -> bool {
        while *counted < sorted.hits && (sorted.hit_at[*counted] as usize) < j {
            let at = sorted.hit_at[*counted] as usize % BLOCK;
            self.acc.hit(sorted.entry[at] as usize, self.threshold);
            *counted += 1;
        }
        if !self.promote::<N>(block[j], keys[j % BLOCK], new_min, w) {
            return false;
        }
        self.in_order::<N, CU>(block, keys, word, j + 1);
        // The hits after `j` were counted there.
        *counted = sorted.hits;
        true
    }

    /// Step 3: promotion (and reset on promotion) once every counter reached T;
    /// whether it happened.
    #[cold]
    #[inline(never)]
    fn promote<const N: usize>(&mut self, t: Tuple, key: u64, min: u32, word: u64) -> bool {
        if !self.acc.promote(t, key, min as u64) {
            return false;
        }
        if self.reset {
            for i in self.counter_indices::<N>(word) {
                self.counters[i] = 0;
            }
        }
        true
    }
}

impl MultiHash {
    fn update_tables_no_promote(&mut self, t: Tuple) {
        let mut idx = [0usize; MAX_TABLES];
        self.indices(&t, &mut idx);
        let idx = &idx[..self.n];
        let min = idx.iter().map(|&i| self.counters[i]).min().unwrap_or(0);
        for &i in idx {
            let c = &mut self.counters[i];
            if (!self.opts.conservative || *c == min) && *c < self.max {
                *c += 1;
            }
        }
    }
}

/// Section 6.2's upper bound on the probability that a tuple becomes a false positive:
/// `(100 n / (t Z))^n` for n tables splitting Z counters and a threshold of `t` percent.
pub fn false_positive_bound(n: usize, z: usize, t_percent: f64) -> f64 {
    (100.0 * n as f64 / (t_percent * z as f64))
        .min(1.0)
        .powi(n as i32)
}

#[cfg(test)]
mod tests;
