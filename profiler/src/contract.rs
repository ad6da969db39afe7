//! The contract between a profiler model and whoever feeds it: the one trait every
//! model implements ([`Profiler`], its contract a numbered list), the types it returns
//! ([`Candidate`], [`HotRange`], [`Overhead`]) and the candidates' order.

use crate::spec::ProfilerSpec;
use crate::tuple::{Kind, KindSet, Tuple};
use serde::Serialize;

pub use toyvm_event::Candidate;

/// Modeled cost of a profiler to the software it feeds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Overhead {
    /// Messages delivered to software so far.
    pub messages: u64,
    /// Modeled software cycles spent on them so far.
    pub cycles: u64,
}

/// A range a range-aware model (RAP) reports as hot: `a` and `b` each span an inclusive
/// interval; a point range has `a_lo == a_hi` and `b_lo == b_hi`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct HotRange {
    /// The tuple kind (RAP keeps one tree per kind, the paper's "profile type").
    #[serde(serialize_with = "kind_word")]
    pub kind: Kind,
    /// Lowest `a` in the range.
    pub a_lo: u64,
    /// Highest `a` in the range.
    pub a_hi: u64,
    /// Lowest `b` in the range.
    pub b_lo: u64,
    /// Highest `b` in the range.
    pub b_hi: u64,
    /// The estimated count of every event in the range (all its nodes, hot subranges
    /// included): a lower bound on the true count, short by at most eps*n.
    pub count: u64,
    /// The paper's hot-range weight: the range's count plus its non-hot subranges'.
    pub hot_weight: u64,
}

impl HotRange {
    /// Whether the range holds `t`.
    pub fn contains(&self, t: &Tuple) -> bool {
        t.kind == self.kind
            && (self.a_lo..=self.a_hi).contains(&t.a)
            && (self.b_lo..=self.b_hi).contains(&t.b)
    }
}

/// Kinds in JSON are the spec words (`value`, `edge`, `call`), as candidates print them.
fn kind_word<S: serde::Serializer>(k: &Kind, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(k.word())
}

/// A model of a profiler.
///
/// The contract:
///
/// 1. [`observe`](Profiler::observe) takes one tuple; [`observe_batch`](Profiler::observe_batch)
///    takes a slice and must be equivalent to calling `observe` on each element in order.
///    Neither allocates per tuple on the model's hot path.
/// 2. A model is only handed tuples whose kind it [`supports`](Profiler::supports); the
///    [`IntervalDriver`](crate::IntervalDriver) filters.  A model that receives another
///    kind anyway ignores it.
/// 3. [`end_interval`](Profiler::end_interval) (or
///    [`end_interval_with`](Profiler::end_interval_with), which also hands over every
///    estimate below the threshold) closes the current interval and returns the
///    candidates `(tuple, estimated count)` the model reports for it: tuples whose estimate
///    reaches `ceil(threshold * interval)` from the spec.  Each tuple appears at most once.
///    The order is by count, highest first, then by tuple.  The model then starts the next
///    interval (hardware state is reset or retained as its paper says).
///    [`end_interval_into`](Profiler::end_interval_into), the one a model implements, does
///    the same but appends the candidates to a buffer the caller reuses, in no particular
///    order: a consumer that does not need the order (the runtime's JIT, which orders them
///    by tuple) then pays neither the sort nor an allocation per interval.
/// 4. [`state_bytes`](Profiler::state_bytes) is the modeled hardware state in bytes (the
///    bits of the modeled tables, rounded up), not the Rust heap use; it is constant for
///    fixed-size models and may vary for adaptive ones (RAP, the tree's current size).
/// 5. [`overhead`](Profiler::overhead) is cumulative since construction: messages
///    delivered to software and the modeled cycles spent processing them.
/// 6. [`spec`](Profiler::spec) returns the spec the model was built from; its `Display` is
///    the canonical spec string.
/// 7. Models are deterministic: the same spec (seed included) and stream give the same
///    candidates.
pub trait Profiler: Send + std::fmt::Debug {
    /// The spec the model was built from.
    fn spec(&self) -> &ProfilerSpec;

    /// The model's name in specs (`multihash`, `rap`, ...).
    fn name(&self) -> &'static str {
        self.spec().model.name()
    }

    /// The kinds this model can profile.
    fn supported_kinds(&self) -> KindSet;

    /// Whether this model can profile `kind`.
    fn supports(&self, kind: Kind) -> bool {
        self.supported_kinds().contains(kind)
    }

    /// Observes one tuple.
    fn observe(&mut self, t: Tuple);

    /// Observes tuples in order.
    fn observe_batch(&mut self, batch: &[Tuple]) {
        for &t in batch {
            self.observe(t);
        }
    }

    /// Ends the interval; returns its candidates (see the trait contract).
    fn end_interval(&mut self) -> Vec<Candidate> {
        self.end_interval_with(&mut |_, _| {})
    }

    /// Ends the interval like [`end_interval_with`](Profiler::end_interval_with), but
    /// appends the candidates to `out` (which it does not clear) in no particular order.
    /// At short intervals sorting and collecting the candidates was a third of a model's
    /// time (perfect at an interval of 100 on `poly`: the sort 34% and the collection 11%
    /// of the run's samples).
    fn end_interval_into(
        &mut self,
        estimates: &mut dyn FnMut(Tuple, u64),
        out: &mut Vec<Candidate>,
    );

    /// Ends the interval like [`end_interval`](Profiler::end_interval) and first hands
    /// `estimates` every estimate the model holds for the interval, below the threshold
    /// too: each tuple once, with its estimated count (at least 1), in no particular
    /// order.  This is the model's full profile, what a consumer reading the whole table
    /// sees rather than only its candidates: the perfect profiler's counts, the
    /// multi-hash accumulator's entries (its hash tables hold counts, not tuples), the
    /// stratified and tagged software side's estimates, Conte's sampled arc weights,
    /// RAP's point counts (for the cumulative tree, what the interval added to each
    /// point).  Conte's arc-weight error and the invariance error are defined on it.
    fn end_interval_with(&mut self, estimates: &mut dyn FnMut(Tuple, u64)) -> Vec<Candidate> {
        let mut out = Vec::new();
        self.end_interval_into(estimates, &mut out);
        sort_candidates(&mut out);
        out
    }

    /// Modeled hardware state in bytes.
    fn state_bytes(&self) -> usize;

    /// Cumulative modeled overhead.
    fn overhead(&self) -> Overhead;

    /// Hot ranges, for range-aware models; empty for the others.  Call after
    /// `end_interval`: RAP with `reset=on` gives the ranges of the interval just ended;
    /// its default cumulative tree gives those of the whole stream so far (computing them
    /// walks the tree, so call it when needed, not per interval).
    fn hot_ranges(&self) -> Vec<HotRange> {
        Vec::new()
    }
}

pub use crate::spec::threshold_count;

/// Sorts candidates into the contract's order (by count, highest first, then by tuple),
/// as [`Profiler::end_interval_with`] returns them.
pub fn sort_candidates(c: &mut [Candidate]) {
    c.sort_unstable_by(|x, y| y.count.cmp(&x.count).then_with(|| x.tuple.cmp(&y.tuple)));
}
