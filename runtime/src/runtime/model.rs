//! The model side of a run: the interval driver and its profiler model,
//! fed the interpreter's tuple batches on whichever thread runs them (see
//! [`super::link`]).
//!
//! The papers' profilers are hardware beside the pipeline: paper 000 gathers
//! its tuples "as instructions flow down the pipeline" (section 2) and cuts
//! them into intervals of a fixed count of tuples (section 5.1). Here the
//! model is software; running it on a thread of its own is the closest a
//! simulator comes to that, and counting intervals in tuples is what keeps
//! the run deterministic when it does.

use std::time::{Duration, Instant};

use toyvm_profiler::contract::sort_candidates;
use toyvm_profiler::{Candidate, IntervalDriver, ProfilerSpec};
use toyvm_vm::Tuple;

use super::IntervalCandidates;

/// One interval end as the model side reports it.
#[derive(Debug)]
pub struct Ending<'a> {
    /// 0-based interval number.
    pub index: u64,
    /// Where the interval ended: tuples handed to the model up to and
    /// including its last one.
    pub at: u64,
    /// The interval's hot candidates, as the model reported them.
    pub candidates: &'a [Candidate],
}

/// What the model side saw over a run.
#[derive(Debug, Default)]
pub(crate) struct ModelSummary {
    /// Tuples observed (every kind the spec profiles, exit tuples included).
    pub tuples: u64,
    /// Time inside the driver and the model.
    pub time: Duration,
    pub intervals: u64,
    pub candidates: u64,
    pub kept: Vec<IntervalCandidates>,
    pub state_bytes: u64,
    pub messages: u64,
    pub cycles: u64,
}

/// What a link drives: something that observes batches and reports the
/// interval ends in them (the real model; `compare`'s error pass, which
/// runs every spec over the stream and reports no ends; in tests one that
/// misbehaves).
///
/// Contract:
/// 1. `feed` is called with the batches in the order the interpreter
///    produced them, and calls `ended` for every interval that ended inside
///    the batch, in order, with strictly increasing `at`.
/// 2. `finish` is called once, after the last batch; it ends the final
///    partial interval (which is counted but never acted on).
pub trait ModelSide {
    /// What the side reports once the stream has ended.
    type Summary: Send;
    /// Observes one batch, calling `ended` for each interval that ended in
    /// it (contract 1).
    fn feed(&mut self, batch: &[Tuple], ended: &mut dyn FnMut(Ending<'_>));
    /// Ends the stream and returns the summary (contract 2).
    fn finish(self) -> Self::Summary;
    /// The tuples the side observed, as its summary counts them.
    fn observed(summary: &Self::Summary) -> u64;
}

/// The model side of a run or an instance: the interval driver over one
/// spec, with the run's bookkeeping (named apart from
/// `toyvm_profiler::spec::Model`, the kind of model a spec names).
#[derive(Debug)]
pub(crate) struct RunModel {
    driver: IntervalDriver,
    /// Tuples observed so far; also the end of the last interval that
    /// ended (the driver has one lane, so intervals tile the stream).
    seen: u64,
    ended_at: u64,
    summary: ModelSummary,
    keep: bool,
}

impl RunModel {
    pub fn new(spec: &ProfilerSpec, keep: bool) -> Self {
        RunModel {
            // The JIT orders candidates by tuple itself, and a run that keeps
            // them for printing sorts its copy: no sort per interval end here.
            driver: IntervalDriver::new(spec).unordered(),
            seen: 0,
            ended_at: 0,
            summary: ModelSummary::default(),
            keep,
        }
    }

    fn count(summary: &mut ModelSummary, keep: bool, index: u64, candidates: &[Candidate]) {
        summary.intervals += 1;
        summary.candidates += candidates.len() as u64;
        if keep {
            let mut candidates = candidates.to_vec();
            sort_candidates(&mut candidates);
            summary.kept.push(IntervalCandidates { index, candidates });
        }
    }
}

impl ModelSide for RunModel {
    type Summary = ModelSummary;

    fn observed(summary: &ModelSummary) -> u64 {
        summary.tuples
    }

    fn feed(&mut self, batch: &[Tuple], ended: &mut dyn FnMut(Ending<'_>)) {
        let start = Instant::now();
        let RunModel {
            driver,
            seen,
            ended_at,
            summary,
            keep,
        } = self;
        *seen += batch.len() as u64;
        driver.observe_batch(batch, |end| {
            *ended_at += end.tuples;
            Self::count(summary, *keep, end.index, end.candidates);
            ended(Ending {
                index: end.index,
                at: *ended_at,
                candidates: end.candidates,
            });
        });
        summary.time += start.elapsed();
    }

    fn finish(mut self) -> ModelSummary {
        let start = Instant::now();
        let RunModel {
            driver,
            summary,
            keep,
            seen,
            ..
        } = &mut self;
        driver.finish(|end| Self::count(summary, *keep, end.index, end.candidates));
        if let Some(model) = driver.models().next() {
            summary.state_bytes = model.state_bytes() as u64;
            let o = model.overhead();
            summary.messages = o.messages;
            summary.cycles = o.cycles;
        }
        summary.tuples = *seen;
        summary.time += start.elapsed();
        self.summary
    }
}
