//! Profiling from branch-predictor state (002, sections 3.2-3.4).
//!
//! The model keeps a tagged buffer of `entries` (default 1024) branch entries, `ways`-way
//! set associative (default 4, LRU; the paper gives the size, not the organization, and a
//! direct-mapped buffer thrashes on pairs of hot branches that share an entry), indexed
//! by the branch pc, and samples it every S branches (`period`), as the
//! kernel does at its entry points; the samples are folded into an arc table of
//! estimated edge weights.  Three schemes:
//!
//! - **onelevel** (3.2): a BTB entry holds the last taken target, a 2-bit counter and a
//!   dirty bit.  At a sampling point, with N branches in the period and d dirty entries,
//!   each dirty entry stands for `w = N / (B * d)` executions and adds to one arc by
//!   Table II: counter 00 -> fall-through += 2w, 01 -> fall-through += w, 10 -> target
//!   += w, 11 -> target += 2w.  Dirty bits are then cleared.
//! - **twolevel** (3.3): a history register (default 10 bits) with the marker bit and the
//!   full bit.  After a sample the register is `0...01` (marker) and full = 0; each branch
//!   shifts its outcome in; when the marker shifts into the full-bit position, full = 1
//!   and all 10 bits are valid.  At a sampling point the valid bits give the taken
//!   fraction; a register that is not full holds the exact outcomes since the last sample,
//!   so they are added as counts; a full one holds only the last 10, so its fraction is
//!   scaled by an execution estimate.  The paper divides by the register width without
//!   saying what count to scale by; we use one-level's equal-share idea on what is left:
//!   the N/B branches of the period minus the exact counts of the registers that are not
//!   full, shared equally among the full ones (at least 10 each).  A plain
//!   w = N/(B*d) would give hot loop branches the average share and under-count them.
//! - **counter** (4.1): the ideal scheme, two unlimited counters per entry (executions,
//!   taken), read and cleared at each sampling point.
//!
//! In every scheme a branch that maps to an entry held by another branch replaces it and
//! the old entry's unsampled information is lost: that is the paper's buffer-contention
//! error.  A branch edge `(a, b)` is taken unless `b == a + fallthrough`.  The paper's N
//! counts instructions and B-bar converts to blocks; our N counts branches, so B-bar
//! defaults to 1.  Node weights are max(flow in, flow out) ([`crate::metrics::node_weights`]).
//! Edge tuples only: specs asking for other kinds are refused, and other kinds handed
//! to the model anyway are ignored.
//!
//! Per interval, the model takes a final sample at the interval end and reports the arcs
//! whose estimated weight reaches the threshold.  Overhead: each dirty entry read at a
//! sampling point is a message (30 cycles, the stratified paper's cost per message).
//!
//! How the simulation is laid out (the modeled hardware, its lookups, replacements and
//! estimates are as above; `state_bytes` counts the paper's bits, not ours):
//! - a memo of where recently seen branches sit (the private `buffer` module) finds a branch's entry with
//!   one multiply and one compare; the set is searched (and LRU picks a victim) only when
//!   the memo misses;
//! - the two-level register keeps its full bit in the same word, just above its `history`
//!   bits, where the marker shifts into it (3.3: "an extra full bit is maintained in the
//!   MSB of the register"), so an update is one read and one write of one field, without
//!   a branch on the outcome (nor are the one-level counter's and the target's updates);
//! - a sampling point adds each dirty entry's estimates to a dense vector of the
//!   interval's arc weights, through the index each entry remembers for its two arcs; a
//!   hash map from arc to index is consulted only when that index is stale, and gives the
//!   candidates' order at the interval end (the order a map of weights filled the same
//!   way would have);
//! - the batch is cut at the sampling points, so the per-tuple loop has no period test.
//!
//! Every output (candidates and their order, estimates, overhead, state bytes) is bit for
//! bit what the straightforward model gave (`tests/conte_outputs.rs`).

use crate::contract::{Candidate, Overhead, Profiler};
use crate::hash::TupleMap;
use crate::spec::{ConteOptions, ConteScheme, ProfilerSpec};
use crate::stratified::CYCLES_PER_MESSAGE;
use crate::tuple::{Kind, KindSet, Tuple};
use std::hint::select_unpredictable;

mod buffer;

use buffer::{Buffer, FRESH};

/// The one-level counter's next value, 2 bits at `2 * (2 * counter + taken)`: a
/// saturating 2-bit counter, and a fresh one starts weak toward its first outcome
/// (not taken: 01, taken: 10).  A table in a constant: the update has no branch on
/// the outcome, which a program's branches make unpredictable.
const NEXT_COUNTER: u32 = {
    let mut table = 0u32;
    let mut c = 0;
    while c <= FRESH as u32 {
        let (not_taken, taken) = if c == FRESH as u32 {
            (1, 2)
        } else {
            (c.saturating_sub(1), if c < 3 { c + 1 } else { 3 })
        };
        table |= not_taken << (4 * c) | taken << (4 * c + 2);
        c += 1;
    }
    table
};

/// The interval's arc weights.  Each arc's index is kept in a hash map, in the order
/// arcs first got weight, and its weight in a dense vector; each entry remembers the
/// indices of its two arcs, so a sampling point adds to them without hashing while the
/// entry holds the same branch and target.  The map's order is then the one a map of
/// weights filled in the same order would give, and each weight is the same sum of the
/// same terms in the same order.
#[derive(Debug, Default)]
struct Arcs {
    index: TupleMap<usize>,
    /// Each arc `(a, b)` and its weight.
    weights: Vec<(u64, u64, f64)>,
}

impl Arcs {
    /// Adds `x` to arc `(a, b)` if it is positive (a map of weights gets no entry for
    /// a zero or NaN term); `hint` is where the arc was last.
    #[inline(always)]
    fn add(&mut self, hint: &mut usize, a: u64, b: u64, x: f64) {
        if x > 0.0 {
            let i = *hint;
            match self.weights.get_mut(i) {
                Some((ka, kb, w)) if (*ka, *kb) == (a, b) => *w += x,
                _ => self.add_new(hint, a, b, x),
            }
        }
    }

    /// [`add`](Arcs::add) when the hint is stale: the arc's index from the map, a new
    /// one if the interval has not weighed it yet.
    fn add_new(&mut self, hint: &mut usize, a: u64, b: u64, x: f64) {
        let n = self.weights.len();
        let i = *self.index.entry(Tuple::edge(a, b)).or_insert(n);
        if i == n {
            self.weights.push((a, b, 0.0));
        }
        self.weights[i].2 += x;
        *hint = i;
    }
}

/// The ones in each byte (the baseline x86-64 target has no population count).
const ONES: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = (i as u32).count_ones() as u8;
        i += 1;
    }
    t
};

/// The schemes, as `observe_as`'s parameter.
const ONE_LEVEL: u8 = 0;
const TWO_LEVEL: u8 = 1;
const COUNTER: u8 = 2;

/// Conte's hardware-based profiler.
#[derive(Debug)]
pub struct Conte {
    spec: ProfilerSpec,
    opts: ConteOptions,
    threshold: u64,
    buffer: Buffer,
    since_sample: u64,
    arcs: Arcs,
    /// Per entry, the indices in `arcs` its fall-through and target arcs had.
    arc_hints: Vec<[usize; 2]>,
    /// The indices of the dirty entries, each once, in the order they turned dirty: a
    /// sampling point reads these instead of scanning every entry (at an interval of 100
    /// the scan of 1,024 entries at each interval end was half the model's time).
    dirty: Vec<u32>,
    /// One bit per entry, all clear between sampling points: `sample` orders the dirty
    /// list through it when that is cheaper than sorting.
    dirty_bits: Vec<u64>,
    reads: u64,
    clock: u64,
}

impl Conte {
    /// A model from its spec and options.
    pub fn new(spec: ProfilerSpec, opts: ConteOptions) -> Self {
        Conte {
            threshold: spec.threshold_count(),
            buffer: Buffer::new(opts.entries, opts.ways),
            since_sample: 0,
            arcs: Arcs::default(),
            arc_hints: vec![[usize::MAX; 2]; opts.entries],
            dirty: Vec::new(),
            dirty_bits: vec![0; opts.entries.div_ceil(64)],
            reads: 0,
            clock: 0,
            spec,
            opts,
        }
    }

    /// The entry holding `pc`, looked up as a branch is.
    #[cfg(test)]
    fn slot(&mut self, pc: u64) -> usize {
        self.clock += 1;
        self.buffer.lookup().find(pc, self.clock)
    }

    /// Buffer contentions so far: allocations that replaced another branch's valid
    /// entry, losing its unsampled information (002 Fig 2's count).
    pub fn contentions(&self) -> u64 {
        self.buffer.contentions
    }

    /// Observes `batch` under one scheme, sampling every `period` edges: the batch is cut
    /// at the sampling points, so the per-tuple loop has no sampling test.
    fn observe_as<const SCHEME: u8>(&mut self, mut batch: &[Tuple]) {
        let period = self.opts.period;
        while !batch.is_empty() {
            let room = (period - self.since_sample).min(batch.len() as u64) as usize;
            let (now, later) = batch.split_at(room);
            self.since_sample += self.update::<SCHEME>(now);
            if self.since_sample >= period {
                self.sample();
            }
            batch = later;
        }
    }

    /// Looks up and updates the entry of each edge in `batch`, which holds no sampling
    /// point but perhaps at its end, updating only the state the scheme samples
    /// (one-level: the 2-bit counter; two-level: the history register; counter: the two
    /// counters), without a branch on the outcome; returns the edges seen.
    #[inline(always)]
    fn update<const SCHEME: u8>(&mut self, batch: &[Tuple]) -> u64 {
        let ft = self.opts.fallthrough;
        let width = self.opts.history;
        let full_bit = 1u32 << width;
        let mut clock = self.clock;
        let start = clock;
        let dirty = &mut self.dirty;
        let mut buffer = self.buffer.lookup();
        for t in batch {
            if t.kind != Kind::Edge {
                continue;
            }
            clock += 1;
            let i = buffer.find(t.a, clock);
            let taken = t.b != t.a.wrapping_add(ft);
            let e = &mut buffer.entries[i];
            e.last_use = clock;
            e.target = select_unpredictable(taken, t.b, e.target);
            e.has_target |= taken;
            match SCHEME {
                ONE_LEVEL => {
                    let at = 4 * e.counter as u32 + 2 * taken as u32;
                    e.counter = (NEXT_COUNTER >> at & 3) as u8;
                }
                TWO_LEVEL => {
                    // Not full, the marker reaching bit `width` makes it full; full,
                    // the register keeps its last `width` outcomes, and the full bit
                    // shifted out is set again.
                    let shifted = (e.history as u32) << 1 | taken as u32;
                    let kept = (shifted & (full_bit - 1)) | full_bit;
                    e.history = select_unpredictable(shifted >= full_bit, kept, shifted) as u16;
                }
                _ => {
                    e.executed += 1;
                    e.taken += taken as u64;
                }
            }
            if !e.dirty {
                e.dirty = true;
                dirty.push(i as u32);
            }
        }
        self.clock = clock;
        clock - start
    }

    /// Reads every dirty entry into the arc table (a sampling point).
    pub fn sample(&mut self) {
        let n = std::mem::take(&mut self.since_sample);
        let d = self.dirty.len();
        if d == 0 {
            return;
        }
        // In entry order, as a scan of the whole buffer reads them: the arcs' sums
        // are then added in the same order, so every estimate is bit for bit the same.
        let mut dirty = std::mem::take(&mut self.dirty);
        sort_entries(&mut dirty, &mut self.dirty_bits);
        let w = n as f64 / (self.opts.bbar * d as f64);
        let ft = self.opts.fallthrough;
        let width = self.opts.history;
        let arcs = &mut self.arcs;
        match self.opts.scheme {
            ConteScheme::OneLevel => {
                for &i in &dirty {
                    let e = &mut self.buffer.entries[i as usize];
                    let hints = &mut self.arc_hints[i as usize];
                    let c = if e.counter == FRESH { 0 } else { e.counter };
                    let inc = if c == 0 || c == 3 { 2.0 * w } else { w };
                    if c >= 2 && e.has_target {
                        arcs.add(&mut hints[1], e.branch, e.target, inc);
                    } else {
                        arcs.add(&mut hints[0], e.branch, e.branch.wrapping_add(ft), inc);
                    }
                    e.dirty = false;
                }
            }
            ConteScheme::TwoLevel => {
                // The register's valid bits lie below its highest set bit (the marker,
                // or the full bit at `width`), and its ones are the taken outcomes but
                // that bit.
                let (mut exact, mut full) = (0u64, 0u64);
                for &i in &dirty {
                    let h = self.buffer.entries[i as usize].history;
                    let is_full = h >> width != 0;
                    full += is_full as u64;
                    exact += select_unpredictable(is_full, 0, 15 - h.leading_zeros()) as u64;
                }
                let w_full = (n as f64 / self.opts.bbar - exact as f64) / full.max(1) as f64;
                for &i in &dirty {
                    let e = &mut self.buffer.entries[i as usize];
                    let hints = &mut self.arc_hints[i as usize];
                    let h = e.history;
                    let valid = 15 - h.leading_zeros();
                    let ones = u32::from(ONES[h as usize & 0xff] + ONES[h as usize >> 8]) - 1;
                    if valid > 0 {
                        let scale = select_unpredictable(
                            h >> width != 0,
                            w_full.max(valid as f64),
                            valid as f64,
                        );
                        let frac = ones as f64 / valid as f64;
                        if e.has_target {
                            arcs.add(&mut hints[1], e.branch, e.target, frac * scale);
                        }
                        let fall = e.branch.wrapping_add(ft);
                        arcs.add(&mut hints[0], e.branch, fall, (1.0 - frac) * scale);
                    }
                    e.history = 1;
                    e.dirty = false;
                }
            }
            ConteScheme::Counter => {
                for &i in &dirty {
                    let e = &mut self.buffer.entries[i as usize];
                    let hints = &mut self.arc_hints[i as usize];
                    if e.has_target {
                        arcs.add(&mut hints[1], e.branch, e.target, e.taken as f64);
                    }
                    let fall = e.branch.wrapping_add(ft);
                    arcs.add(&mut hints[0], e.branch, fall, (e.executed - e.taken) as f64);
                    e.executed = 0;
                    e.taken = 0;
                    e.dirty = false;
                }
            }
        }
        dirty.clear();
        self.dirty = dirty;
        self.reads += d as u64;
    }
}

/// `w.round() as u64` for a weight, which is positive (a sum of positive terms, perhaps
/// infinite, never NaN), without the library call `round` is on the baseline x86-64
/// target (no SSE4.1): the fraction above the truncation is exact, and at and above 2^52
/// every double is an integer.
fn round_weight(w: f64) -> u64 {
    let t = w as u64;
    t.saturating_add(u64::from(w - t as f64 >= 0.5))
}

/// Sorts distinct entry indices, through `bits` (one bit per entry, all clear, and left
/// clear) when its words are few for their number.
fn sort_entries(list: &mut Vec<u32>, bits: &mut [u64]) {
    if bits.len() > 16 * list.len() {
        list.sort_unstable();
        return;
    }
    for &i in list.iter() {
        bits[i as usize / 64] |= 1 << (i % 64);
    }
    list.clear();
    for (w, word) in bits.iter_mut().enumerate() {
        while *word != 0 {
            list.push(64 * w as u32 + word.trailing_zeros());
            *word &= *word - 1;
        }
    }
}

impl Profiler for Conte {
    fn spec(&self) -> &ProfilerSpec {
        &self.spec
    }

    fn supported_kinds(&self) -> KindSet {
        KindSet::only(Kind::Edge)
    }

    fn observe(&mut self, t: Tuple) {
        self.observe_batch(std::slice::from_ref(&t));
    }

    fn observe_batch(&mut self, batch: &[Tuple]) {
        match self.opts.scheme {
            ConteScheme::OneLevel => self.observe_as::<ONE_LEVEL>(batch),
            ConteScheme::TwoLevel => self.observe_as::<TWO_LEVEL>(batch),
            ConteScheme::Counter => self.observe_as::<COUNTER>(batch),
        }
    }

    fn end_interval_into(
        &mut self,
        estimates: &mut dyn FnMut(Tuple, u64),
        out: &mut Vec<Candidate>,
    ) {
        self.sample();
        let t = self.threshold;
        let Arcs { index, weights } = &mut self.arcs;
        for (tuple, i) in index.drain() {
            let count = round_weight(weights[i].2);
            if count > 0 {
                estimates(tuple, count);
            }
            if count >= t {
                out.push(Candidate { tuple, count });
            }
        }
        weights.clear();
    }

    fn state_bytes(&self) -> usize {
        let per_entry_bits = 64
            + 64
            + 1
            + match self.opts.scheme {
                ConteScheme::OneLevel => 2,
                ConteScheme::TwoLevel => self.opts.history as usize + 1,
                ConteScheme::Counter => 128,
            };
        (self.buffer.entries.len() * per_entry_bits).div_ceil(8)
    }

    fn overhead(&self) -> Overhead {
        Overhead {
            messages: self.reads,
            cycles: self.reads * CYCLES_PER_MESSAGE,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::parse_spec;

    fn arcs(spec: &str, stream: &[Tuple]) -> Vec<Candidate> {
        let mut m = parse_spec(spec).unwrap().build();
        m.observe_batch(stream);
        m.end_interval()
    }

    /// A loop branch at 0x10: taken back to 0x2 three times, then falls through once.
    fn loop_stream(trips: usize) -> Vec<Tuple> {
        let mut s = Vec::new();
        for _ in 0..trips {
            s.extend([Tuple::edge(0x10, 0x2); 3]);
            s.push(Tuple::edge(0x10, 0x11));
        }
        s
    }

    #[test]
    fn counter_scheme_is_exact_without_contention() {
        let c = arcs(
            "conte:scheme=counter,period=7,threshold=0.01%",
            &loop_stream(100),
        );
        assert_eq!(
            c,
            vec![
                Candidate {
                    tuple: Tuple::edge(0x10, 0x2),
                    count: 300
                },
                Candidate {
                    tuple: Tuple::edge(0x10, 0x11),
                    count: 100
                }
            ]
        );
    }

    #[test]
    fn two_level_is_exact_when_sampled_before_the_register_fills() {
        let c = arcs(
            "conte:scheme=twolevel,period=8,threshold=0.01%",
            &loop_stream(100),
        );
        assert_eq!(
            c[0],
            Candidate {
                tuple: Tuple::edge(0x10, 0x2),
                count: 300
            }
        );
        assert_eq!(
            c[1],
            Candidate {
                tuple: Tuple::edge(0x10, 0x11),
                count: 100
            }
        );
    }

    #[test]
    fn marker_and_full_bits_track_valid_history() {
        let spec = parse_spec("conte:scheme=twolevel,period=1000000").unwrap();
        let crate::spec::Model::Conte(o) = spec.model.clone() else {
            unreachable!()
        };
        let mut m = Conte::new(spec, o);
        for _ in 0..3 {
            m.observe(Tuple::edge(0x10, 0x2));
        }
        let i = m.slot(0x10);
        let e = m.buffer.entries[i];
        assert_eq!(e.history, 0b1111, "3 outcomes under the marker, not full");
        for _ in 0..7 {
            m.observe(Tuple::edge(0x10, 0x11));
        }
        let i = m.slot(0x10);
        let e = m.buffer.entries[i];
        assert_eq!(
            e.history,
            1 << 10 | 0b11_1000_0000,
            "10 outcomes fill a 10-bit register: the marker reached the full bit"
        );
    }

    #[test]
    fn one_level_follows_table_ii() {
        // Strongly taken branch, sampled once with N = 10 and d = 1: target += 2w = 20.
        let c = arcs(
            "conte:scheme=onelevel,period=10,threshold=0.01%",
            &[Tuple::edge(0x10, 0x2); 10],
        );
        assert_eq!(
            c,
            vec![Candidate {
                tuple: Tuple::edge(0x10, 0x2),
                count: 20
            }]
        );
    }

    #[test]
    fn sort_entries_sorts_by_bitmap_or_by_sort() {
        let mut bits = vec![0u64; 4];
        let mut list = vec![200u32, 3, 64, 255, 0, 63, 128];
        sort_entries(&mut list, &mut bits);
        assert_eq!(list, [0, 3, 63, 64, 128, 200, 255]);
        assert!(bits.iter().all(|&w| w == 0), "the bitmap is left clear");
        let mut bits = vec![0u64; 1024];
        let mut list = vec![65_000u32, 7, 300];
        sort_entries(&mut list, &mut bits);
        assert_eq!(list, [7, 300, 65_000]);
    }

    #[test]
    fn round_weight_is_round() {
        let mut ws = vec![
            f64::MIN_POSITIVE,
            0.25,
            0.5,
            0.49999999999999994,
            1.5,
            2.5,
            4_503_599_627_370_495.5,
            4_503_599_627_370_496.0,
            9_007_199_254_740_993.0,
            9.223_372_036_854_776e18,
            1.844_674_407_370_955e19,
            18_446_744_073_709_551_616.0,
            1e300,
            f64::INFINITY,
        ];
        let mut x = 1e-3f64;
        while x < 1e21 {
            let half = x.floor() + 0.5;
            ws.extend([
                x,
                half,
                half.next_up(),
                half.next_down(),
                x.next_up(),
                x.next_down(),
            ]);
            x *= 1.37;
        }
        for w in ws {
            assert_eq!(round_weight(w), w.round() as u64, "{w:e}");
        }
    }

    #[test]
    fn refuses_other_kinds() {
        assert!(parse_spec("conte:kinds=all").is_err());
        let m = parse_spec("conte").unwrap().build();
        assert!(!m.supports(Kind::Value) && m.supports(Kind::Edge));
    }
}
