//! Runs models over a recorded stream against the perfect profiler and reports, per
//! model, its intervals (candidates and error E) and a run summary.  This is the library
//! half of `toyvm profile --trace FILE --profile SPEC[;SPEC...] [--json]`.
//!
//! Every model is paired with the oracle of its own interval length and kinds (models
//! with the same ones share one).  The summary holds the multi-hash paper's error split by
//! category, precision/recall/F1, the modeled state and overhead and, where they apply,
//! the stratified paper's invariance error (each kind per pc), Conte's arc-weight error
//! (edges; Table IV's two buckets at 10^4) and RAP's per-range error.  The run-level
//! estimates behind the invariance and arc-weight errors are the sums of each model's
//! full per-interval profiles ([`Profiler::end_interval_with`]: every estimate the model
//! holds, below the threshold too), as both papers define them on the profile, not on
//! the candidates a threshold lets through.  RAP's range
//! error compares each interval's hot ranges with that interval (`reset=on`) or, for the
//! default cumulative tree, the final hot ranges with the whole run, as 004 section 5.3
//! measures it.

use crate::contract::{Candidate, HotRange, Profiler};
use crate::error::Result;
use crate::hash::TupleMap;
use crate::metrics::{self, BucketError, ErrorSummary, IntervalError, InvarianceRules, RangeError};
use crate::perfect::Perfect;
use crate::spec::{Model, ProfilerSpec};
use crate::tuple::{Kind, KindSet, Tuple};
use serde::Serialize;
use std::fmt::Write as _;

/// A candidate as JSON shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CandidateOut {
    /// `value`, `edge` or `call`.
    pub kind: &'static str,
    /// The pc.
    pub a: u64,
    /// The value, target or callee.
    pub b: u64,
    /// Estimated count.
    pub count: u64,
}

impl From<&Candidate> for CandidateOut {
    fn from(c: &Candidate) -> Self {
        CandidateOut {
            kind: c.tuple.kind.word(),
            a: c.tuple.a,
            b: c.tuple.b,
            count: c.count,
        }
    }
}

/// One interval of one model.
#[derive(Clone, Debug, Serialize)]
pub struct IntervalOut {
    /// 0-based interval number.
    pub index: u64,
    /// Tuples in the interval.
    pub tuples: u64,
    /// The model's candidates.
    pub candidates: Vec<CandidateOut>,
    /// Formula 1 against the oracle.
    pub error: IntervalError,
    /// Hot ranges (RAP only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ranges: Vec<HotRange>,
}

/// A model's run summary.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    /// Mean E and its parts over the intervals, precision, recall, F1 and
    /// the number of intervals (in the JSON, as fields of the summary).
    #[serde(flatten)]
    pub errors: ErrorSummary,
    /// Modeled state in bytes.
    pub state_bytes: usize,
    /// Messages to software.
    pub messages: u64,
    /// Modeled software cycles.
    pub cycles: u64,
    /// 001's invariance error over the profiled kinds (values per load, edges per
    /// branch, call targets per call site), when some tuple was selected.
    pub invariance_error: Option<f64>,
    /// 002's arc-weight error per block-weight bucket, when edges were profiled.
    pub arc_weight_error: Option<Vec<BucketError>>,
    /// 004's per-range error, for range models.
    pub range_error: Option<RangeError>,
}

/// One model's results.
#[derive(Clone, Debug, Serialize)]
pub struct ModelReport {
    /// The canonical spec string.
    pub spec: String,
    /// The model name.
    pub model: &'static str,
    /// Per-interval results.
    pub intervals: Vec<IntervalOut>,
    /// Run summary.
    pub summary: Summary,
}

/// The whole report.
#[derive(Clone, Debug, Serialize)]
pub struct ProfileReport {
    /// Tuples read from the stream.
    pub tuples: u64,
    /// One entry per spec, in the order given.
    pub models: Vec<ModelReport>,
}

struct Lane {
    spec: ProfilerSpec,
    model: Box<dyn Profiler>,
    threshold: u64,
    intervals: Vec<IntervalOut>,
    errors: ErrorSummary,
    estimates: TupleMap<u64>,
    range_err: (u64, f64, f64),
}

struct Group {
    interval: u64,
    kinds: KindSet,
    oracle: Perfect,
    seen: u64,
    index: u64,
    run_exact: TupleMap<u64>,
    lanes: Vec<Lane>,
    scratch: Vec<Tuple>,
}

impl Group {
    fn feed(&mut self, batch: &[Tuple]) {
        let mut scratch = std::mem::take(&mut self.scratch);
        let chunk: &[Tuple] = if self.kinds == KindSet::ALL {
            batch
        } else {
            scratch.clear();
            scratch.extend(batch.iter().filter(|t| self.kinds.contains(t.kind)));
            &scratch
        };
        let mut rest = chunk;
        while !rest.is_empty() {
            let room = (self.interval - self.seen).min(rest.len() as u64) as usize;
            let (now, later) = rest.split_at(room);
            self.oracle.observe_batch(now);
            for l in &mut self.lanes {
                l.model.observe_batch(now);
            }
            self.seen += room as u64;
            rest = later;
            if self.seen == self.interval {
                self.end();
            }
        }
        self.scratch = scratch;
    }

    fn end(&mut self) {
        let exact = self.oracle.end_interval_all();
        for (t, n) in &exact {
            *self.run_exact.entry(*t).or_insert(0) += n;
        }
        for l in &mut self.lanes {
            let run_estimates = &mut l.estimates;
            let cands = l.model.end_interval_with(&mut |t, n| {
                *run_estimates.entry(t).or_insert(0) += n;
            });
            let err = metrics::interval_error(&exact, l.threshold, &cands);
            l.errors.add(&err);
            // A cumulative RAP tree's ranges cover the run so far: read and compared once,
            // at the end (reading them walks the whole tree).
            let ranges = if cumulative_ranges(&l.spec) {
                Vec::new()
            } else {
                l.model.hot_ranges()
            };
            if !ranges.is_empty() {
                let r = metrics::range_error(&exact, &ranges);
                l.range_err.0 += r.ranges;
                l.range_err.1 += r.mean_percent * r.ranges as f64;
                l.range_err.2 = l.range_err.2.max(r.max_percent);
            }
            l.intervals.push(IntervalOut {
                index: self.index,
                tuples: self.seen,
                candidates: cands.iter().map(CandidateOut::from).collect(),
                error: err,
                ranges,
            });
        }
        self.index += 1;
        self.seen = 0;
    }
}

/// Every spec run over one stream, fed batch by batch: what
/// [`profile_stream`] does over an iterator, for a producer that pushes
/// (an interpreter's sink on another thread). Batch boundaries do not
/// matter: the same tuples in any batches give the same report.
///
/// ```
/// use toyvm_profiler::evaluation::StreamProfiler;
/// use toyvm_profiler::spec::parse_specs;
/// use toyvm_profiler::{Kind, Tuple};
///
/// let specs = parse_specs("perfect:interval=100,multihash:interval=100")?;
/// let mut p = StreamProfiler::new(&specs);
/// let t = Tuple { kind: Kind::Edge, a: 7, b: 9 };
/// for _ in 0..10 {
///     p.feed(&[t; 50]);
/// }
/// let report = p.finish();
/// assert_eq!(report.tuples, 500);
/// assert_eq!(report.models.len(), 2);
/// # Ok::<(), toyvm_profiler::Error>(())
/// ```
pub struct StreamProfiler {
    groups: Vec<Group>,
    /// Per spec, in the order given: its group and its lane there.
    order: Vec<(usize, usize)>,
    total: u64,
}

impl std::fmt::Debug for StreamProfiler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamProfiler")
            .field("specs", &self.order.len())
            .field("tuples", &self.total)
            .finish_non_exhaustive()
    }
}

impl StreamProfiler {
    /// Every spec's model, fresh, with the exact profile each is judged
    /// against (one per interval length and kind set).
    pub fn new(specs: &[ProfilerSpec]) -> StreamProfiler {
        let mut groups: Vec<Group> = Vec::new();
        let mut order = Vec::new();
        for spec in specs {
            let g = match groups
                .iter()
                .position(|g| g.interval == spec.interval && g.kinds == spec.kinds)
            {
                Some(g) => g,
                None => {
                    groups.push(Group {
                        interval: spec.interval,
                        kinds: spec.kinds,
                        oracle: Perfect::new(spec.oracle()),
                        seen: 0,
                        index: 0,
                        run_exact: TupleMap::default(),
                        lanes: Vec::new(),
                        scratch: Vec::new(),
                    });
                    groups.len() - 1
                }
            };
            order.push((g, groups[g].lanes.len()));
            groups[g].lanes.push(Lane {
                threshold: spec.threshold_count(),
                model: spec.build(),
                spec: spec.clone(),
                intervals: Vec::new(),
                errors: ErrorSummary::default(),
                estimates: TupleMap::default(),
                range_err: (0, 0.0, 0.0),
            });
        }
        StreamProfiler {
            groups,
            order,
            total: 0,
        }
    }

    /// Observes the next tuples of the stream.
    pub fn feed(&mut self, batch: &[Tuple]) {
        if batch.is_empty() {
            return;
        }
        self.total += batch.len() as u64;
        for g in &mut self.groups {
            g.feed(batch);
        }
    }

    /// Ends the last partial interval and reports every spec, in the order
    /// given.
    pub fn finish(mut self) -> ProfileReport {
        for g in &mut self.groups {
            if g.seen > 0 {
                g.end();
            }
        }
        let models = self
            .order
            .iter()
            .map(|&(g, l)| {
                let group = &self.groups[g];
                summarize(&group.lanes[l], &group.run_exact)
            })
            .collect();
        ProfileReport {
            tuples: self.total,
            models,
        }
    }
}

/// Runs every spec over the stream; stops at the first stream error. At most
/// [`crate::spec::MAX_MODELS_AT_ONCE`] specs ([`crate::Error::TooManyModels`]
/// before any model is built).
pub fn profile_stream(
    tuples: impl IntoIterator<Item = Result<Tuple>>,
    specs: &[ProfilerSpec],
) -> Result<ProfileReport> {
    if specs.len() > crate::spec::MAX_MODELS_AT_ONCE {
        return Err(crate::Error::TooManyModels {
            count: specs.len(),
            max: crate::spec::MAX_MODELS_AT_ONCE,
        });
    }
    let mut profiler = StreamProfiler::new(specs);
    let mut batch = Vec::with_capacity(4096);
    let mut iter = tuples.into_iter();
    loop {
        batch.clear();
        for t in iter.by_ref() {
            batch.push(t?);
            if batch.len() == 4096 {
                break;
            }
        }
        if batch.is_empty() {
            break;
        }
        profiler.feed(&batch);
    }
    Ok(profiler.finish())
}

fn cumulative_ranges(spec: &ProfilerSpec) -> bool {
    matches!(&spec.model, Model::Rap(o) if !o.reset)
}

fn summarize(l: &Lane, run_exact: &TupleMap<u64>) -> ModelReport {
    let e = l.errors.finish();
    let o = l.model.overhead();
    let has_kind = |k: Kind| l.spec.kinds.contains(k) && run_exact.keys().any(|t| t.kind == k);
    let invariance_error =
        metrics::invariance_error(run_exact, &l.estimates, InvarianceRules::default());
    let arc_weight_error =
        has_kind(Kind::Edge).then(|| metrics::arc_weight_error(run_exact, &l.estimates, &[10_000]));
    let mut intervals = l.intervals.clone();
    let range_error = if cumulative_ranges(&l.spec) {
        let ranges = l.model.hot_ranges();
        let err = metrics::range_error(run_exact, &ranges);
        if let Some(last) = intervals.last_mut() {
            last.ranges = ranges;
        }
        Some(err)
    } else {
        matches!(l.spec.model, Model::Rap(_)).then(|| RangeError {
            ranges: l.range_err.0,
            mean_percent: if l.range_err.0 == 0 {
                0.0
            } else {
                l.range_err.1 / l.range_err.0 as f64
            },
            max_percent: l.range_err.2,
        })
    };
    ModelReport {
        spec: l.spec.to_string(),
        model: l.spec.model.name(),
        intervals,
        summary: Summary {
            errors: e,
            state_bytes: l.model.state_bytes(),
            messages: o.messages,
            cycles: o.cycles,
            invariance_error,
            arc_weight_error,
            range_error,
        },
    }
}

impl ProfileReport {
    /// The JSON form (item 9's shape).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("the report holds only serializable data")
    }

    /// A human table: one summary block per model and its `top` hottest candidates over
    /// the run (counts summed over intervals), plus the last interval's hot ranges.
    pub fn to_text(&self, top: usize) -> String {
        let mut s = String::new();
        let pct = |x: f64| format!("{:.2}%", 100.0 * x);
        let _ = writeln!(s, "{} tuples", self.tuples);
        for m in &self.models {
            let (x, e) = (&m.summary, &m.summary.errors);
            let _ = writeln!(s, "\n{}", m.spec);
            let _ = writeln!(
                s,
                "  intervals {:>6}   error {:>8}  (fp {} fn {} np {} nn {})",
                e.intervals,
                pct(e.error),
                pct(e.false_positive),
                pct(e.false_negative),
                pct(e.neutral_positive),
                pct(e.neutral_negative)
            );
            let _ = writeln!(
                s,
                "  precision {:.3}  recall {:.3}  F1 {:.3}",
                e.precision, e.recall, e.f1
            );
            let _ = writeln!(
                s,
                "  state {} bytes   messages {}   cycles {}",
                x.state_bytes, x.messages, x.cycles
            );
            if let Some(v) = x.invariance_error {
                let _ = writeln!(s, "  invariance error {}", pct(v));
            }
            if let Some(b) = &x.arc_weight_error {
                for b in b.iter().filter(|b| b.blocks + b.missing > 0) {
                    let hi = if b.hi == u64::MAX {
                        "inf".to_string()
                    } else {
                        (b.hi + 1).to_string()
                    };
                    let _ = writeln!(
                        s,
                        "  arc-weight error, blocks [{}, {hi}): {} blocks, mean {:.2}% ({} without estimates)",
                        b.lo, b.blocks, b.mean_percent, b.missing
                    );
                }
            }
            if let Some(r) = &x.range_error {
                let _ = writeln!(
                    s,
                    "  range error over {} hot ranges: mean {:.2}%, max {:.2}%",
                    r.ranges, r.mean_percent, r.max_percent
                );
            }
            let mut sums: TupleMap<u64> = TupleMap::default();
            for i in &m.intervals {
                for c in &i.candidates {
                    let t = Tuple::new(
                        Kind::parse(c.kind).expect("written by CandidateOut"),
                        c.a,
                        c.b,
                    );
                    *sums.entry(t).or_insert(0) += c.count;
                }
            }
            let mut hot: Vec<(Tuple, u64)> = sums.into_iter().collect();
            hot.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(&y.0)));
            if !hot.is_empty() {
                let _ = writeln!(s, "  hottest candidates (count summed over intervals):");
            }
            // The trace's own form (hex pcs): a trace need not come from toyvm.
            for (t, n) in hot.iter().take(top) {
                let _ = writeln!(s, "    {:>12}  {}", n, t.text());
            }
            if let Some(last) = m.intervals.iter().rev().find(|i| !i.ranges.is_empty()) {
                let _ = writeln!(s, "  hot ranges of interval {}:", last.index);
                for r in last.ranges.iter().take(top) {
                    let _ = writeln!(s, "    {:>12}  {}", r.hot_weight, describe_range(r));
                }
            }
        }
        s
    }
}

/// Names a hot range: a code region (every value), a value range at one pc, or a box.
pub fn describe_range(r: &HotRange) -> String {
    let k = r.kind.word();
    if r.b_lo == 0 && r.b_hi == u64::MAX {
        if r.a_lo == r.a_hi {
            format!("{k} code at {:#x}", r.a_lo)
        } else {
            format!("{k} code region [{:#x}, {:#x}]", r.a_lo, r.a_hi)
        }
    } else if r.a_lo == r.a_hi {
        if r.b_lo == r.b_hi {
            format!("{k} point {:#x} {}", r.a_lo, r.b_lo)
        } else {
            format!("{k} values [{}, {}] at {:#x}", r.b_lo, r.b_hi, r.a_lo)
        }
    } else {
        format!(
            "{k} box [{:#x}, {:#x}] x [{}, {}]",
            r.a_lo, r.a_hi, r.b_lo, r.b_hi
        )
    }
}

/// What every figure of the text report means (`toyvm profile --help`
/// prints it; the README's `profile` section says the same).
pub const TERMS: &str = "\
What the report's figures mean (each model against the perfect profiler at
the model's own interval length and threshold):

  intervals         intervals of the model's length in the trace
  error             E, formula 1 of the multi-hash paper (000, 5.5.2): per
                    interval, the sum over tuples either profiler reports of
                    |exact count - reported count|, over the sum of their
                    exact counts; the mean over intervals
  fp fn np nn       E's four parts, which add up to E: false positives
                    (reported, not hot), false negatives (hot, not
                    reported), neutral positive (hot, reported, over-counted)
                    and neutral negative (hot, reported, under-counted)
  precision recall  of the reported candidate sets against perfect's,
  F1                summed over intervals
  state             the model's modeled hardware state in bytes (its
                    tables' bits), not the simulator's memory
  messages cycles   messages the hardware delivers to software, and their
                    modeled cost (30 cycles each for the sampling models)
  invariance error  the stratified paper's value-profile error (001, 5.3.1):
                    a value's invariance is its count over its load's count;
                    the error is the mean of |exact - estimated invariance|
                    over the selected values, weighted by their counts
                    (selected: loads executed at least 1000 times whose
                    values of 10% or more cover 40% of them, and those
                    values); edges and call targets likewise, per branch
                    and per call site (001's Fig 11)
  arc-weight error  Conte's error (002, 3.5): per block, the largest
                    difference between exact and estimated arc weights
                    (each normalized to the block's out-flow); the mean in
                    percent per bucket of block weight, over every block
                    (the paper's definition): a block the model has no arc
                    for counts its largest actual arc weight, and is also
                    counted apart (without estimates); edge tuples only.
                    Both errors use each model's full profile per interval
                    (every estimate it holds, below the threshold too), not
                    only its candidates
  range error       RAP's error (004, 5.3): per hot range, |exact -
                    estimate| / exact in percent, mean and largest
  hottest candidates  each candidate's reported count summed over the
                    intervals, then the tuple: kind (E edge, V value, C
                    call) and its two fields
";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::parse_specs;

    #[test]
    fn batch_boundaries_do_not_change_a_report() {
        // A stream with skew, phases and noise, through every model at its
        // defaults, fed in batches of 1, 7, 1024 (an interpreter's) and
        // 4096 (a link's buffers): the same report, to the last digit.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let stream: Vec<Tuple> = (0..60_000u64)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let hot = (x % 64).min(x % 7) + (i / 20_000) * 100;
                match x % 5 {
                    0 => Tuple::value(0x10 + hot, x % 3),
                    1 => Tuple::call(0x30 + hot % 4, hot % 9),
                    2 => Tuple::edge(x % 5000, 0x40),
                    _ => Tuple::edge(0x20 + hot, 0x41),
                }
            })
            .collect();
        let specs = parse_specs(
            "perfect:interval=5000,multihash:interval=5000,singlehash:interval=5000,\
             stratified:interval=5000,tagged:interval=5000,rap:interval=5000,conte:interval=5000",
        )
        .unwrap();
        let report = |size: usize| {
            let mut p = StreamProfiler::new(&specs);
            for chunk in stream.chunks(size) {
                p.feed(chunk);
            }
            p.finish().to_json()
        };
        let whole = report(stream.len());
        for size in [1, 7, 1024, 4096] {
            assert!(report(size) == whole, "batches of {size} change the report");
        }
    }

    #[test]
    fn json_has_the_documented_shape() {
        let mut tuples: Vec<Result<Tuple>> = Vec::new();
        for i in 0..2500u64 {
            tuples.push(Ok(if i % 3 == 0 {
                Tuple::value(0x10, 1)
            } else {
                Tuple::edge(0x20 + i % 5, 0x40)
            }));
        }
        let specs =
            parse_specs("multihash:interval=1000;perfect:interval=1000;rap:interval=1000,eps=10%")
                .unwrap();
        let r = profile_stream(tuples, &specs).unwrap();
        assert_eq!(r.tuples, 2500);
        let v: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
        let m0 = &v["models"][0];
        assert_eq!(m0["intervals"].as_array().unwrap().len(), 3);
        let c = &m0["intervals"][0]["candidates"][0];
        assert!(c["kind"].is_string() && c["a"].is_u64() && c["b"].is_u64() && c["count"].is_u64());
        for key in [
            "error",
            "false_positive",
            "false_negative",
            "neutral_positive",
            "neutral_negative",
            "precision",
            "recall",
            "f1",
            "state_bytes",
            "messages",
        ] {
            assert!(!m0["summary"][key].is_null(), "summary lacks {key}");
        }
        // The oracle against itself is exact.
        assert_eq!(v["models"][1]["summary"]["error"], 0.0);
        assert_eq!(v["models"][1]["summary"]["f1"], 1.0);
        let text = r.to_text(5);
        assert!(
            text.contains("hottest candidates") && text.contains("multihash:"),
            "{text}"
        );
    }

    #[test]
    fn arc_weight_and_invariance_come_from_the_full_profile() {
        // One pc whose value is 7 in 60% of loads and 8 in 40%; one branch taken to 0x30
        // 60% of the time and to 0x31 otherwise.  At a 50% threshold the minority value
        // and arc are no candidates, but they are in every model's profile.
        let mut tuples: Vec<Result<Tuple>> = Vec::new();
        for i in 0..20_000u64 {
            let minority = i % 5 < 2;
            tuples.push(Ok(Tuple::value(0x10, if minority { 8 } else { 7 })));
            tuples.push(Ok(Tuple::edge(0x20, if minority { 0x31 } else { 0x30 })));
        }
        let specs = parse_specs(
            "perfect:interval=10000,threshold=50%;conte:interval=10000,threshold=50%,period=1;\
             conte:interval=10000,threshold=0.01%,period=1",
        )
        .unwrap();
        let r = profile_stream(tuples, &specs).unwrap();
        let perfect = &r.models[0].summary;
        // The perfect profile is exact, so both errors are zero with nothing missing.
        assert_eq!(perfect.invariance_error, Some(0.0));
        let buckets = perfect.arc_weight_error.as_ref().unwrap();
        assert!(
            buckets.iter().all(|b| b.sum == 0.0 && b.missing == 0),
            "{buckets:?}"
        );
        // Conte's sampled weights do not depend on the candidate threshold.
        let (high, low) = (&r.models[1].summary, &r.models[2].summary);
        assert_eq!(high.arc_weight_error, low.arc_weight_error);
        assert!(
            high.arc_weight_error
                .as_ref()
                .unwrap()
                .iter()
                .all(|b| b.missing == 0)
        );
    }

    #[test]
    fn stream_errors_stop_the_run() {
        let bad = crate::trace::TraceReader::new(&b"V 1 2\nV 1\n"[..]).unwrap();
        let e = profile_stream(bad, &parse_specs("perfect").unwrap()).unwrap_err();
        assert!(e.to_string().contains("line 2"), "{e}");
    }
}
