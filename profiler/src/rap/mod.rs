//! Range-adaptive profiling (004): the RAP tree over a multibit trie ([`RapTree`]), the
//! merging event buffer ([`EventBuffer`]), hot ranges, 1-D and 2-D keys, and an API in
//! the spirit of `rap_init` / `rap_add_points` / `rap_finalize` (section 3.2).
//!
//! Keys.  The 1-D tree runs over the 128-bit tuple key `a:b` (a in the high half), so the
//! top of the tree splits code (pc ranges, all values: "hot code regions") and the bottom
//! splits one pc's values ("hot value ranges").  The 2-D tree of section 5.5 keeps a range
//! of `a` and a range of `b` per node; splitting halves both (branching 4: 2 x 2), which is
//! the same trie over the bit-interleaved (Morton) key, a's bit first.  One tree per tuple
//! kind: the kinds are the paper's simultaneous "profile types".
//!
//! Per interval.  By default (`reset=off`) the [`Rap`] profiler keeps one tree per kind
//! over the whole stream, as the paper does, and at each interval end flushes the buffer
//! and reports as candidates the point ranges whose count grew by at least the candidate
//! threshold during the interval (a point's count only grows while the point exists, so
//! the growth is a lower bound on the tuple's interval count); its hot ranges are those of
//! the whole stream so far.  With `reset=on` it finalizes its trees at every interval end
//! and starts new ones, so counts and hot ranges are the interval's own.  Because h = 64
//! for a 128-bit key with b = 4, the split threshold eps*n/64 stays below 1 for the first
//! 64/eps events of a tree, and every new key is refined to a point until then; fresh
//! trees over short intervals with small eps are therefore large.  That is the
//! algorithm's worst case over a wide key range, not a bug; `state_bytes` reports the peak
//! (16 bytes per node, the paper's 128 bits, plus 20 bytes per buffer slot).
//!
//! Batches.  `observe_batch` passes a run of events through the buffers first and then
//! hands each tree the `(key, count)` adds that got through, in order
//! ([`RapSet::add_events`]); a buffer never depends on its tree, so this is the same
//! sequence of tree updates as one event at a time, only easier to overlap.
//!
//! Hot ranges (section 5.1): a range is hot iff its count plus the counts of its non-hot
//! subranges reach `hot * n` (default 10%); a range is not hot merely because it has hot
//! children.

mod buffer;
mod trie;

pub use buffer::EventBuffer;
pub use trie::{NodeView, RapTree, worst_case_before_merge};

use crate::contract::{Candidate, HotRange, Overhead, Profiler};
use crate::spec::{ProfilerSpec, RapOptions};
use crate::tuple::{Kind, KindSet, Tuple};

/// Bits of a range key (the tuple's `a:b`, or the two interleaved): with
/// `2^k` children per node the tree is `KEY_BITS / k` levels high.
pub const KEY_BITS: u32 = 128;

/// Spreads the 64 bits of `x` to the odd... even positions of a 128-bit word.
fn spread(x: u64) -> u128 {
    let mut v = x as u128;
    v = (v | (v << 32)) & 0x0000_0000_ffff_ffff_0000_0000_ffff_ffff;
    v = (v | (v << 16)) & 0x0000_ffff_0000_ffff_0000_ffff_0000_ffff;
    v = (v | (v << 8)) & 0x00ff_00ff_00ff_00ff_00ff_00ff_00ff_00ff;
    v = (v | (v << 4)) & 0x0f0f_0f0f_0f0f_0f0f_0f0f_0f0f_0f0f_0f0f;
    v = (v | (v << 2)) & 0x3333_3333_3333_3333_3333_3333_3333_3333;
    v = (v | (v << 1)) & 0x5555_5555_5555_5555_5555_5555_5555_5555;
    v
}

fn gather(v: u128) -> u64 {
    let mut v = v & 0x5555_5555_5555_5555_5555_5555_5555_5555;
    v = (v | (v >> 1)) & 0x3333_3333_3333_3333_3333_3333_3333_3333;
    v = (v | (v >> 2)) & 0x0f0f_0f0f_0f0f_0f0f_0f0f_0f0f_0f0f_0f0f;
    v = (v | (v >> 4)) & 0x00ff_00ff_00ff_00ff_00ff_00ff_00ff_00ff;
    v = (v | (v >> 8)) & 0x0000_ffff_0000_ffff_0000_ffff_0000_ffff;
    v = (v | (v >> 16)) & 0x0000_0000_ffff_ffff_0000_0000_ffff_ffff;
    v = (v | (v >> 32)) & 0x0000_0000_0000_0000_ffff_ffff_ffff_ffff;
    v as u64
}

/// The tree key of a tuple: `a:b` (1-D) or a and b interleaved, a's bit first (2-D).
#[inline]
pub fn key_of(t: &Tuple, dims: u32) -> u128 {
    if dims == 2 {
        (spread(t.a) << 1) | spread(t.b)
    } else {
        ((t.a as u128) << 64) | t.b as u128
    }
}

/// The inverse of [`key_of`].
pub fn tuple_of(kind: Kind, key: u128, dims: u32) -> Tuple {
    if dims == 2 {
        Tuple::new(kind, gather(key >> 1), gather(key))
    } else {
        Tuple::new(kind, (key >> 64) as u64, key as u64)
    }
}

/// The `(a_lo, a_hi, b_lo, b_hi)` box of the keys with a `bits`-bit prefix.  Both key
/// layouts make every trie range a product of an `a` range and a `b` range.
pub fn box_of(prefix: u128, bits: u32, dims: u32) -> (u64, u64, u64, u64) {
    let lo = if bits == 0 { 0 } else { prefix << (128 - bits) };
    let hi = if bits == 0 {
        u128::MAX
    } else {
        lo | u128::MAX.checked_shr(bits).unwrap_or(0)
    };
    let (l, h) = (
        tuple_of(Kind::Value, lo, dims),
        tuple_of(Kind::Value, hi, dims),
    );
    (l.a, h.a, l.b, h.b)
}

/// A range node as `rap_finalize` reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RangeNode {
    /// Which profile type (tree).
    pub profile_type: usize,
    /// The node.
    pub node: NodeView,
}

/// Several RAP trees, one per profile type, each behind an optional event buffer.
#[derive(Debug, Clone)]
pub struct RapSet {
    trees: Vec<RapTree>,
    buffers: Vec<EventBuffer>,
    hot: f64,
    /// Per tree, the adds of the batch in flight ([`RapSet::add_events`]): the first
    /// `pending_len` of `PENDING` slots (an evicted entry is written unconditionally and
    /// counted only when it is one).
    pending: Vec<Box<[(u128, u64); PENDING]>>,
    pending_len: Vec<usize>,
}

/// `rap_init(number_of_simultaneous_profiles)`: one tree per profile type.
pub fn rap_init(number_of_simultaneous_profiles: usize, opts: &RapOptions) -> RapSet {
    let n = number_of_simultaneous_profiles.max(1);
    RapSet {
        trees: (0..n)
            .map(|_| RapTree::new(opts.branching, opts.eps, opts.q, opts.merge_first))
            .collect(),
        buffers: if opts.buffer > 0 {
            (0..n).map(|_| EventBuffer::new(opts.buffer)).collect()
        } else {
            Vec::new()
        },
        hot: opts.hot,
        pending: vec![Box::new([(0, 0); PENDING]); n],
        pending_len: vec![0; n],
    }
}

/// Slots of a tree's pending adds: a tree takes them in runs of at most this many.
const PENDING: usize = 256;

impl RapSet {
    /// `rap_add_points(id, count, profile_type)`: adds `count` events straight to the tree.
    pub fn rap_add_points(&mut self, id: u128, count: u64, profile_type: usize) {
        self.trees[profile_type].add(id, count);
    }

    /// One event through the merging buffer (or straight to the tree without one).
    #[inline]
    pub fn add_event(&mut self, id: u128, profile_type: usize) {
        match self.buffers.get_mut(profile_type) {
            Some(b) => {
                if let Some((k, c)) = b.push(id) {
                    self.trees[profile_type].add(k, c);
                }
            }
            None => self.trees[profile_type].add(id, 1),
        }
    }

    /// Events through the buffers (or straight to the trees), as repeated
    /// [`RapSet::add_event`] calls would do: every event first goes through its buffer,
    /// then each tree takes the adds that reached it, in order ([`RapTree::add_batch`]).
    /// A buffer never depends on its tree, so the two passes give the same result.
    pub fn add_events(&mut self, mut events: impl Iterator<Item = (u128, usize)>) {
        let RapSet {
            trees,
            buffers,
            pending,
            pending_len,
            ..
        } = self;
        let mut next = events.next();
        // A run of events of one tree at a time, with its buffer and pending adds at hand
        // (a stream of one tuple kind is one run).
        while let Some((mut id, p)) = next {
            let pend = &mut pending[p];
            let tree = &mut trees[p];
            let mut len = pending_len[p];
            match buffers.get_mut(p) {
                Some(buffer) => loop {
                    let (e, pass) = buffer.push_slot(id);
                    pend[len % PENDING] = e;
                    len += usize::from(pass);
                    if len == PENDING {
                        tree.add_batch(&pend[..]);
                        len = 0;
                    }
                    match events.next() {
                        Some((k, q)) if q == p => id = k,
                        other => {
                            next = other;
                            break;
                        }
                    }
                },
                None => loop {
                    pend[len % PENDING] = (id, 1);
                    len += 1;
                    if len == PENDING {
                        tree.add_batch(&pend[..]);
                        len = 0;
                    }
                    match events.next() {
                        Some((k, q)) if q == p => id = k,
                        other => {
                            next = other;
                            break;
                        }
                    }
                },
            }
            pending_len[p] = len;
        }
        for p in 0..self.trees.len() {
            self.pass_pending(p);
        }
    }

    /// Hands tree `p` its pending adds.  Trees do not depend on each other, so when
    /// one of them takes its adds does not matter.
    fn pass_pending(&mut self, p: usize) {
        let len = std::mem::take(&mut self.pending_len[p]);
        if len > 0 {
            self.trees[p].add_batch(&self.pending[p][..len]);
        }
    }

    /// Flushes the buffers into the trees.
    pub fn flush(&mut self) {
        for (b, t) in self.buffers.iter_mut().zip(self.trees.iter_mut()) {
            for (k, c) in b.drain() {
                t.add(k, c);
            }
        }
    }

    /// `rap_finalize()`: flushes the buffers and returns every node of every tree with its
    /// counts and hotness.
    pub fn rap_finalize(&mut self) -> Vec<RangeNode> {
        self.flush();
        let hot = self.hot;
        self.trees
            .iter()
            .enumerate()
            .flat_map(|(i, t)| {
                t.nodes_with_hotness(hot)
                    .into_iter()
                    .map(move |node| RangeNode {
                        profile_type: i,
                        node,
                    })
            })
            .collect()
    }

    /// The trees.
    pub fn trees(&self) -> &[RapTree] {
        &self.trees
    }

    /// Starts over (a fresh rap_init with the same options, allocations kept).
    pub fn reset(&mut self) {
        self.flush();
        self.trees.iter_mut().for_each(RapTree::reset);
    }
}

/// The RAP profiler: one tree per kind.
#[derive(Debug)]
pub struct Rap {
    spec: ProfilerSpec,
    opts: RapOptions,
    threshold: u64,
    set: RapSet,
    ranges: Vec<HotRange>,
    peak_nodes: usize,
}

impl Rap {
    /// A model from its spec and options.
    pub fn new(spec: ProfilerSpec, opts: RapOptions) -> Self {
        Rap {
            threshold: spec.threshold_count(),
            set: rap_init(3, &opts),
            ranges: Vec::new(),
            peak_nodes: 0,
            spec,
            opts,
        }
    }

    /// The hot ranges of the trees as they stand (a walk over every node).
    fn compute_ranges(&self) -> Vec<HotRange> {
        let dims = self.opts.dims;
        let hot = self.opts.hot;
        let mut ranges: Vec<HotRange> = self
            .set
            .trees
            .iter()
            .enumerate()
            .flat_map(|(i, t)| {
                t.nodes_with_hotness(hot)
                    .into_iter()
                    .filter(|n| n.hot)
                    .map(move |n| {
                        let (a_lo, a_hi, b_lo, b_hi) = box_of(n.prefix, n.bits, dims);
                        HotRange {
                            kind: Kind::ALL[i],
                            a_lo,
                            a_hi,
                            b_lo,
                            b_hi,
                            count: n.subtree,
                            hot_weight: n.hot_weight,
                        }
                    })
            })
            .collect();
        ranges.sort_by_key(|r| std::cmp::Reverse(r.hot_weight));
        ranges
    }

    /// The trees (one per kind, in [`Kind`] order).
    pub fn set(&self) -> &RapSet {
        &self.set
    }
}

impl Profiler for Rap {
    fn spec(&self) -> &ProfilerSpec {
        &self.spec
    }

    fn supported_kinds(&self) -> KindSet {
        KindSet::ALL
    }

    #[inline]
    fn observe(&mut self, t: Tuple) {
        self.set
            .add_event(key_of(&t, self.opts.dims), t.kind as usize);
    }

    fn observe_batch(&mut self, batch: &[Tuple]) {
        // Short runs keep the pending adds in L1; the key layout is chosen once.
        for run in batch.chunks(256) {
            let events = run.iter().map(|t| (t.kind as usize, t));
            if self.opts.dims == 2 {
                self.set.add_events(events.map(|(p, t)| (key_of(t, 2), p)));
            } else {
                self.set.add_events(events.map(|(p, t)| (key_of(t, 1), p)));
            }
        }
    }

    fn end_interval_into(
        &mut self,
        estimates: &mut dyn FnMut(Tuple, u64),
        out: &mut Vec<Candidate>,
    ) {
        let dims = self.opts.dims;
        self.set.flush();
        self.peak_nodes = self
            .peak_nodes
            .max(self.set.trees.iter().map(RapTree::peak_nodes).sum());
        for (i, tree) in self.set.trees.iter_mut().enumerate() {
            let kind = Kind::ALL[i];
            // A cumulative tree reports what the interval added to each point (a point
            // merged away and split again starts from zero); a fresh tree its counts.
            let points = if self.opts.reset {
                tree.points()
            } else {
                tree.take_point_growth()
            };
            for (k, count) in points {
                let tuple = tuple_of(kind, k, dims);
                if count > 0 {
                    estimates(tuple, count);
                }
                if count >= self.threshold {
                    out.push(Candidate { tuple, count });
                }
            }
        }
        if self.opts.reset {
            // The trees are about to restart: keep this interval's ranges.
            self.ranges = self.compute_ranges();
            self.set.reset();
        }
    }

    fn state_bytes(&self) -> usize {
        let live: usize = self.set.trees.iter().map(RapTree::peak_nodes).sum();
        16 * self.peak_nodes.max(live)
            + 20 * self.set.buffers.iter().map(EventBuffer::len).sum::<usize>()
    }

    fn overhead(&self) -> Overhead {
        Overhead::default()
    }

    fn hot_ranges(&self) -> Vec<HotRange> {
        if self.opts.reset {
            self.ranges.clone()
        } else {
            self.compute_ranges()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::parse_spec;

    #[test]
    fn morton_keys_round_trip() {
        for (a, b) in [
            (0u64, 0u64),
            (u64::MAX, 0),
            (0x1234_5678_9abc_def0, 0xfedc_ba98_7654_3210),
            (1, u64::MAX),
        ] {
            let t = Tuple::edge(a, b);
            assert_eq!(tuple_of(Kind::Edge, key_of(&t, 2), 2), t);
            assert_eq!(tuple_of(Kind::Edge, key_of(&t, 1), 1), t);
        }
        // The first split of the 2-D tree halves both a and b.
        assert_eq!(box_of(0b10, 2, 2), (1 << 63, u64::MAX, 0, u64::MAX >> 1));
        assert_eq!(
            box_of(0b10, 2, 1),
            (1 << 63, (1 << 63) | (u64::MAX >> 2), 0, u64::MAX)
        );
    }

    #[test]
    fn hot_points_become_candidates_and_hot_ranges() {
        for dims in [1, 2] {
            let spec = parse_spec(&format!(
                "rap:dims={dims},interval=100000,threshold=5%,eps=1%,reset=on"
            ))
            .unwrap();
            let mut m = spec.build();
            for i in 0..100_000u64 {
                let t = if i % 4 == 0 {
                    Tuple::value(0x1_0000_0010, 7)
                } else {
                    Tuple::value(0x1_0000_0000 + i % 64, i)
                };
                m.observe(t);
            }
            let c = m.end_interval();
            assert_eq!(c[0].tuple, Tuple::value(0x1_0000_0010, 7), "dims={dims}");
            assert!(c[0].count <= 25_000 && c[0].count >= 25_000 - 1000);
            let r = m.hot_ranges();
            assert!(
                r.iter()
                    .any(|h| h.contains(&Tuple::value(0x1_0000_0010, 7)))
            );
            assert!(m.state_bytes() > 0);
        }
    }

    #[test]
    fn cumulative_trees_report_what_each_interval_added() {
        let mut m = parse_spec("rap:interval=20000,threshold=10%,eps=1%")
            .unwrap()
            .build();
        let hot = Tuple::call(0x2_0000_0003, 9);
        for round in 0..3u64 {
            for i in 0..20_000u64 {
                m.observe(if i % 2 == 0 {
                    hot
                } else {
                    Tuple::call(0x2_0000_0000 + i % 3, round * 100_000 + i)
                });
            }
            let c = m.end_interval();
            assert_eq!(c[0].tuple, hot, "round {round}");
            assert!(
                c[0].count <= 10_000 && c[0].count >= 9_000,
                "round {round}: {}",
                c[0].count
            );
            assert!(!m.hot_ranges().is_empty());
        }
    }
}
