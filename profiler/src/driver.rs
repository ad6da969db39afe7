//! The interval driver: counts tuples and ends an interval every L tuples.
//!
//! A driver has one or more lanes.  A lane is a model with the set of kinds it is shown;
//! [`IntervalDriver::new`] makes one lane for one model over the spec's kinds,
//! [`IntervalDriver::per_kind`] one lane per kind, each with its own model and interval.
//! A lane counts only the tuples it is shown, so a per-kind lane's interval is L tuples of
//! its kind.
//!
//! The runtime calls [`IntervalDriver::observe_batch`] from its tuple sink with each full
//! buffer; the callback receives every interval that ended inside the batch, in order,
//! with its candidates.  Batches are cut exactly at interval boundaries and handed to the
//! model's `observe_batch`, so a lane that sees every kind copies nothing.
//!
//! Each lane collects its candidates into a buffer it keeps from one interval to the
//! next.  They reach the callback in the trait contract's order (by count, then tuple)
//! unless the driver was made [`unordered`](IntervalDriver::unordered), for a consumer
//! that orders them its own way and should not pay for a sort at every interval end.

use crate::contract::{Candidate, Profiler, sort_candidates};
use crate::error::{Error, Result};
use crate::spec::ProfilerSpec;
use crate::tuple::{Kind, KindSet, Tuple};

/// One ended interval, as handed to the callback.
#[derive(Debug)]
pub struct IntervalEnd<'a> {
    /// Which lane (index in creation order).
    pub lane: usize,
    /// The kinds the lane profiles.
    pub kinds: KindSet,
    /// 0-based interval number within the lane.
    pub index: u64,
    /// Tuples the interval held (L, or fewer for the final partial one).
    pub tuples: u64,
    /// The model's candidates: in the contract's order, or in no particular order from
    /// an [`unordered`](IntervalDriver::unordered) driver.
    pub candidates: &'a [Candidate],
    /// The model (for its state bytes, overhead and hot ranges).
    pub model: &'a dyn Profiler,
}

#[derive(Debug)]
struct Lane {
    kinds: KindSet,
    model: Box<dyn Profiler>,
    interval: u64,
    seen: u64,
    index: u64,
    scratch: Vec<Tuple>,
    /// The candidates of the interval that ended last (reused).
    candidates: Vec<Candidate>,
    /// Whether they are sorted into the contract's order.
    ordered: bool,
}

/// Ends intervals every L tuples for one model or one model per kind.
#[derive(Debug)]
pub struct IntervalDriver {
    lanes: Vec<Lane>,
}

impl IntervalDriver {
    /// One model over the kinds of `spec`.
    pub fn new(spec: &ProfilerSpec) -> Self {
        IntervalDriver {
            lanes: vec![Lane::new(spec.kinds, spec)],
        }
    }

    /// The same driver, handing each interval's candidates over in no particular order
    /// (the model's own), without sorting them.
    pub fn unordered(mut self) -> Self {
        for lane in &mut self.lanes {
            lane.ordered = false;
        }
        self
    }

    /// One model per kind.  Each kind may appear once; kinds not listed are not profiled.
    pub fn per_kind(specs: &[(Kind, ProfilerSpec)]) -> Result<Self> {
        let mut seen = KindSet::EMPTY;
        let mut lanes = Vec::new();
        for (kind, spec) in specs {
            if seen.contains(*kind) {
                return Err(Error::spec(
                    &spec.to_string(),
                    format!("kind {kind} given twice"),
                ));
            }
            if !spec.model.supported_kinds().contains(*kind) {
                return Err(Error::UnsupportedKind {
                    model: spec.model.name(),
                    supported: "edge",
                    requested: *kind,
                });
            }
            seen = seen.with(*kind);
            lanes.push(Lane::new(KindSet::only(*kind), spec));
        }
        Ok(IntervalDriver { lanes })
    }

    /// Several independent models, each over its spec's kinds (the report uses this).
    pub fn many(specs: &[ProfilerSpec]) -> Self {
        IntervalDriver {
            lanes: specs.iter().map(|s| Lane::new(s.kinds, s)).collect(),
        }
    }

    /// The lanes' models.
    pub fn models(&self) -> impl Iterator<Item = &dyn Profiler> {
        self.lanes.iter().map(|l| l.model.as_ref())
    }

    /// Observes a batch; calls `on_interval` for every interval that ends inside it.
    pub fn observe_batch(&mut self, batch: &[Tuple], mut on_interval: impl FnMut(IntervalEnd<'_>)) {
        for (i, lane) in self.lanes.iter_mut().enumerate() {
            lane.observe_batch(i, batch, &mut on_interval);
        }
    }

    /// Ends the final partial interval of every lane that has one.
    pub fn finish(&mut self, mut on_interval: impl FnMut(IntervalEnd<'_>)) {
        for (i, lane) in self.lanes.iter_mut().enumerate() {
            if lane.seen > 0 {
                lane.end(i, &mut on_interval);
            }
        }
    }
}

impl Lane {
    fn new(kinds: KindSet, spec: &ProfilerSpec) -> Self {
        Lane {
            kinds,
            model: spec.build(),
            interval: spec.interval,
            seen: 0,
            index: 0,
            scratch: Vec::new(),
            candidates: Vec::new(),
            ordered: true,
        }
    }

    fn observe_batch(
        &mut self,
        lane: usize,
        batch: &[Tuple],
        on: &mut impl FnMut(IntervalEnd<'_>),
    ) {
        // A batch of the lane's kinds only (an edge stream to an edge-only
        // model) is fed as it is: checking is cheaper than copying.
        if self.kinds == KindSet::ALL || batch.iter().all(|t| self.kinds.contains(t.kind)) {
            self.feed(lane, batch, on);
        } else {
            let mut scratch = std::mem::take(&mut self.scratch);
            scratch.clear();
            scratch.extend(batch.iter().filter(|t| self.kinds.contains(t.kind)));
            self.feed(lane, &scratch, on);
            self.scratch = scratch;
        }
    }

    fn feed(&mut self, lane: usize, mut rest: &[Tuple], on: &mut impl FnMut(IntervalEnd<'_>)) {
        while !rest.is_empty() {
            let room = (self.interval - self.seen).min(rest.len() as u64) as usize;
            let (now, later) = rest.split_at(room);
            self.model.observe_batch(now);
            self.seen += room as u64;
            rest = later;
            if self.seen == self.interval {
                self.end(lane, on);
            }
        }
    }

    fn end(&mut self, lane: usize, on: &mut impl FnMut(IntervalEnd<'_>)) {
        self.candidates.clear();
        self.model
            .end_interval_into(&mut |_, _| {}, &mut self.candidates);
        if self.ordered {
            sort_candidates(&mut self.candidates);
        }
        on(IntervalEnd {
            lane,
            kinds: self.kinds,
            index: self.index,
            tuples: self.seen,
            candidates: &self.candidates,
            model: self.model.as_ref(),
        });
        self.index += 1;
        self.seen = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::parse_spec;

    #[test]
    fn ends_intervals_every_l_tuples_across_batches() {
        let mut d = IntervalDriver::new(&parse_spec("perfect:interval=10,threshold=40%").unwrap());
        let mut ends = Vec::new();
        let batch: Vec<Tuple> = (0..7).map(|i| Tuple::value(1, i % 2)).collect();
        for _ in 0..4 {
            d.observe_batch(&batch, |e| {
                ends.push((e.index, e.tuples, e.candidates.len()))
            });
        }
        d.finish(|e| ends.push((e.index, e.tuples, e.candidates.len())));
        // 28 tuples: two full intervals and a partial one of 8.
        assert_eq!(ends.len(), 3);
        assert_eq!((ends[0].0, ends[0].1), (0, 10));
        assert_eq!((ends[2].0, ends[2].1), (2, 8));
        assert_eq!(ends[0].2, 2, "0 holds 6 and 1 holds 4 of the first 10");
    }

    /// An unordered driver hands over the same candidates as an ordered one, and an
    /// ordered one hands them over in the contract's order, for every model.
    #[test]
    fn unordered_candidates_are_the_ordered_ones() {
        let stream = crate::synth::zipf_stream(20_000, 300, 1.0, 7);
        let mut edges = crate::synth::program_edges(20_000, 12, 30, 3);
        edges.extend_from_slice(&stream);
        for model in crate::spec::MODEL_NAMES {
            let kinds = if *model == "conte" { ",kinds=edge" } else { "" };
            let spec = parse_spec(&format!("{model}:interval=700,threshold=2%{kinds}")).unwrap();
            let stream: Vec<Tuple> = edges
                .iter()
                .copied()
                .filter(|t| spec.kinds.contains(t.kind))
                .collect();
            let mut ordered = IntervalDriver::new(&spec);
            let mut unordered = IntervalDriver::new(&spec).unordered();
            let (mut a, mut b) = (Vec::new(), Vec::new());
            for batch in stream.chunks(333) {
                ordered.observe_batch(batch, |e| a.push(e.candidates.to_vec()));
                unordered.observe_batch(batch, |e| b.push(e.candidates.to_vec()));
            }
            assert_eq!(a.len(), b.len(), "{model}");
            assert!(
                a.iter().any(|c| c.len() > 1),
                "{model}: no interval to order"
            );
            for (a, mut b) in a.into_iter().zip(b) {
                let mut sorted = a.clone();
                sort_candidates(&mut sorted);
                assert_eq!(a, sorted, "{model}: the contract's order");
                sort_candidates(&mut b);
                assert_eq!(a, b, "{model}");
            }
        }
    }

    #[test]
    fn per_kind_lanes_count_their_own_kind() {
        let spec = parse_spec("perfect:interval=3").unwrap();
        let mut d =
            IntervalDriver::per_kind(&[(Kind::Value, spec.clone()), (Kind::Edge, spec)]).unwrap();
        let batch = [
            Tuple::value(1, 1),
            Tuple::edge(1, 2),
            Tuple::value(1, 1),
            Tuple::call(1, 1),
            Tuple::value(2, 2),
        ];
        let mut ends = Vec::new();
        d.observe_batch(&batch, |e| ends.push((e.lane, e.tuples)));
        assert_eq!(ends, vec![(0, 3)]);
        d.finish(|e| ends.push((e.lane, e.tuples)));
        assert_eq!(ends, vec![(0, 3), (1, 1)]);
    }

    #[test]
    fn per_kind_refuses_unsupported_kinds() {
        let conte = parse_spec("conte").unwrap();
        assert!(IntervalDriver::per_kind(&[(Kind::Value, conte)]).is_err());
    }
}
