//! Two-pass verification of a profiler model (IPCOM000235487D, "Verification
//! method for hardware based profiling").
//!
//! **Pass 1** runs the program with the perfect profiler and records, per
//! interval, every tuple whose exact count reaches `(1 - margin) * T` (T the
//! candidate threshold): the perfect table and the threshold entries. From
//! it follow what a correct model must do in each interval:
//! - entries at or above `(1 + margin) * T` are *expected*: a correct model
//!   reports them (the disclosure's entries "statistically probable to be
//!   highlighted");
//! - entries between the two bounds are *neutral*: reporting them or not is
//!   both fine;
//! - anything else a model reports is a *false positive*.
//!
//! Counts must lie within `tolerance * count` of the exact count. A
//! sampling model (stratified, 1 in r) is held to the distribution its
//! estimates follow instead of a fixed tolerance, as the disclosure asks:
//! an estimate `r * samples` of a count c may be off by r (periodic
//! quantization) plus three standard deviations of `r * Binomial(c, 1/r)`,
//! `3 sqrt(c (r - 1))`; and only entries of at least 2r occurrences are
//! expected to be found, since a 1-in-r sampler cannot promise to see fewer.
//!
//! **Pass 2** runs the model under test on the same program (same interval
//! length, threshold and kinds) and checks three criteria. The disclosure
//! decides over many interrupts "to prevent outliers from causing false
//! fails"; likewise each criterion passes when at least `quorum` of the
//! intervals that have something to check conform:
//! 1. *hot entries found*: the interval's expected entries are all reported;
//! 2. *counts within tolerance*: every reported expected entry's count is;
//! 3. *no systematic false positives*: the interval has no false positive.
//!
//! The reference is saved as JSON and can be reused for later pass-2 runs.

use std::fmt::Write as _;
use std::io::Write;

use serde::{Deserialize, Serialize};
use toyvm_profiler::{Candidate, Kind, ProfilerSpec, Tuple};
use toyvm_vm::Program;
use toyvm_vm::interp::Input;

use crate::Runtime;

/// How strict the check is.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct Tolerances {
    /// Width of the neutral band around the threshold, as a fraction of it.
    pub margin: f64,
    /// Allowed relative error of a reported count.
    pub tolerance: f64,
    /// Fraction of checked intervals that must conform for a pass.
    pub quorum: f64,
}

impl Default for Tolerances {
    fn default() -> Self {
        Tolerances {
            margin: 0.25,
            tolerance: 0.10,
            quorum: 0.90,
        }
    }
}

/// One entry of the perfect table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub kind: Kind,
    pub a: u64,
    pub b: u64,
    pub count: u64,
}

impl Entry {
    fn tuple(&self) -> Tuple {
        Tuple::new(self.kind, self.a, self.b)
    }
}

/// One interval of the perfect table.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RefInterval {
    pub index: u64,
    /// Entries with exact count >= the low bound, hottest first.
    pub entries: Vec<Entry>,
}

/// What pass 1 saves.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Reference {
    pub toyvm_version: String,
    pub program: String,
    pub args: Vec<i64>,
    /// Interval length, threshold fraction and kinds, as a perfect spec.
    pub oracle: String,
    pub interval: u64,
    /// The candidate threshold T as a count.
    pub threshold: u64,
    pub tolerances: Tolerances,
    pub intervals: Vec<RefInterval>,
}

impl Reference {
    fn expected_bound(&self) -> u64 {
        (self.threshold as f64 * (1.0 + self.tolerances.margin)).ceil() as u64
    }
    fn low_bound(&self) -> u64 {
        (self.threshold as f64 * (1.0 - self.tolerances.margin))
            .floor()
            .max(1.0) as u64
    }
}

/// Pass 1: runs `program` under the perfect profiler with `spec`'s interval,
/// threshold and kinds.
pub fn record_reference(
    program: &Program,
    name: &str,
    args: &[i64],
    input: &[u8],
    spec: &ProfilerSpec,
    tolerances: Tolerances,
) -> crate::Result<Reference> {
    let oracle = spec.oracle();
    let threshold = oracle.threshold_count();
    let low = (threshold as f64 * (1.0 - tolerances.margin))
        .floor()
        .max(1.0) as u64;
    // Ask the oracle for everything down to the low bound.
    let mut low_spec = oracle.clone();
    low_spec.threshold = low as f64 / oracle.interval as f64;
    let report = Runtime::builder(program.clone())
        .profile(Some(low_spec))
        .keep_candidates(true)
        .jit(None)
        .build()
        .run(Input { args, file: input }, &mut std::io::sink())?;
    let intervals = report
        .intervals
        .into_iter()
        .map(|i| RefInterval {
            index: i.index,
            entries: i
                .candidates
                .into_iter()
                .filter(|c| c.count >= low)
                .map(|c| Entry {
                    kind: c.tuple.kind,
                    a: c.tuple.a,
                    b: c.tuple.b,
                    count: c.count,
                })
                .collect(),
        })
        .collect();
    Ok(Reference {
        toyvm_version: env!("CARGO_PKG_VERSION").to_owned(),
        program: name.to_owned(),
        args: args.to_vec(),
        oracle: oracle.to_string(),
        interval: oracle.interval,
        threshold,
        tolerances,
        intervals,
    })
}

/// The outcome of one criterion.
#[derive(Clone, Debug, Serialize)]
pub struct Criterion {
    pub name: &'static str,
    pub passed: bool,
    /// Intervals that had something to check, and how many conformed.
    pub checked: u64,
    pub conforming: u64,
    /// The worst violations, as readable lines.
    pub evidence: Vec<String>,
}

/// The verdict of pass 2.
#[derive(Clone, Debug, Serialize)]
pub struct Verdict {
    pub spec: String,
    pub intervals: u64,
    pub criteria: Vec<Criterion>,
}

impl Verdict {
    pub fn passed(&self) -> bool {
        self.criteria.iter().all(|c| c.passed)
    }

    pub fn to_text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "verify {} over {} intervals", self.spec, self.intervals);
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

fn show(t: &Tuple) -> String {
    let k = match t.kind {
        Kind::Value => 'V',
        Kind::Edge => 'E',
        Kind::Call => 'C',
    };
    format!("{k} 0x{:x} {}", t.a, t.b)
}

/// Pass 2: runs the model and checks it against the reference.
pub fn check(
    program: &Program,
    input: &[u8],
    spec: &ProfilerSpec,
    reference: &Reference,
) -> crate::Result<Verdict> {
    let oracle = spec.oracle();
    if oracle.interval != reference.interval
        || oracle.threshold_count() != reference.threshold
        || oracle.kinds != crate::verify::parse_kinds_of(&reference.oracle)?
    {
        return Err(crate::Error::Usage(format!(
            "the reference was recorded for `{}`; `{spec}` uses a different interval, threshold or kinds",
            reference.oracle
        )));
    }
    let report = Runtime::builder(program.clone())
        .profile(Some(spec.clone()))
        .keep_candidates(true)
        // Compiled code emits no tuples; the model must see the stream
        // pass 1 saw, interval for interval.
        .jit(None)
        .build()
        .run(
            Input {
                args: &reference.args,
                file: input,
            },
            &mut std::io::sink(),
        )?;
    let tol = reference.tolerances;
    let period = sampling_period(spec);
    let expected_bound = reference.expected_bound().max(2 * period);
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
    let low = reference.low_bound();
    let mut crit = [
        ("hot entries found", 0u64, 0u64, Vec::<(f64, String)>::new()),
        ("counts within tolerance", 0, 0, Vec::new()),
        ("no systematic false positives", 0, 0, Vec::new()),
    ];
    let empty = Vec::new();
    let intervals = reference.intervals.len().max(report.intervals.len());
    for i in 0..intervals {
        let reference_entries = reference.intervals.get(i).map_or(&empty, |r| &r.entries);
        let reported: &[Candidate] = report.intervals.get(i).map_or(&[], |r| &r.candidates);
        let exact = |t: &Tuple| {
            reference_entries
                .iter()
                .find(|e| e.tuple() == *t)
                .map(|e| e.count)
        };
        let found = |t: &Tuple| reported.iter().find(|c| c.tuple == *t).map(|c| c.count);

        let expected: Vec<&Entry> = reference_entries
            .iter()
            .filter(|e| e.count >= expected_bound)
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
            let mut worst: Option<(f64, Tuple, u64, u64)> = None;
            let mut any = false;
            for e in &expected {
                if let Some(est) = found(&e.tuple()) {
                    any = true;
                    let diff = (est as f64 - e.count as f64).abs();
                    let err = diff / e.count as f64;
                    if diff > allowed(e.count) && worst.is_none_or(|w| err > w.0) {
                        worst = Some((err, e.tuple(), e.count, est));
                    }
                }
            }
            if any {
                crit[1].1 += 1;
                match worst {
                    None => crit[1].2 += 1,
                    Some((err, t, exact, est)) => crit[1].3.push((
                        err,
                        format!(
                            "interval {i}: {} estimated {est}, exact {exact} ({:+.1}%)",
                            show(&t),
                            (est as f64 - exact as f64) * 100.0 / exact as f64
                        ),
                    )),
                }
            }
        }
        if !reported.is_empty() {
            crit[2].1 += 1;
            let fps: Vec<&Candidate> = reported
                .iter()
                .filter(|c| exact(&c.tuple).is_none_or(|n| n < low))
                .collect();
            if fps.is_empty() {
                crit[2].2 += 1;
            } else {
                crit[2].3.push((
                    fps.len() as f64,
                    format!(
                        "interval {i}: {} false positives, e.g. {} reported {} times (exact count below {low})",
                        fps.len(),
                        show(&fps[0].tuple),
                        fps[0].count
                    ),
                ));
            }
        }
    }
    let criteria = crit
        .into_iter()
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
        criteria,
    })
}

/// How many events one sampled message stands for (1 for counting models).
fn sampling_period(spec: &ProfilerSpec) -> u64 {
    use toyvm_profiler::spec::{Model, SamplerExpr};
    fn period(s: &SamplerExpr) -> u64 {
        match s {
            SamplerExpr::Random(r) | SamplerExpr::Periodic(r) | SamplerExpr::CountedRandom(r) => *r,
            SamplerExpr::Hash(inner, _) => period(inner),
        }
    }
    match &spec.model {
        Model::Stratified(o) => period(&o.sampler),
        _ => 1,
    }
}

fn parse_kinds_of(oracle: &str) -> crate::Result<toyvm_profiler::tuple::KindSet> {
    Ok(toyvm_profiler::parse_spec(oracle)?.kinds)
}

/// Writes a reference as JSON.
pub fn save(reference: &Reference, out: &mut dyn Write) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, reference)?;
    out.write_all(b"\n")
}

/// Reads a reference.
pub fn load(bytes: &[u8]) -> crate::Result<Reference> {
    serde_json::from_slice(bytes)
        .map_err(|e| crate::Error::Usage(format!("reading the reference: {e}")))
}
