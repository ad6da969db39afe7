//! The perfect profiler: exact per-interval counts, the oracle every metric compares
//! against (000 section 5.5.1's "perfect profiler").
//!
//! Its `state_bytes` is what an exact table would need for the largest interval seen:
//! 24 bytes (two 64-bit words, kind, a 64-bit count, rounded) per distinct tuple.

use crate::contract::{Candidate, Overhead, Profiler, sort_candidates};
use crate::hash::TupleMap;
use crate::spec::ProfilerSpec;
use crate::tuple::{KindSet, Tuple};

/// Exact counts per interval.
#[derive(Debug)]
pub struct Perfect {
    spec: ProfilerSpec,
    threshold: u64,
    counts: TupleMap<u64>,
    max_distinct: usize,
}

impl Perfect {
    /// The oracle for `spec` (its model is ignored; interval and threshold are used).
    pub fn new(spec: ProfilerSpec) -> Self {
        let threshold = spec.threshold_count();
        Perfect {
            spec,
            threshold,
            counts: TupleMap::default(),
            max_distinct: 0,
        }
    }

    /// The exact counts of the current interval so far.
    pub fn counts(&self) -> &TupleMap<u64> {
        &self.counts
    }

    /// Ends the interval, returning every tuple seen with its exact count (not only the
    /// candidates); metrics need the counts of non-candidates too.
    pub fn end_interval_all(&mut self) -> TupleMap<u64> {
        self.max_distinct = self.max_distinct.max(self.counts.len());
        let cap = self.counts.len();
        std::mem::replace(
            &mut self.counts,
            TupleMap::with_capacity_and_hasher(cap, Default::default()),
        )
    }

    /// The candidates (count >= threshold) of an exact count table.
    pub fn candidates_of(counts: &TupleMap<u64>, threshold: u64) -> Vec<Candidate> {
        let mut c: Vec<Candidate> = counts
            .iter()
            .filter(|(_, n)| **n >= threshold)
            .map(|(t, n)| Candidate {
                tuple: *t,
                count: *n,
            })
            .collect();
        sort_candidates(&mut c);
        c
    }
}

impl Profiler for Perfect {
    fn spec(&self) -> &ProfilerSpec {
        &self.spec
    }

    fn supported_kinds(&self) -> KindSet {
        KindSet::ALL
    }

    #[inline]
    fn observe(&mut self, t: Tuple) {
        *self.counts.entry(t).or_insert(0) += 1;
    }

    fn end_interval_into(
        &mut self,
        estimates: &mut dyn FnMut(Tuple, u64),
        out: &mut Vec<Candidate>,
    ) {
        // The table is emptied in place, its allocation kept for the next
        // interval, rather than handed out as `end_interval_all` does: at
        // interval 100 that allocation was a fifth of the model's time
        // (`run_cost -- programs/nqueens.tasm 8 --interval 100 --model
        // perfect`, model time 465-487 -> 360-375 us). A table far larger
        // than this interval needed is made again at this one's size, so
        // a phase of many tuples does not make every later end scan it.
        let len = self.counts.len();
        self.max_distinct = self.max_distinct.max(len);
        for (&tuple, &count) in &self.counts {
            estimates(tuple, count);
            if count >= self.threshold {
                out.push(Candidate { tuple, count });
            }
        }
        if self.counts.capacity() > 4 * len.max(1024) {
            self.counts = TupleMap::with_capacity_and_hasher(len, Default::default());
        } else {
            self.counts.clear();
        }
    }

    fn state_bytes(&self) -> usize {
        24 * self.max_distinct.max(self.counts.len())
    }

    fn overhead(&self) -> Overhead {
        Overhead::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::parse_spec;

    #[test]
    fn counts_exactly_and_applies_the_threshold() {
        let mut p = parse_spec("perfect:interval=10,threshold=30%")
            .unwrap()
            .build();
        for i in 0..10u64 {
            p.observe(Tuple::value(1, if i < 4 { 7 } else { 100 + i }));
        }
        let c = p.end_interval();
        assert_eq!(
            c,
            vec![Candidate {
                tuple: Tuple::value(1, 7),
                count: 4
            }]
        );
        assert!(p.end_interval().is_empty(), "a new interval starts empty");
    }
}
