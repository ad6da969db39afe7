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

use crate::contract::{Candidate, Overhead, Profiler};
use crate::hash::TupleMap;
use crate::spec::{ConteOptions, ConteScheme, ProfilerSpec};
use crate::stratified::CYCLES_PER_MESSAGE;
use crate::tuple::{Kind, KindSet, Tuple};

/// What an entry holds about its branch; which branch it is, and when it was last
/// used, live apart in [`Way`]s, so a lookup reads one set's tags from one cache line.
#[derive(Clone, Copy, Debug, Default)]
struct Entry {
    target: Option<u64>,
    dirty: bool,
    /// Allocated and not yet updated: its 2-bit counter takes the first outcome's side.
    fresh: bool,
    counter: u8,
    history: u16,
    full: bool,
    executed: u64,
    taken: u64,
}

/// An entry's tag: its branch pc and the clock of its last use, 0 while the entry is
/// invalid (the clock is at least 1 once anything has been looked up), so the way a
/// miss takes is the first with the least `last_use`: an invalid way first, else the
/// least recently used, with one pass.
#[derive(Clone, Copy, Debug, Default)]
struct Way {
    branch: u64,
    last_use: u64,
}

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
    entries: Vec<Entry>,
    tags: Vec<Way>,
    since_sample: u64,
    arcs: TupleMap<f64>,
    /// The indices of the dirty entries, each once, in the order they turned dirty: a
    /// sampling point reads these instead of scanning every entry (at an interval of 100
    /// the scan of 1,024 entries at each interval end was half the model's time).
    dirty: Vec<u32>,
    reads: u64,
    clock: u64,
    /// Sets of `ways` entries, and `sets - 1` when that is a power of two (the usual
    /// case): a set is then selected by a mask rather than a division per tuple.
    sets: u64,
    set_mask: Option<u64>,
    /// Allocations that replaced another branch's valid entry (buffer contentions, 002
    /// Fig 2), since the model was made.
    contentions: u64,
}

impl Conte {
    /// A model from its spec and options.
    pub fn new(spec: ProfilerSpec, opts: ConteOptions) -> Self {
        let sets = (opts.entries / opts.ways) as u64;
        Conte {
            threshold: spec.threshold_count(),
            entries: vec![Entry::default(); opts.entries],
            tags: vec![Way::default(); opts.entries],
            since_sample: 0,
            arcs: TupleMap::default(),
            dirty: Vec::new(),
            reads: 0,
            clock: 0,
            sets,
            set_mask: sets.is_power_of_two().then(|| sets - 1),
            contentions: 0,
            spec,
            opts,
        }
    }

    /// The entry holding `pc`, allocating (and so losing the old entry's unsampled
    /// information) on a miss: an invalid way first, else the least recently used.
    #[inline(always)]
    fn slot(&mut self, pc: u64) -> usize {
        // Low offset bits select the set, as a BTB indexes by address; the function index
        // is mixed in so equal offsets in different functions spread.
        let x = (pc & 0xffff_ffff) ^ (pc >> 32).wrapping_mul(0x9E37_79B1);
        let ways = self.opts.ways;
        let set = match self.set_mask {
            Some(mask) => x & mask,
            None => x % self.sets,
        };
        let base = set as usize * ways;
        self.clock += 1;
        let clock = self.clock;
        let set = &mut self.tags[base..base + ways];
        // One pass finds a hit, or else the first way with the least `last_use`.
        let (mut victim, mut least) = (0, u64::MAX);
        for (w, way) in set.iter_mut().enumerate() {
            if way.branch == pc && way.last_use != 0 {
                way.last_use = clock;
                return base + w;
            }
            if way.last_use < least {
                (victim, least) = (w, way.last_use);
            }
        }
        self.contentions += u64::from(least != 0);
        set[victim] = Way {
            branch: pc,
            last_use: clock,
        };
        let v = base + victim;
        // The new branch inherits the way's dirty bit (and its place in the dirty list):
        // `observe` marks it dirty right after, so the bit only says whether the index is
        // listed already.
        self.entries[v] = Entry {
            dirty: self.entries[v].dirty,
            history: 1,
            fresh: true,
            ..Entry::default()
        };
        v
    }

    /// Buffer contentions so far: allocations that replaced another branch's valid
    /// entry, losing its unsampled information (002 Fig 2's count).
    pub fn contentions(&self) -> u64 {
        self.contentions
    }

    /// Observes `batch` under one scheme, updating only the state that scheme samples
    /// (one-level: the 2-bit counter; two-level: the history register; counter: the
    /// two counters): a tuple costs a set lookup and a few stores (`cargo run
    /// --release -p toyvm-profiler --example ingest_quick -- edges conte`).
    fn observe_as<const SCHEME: u8>(&mut self, batch: &[Tuple]) {
        let ft = self.opts.fallthrough;
        let period = self.opts.period;
        let width = self.opts.history;
        let mask = (1u16 << width) - 1;
        for t in batch {
            if t.kind != Kind::Edge {
                continue;
            }
            let i = self.slot(t.a);
            let taken = t.b != t.a.wrapping_add(ft);
            let e = &mut self.entries[i];
            if taken {
                e.target = Some(t.b);
            }
            match SCHEME {
                ONE_LEVEL => {
                    if e.fresh {
                        // A just-allocated 2-bit counter starts weak toward its first
                        // outcome.
                        e.fresh = false;
                        e.counter = if taken { 2 } else { 1 };
                    } else if taken {
                        e.counter = (e.counter + 1).min(3);
                    } else {
                        e.counter = e.counter.saturating_sub(1);
                    }
                }
                TWO_LEVEL => {
                    let shifted = (e.history << 1) | taken as u16;
                    if e.full {
                        e.history = shifted & mask;
                    } else if shifted >> width != 0 {
                        e.full = true;
                        e.history = shifted & mask;
                    } else {
                        e.history = shifted;
                    }
                }
                _ => {
                    e.executed += 1;
                    e.taken += taken as u64;
                }
            }
            if !e.dirty {
                e.dirty = true;
                self.dirty.push(i as u32);
            }
            self.since_sample += 1;
            if self.since_sample >= period {
                self.sample();
            }
        }
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
        dirty.sort_unstable();
        let w = n as f64 / (self.opts.bbar * d as f64);
        let (mut exact, mut full) = (0u64, 0u64);
        for &i in &dirty {
            let e = &self.entries[i as usize];
            if e.full {
                full += 1;
            } else {
                exact += (15 - e.history.leading_zeros()) as u64;
            }
        }
        let w_full = (n as f64 / self.opts.bbar - exact as f64) / full.max(1) as f64;
        let ft = self.opts.fallthrough;
        let scheme = self.opts.scheme;
        let width = self.opts.history;
        let mut add = Vec::with_capacity(2 * d);
        for &i in &dirty {
            let e = &mut self.entries[i as usize];
            let branch = self.tags[i as usize].branch;
            let fall = Tuple::edge(branch, branch.wrapping_add(ft));
            let target = e.target.map(|t| Tuple::edge(branch, t));
            match scheme {
                ConteScheme::OneLevel => {
                    let inc = if e.counter == 0 || e.counter == 3 {
                        2.0 * w
                    } else {
                        w
                    };
                    match (e.counter >= 2, target) {
                        (true, Some(t)) => add.push((t, inc)),
                        _ => add.push((fall, inc)),
                    }
                }
                ConteScheme::TwoLevel => {
                    let (valid, ones) = if e.full {
                        (width, e.history.count_ones())
                    } else {
                        let v = 15 - e.history.leading_zeros();
                        (v, e.history.count_ones() - 1)
                    };
                    if valid > 0 {
                        let scale = if e.full {
                            w_full.max(valid as f64)
                        } else {
                            valid as f64
                        };
                        let frac = ones as f64 / valid as f64;
                        if let Some(t) = target {
                            add.push((t, frac * scale));
                        }
                        add.push((fall, (1.0 - frac) * scale));
                    }
                    e.history = 1;
                    e.full = false;
                }
                ConteScheme::Counter => {
                    if let Some(t) = target {
                        add.push((t, e.taken as f64));
                    }
                    add.push((fall, (e.executed - e.taken) as f64));
                    e.executed = 0;
                    e.taken = 0;
                }
            }
            e.dirty = false;
        }
        dirty.clear();
        self.dirty = dirty;
        self.reads += d as u64;
        for (t, x) in add {
            if x > 0.0 {
                *self.arcs.entry(t).or_insert(0.0) += x;
            }
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
        out.extend(
            self.arcs
                .drain()
                .map(|(tuple, w)| Candidate {
                    tuple,
                    count: w.round() as u64,
                })
                .inspect(|c| {
                    if c.count > 0 {
                        estimates(c.tuple, c.count)
                    }
                })
                .filter(|c| c.count >= t),
        );
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
        (self.entries.len() * per_entry_bits).div_ceil(8)
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
        let e = m.entries[i];
        assert_eq!((e.history, e.full), (0b1111, false));
        for _ in 0..7 {
            m.observe(Tuple::edge(0x10, 0x11));
        }
        let i = m.slot(0x10);
        let e = m.entries[i];
        assert!(e.full, "10 outcomes fill a 10-bit register");
        assert_eq!(e.history, 0b11_1000_0000);
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
    fn refuses_other_kinds() {
        assert!(parse_spec("conte:kinds=all").is_err());
        let m = parse_spec("conte").unwrap().build();
        assert!(!m.supports(Kind::Value) && m.supports(Kind::Edge));
    }
}
