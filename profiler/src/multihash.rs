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
//!    retaining the accumulator is emptied.
//!
//! `tables=1, reset=on, retain=on` is the paper's best single hash (BSH); the default
//! `tables=4, entries=2048, cu=on, reset=off, retain=on` is its best multi-hash.
//!
//! Deviations.  (a) Section 5.2 says the base design marks all accumulator entries
//! replaceable at the interval end without flushing them; we read "no retaining" as
//! section 5.4.1 implies (the prior interval's entries are not kept), so `retain=off`
//! empties the accumulator.  (b) When several replaceable entries could be reused, the
//! paper does not say which; we take the one with the lowest count.  (c) Mixed-kind
//! streams: the kind is folded into the hash (see [`crate::hash`]).  (d) The paper's
//! design sends nothing to software in the steady state, so messages and cycles are 0.
//!
//! Modeled state: `entries * counter_bits` bits of counters plus, per accumulator entry,
//! a 128-bit tag, 2 kind bits, the replaceable bit and a 24-bit count (20 bytes).

use crate::hash::{PaperHash, mix};
use crate::profiler::{Candidate, Overhead, Profiler, sort_candidates};
use crate::spec::{MultiHashOptions, ProfilerSpec};
use crate::tuple::{KindSet, Tuple};

/// The most hash tables a model may have.
pub const MAX_TABLES: usize = 16;

/// Counter slots addressable by a 16-bit lane of a packed hash word.
const FAST_SPAN: usize = 1 << 16;

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
    /// the vector is padded to `FAST_SPAN` entries so a 16-bit index needs no bounds
    /// check; only the first `n * size` are ever touched.
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
            counters: vec![0; if fast { FAST_SPAN } else { n * size }],
            fast,
            lane_offsets: if fast { lane_offsets } else { 0 },
            max,
            acc: Accumulator::new(cap.clamp(1, u16::MAX as usize - 1)),
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

    #[inline]
    fn update_tables(&mut self, t: Tuple) {
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
            && self.acc.promote(t, new_min as u64)
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
        if let Some(i) = self.acc.find(&t) {
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
        self.update_tables(t);
    }

    fn observe_batch(&mut self, batch: &[Tuple]) {
        if !(self.fast && self.opts.shield) {
            for &t in batch {
                self.observe(t);
            }
            return;
        }
        // One dispatch per batch to a loop specialized on the table count and update
        // rule, with the hash tables and counters borrowed once.
        let counters: &mut [u32; FAST_SPAN] = (&mut self.counters[..FAST_SPAN])
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
        let single = || self.hash.single_fn();
        let wide = || self.hash.word0_fn();
        match (self.n, self.opts.conservative) {
            (1, false) => fast.ingest::<1, false, _>(batch, single()),
            (1, true) => fast.ingest::<1, true, _>(batch, single()),
            (2, false) => fast.ingest::<2, false, _>(batch, wide()),
            (2, true) => fast.ingest::<2, true, _>(batch, wide()),
            (3, false) => fast.ingest::<3, false, _>(batch, wide()),
            (3, true) => fast.ingest::<3, true, _>(batch, wide()),
            (4, false) => fast.ingest::<4, false, _>(batch, wide()),
            _ => fast.ingest::<4, true, _>(batch, wide()),
        }
    }

    fn end_interval(&mut self) -> Vec<Candidate> {
        let mut out: Vec<Candidate> = self
            .acc
            .entries
            .iter()
            .filter(|e| e.count >= self.threshold)
            .map(|e| Candidate {
                tuple: e.tuple,
                count: e.count,
            })
            .collect();
        sort_candidates(&mut out);
        self.acc.end_interval(self.opts.retain, self.threshold);
        self.counters[..self.n * self.size].fill(0);
        out
    }

    fn state_bytes(&self) -> usize {
        (self.n * self.size * self.opts.counter_bits as usize).div_ceil(8) + self.acc.cap * 20
    }

    fn overhead(&self) -> Overhead {
        Overhead::default()
    }
}

/// The state the specialized ingest loop touches, borrowed once per batch.
struct Fast<'a> {
    counters: &'a mut [u32; FAST_SPAN],
    acc: &'a mut Accumulator,
    lane_offsets: u64,
    max: u32,
    threshold: u64,
    reset: bool,
}

impl Fast<'_> {
    /// `observe` (shielding on) over a batch for `N <= 4` power-of-two tables, with
    /// conservative update on or off: the same steps as `observe` and `update_tables`,
    /// without per-tuple option checks or bounds checks on the counters.
    #[inline(always)]
    fn ingest<const N: usize, const CU: bool, W: Into<u64>>(
        &mut self,
        batch: &[Tuple],
        hash: impl Fn(&Tuple) -> W,
    ) {
        for &t in batch {
            if let Some(i) = self.acc.find(&t) {
                self.acc.hit(i, self.threshold);
                continue;
            }
            let word = hash(&t).into() ^ self.lane_offsets;
            let idx: [usize; N] = std::array::from_fn(|f| (word >> (16 * f)) as u16 as usize);
            let max = self.max;
            let new_min = if CU {
                let vals = idx.map(|i| self.counters[i]);
                let min = vals.iter().copied().min().unwrap_or(0);
                // Branch-free, as in `update_tables`.
                let bump = (min < max) as u32;
                for (&i, &c) in idx.iter().zip(vals.iter()) {
                    self.counters[i] = c + ((c == min) as u32 & bump);
                }
                min + bump
            } else {
                let mut m = u32::MAX;
                for &i in &idx {
                    let c = &mut self.counters[i];
                    *c = (*c + 1).min(max);
                    m = m.min(*c);
                }
                m
            };
            if new_min as u64 >= self.threshold {
                self.promote(t, new_min, &idx);
            }
        }
    }

    /// Step 3: promotion (and reset on promotion) once every counter reached T.
    #[cold]
    #[inline(never)]
    fn promote(&mut self, t: Tuple, min: u32, idx: &[usize]) {
        if self.acc.promote(t, min as u64) && self.reset {
            for &i in idx {
                self.counters[i] = 0;
            }
        }
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

#[derive(Clone, Copy, Debug)]
struct AccEntry {
    tuple: Tuple,
    count: u64,
    replaceable: bool,
}

const EMPTY: u16 = u16::MAX;

/// The fully associative accumulator.  Hardware compares all tags at once; we find the
/// entry through an open-addressed index (linear probing, backward-shift deletion).
#[derive(Debug)]
struct Accumulator {
    cap: usize,
    entries: Vec<AccEntry>,
    index: Vec<u16>,
    mask: usize,
    replaceable: usize,
}

impl Accumulator {
    fn new(cap: usize) -> Self {
        let size = (2 * cap).next_power_of_two().max(8);
        Accumulator {
            cap,
            entries: Vec::with_capacity(cap),
            index: vec![EMPTY; size],
            mask: size - 1,
            replaceable: 0,
        }
    }

    #[inline]
    fn find(&self, t: &Tuple) -> Option<usize> {
        let mut p = mix(t) as usize & self.mask;
        loop {
            let slot = self.index[p];
            if slot == EMPTY {
                return None;
            }
            if self.entries[slot as usize].tuple == *t {
                return Some(slot as usize);
            }
            p = (p + 1) & self.mask;
        }
    }

    #[inline]
    fn hit(&mut self, i: usize, threshold: u64) {
        let e = &mut self.entries[i];
        e.count += 1;
        if e.replaceable && e.count >= threshold {
            e.replaceable = false;
            self.replaceable -= 1;
        }
    }

    fn insert_index(&mut self, t: &Tuple, slot: u16) {
        let mut p = mix(t) as usize & self.mask;
        while self.index[p] != EMPTY {
            p = (p + 1) & self.mask;
        }
        self.index[p] = slot;
    }

    fn remove_index(&mut self, t: &Tuple) {
        let mut p = mix(t) as usize & self.mask;
        while self.entries[self.index[p] as usize].tuple != *t {
            p = (p + 1) & self.mask;
        }
        // Backward-shift deletion keeps every probe chain unbroken.
        let mut hole = p;
        let mut q = (p + 1) & self.mask;
        while self.index[q] != EMPTY {
            let home = mix(&self.entries[self.index[q] as usize].tuple) as usize & self.mask;
            let dist_q = q.wrapping_sub(home) & self.mask;
            let dist_hole = q.wrapping_sub(hole) & self.mask;
            if dist_q >= dist_hole {
                self.index[hole] = self.index[q];
                hole = q;
            }
            q = (q + 1) & self.mask;
        }
        self.index[hole] = EMPTY;
    }

    /// Allocates an entry for `t` with `count`; false when none is free.
    fn promote(&mut self, t: Tuple, count: u64) -> bool {
        let entry = AccEntry {
            tuple: t,
            count,
            replaceable: false,
        };
        if self.entries.len() < self.cap {
            let slot = self.entries.len() as u16;
            self.entries.push(entry);
            self.insert_index(&t, slot);
            return true;
        }
        if self.replaceable == 0 {
            return false;
        }
        let victim = (0..self.entries.len())
            .filter(|&i| self.entries[i].replaceable)
            .min_by_key(|&i| self.entries[i].count)
            .expect("replaceable count says one exists");
        let old = self.entries[victim].tuple;
        self.remove_index(&old);
        self.entries[victim] = entry;
        self.replaceable -= 1;
        self.insert_index(&t, victim as u16);
        true
    }

    fn end_interval(&mut self, retain: bool, threshold: u64) {
        let kept: Vec<AccEntry> = if retain {
            self.entries
                .iter()
                .filter(|e| e.count >= threshold)
                .map(|e| AccEntry {
                    tuple: e.tuple,
                    count: 0,
                    replaceable: true,
                })
                .collect()
        } else {
            Vec::new()
        };
        self.entries.clear();
        self.index.fill(EMPTY);
        self.replaceable = kept.len();
        for e in kept {
            let slot = self.entries.len() as u16;
            self.entries.push(e);
            self.insert_index(&e.tuple, slot);
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
mod tests {
    use super::*;
    use crate::hash::SplitMix64;
    use crate::spec::parse_spec;

    fn run(spec: &str, stream: &[Tuple]) -> Vec<Candidate> {
        let mut m = parse_spec(spec).unwrap().build();
        m.observe_batch(stream);
        m.end_interval()
    }

    #[test]
    fn a_lone_hot_tuple_is_counted_exactly() {
        // Shielded after promotion, so the accumulator count plus the promotion count is
        // exact when nothing aliases.
        let mut s = vec![Tuple::value(1, 1); 300];
        s.extend((0..700).map(|i| Tuple::value(2, i)));
        let c = run("multihash:interval=1000,threshold=10%", &s);
        assert_eq!(
            c,
            vec![Candidate {
                tuple: Tuple::value(1, 1),
                count: 300
            }]
        );
    }

    #[test]
    fn promotion_starts_at_the_minimum_counter() {
        // 2 tables of 1 counter: everything aliases; the second tuple is promoted with the
        // shared count, which the paper's rule says it inherits.
        let mut s = vec![Tuple::value(1, 1); 5];
        s.extend(vec![Tuple::value(2, 2); 5]);
        let c = run(
            "multihash:tables=2,entries=2,interval=100,threshold=8%,cu=off",
            &s,
        );
        assert_eq!(
            c,
            vec![Candidate {
                tuple: Tuple::value(2, 2),
                count: 10
            }]
        );
        let c = run(
            "multihash:tables=2,entries=2,interval=100,threshold=8%,cu=off,reset=on",
            &[s.clone(), s].concat(),
        );
        // With reset the counters restart at 0 after the first promotion.
        assert!(c.iter().all(|c| c.count >= 8), "{c:?}");
    }

    #[test]
    fn accumulator_has_100_over_t_entries_and_refuses_when_full() {
        let m = MultiHash::new(parse_spec("multihash").unwrap(), MultiHashOptions::BEST);
        assert_eq!(m.accumulator_entries(), 100);
        // 3 distinct hot tuples, accumulator of 2: one is not promoted.
        let mut s = Vec::new();
        for v in 0..3 {
            s.extend(vec![Tuple::value(9, v); 20]);
        }
        let c = run("multihash:accumulator=2,interval=60,threshold=10%", &s);
        assert_eq!(c.len(), 2);
    }

    #[test]
    fn retaining_keeps_candidates_shielded_into_the_next_interval() {
        let spec = parse_spec("multihash:interval=100,threshold=10%,retain=on").unwrap();
        let mut m = spec.build();
        m.observe_batch(&vec![Tuple::value(1, 1); 50]);
        assert_eq!(m.end_interval()[0].count, 50);
        // Retained: counted exactly from the first occurrence of the next interval.
        m.observe_batch(&vec![Tuple::value(1, 1); 12]);
        assert_eq!(
            m.end_interval(),
            vec![Candidate {
                tuple: Tuple::value(1, 1),
                count: 12
            }]
        );
        // Below threshold this time: flushed, so the next interval starts over.
        m.observe_batch(&[Tuple::value(1, 1); 5]);
        assert!(m.end_interval().is_empty());
    }

    #[test]
    fn accumulator_index_survives_replacement_churn() {
        let mut acc = Accumulator::new(8);
        let mut rng = SplitMix64::new(5);
        let mut live: Vec<Tuple>;
        for round in 0..200 {
            acc.end_interval(true, 0);
            live = acc.entries.iter().map(|e| e.tuple).collect();
            for _ in 0..8 {
                let t = Tuple::value(rng.below(50), round);
                if acc.find(&t).is_none() && acc.promote(t, 1) {
                    live.retain(|x| acc.find(x).is_some());
                    live.push(t);
                }
            }
            for t in &live {
                assert!(acc.find(t).is_some(), "lost {t}");
            }
            assert_eq!(live.len(), acc.entries.len());
        }
    }

    #[test]
    fn theoretical_bound_matches_section_6_2() {
        // One 2K table at 1%: 100/2048 per tuple.
        assert!((false_positive_bound(1, 2048, 1.0) - 100.0 / 2048.0).abs() < 1e-12);
        // Four 512-entry tables: (400/2048)^4.
        assert!((false_positive_bound(4, 2048, 1.0) - (400.0f64 / 2048.0).powi(4)).abs() < 1e-15);
    }
}
