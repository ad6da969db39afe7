//! Model conformance: `toyvm verify`'s two-pass verification of a profiler
//! model (IPCOM000235487D, "Verification method for hardware based
//! profiling").  Not the bytecode verifier, which is `toyvm_vm::verify`.
//!
//! **Pass 1** runs the program with the perfect profiler and records, per
//! interval, every tuple whose exact count reaches `(1 - margin) * T` (T the
//! candidate threshold) and the interval's events per kind: the perfect table
//! and the threshold entries. For a RAP spec it also records the exact counts
//! of the key ranges that RAP's hot-range rule can concern (below). From the
//! reference follow what a correct model must do in each interval:
//! - entries at or above `(1 + margin) * T` are *expected*: a correct model
//!   reports them (the disclosure's entries "statistically probable to be
//!   highlighted"), unless the model's own error bound says it may not;
//! - entries between the two bounds are *neutral*: reporting them or not is
//!   both fine;
//! - anything else a model reports is a *false positive*.
//!
//! **Pass 2** runs the model under test on the same program (same interval
//! length, threshold and kinds) and checks four criteria (five for RAP). The
//! disclosure decides over many interrupts "to prevent outliers from causing
//! false fails"; likewise each criterion passes when at least `quorum` of the
//! intervals that have something to check conform:
//! 1. *hot entries found*: the interval's expected entries are all reported;
//! 2. *counts within tolerance*: every checked reported count is;
//! 3. *no systematic false positives*: see below per model;
//! 4. (RAP) *hot ranges*: the model's hot ranges agree with the exact counts
//!    of the same ranges;
//! 5. *overhead within budget*: the disclosure's effectiveness criterion
//!    (the hardware used "only when benefits would be provided"): the
//!    interval's modeled software cost is at most
//!    [`OVERHEAD_CYCLES_PER_EVENT`] cycles per profiled event.
//!
//! **With the JIT on** ([`check_jit`], `toyvm verify --jit`) a saved
//! reference is reused against a run where the model drives the JIT: only
//! the output and "every report was hot without the JIT" are checked, since
//! compiled code hides the events the other criteria are judged on.
//!
//! # What each model is held to
//!
//! **Counting models** (multihash, perfect, ...): a reported count must lie
//! within `tolerance * count` of the exact count, and an interval conforms to
//! criterion 3 only if it reports no tuple below the low bound at all.
//!
//! **Sampling models** (stratified, 1 in r): an estimate is `r * s` with `s`
//! about `Binomial(c, 1/r)` for an exact count c, so it is held to that
//! distribution instead of a fixed tolerance: an estimate may be off by r
//! (periodic quantization) plus three standard deviations, `3 sqrt(c (r - 1))`;
//! and only entries of at least 2r occurrences are expected, since a 1-in-r
//! sampler cannot promise to see fewer. With r above T (the default r = 256
//! against T = 100) a single sample of a cold tuple already reaches the
//! threshold: such reports are the sampler's expected noise, not a fault, so
//! criterion 3 counts a false positive against the model only where that
//! noise cannot explain it. An interval conforms when (a) every tuple it
//! reports below the low bound has an estimate the binomial of a count below
//! the low bound allows, and (b) their number is at most what the cold events
//! can produce: the interval's events outside the reference entries, divided
//! by r, is the expected number of samples that land on cold tuples (each
//! sample reports at most one new tuple); the bound is that mean plus three
//! standard deviations (Poisson) plus one.
//!
//! **RAP** (004) is deterministic and held to the paper's guarantee instead
//! of a tolerance: an estimate never exceeds the true count and falls short
//! by at most `E = max(h, eps * n)` events, n the events in the kind's tree
//! (since the start for the default cumulative tree, `reset=off`; in the
//! interval with `reset=on`) and h = log_b(2^128) its height (the trie's
//! split threshold is floored at one event, see `toyvm_profiler::rap`). A
//! point's missing events sit in its at most h ancestors, each holding at
//! most `max(1, eps * n / h)`. Its per-interval point reports (the growth of
//! a point's count over the interval) inherit the bound, so: a reported count
//! above the exact count, or short by more than E, is a violation, for every
//! reported tuple of the reference; an entry is expected only when its exact
//! count reaches `T + E` (so it must reach T even after the worst shortfall),
//! and a report below the low bound is a false positive (a correct RAP can
//! make none, since it never over-counts). With the cumulative tree E grows
//! with the stream and soon exceeds any interval's counts; the point checks
//! then have little left to expect, and criterion 4 carries the check.
//! RAP's real output is its hot ranges (section 5.1: a range is hot iff its
//! count plus its non-hot subranges' reaches `hot * n`), and they are checked
//! against the perfect counts aggregated over the same range, for every
//! interval, from what pass 1 saved: every key prefix (at bit granularity, in
//! the tree's key layout) whose exact count reaches `hot * n`. An interval
//! conforms when every range RAP calls hot has an exact count of at least
//! `hot * n` ("if RAP identifies a node as hot, then that node is guaranteed
//! to be hot"), its estimate is at most the exact count and short by at most
//! E, and every such heavy prefix is nested with (inside or around) some
//! reported hot range: all of a prefix's events sit in tree nodes nested with
//! it, so if none of those were hot their weights would all reach the root,
//! which would then be hot.
//!
//! The reference is saved as JSON and can be reused for later pass-2 runs of
//! the same program, arguments and input (it names them, and a reuse for
//! another run is refused: see [`Reference`] and `docs/verify-reference.md`);
//! a RAP check needs one recorded with the same `dims`, `hot` and `reset`.

use std::fmt::Write as _;

use serde::Serialize;
use toyvm_profiler::guarantee::RangeBound;
use toyvm_profiler::{Candidate, HotRange, IntervalDriver, IntervalEnd, Kind, ProfilerSpec, Tuple};
use toyvm_vm::interp::{self, Config, Input};
use toyvm_vm::{Program, TupleSink};

mod criteria;
mod record;
mod reference;
mod verdict;

pub use criteria::{OVERHEAD_CYCLES_PER_EVENT, check, check_jit};
pub use record::record_reference;
pub use verdict::{Criterion, VERDICT_JSON_FORMAT, Verdict};

pub use reference::{
    Entry, FORMAT, Fingerprint, GivenTolerances, MAX_REFERENCE_BYTES, RangeCount, RangeSetup,
    RefInterval, Reference, Tolerances, load, read_file, reuse, save,
};

/// Feeds the program's tuple stream to an interval driver (the runtime's
/// host without a JIT) and hands every ended interval to `on_interval`.
struct DriverSink<F> {
    driver: IntervalDriver,
    on_interval: F,
}

impl<F: FnMut(IntervalEnd<'_>)> TupleSink for DriverSink<F> {
    fn accept(&mut self, batch: &[toyvm_vm::Tuple]) {
        self.driver.observe_batch(batch, &mut self.on_interval);
    }
}

/// Runs `program` interpreted only (compiled code emits no tuples) with
/// `spec`'s model and calls `on_interval` at every interval end, the final
/// partial one included.
fn drive(
    program: &Program,
    args: &[i64],
    input: &[u8],
    spec: &ProfilerSpec,
    on_interval: impl FnMut(IntervalEnd<'_>),
) -> crate::Result<()> {
    // Linked before it runs, as every command does: no host offers imports.
    toyvm::runtime::no_imports(program)?;
    let cfg = Config {
        kinds: spec.kinds,
        ..Config::default()
    };
    let mut sink = DriverSink {
        driver: IntervalDriver::new(spec),
        on_interval,
    };
    interp::run_with_sink(
        program,
        Input { args, file: input },
        &mut std::io::sink(),
        &mut sink,
        &cfg,
    )?;
    sink.driver.finish(&mut sink.on_interval);
    Ok(())
}
