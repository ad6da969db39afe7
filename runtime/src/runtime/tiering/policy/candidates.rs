//! The one shape the policy plans from: a model's candidates summed per
//! tuple, handed over in tuple order.

use std::sync::Arc;

use toyvm_profiler::Candidate;
use toyvm_profiler::hash::TupleMap;

/// Candidates summed per tuple: those of interval ends whose plan waited
/// for credit add up (see the module docs of [`super`]), as do an
/// installed tree's and an interval's when the tree is planned again.
#[derive(Debug, Default)]
pub(crate) struct Summed(TupleMap<u64>);

impl Summed {
    /// Adds `candidates`' counts.
    pub(crate) fn add<'a>(&mut self, candidates: impl IntoIterator<Item = &'a Candidate>) {
        for c in candidates {
            *self.0.entry(c.tuple).or_insert(0) += c.count;
        }
    }

    /// Whether there is nothing to plan from.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The sums, in tuple order (planning breaks ties by the order it
    /// sees candidates in, and the map's order depends on its seed),
    /// leaving none: one list shared by every region planned from it
    /// (see `Shape::planned_from`).
    pub(crate) fn take(&mut self) -> Arc<[Candidate]> {
        let mut all: Vec<Candidate> = self
            .0
            .drain()
            .map(|(tuple, count)| Candidate { tuple, count })
            .collect();
        all.sort_unstable_by_key(|c| c.tuple);
        all.into()
    }
}
