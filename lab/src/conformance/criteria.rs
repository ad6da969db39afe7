//! Pass 2: the model under test on the same stream, each interval's
//! report checked against the reference within what the model guarantees
//! ([`toyvm_profiler::guarantee::Guarantee`]), and the JIT-on check.

use super::*;

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
        return Err(crate::Error::Reference(format!(
            "the reference was recorded for `{}`; `{spec}` uses a different interval, threshold or kinds",
            reference.oracle
        )));
    }
    Ok(())
}

/// One criterion's tally over the intervals: how many it checked, how many
/// conformed, and the evidence of those that did not (worst first once
/// sorted by its weight).
struct Tally {
    name: &'static str,
    checked: u64,
    conforming: u64,
    evidence: Vec<(f64, String)>,
}

impl Tally {
    fn new(name: &'static str) -> Self {
        Tally {
            name,
            checked: 0,
            conforming: 0,
            evidence: Vec::new(),
        }
    }

    /// Counts one checked interval: conforming, or not with its evidence
    /// and the weight that ranks it.
    fn record(&mut self, violation: Option<(f64, String)>) {
        self.checked += 1;
        match violation {
            None => self.conforming += 1,
            Some(v) => self.evidence.push(v),
        }
    }

    /// The criterion: passed when at least `quorum` of the checked
    /// intervals conform, with the five worst pieces of evidence.
    fn into_criterion(mut self, quorum: f64) -> Criterion {
        self.evidence.sort_by(|a, b| b.0.total_cmp(&a.0));
        let passed = self.checked == 0 || self.conforming as f64 >= quorum * self.checked as f64;
        let shown = self.evidence.len().min(5);
        let mut evidence: Vec<String> =
            self.evidence[..shown].iter().map(|e| e.1.clone()).collect();
        if self.evidence.len() > shown {
            evidence.push(format!(
                "... and {} more intervals",
                self.evidence.len() - shown
            ));
        }
        Criterion {
            name: self.name,
            passed,
            checked: self.checked,
            conforming: self.conforming,
            evidence,
        }
    }
}

/// What the criteria allow, from the model's guarantee and the
/// reference's tolerances.
struct Bounds<'g> {
    tol: Tolerances,
    /// The sampler's period (1: every event counted).
    period: u64,
    /// Below this exact count an entry is cold.
    low: u64,
    /// The reference's expected-entry bound, before the model's error.
    expected: u64,
    threshold: u64,
    /// RAP's error bound, for RAP.
    rap: Option<&'g RangeBound>,
}

impl Bounds<'_> {
    /// A counter's allowed error on an exact count: the tolerance, or a
    /// sampler's noise (period + 3 standard deviations) when larger.
    fn allowed(&self, exact: u64) -> f64 {
        let c = exact as f64;
        let r = self.period as f64;
        let sampling = if self.period > 1 {
            r + 3.0 * (c * (r - 1.0)).sqrt()
        } else {
            0.0
        };
        (self.tol.tolerance * c).max(sampling)
    }

    /// RAP's error bound for `kind`: max(h, eps * n), n the tree's events.
    fn rap_error(&self, kind: Kind, tree_events: &[u64; 3]) -> f64 {
        self.rap
            .map_or(0.0, |o| o.error(tree_events[kind as usize]))
    }

    /// The exact count above which an entry must be reported.
    fn expected_bound(&self, kind: Kind, tree_events: &[u64; 3]) -> f64 {
        let base = self.expected as f64;
        if self.rap.is_some() {
            base.max(self.threshold as f64 + self.rap_error(kind, tree_events))
        } else {
            base.max(2.0 * self.period as f64)
        }
    }
}

/// One interval as the criteria see it: the reference's exact entries and
/// the model's report.
struct View<'a> {
    i: usize,
    refi: &'a RefInterval,
    reported: &'a [Candidate],
    tree_events: [u64; 3],
}

impl View<'_> {
    fn exact(&self, t: &Tuple) -> Option<u64> {
        self.refi
            .entries
            .iter()
            .find(|e| e.tuple() == *t)
            .map(|e| e.count)
    }

    fn found(&self, t: &Tuple) -> Option<u64> {
        self.reported
            .iter()
            .find(|c| c.tuple == *t)
            .map(|c| c.count)
    }
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
            return Err(crate::Error::Reference(format!(
                "the reference holds no range counts for dims={},hot={},reset={}; record one with `{spec}`",
                o.dims,
                o.hot,
                if o.reset { "on" } else { "off" }
            )));
        }
    }
    let report = model_intervals(program, input, spec, reference, rap.is_some())?;
    let bounds = Bounds {
        tol: reference.tolerances,
        period: guarantee.period(),
        low: reference.low_bound(),
        expected: reference.expected_bound(),
        threshold: reference.threshold,
        rap,
    };
    let mut crit = [
        Tally::new("hot entries found"),
        Tally::new("counts within tolerance"),
        Tally::new("no systematic false positives"),
        Tally::new("hot ranges"),
        Tally::new("overhead within budget"),
    ];
    let empty = RefInterval {
        index: 0,
        entries: Vec::new(),
        events: [0; 3],
        ranges: Vec::new(),
    };
    let intervals = reference.intervals.len().max(report.len());
    // RAP's tree counts events over intervals (until a reset).
    let mut tree_events = [0u64; 3];
    let reset = rap.is_some_and(|o| o.reset);
    for i in 0..intervals {
        let refi = reference.intervals.get(i).unwrap_or(&empty);
        let (reported, hot): (&[Candidate], &[HotRange]) = report
            .get(i)
            .map_or((&[], &[]), |r| (&r.candidates, &r.ranges));
        for (n, added) in tree_events.iter_mut().zip(refi.events) {
            *n = if reset { added } else { *n + added };
        }
        let view = View {
            i,
            refi,
            reported,
            tree_events,
        };
        let expected: Vec<&Entry> = refi
            .entries
            .iter()
            .filter(|e| e.count as f64 >= bounds.expected_bound(e.kind, &tree_events))
            .collect();
        if !expected.is_empty() {
            crit[0].record(missing_entries(&view, &expected));
        }
        // Counts: the expected entries reported; for RAP, whose bound holds
        // for every tuple, every reported entry of the reference.
        let counted: Vec<&Entry> = if rap.is_some() {
            refi.entries.iter().collect()
        } else {
            expected
        };
        if counted.iter().any(|e| view.found(&e.tuple()).is_some()) {
            crit[1].record(count_errors(&view, &bounds, &counted));
        }
        if !reported.is_empty() {
            crit[2].record(false_positives(&view, &bounds));
        }
        if let Some(o) = rap {
            check_ranges(i, o, refi, hot, &tree_events, &mut crit[3]);
        }
        if let Some(m) = report.get(i).filter(|m| m.events > 0) {
            crit[4].record(overhead(i, m));
        }
    }
    let criteria = crit
        .into_iter()
        .filter(|c| rap.is_some() || c.name != "hot ranges")
        .map(|c| c.into_criterion(bounds.tol.quorum))
        .collect();
    Ok(Verdict {
        spec: spec.to_string(),
        intervals: intervals as u64,
        tolerances: bounds.tol,
        notes: Vec::new(),
        criteria,
    })
}

/// The model's reports, interval for interval, on the stream pass 1 saw;
/// an error when the run does not make the reference's intervals and
/// events.
fn model_intervals(
    program: &Program,
    input: &[u8],
    spec: &ProfilerSpec,
    reference: &Reference,
    ranges: bool,
) -> crate::Result<Vec<ModelInterval>> {
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
            ranges: if ranges {
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
        return Err(crate::Error::Reference(format!(
            "the reference does not match the run it names: it holds {} intervals and their \
             events, the run makes {} intervals with other events; record a new one",
            reference.intervals.len(),
            report.len()
        )));
    }
    Ok(report)
}

/// Criterion 1: every expected entry reported.
fn missing_entries(v: &View<'_>, expected: &[&Entry]) -> Option<(f64, String)> {
    let missing: Vec<&&Entry> = expected
        .iter()
        .filter(|e| v.found(&e.tuple()).is_none())
        .collect();
    let worst = missing.iter().map(|e| e.count).max()?;
    Some((
        worst as f64,
        format!(
            "interval {}: {} of {} expected entries missing, e.g. {} (exact count {worst})",
            v.i,
            missing.len(),
            expected.len(),
            show(&missing[0].tuple())
        ),
    ))
}

/// Criterion 2: the reported counts of `counted` within what the model
/// allows; the worst relative error over its bound.
fn count_errors(v: &View<'_>, b: &Bounds<'_>, counted: &[&Entry]) -> Option<(f64, String)> {
    let mut worst: Option<(f64, Tuple, u64, u64, f64)> = None;
    for e in counted {
        let Some(est) = v.found(&e.tuple()) else {
            continue;
        };
        let diff = est as f64 - e.count as f64;
        let (bad, limit) = if b.rap.is_some() {
            let limit = b.rap_error(e.kind, &v.tree_events);
            (diff > 0.0 || -diff > limit, limit)
        } else {
            let limit = b.allowed(e.count);
            (diff.abs() > limit, limit)
        };
        let err = diff.abs() / e.count as f64;
        if bad && worst.is_none_or(|w| err > w.0) {
            worst = Some((err, e.tuple(), e.count, est, limit));
        }
    }
    let (err, t, exact, est, limit) = worst?;
    Some((
        err,
        format!(
            "interval {}: {} estimated {est}, exact {exact} ({:+.1}%; {})",
            v.i,
            show(&t),
            (est as f64 - exact as f64) * 100.0 / exact as f64,
            if b.rap.is_some() {
                format!("RAP allows 0 over and {limit:.0} under")
            } else {
                format!("allowed +-{limit:.0}")
            }
        ),
    ))
}

/// Criterion 3: no systematic false positives (reports of entries whose
/// exact count is below the low bound).
fn false_positives(v: &View<'_>, b: &Bounds<'_>) -> Option<(f64, String)> {
    let (i, low, period) = (v.i, b.low, b.period);
    let fps: Vec<&Candidate> = v
        .reported
        .iter()
        .filter(|c| v.exact(&c.tuple).is_none_or(|n| n < low))
        .collect();
    if period <= 1 {
        return fps.first().map(|c| {
            (
                fps.len() as f64,
                format!(
                    "interval {i}: {} false positives, e.g. {} reported {} times (exact count below {low})",
                    fps.len(),
                    show(&c.tuple),
                    c.count
                ),
            )
        });
    }
    // A sampler's cold reports are expected noise: only estimates no count
    // below the low bound explains, or more reports than the cold events'
    // samples can make, are systematic.
    let c_hi = low - 1;
    let implausible: Vec<&&Candidate> = fps
        .iter()
        .filter(|c| c.count as f64 - c_hi as f64 > b.allowed(c_hi))
        .collect();
    let hot_events: u64 = v.refi.entries.iter().map(|e| e.count).sum();
    let cold = v.refi.events.iter().sum::<u64>().saturating_sub(hot_events);
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
                c_hi as f64 + b.allowed(c_hi)
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
}

/// Criterion 5: the interval's modeled software cost within the budget.
fn overhead(i: usize, m: &ModelInterval) -> Option<(f64, String)> {
    let budget = OVERHEAD_CYCLES_PER_EVENT * m.events as f64;
    (m.cycles as f64 > budget).then(|| {
        (
            m.cycles as f64 / m.events as f64,
            format!(
                "interval {i}: {} messages, {} cycles for {} events ({:.2} cycles per event; the budget is {OVERHEAD_CYCLES_PER_EVENT})",
                m.messages,
                m.cycles,
                m.events,
                m.cycles as f64 / m.events as f64
            ),
        )
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
    crit: &mut Tally,
) {
    if hot.is_empty() && refi.ranges.is_empty() {
        return;
    }
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
    crit.record(bad);
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
        let report = toyvm::Runtime::builder(program.clone())
            .profile(profile)
            .keep_candidates(true)
            .jit(jit.then(toyvm::runtime::JitOptions::default))
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
