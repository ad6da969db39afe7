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

mod reference;

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

/// The key range of a `bits`-bit prefix.
fn prefix_range(p: u128, bits: u32) -> (u128, u128) {
    if bits == 0 {
        return (0, u128::MAX);
    }
    let lo = p << (128 - bits);
    (lo, lo | u128::MAX.checked_shr(bits).unwrap_or(0))
}

/// The prefix chains of `table` (sorted by key, with prefix sums `sums`)
/// whose count reaches `cut`, at bit granularity.
fn heavy_prefixes(kind: Kind, table: &[(u128, u64)], sums: &[u64], cut: f64) -> Vec<RangeCount> {
    let sum = |p: u128, bits: u32| {
        let (lo, hi) = prefix_range(p, bits);
        let i = table.partition_point(|e| e.0 < lo);
        let j = table.partition_point(|e| e.0 <= hi);
        sums[j] - sums[i]
    };
    let heavy = |c: u64| c > 0 && c as f64 >= cut;
    let mut out = Vec::new();
    let total = sums.last().copied().unwrap_or(0);
    let mut stack = if heavy(total) {
        vec![(0u128, 0u32, total)]
    } else {
        Vec::new()
    };
    while let Some((mut p, mut bits, count)) = stack.pop() {
        let top = bits;
        loop {
            let mut next = Vec::new();
            if bits < 128 {
                let c0 = sum(p << 1, bits + 1);
                for (child, c) in [(p << 1, c0), ((p << 1) | 1, count - c0)] {
                    if heavy(c) {
                        next.push((child, bits + 1, c));
                    }
                }
            }
            if next.len() == 1 && next[0].2 == count {
                (p, bits) = (next[0].0, next[0].1);
                continue;
            }
            out.push(RangeCount {
                kind,
                hi: (p >> 64) as u64,
                lo: p as u64,
                bits,
                top,
                count,
            });
            stack.extend(next);
            break;
        }
    }
    out
}

/// Merges the sorted `add` into the sorted `acc`, summing equal keys.
fn merge_into(acc: &mut Vec<(u128, u64)>, add: &[(u128, u64)]) {
    let old = std::mem::take(acc);
    acc.reserve(old.len() + add.len());
    let (mut i, mut j) = (0, 0);
    while i < old.len() || j < add.len() {
        if j == add.len() || (i < old.len() && old[i].0 < add[j].0) {
            acc.push(old[i]);
            i += 1;
        } else if i == old.len() || add[j].0 < old[i].0 {
            acc.push(add[j]);
            j += 1;
        } else {
            acc.push((old[i].0, old[i].1 + add[j].1));
            i += 1;
            j += 1;
        }
    }
}

/// Pass 1: runs `program` under the perfect profiler with `spec`'s interval,
/// threshold and kinds (and, for RAP, its key layout, hot fraction and tree
/// lifetime for the range counts).
pub fn record_reference(
    program: &Program,
    name: &str,
    args: &[i64],
    input: &[u8],
    spec: &ProfilerSpec,
    tolerances: Tolerances,
) -> crate::Result<Reference> {
    tolerances.validate()?;
    let oracle = spec.oracle();
    let threshold = oracle.threshold_count();
    let low = (threshold as f64 * (1.0 - tolerances.margin))
        .floor()
        .max(1.0) as u64;
    // Ask the oracle for every tuple: the low-bound entries are kept, the
    // rest counts towards the events per kind and the range counts.
    let mut all_spec = oracle.clone();
    all_spec.threshold = 1.0 / oracle.interval as f64;
    let guarantee = spec.guarantee();
    let ranges = guarantee.range_bound().map(|o| RangeSetup {
        dims: o.dims,
        hot: o.hot,
        reset: o.reset,
    });
    // Per kind: the cumulative table (key-sorted) and its events.
    let mut cumulative: [Vec<(u128, u64)>; 3] = Default::default();
    let mut cumulative_events = [0u64; 3];
    let mut intervals = Vec::new();
    drive(program, args, input, &all_spec, |end| {
        let mut events = [0u64; 3];
        for c in end.candidates {
            events[c.tuple.kind as usize] += c.count;
        }
        let mut range_counts = Vec::new();
        if let Some(setup) = ranges {
            for kind in Kind::ALL {
                let k = kind as usize;
                let mut table: Vec<(u128, u64)> = end
                    .candidates
                    .iter()
                    .filter(|c| c.tuple.kind == kind)
                    .map(|c| (toyvm_profiler::rap::key_of(&c.tuple, setup.dims), c.count))
                    .collect();
                table.sort_unstable_by_key(|e| e.0);
                let n = if setup.reset {
                    events[k]
                } else {
                    merge_into(&mut cumulative[k], &table);
                    table = std::mem::take(&mut cumulative[k]);
                    cumulative_events[k] += events[k];
                    cumulative_events[k]
                };
                let mut sums = Vec::with_capacity(table.len() + 1);
                sums.push(0u64);
                for e in &table {
                    sums.push(sums.last().unwrap() + e.1);
                }
                range_counts.extend(heavy_prefixes(kind, &table, &sums, setup.hot * n as f64));
                if !setup.reset {
                    cumulative[k] = table;
                }
            }
        }
        intervals.push(RefInterval {
            index: end.index,
            entries: end
                .candidates
                .iter()
                .filter(|c| c.count >= low)
                .map(|c| Entry {
                    kind: c.tuple.kind,
                    a: c.tuple.a,
                    b: c.tuple.b,
                    count: c.count,
                })
                .collect(),
            events,
            ranges: range_counts,
        });
    })?;
    Ok(Reference {
        format: FORMAT,
        toyvm_version: env!("CARGO_PKG_VERSION").to_owned(),
        program: name.to_owned(),
        program_hash: Fingerprint::of(&program.to_bytes()),
        args: args.to_vec(),
        input_hash: (!input.is_empty()).then(|| Fingerprint::of(input)),
        oracle: oracle.to_string(),
        interval: oracle.interval,
        threshold,
        tolerances,
        ranges,
        intervals,
    })
}

/// The outcome of one criterion.
#[derive(Clone, Debug, Serialize)]
pub struct Criterion {
    /// What is checked, as the verdict prints it (`hot entries found`,
    /// `counts within tolerance`, ...; see the module doc's list).
    pub name: &'static str,
    /// Whether at least the quorum of the checked intervals conformed
    /// (vacuously true when none had anything to check).
    pub passed: bool,
    /// Intervals that had something to check.
    pub checked: u64,
    /// Of those, the intervals that conformed.
    pub conforming: u64,
    /// The worst violations, as readable lines.
    pub evidence: Vec<String>,
}

/// The verdict of pass 2.
#[derive(Clone, Debug, Serialize)]
pub struct Verdict {
    /// The canonical spec of the model under test (followed by `(JIT on)`
    /// for [`check_jit`]).
    pub spec: String,
    /// Intervals judged: the reference's (pass 2), or those of the JIT run
    /// ([`check_jit`]).
    pub intervals: u64,
    /// The tolerances the criteria were judged with.
    pub tolerances: Tolerances,
    /// Remarks on how the check was set up (e.g. tolerances given on the
    /// command line in place of the reference's).
    pub notes: Vec<String>,
    /// The criteria in the module doc's order (hot ranges only for RAP;
    /// output and reports-were-hot for [`check_jit`]).
    pub criteria: Vec<Criterion>,
}

impl Verdict {
    /// Whether the model passes: every criterion passed.
    pub fn passed(&self) -> bool {
        self.criteria.iter().all(|c| c.passed)
    }

    /// The verdict as `toyvm verify` prints it: the setup, one `PASS` or
    /// `FAIL` line per criterion followed by its evidence (at most five
    /// violations), then the overall `PASS` or `FAIL`.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "verify {} over {} intervals", self.spec, self.intervals);
        let t = &self.tolerances;
        let _ = writeln!(
            s,
            "  margin {}, tolerance {}, quorum {}",
            t.margin, t.tolerance, t.quorum
        );
        for n in &self.notes {
            let _ = writeln!(s, "  note: {n}");
        }
        for c in &self.criteria {
            let _ = writeln!(
                s,
                "  {} {:<28} {}/{} intervals conform",
                if c.passed { "PASS" } else { "FAIL" },
                c.name,
                c.conforming,
                c.checked
            );
            for e in &c.evidence {
                let _ = writeln!(s, "       {e}");
            }
        }
        let _ = writeln!(s, "{}", if self.passed() { "PASS" } else { "FAIL" });
        s
    }
}

/// A tuple as every command prints one: `E f0:7 f0:2`.
fn show(t: &Tuple) -> String {
    t.to_string()
}

/// A RAP box, its corners printed as tuples are: `E [f0:4..f0:9 x f0:2]`.
fn show_range(kind: Kind, p: u128, bits: u32, dims: u32) -> String {
    let (a_lo, a_hi, b_lo, b_hi) = toyvm_profiler::rap::box_of(p, bits, dims);
    let lo = Tuple::new(kind, a_lo, b_lo);
    let hi = Tuple::new(kind, a_hi, b_hi);
    let part = |lo: String, hi: String| {
        if lo == hi { lo } else { format!("{lo}..{hi}") }
    };
    let pc = |a| toyvm_vm::Pc(a).to_string();
    format!(
        "{} [{} x {}]",
        lo.kind.letter(),
        part(pc(lo.a), pc(hi.a)),
        part(lo.second().to_string(), hi.second().to_string())
    )
}

/// A hot range as a prefix of the tree key: `(prefix, bits)`.
fn range_prefix(r: &HotRange, dims: u32) -> (u128, u32) {
    let lo = toyvm_profiler::rap::key_of(&Tuple::new(r.kind, r.a_lo, r.b_lo), dims);
    let hi = toyvm_profiler::rap::key_of(&Tuple::new(r.kind, r.a_hi, r.b_hi), dims);
    let bits = (hi - lo).leading_zeros();
    (lo.checked_shr(128 - bits).unwrap_or(0), bits)
}

/// Whether two prefixes are nested (one range holds the other).
fn nested(p: u128, bits: u32, q: u128, qbits: u32) -> bool {
    if bits <= qbits {
        q.checked_shr(qbits - bits).unwrap_or(0) == p
    } else {
        p.checked_shr(bits - qbits).unwrap_or(0) == q
    }
}

/// What pass 2 keeps of one model interval.
struct ModelInterval {
    candidates: Vec<Candidate>,
    ranges: Vec<HotRange>,
    /// Modeled software cycles (messages at their cost) spent in the
    /// interval, and its events.
    cycles: u64,
    messages: u64,
    events: u64,
}

/// The effectiveness criterion's budget (IPCOM000235487D: the hardware is
/// to be used "only when benefits would be provided"): the modeled software
/// cost of an interval, its messages at 30 cycles each (paper 001's
/// handler), may be at most this many cycles per profiled event. One cycle
/// per event is one message per 30 events; at one event per two to four
/// instructions that is a third to a half of the program's own time, beyond
/// anything an optimization the profile drives could win back. Paper 001's
/// stratified sampler runs at well under a tenth of it.
pub const OVERHEAD_CYCLES_PER_EVENT: f64 = 1.0;

/// An error unless the reference was recorded with `spec`'s interval,
/// threshold and kinds.
fn ensure_matches(spec: &ProfilerSpec, reference: &Reference) -> crate::Result<()> {
    let oracle = spec.oracle();
    if oracle.interval != reference.interval
        || oracle.threshold_count() != reference.threshold
        || oracle.kinds != parse_kinds_of(&reference.oracle)?
    {
        return Err(crate::Error::Usage(format!(
            "the reference was recorded for `{}`; `{spec}` uses a different interval, threshold or kinds",
            reference.oracle
        )));
    }
    Ok(())
}

/// Pass 2: runs the model and checks it against the reference.
///
/// An error, not a verdict, when the reference was recorded for another
/// program or input ([`Reference::ensure_recorded_for`]; the run uses the
/// reference's arguments), for another interval, threshold or kinds, or
/// when the run does not produce the intervals and events it holds.
pub fn check(
    program: &Program,
    input: &[u8],
    spec: &ProfilerSpec,
    reference: &Reference,
) -> crate::Result<Verdict> {
    reference.ensure_recorded_for(program, &reference.args, input)?;
    ensure_matches(spec, reference)?;
    let guarantee = spec.guarantee();
    let rap = guarantee.range_bound();
    if let Some(o) = rap {
        let want = RangeSetup {
            dims: o.dims,
            hot: o.hot,
            reset: o.reset,
        };
        if reference.ranges != Some(want) {
            return Err(crate::Error::Usage(format!(
                "the reference holds no range counts for dims={},hot={},reset={}; record one with `{spec}`",
                o.dims,
                o.hot,
                if o.reset { "on" } else { "off" }
            )));
        }
    }
    // The model's reports, interval for interval, on the stream pass 1 saw.
    let mut report = Vec::new();
    let mut stream_agrees = true;
    let mut spent = toyvm_profiler::Overhead::default();
    drive(program, &reference.args, input, spec, |end| {
        let now = end.model.overhead();
        let (cycles, messages) = (now.cycles - spent.cycles, now.messages - spent.messages);
        spent = now;
        // The same run feeds the same stream: interval for interval, the
        // events pass 1 counted.
        stream_agrees &= reference
            .intervals
            .get(end.index as usize)
            .is_some_and(|r| r.events.iter().sum::<u64>() == end.tuples);
        report.push(ModelInterval {
            candidates: end.candidates.to_vec(),
            ranges: if rap.is_some() {
                end.model.hot_ranges()
            } else {
                Vec::new()
            },
            cycles,
            messages,
            events: end.tuples,
        });
    })?;
    if !stream_agrees || report.len() != reference.intervals.len() {
        return Err(crate::Error::Usage(format!(
            "the reference does not match the run it names: it holds {} intervals and their \
             events, the run makes {} intervals with other events; record a new one",
            reference.intervals.len(),
            report.len()
        )));
    }
    let tol = reference.tolerances;
    let period = guarantee.period();
    let low = reference.low_bound();
    let allowed = |exact: u64| -> f64 {
        let c = exact as f64;
        let r = period as f64;
        let sampling = if period > 1 {
            r + 3.0 * (c * (r - 1.0)).sqrt()
        } else {
            0.0
        };
        (tol.tolerance * c).max(sampling)
    };
    // RAP's error bound per kind: max(h, eps * n), n the tree's events.
    let mut tree_events = [0u64; 3];
    let mut crit = [
        ("hot entries found", 0u64, 0u64, Vec::<(f64, String)>::new()),
        ("counts within tolerance", 0, 0, Vec::new()),
        ("no systematic false positives", 0, 0, Vec::new()),
        ("hot ranges", 0, 0, Vec::new()),
        ("overhead within budget", 0, 0, Vec::new()),
    ];
    let empty = RefInterval {
        index: 0,
        entries: Vec::new(),
        events: [0; 3],
        ranges: Vec::new(),
    };
    let intervals = reference.intervals.len().max(report.len());
    for i in 0..intervals {
        let refi = reference.intervals.get(i).unwrap_or(&empty);
        let reference_entries = &refi.entries;
        let (reported, hot): (&[Candidate], &[HotRange]) = report
            .get(i)
            .map_or((&[], &[]), |r| (&r.candidates, &r.ranges));
        let exact = |t: &Tuple| {
            reference_entries
                .iter()
                .find(|e| e.tuple() == *t)
                .map(|e| e.count)
        };
        let found = |t: &Tuple| reported.iter().find(|c| c.tuple == *t).map(|c| c.count);
        let reset = rap.is_some_and(|o| o.reset);
        for (n, added) in tree_events.iter_mut().zip(refi.events) {
            *n = if reset { added } else { *n + added };
        }
        let rap_error =
            |kind: Kind| -> f64 { rap.map_or(0.0, |o| o.error(tree_events[kind as usize])) };
        let expected_bound = |kind: Kind| -> f64 {
            let base = reference.expected_bound() as f64;
            if rap.is_some() {
                base.max(reference.threshold as f64 + rap_error(kind))
            } else {
                base.max(2.0 * period as f64)
            }
        };

        let expected: Vec<&Entry> = reference_entries
            .iter()
            .filter(|e| e.count as f64 >= expected_bound(e.kind))
            .collect();
        if !expected.is_empty() {
            let missing: Vec<&&Entry> = expected
                .iter()
                .filter(|e| found(&e.tuple()).is_none())
                .collect();
            crit[0].1 += 1;
            if missing.is_empty() {
                crit[0].2 += 1;
            } else {
                let worst = missing.iter().map(|e| e.count).max().unwrap_or(0);
                crit[0].3.push((
                    worst as f64,
                    format!(
                        "interval {i}: {} of {} expected entries missing, e.g. {} (exact count {worst})",
                        missing.len(),
                        expected.len(),
                        show(&missing[0].tuple())
                    ),
                ));
            }
        }
        // Counts: the expected entries reported; for RAP, whose bound holds
        // for every tuple, every reported entry of the reference.
        let counted: Vec<&Entry> = if rap.is_some() {
            reference_entries.iter().collect()
        } else {
            expected.clone()
        };
        let mut worst: Option<(f64, Tuple, u64, u64, f64)> = None;
        let mut any = false;
        for e in &counted {
            if let Some(est) = found(&e.tuple()) {
                any = true;
                let diff = est as f64 - e.count as f64;
                let (bad, limit) = if rap.is_some() {
                    let limit = rap_error(e.kind);
                    (diff > 0.0 || -diff > limit, limit)
                } else {
                    let limit = allowed(e.count);
                    (diff.abs() > limit, limit)
                };
                let err = diff.abs() / e.count as f64;
                if bad && worst.is_none_or(|w| err > w.0) {
                    worst = Some((err, e.tuple(), e.count, est, limit));
                }
            }
        }
        if any {
            crit[1].1 += 1;
            match worst {
                None => crit[1].2 += 1,
                Some((err, t, exact, est, limit)) => crit[1].3.push((
                    err,
                    format!(
                        "interval {i}: {} estimated {est}, exact {exact} ({:+.1}%; {})",
                        show(&t),
                        (est as f64 - exact as f64) * 100.0 / exact as f64,
                        if rap.is_some() {
                            format!("RAP allows 0 over and {limit:.0} under")
                        } else {
                            format!("allowed +-{limit:.0}")
                        }
                    ),
                )),
            }
        }
        if !reported.is_empty() {
            crit[2].1 += 1;
            let fps: Vec<&Candidate> = reported
                .iter()
                .filter(|c| exact(&c.tuple).is_none_or(|n| n < low))
                .collect();
            let violation = if period > 1 {
                // A sampler's cold reports are expected noise: only estimates
                // no count below the low bound explains, or more reports than
                // the cold events' samples can make, are systematic.
                let c_hi = low - 1;
                let implausible: Vec<&&Candidate> = fps
                    .iter()
                    .filter(|c| c.count as f64 - c_hi as f64 > allowed(c_hi))
                    .collect();
                let hot_events: u64 = reference_entries.iter().map(|e| e.count).sum();
                let cold = refi.events.iter().sum::<u64>().saturating_sub(hot_events);
                let mu = cold as f64 / period as f64;
                let most = mu + 3.0 * mu.sqrt() + 1.0;
                if let Some(c) = implausible.first() {
                    Some((
                        implausible.len() as f64,
                        format!(
                            "interval {i}: {} false positives beyond sampling noise, e.g. {} reported {} times (exact count below {low}; a 1-in-{period} sampler allows at most {:.0})",
                            implausible.len(),
                            show(&c.tuple),
                            c.count,
                            c_hi as f64 + allowed(c_hi)
                        ),
                    ))
                } else if fps.len() as f64 > most {
                    Some((
                        fps.len() as f64,
                        format!(
                            "interval {i}: {} false positives, e.g. {} reported {} times (exact count below {low}); {cold} cold events sampled 1 in {period} explain at most {most:.0}",
                            fps.len(),
                            show(&fps[0].tuple),
                            fps[0].count
                        ),
                    ))
                } else {
                    None
                }
            } else {
                fps.first().map(|c| {
                    (
                        fps.len() as f64,
                        format!(
                            "interval {i}: {} false positives, e.g. {} reported {} times (exact count below {low})",
                            fps.len(),
                            show(&c.tuple),
                            c.count
                        ),
                    )
                })
            };
            match violation {
                None => crit[2].2 += 1,
                Some(v) => crit[2].3.push(v),
            }
        }
        if let Some(o) = rap {
            check_ranges(i, o, refi, hot, &tree_events, &mut crit[3]);
        }
        if let Some(m) = report.get(i).filter(|m| m.events > 0) {
            let c = &mut crit[4];
            c.1 += 1;
            let budget = OVERHEAD_CYCLES_PER_EVENT * m.events as f64;
            if m.cycles as f64 <= budget {
                c.2 += 1;
            } else {
                c.3.push((
                    m.cycles as f64 / m.events as f64,
                    format!(
                        "interval {i}: {} messages, {} cycles for {} events ({:.2} cycles per event; the budget is {OVERHEAD_CYCLES_PER_EVENT})",
                        m.messages,
                        m.cycles,
                        m.events,
                        m.cycles as f64 / m.events as f64
                    ),
                ));
            }
        }
    }
    let criteria = crit
        .into_iter()
        .filter(|c| rap.is_some() || c.0 != "hot ranges")
        .map(|(name, checked, conforming, mut ev)| {
            ev.sort_by(|a, b| b.0.total_cmp(&a.0));
            let passed = checked == 0 || conforming as f64 >= tol.quorum * checked as f64;
            let shown = ev.len().min(5);
            let mut evidence: Vec<String> = ev.iter().take(shown).map(|e| e.1.clone()).collect();
            if ev.len() > shown {
                evidence.push(format!("... and {} more intervals", ev.len() - shown));
            }
            Criterion {
                name,
                passed,
                checked,
                conforming,
                evidence,
            }
        })
        .collect();
    Ok(Verdict {
        spec: spec.to_string(),
        intervals: intervals as u64,
        tolerances: tol,
        notes: Vec::new(),
        criteria,
    })
}

/// Criterion 4 for one interval: RAP's hot ranges against the exact counts
/// of the same ranges.
fn check_ranges(
    i: usize,
    o: &RangeBound,
    refi: &RefInterval,
    hot: &[HotRange],
    tree_events: &[u64; 3],
    crit: &mut (&'static str, u64, u64, Vec<(f64, String)>),
) {
    if hot.is_empty() && refi.ranges.is_empty() {
        return;
    }
    crit.1 += 1;
    let dims = o.dims;
    let exact_of =
        |kind: Kind, p: u128, bits: u32| refi.ranges.iter().find_map(|r| r.count_of(kind, p, bits));
    // (severity, line) of the interval's worst violation.
    let mut bad: Option<(f64, String)> = None;
    let mut note = |sev: f64, line: String| {
        if bad.as_ref().is_none_or(|b| sev > b.0) {
            bad = Some((sev, line));
        }
    };
    for r in hot {
        let (p, bits) = range_prefix(r, dims);
        let n = tree_events[r.kind as usize];
        let cut = o.hot * n as f64;
        let error = o.error(n);
        let place = show_range(r.kind, p, bits, dims);
        match exact_of(r.kind, p, bits) {
            None => note(
                f64::INFINITY,
                format!(
                    "interval {i}: {place} reported hot (estimate {}) but its exact count is below hot*n = {cut:.0}",
                    r.count
                ),
            ),
            Some(exact) if r.count > exact || (exact - r.count) as f64 > error => note(
                r.count.abs_diff(exact) as f64 / exact as f64,
                format!(
                    "interval {i}: hot range {place} estimated {}, exact {exact} (RAP allows 0 over and {error:.0} under)",
                    r.count
                ),
            ),
            Some(_) => {}
        }
    }
    for rc in &refi.ranges {
        let p = rc.prefix();
        let covered = hot.iter().any(|r| {
            let (q, qbits) = range_prefix(r, dims);
            r.kind == rc.kind && nested(p, rc.bits, q, qbits)
        });
        if !covered {
            note(
                rc.count as f64,
                format!(
                    "interval {i}: {} holds {} events (>= hot*n) but no reported hot range covers it",
                    show_range(rc.kind, p, rc.bits, dims),
                    rc.count
                ),
            );
        }
    }
    match bad {
        None => crit.2 += 1,
        Some(v) => crit.3.push(v),
    }
}

fn parse_kinds_of(oracle: &str) -> crate::Result<toyvm_profiler::tuple::KindSet> {
    Ok(toyvm_profiler::parse_spec(oracle)?.kinds)
}

/// Pass 2 with the JIT on, against a reference recorded without it.
///
/// The model then drives the JIT, and compiled code emits no tuples of its
/// own (only what its exits report), so the stream the model sees is not
/// the reference's: intervals do not line up, and entries that run in
/// compiled code go unseen. What survives the change of stream is checked:
///
/// 1. *output*: the program prints and returns exactly what the
///    interpreter does (the interpreter is the oracle);
/// 2. *reports were hot*: in each interval, every entry the model reports
///    is one the reference saw at or above its low bound in some interval
///    (a model that invents hot entries fails, JIT or not). The quorum
///    applies as in [`check`].
///
/// Hot entries found and count accuracy are not checked: compiled code
/// hides the events they are judged on.
pub fn check_jit(
    program: &Program,
    input: &[u8],
    spec: &ProfilerSpec,
    reference: &Reference,
) -> crate::Result<Verdict> {
    reference.ensure_recorded_for(program, &reference.args, input)?;
    ensure_matches(spec, reference)?;
    let run = |profile: Option<ProfilerSpec>, jit: bool| {
        let mut out = Vec::new();
        let report = crate::Runtime::builder(program.clone())
            .profile(profile)
            .keep_candidates(true)
            .jit(jit.then(crate::runtime::JitOptions::default))
            .build()
            .run(
                Input {
                    args: &reference.args,
                    file: input,
                },
                &mut out,
            )?;
        Ok::<_, crate::Error>((out, report))
    };
    let (want, oracle_run) = run(None, false)?;
    let (got, report) = run(Some(spec.clone()), true)?;
    let same = want == got && oracle_run.outcome.value == report.outcome.value;
    let output = Criterion {
        name: "output as the interpreter's",
        passed: same,
        checked: 1,
        conforming: u64::from(same),
        evidence: if same {
            Vec::new()
        } else {
            vec![format!(
                "printed {} bytes and returned {}; the interpreter printed {} bytes and returned {}",
                got.len(),
                report.outcome.value,
                want.len(),
                oracle_run.outcome.value
            )]
        },
    };
    let hot: std::collections::HashSet<Tuple> = reference
        .intervals
        .iter()
        .flat_map(|i| i.entries.iter().map(Entry::tuple))
        .collect();
    let mut checked = 0;
    let mut conforming = 0;
    let mut evidence = Vec::new();
    for iv in &report.intervals {
        if iv.candidates.is_empty() {
            continue;
        }
        checked += 1;
        let cold: Vec<&Candidate> = iv
            .candidates
            .iter()
            .filter(|c| !hot.contains(&c.tuple))
            .collect();
        if cold.is_empty() {
            conforming += 1;
        } else if evidence.len() < 5 {
            evidence.push(format!(
                "interval {}: {} of {} reports never hot without the JIT, e.g. {} reported {} times",
                iv.index,
                cold.len(),
                iv.candidates.len(),
                show(&cold[0].tuple),
                cold[0].count
            ));
        }
    }
    let quorum = reference.tolerances.quorum;
    let reports = Criterion {
        name: "reports were hot without the JIT",
        passed: checked == 0 || conforming as f64 >= quorum * checked as f64,
        checked,
        conforming,
        evidence,
    };
    Ok(Verdict {
        spec: format!("{spec} (JIT on)"),
        intervals: report.intervals.len() as u64,
        tolerances: reference.tolerances,
        notes: Vec::new(),
        criteria: vec![output, reports],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heavy_prefixes_form_chains_with_exact_counts() {
        // Keys 0 (x6), 1 (x2), 2^127 (x2): total 10, cut 5.
        let table = [(0u128, 6u64), (1, 2), (1u128 << 127, 2)];
        let sums = [0, 6, 8, 10];
        let r = heavy_prefixes(Kind::Value, &table, &sums, 5.0);
        // Root (10), then the chain of prefixes of 0/1 holding 8 down to 127
        // bits, then the point 0 (6).
        assert_eq!(r.len(), 3, "{r:?}");
        let count = |p: u128, bits: u32| r.iter().find_map(|c| c.count_of(Kind::Value, p, bits));
        assert_eq!(count(0, 0), Some(10));
        assert_eq!(count(0, 1), Some(8));
        assert_eq!(count(0, 127), Some(8));
        assert_eq!(count(0, 128), Some(6));
        assert_eq!(count(1, 128), None);
        assert_eq!(count(1, 1), None);
    }

    #[test]
    fn hot_range_boxes_map_back_to_prefixes() {
        for dims in [1, 2] {
            for (p, bits) in [(0u128, 0u32), (0b10, 2), (12345, 40), (u128::MAX, 128)] {
                let (a_lo, a_hi, b_lo, b_hi) = toyvm_profiler::rap::box_of(p, bits, dims);
                let r = HotRange {
                    kind: Kind::Edge,
                    a_lo,
                    a_hi,
                    b_lo,
                    b_hi,
                    count: 0,
                    hot_weight: 0,
                };
                assert_eq!(range_prefix(&r, dims), (p, bits), "dims {dims}");
            }
        }
    }
}
