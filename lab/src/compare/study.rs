//! The study: does a profiler's error cost the optimizations it drives?
//!
//! `toyvm compare --synth 'hot=16|64|256|1024'` adds one generated workload
//! ([`crate::synth`]) per point of the knob grid to the comparison. Each is
//! measured once with [`crate::synth::describe`] (the perfect profiler at
//! the default interval of 10,000 tuples and threshold of 1%): its *hot
//! set* is the distinct tuples per interval. Every model's row on it then
//! becomes a [`StudyPoint`]: the hot set over the model's capacity
//! ([`toyvm_profiler::spec::Model::capacity`]: counters per table for the
//! hash models, samples per interval for the samplers, entries, `1/eps`),
//! its error E with the parts that cost speedup (false negatives: regions
//! never compiled; false positives: cold code compiled), what the JIT did
//! (guard failures and side exits: wrong values), and its speedup relative
//! to perfect with the per-round range and the within-noise mark of
//! [`super::report::noise_against`].
//!
//! [`crossings`] says, per configuration, at which workload E first rises
//! above 1% and the speedup first falls below 0.9 of perfect's by more than
//! the noise; `--study-chart` draws the points ([`super::chart::study`]).

use std::fmt::Write as _;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::error::{Error, Result};
use super::specs;
use super::suite::Case;
use crate::synth::{self, Knobs};

/// Interval the workloads' hot sets are measured at, in tuples.
pub const DESCRIBE_INTERVAL: u64 = 10_000;
/// Candidate threshold the workloads' hot sets are measured at, as a
/// fraction of [`DESCRIBE_INTERVAL`] (1%).
pub const DESCRIBE_THRESHOLD: f64 = 0.01;
/// Iterations of a generated workload with `--bench` (without: its
/// header's test size, 10,000), unless the grid sets `n`.
pub const BENCH_ITERATIONS: i64 = 300_000;
/// The most iterations a grid may ask for.
pub const MAX_ITERATIONS: i64 = 100_000_000;

/// A generated workload as the report records it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Workload {
    /// Its name in the report's rows (`synth(hot=64)`).
    pub name: String,
    /// Every knob (`seed=1 functions=16 ...`), as its header states them.
    pub knobs: String,
    /// The command that writes the program.
    pub command: String,
    /// Iterations (its argument).
    pub iterations: i64,
    /// The `hot` knob: hot items per phase.
    pub hot_items: u32,
    /// Distinct tuples per interval (mean over intervals).
    pub distinct_per_interval: f64,
    /// Tuples over the threshold per interval (mean).
    pub hot_per_interval: f64,
    /// Share of an interval's tuples the top 1% of its distinct tuples
    /// cover (mean).
    pub top1_share: f64,
}

/// One model on one workload.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StudyPoint {
    /// The workload's name ([`Workload::name`]).
    pub workload: String,
    /// The configuration as given on the command line.
    pub label: String,
    /// The configuration's canonical spec.
    pub spec: String,
    /// The model's capacity at its interval (see the module doc).
    pub capacity: Option<u64>,
    /// Distinct tuples per interval over the capacity.
    pub load: Option<f64>,
    /// Error E against the perfect profiler on the interpreter's stream (a
    /// fraction); absent when the error pass failed.
    pub error: Option<f64>,
    /// E's false-positive part: cold tuples reported, cold code compiled.
    pub false_positive: Option<f64>,
    /// E's false-negative part: hot tuples missed, regions never compiled.
    pub false_negative: Option<f64>,
    /// The perfect-profile JIT's time over this model's; absent unless
    /// every run of the pair matched the interpreter.
    pub speedup_vs_perfect: Option<f64>,
    /// The smallest per-round ratio of perfect's time to this time.
    pub speedup_vs_perfect_low: Option<f64>,
    /// The largest per-round ratio of perfect's time to this time.
    pub speedup_vs_perfect_high: Option<f64>,
    /// Whether this pair's run times overlap perfect's (min-max): the
    /// difference is run-to-run noise. Absent for failed pairs.
    pub within_noise: Option<bool>,
    /// Modeled hardware state of the model, in bytes.
    pub state_bytes: u64,
    /// Regions the JIT compiled in the timed run.
    pub compiles: u64,
    /// Exits off compiled traces in the timed run.
    pub side_exits: u64,
    /// Exits through failing specialization guards in the timed run
    /// (specialized on a value that did not hold).
    pub guard_failures: u64,
}

/// The study part of a report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Study {
    /// Interval the hot sets were measured at ([`DESCRIBE_INTERVAL`]).
    pub interval: u64,
    /// Threshold the hot sets were measured at ([`DESCRIBE_THRESHOLD`]).
    pub threshold: f64,
    /// The generated workloads, in the order of the grids' points.
    pub workloads: Vec<Workload>,
    /// Every model (perfect excepted) on every workload, workload by
    /// workload in column order; pairs without a row are left out.
    pub points: Vec<StudyPoint>,
}

/// The workloads of `grids` (each `key=a|b,key2=x`, keys as `toyvm synth`'s
/// flags plus `n`, the iterations), generated, measured and loaded.
pub fn cases(grids: &[String], bench: bool) -> Result<(Vec<Case>, Vec<Workload>)> {
    let mut points: Vec<Vec<(String, String)>> = Vec::new();
    let mut total = 0usize;
    let mut axes_all = Vec::new();
    for g in grids {
        let axes = specs::parse_axes(g, &format!("--synth `{g}`"))?;
        total = total.saturating_add(specs::combinations(&axes));
        if total > specs::MAX_CONFIGS {
            return Err(specs::too_many(
                format!("--synth `{g}`"),
                total,
                "workloads",
            ));
        }
        axes_all.push(axes);
    }
    for axes in &axes_all {
        points.extend(specs::odometer(axes));
    }
    let mut cases = Vec::new();
    let mut workloads: Vec<Workload> = Vec::new();
    for point in points {
        let mut knobs = Knobs::default();
        let mut n = if bench { BENCH_ITERATIONS } else { 10_000 };
        for (k, v) in &point {
            if k == "n" {
                n = toyvm::vm::parse_int(v)
                    .and_then(|n| i64::try_from(n).ok())
                    .filter(|n| (1..=MAX_ITERATIONS).contains(n))
                    .ok_or_else(|| Error::SynthIterations {
                        value: v.clone(),
                        limit: MAX_ITERATIONS,
                    })?;
            } else {
                knobs.set(k, v).map_err(Error::Synth)?;
            }
        }
        let named: Vec<String> = point.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let name = format!("synth({})", named.join(","));
        if workloads.iter().any(|w| w.name == name) {
            continue;
        }
        let text = synth::generate(&knobs).map_err(Error::Synth)?;
        let workload = |source: toyvm::Error| Error::Workload {
            name: name.clone(),
            source,
        };
        let program = toyvm_vm::asm::assemble(&text).map_err(|e| workload(e.into()))?;
        let st = synth::describe(&program, &[n], DESCRIBE_INTERVAL, DESCRIBE_THRESHOLD)
            .map_err(workload)?;
        workloads.push(Workload {
            name: name.clone(),
            knobs: knobs.header(),
            command: knobs.command(),
            iterations: n,
            hot_items: knobs.hot,
            distinct_per_interval: st.all.distinct,
            hot_per_interval: st.all.hot,
            top1_share: st.all.top1_share,
        });
        cases.push(Case {
            name: name.clone(),
            path: PathBuf::from(name),
            program,
            args: vec![n],
            input_path: None,
            input: Vec::new(),
            wasm: None,
        });
    }
    Ok((cases, workloads))
}

/// Where a configuration's error starts to show and to cost.
#[derive(Clone, Debug, PartialEq)]
pub struct Crossing {
    /// The configuration as given on the command line.
    pub label: String,
    /// The first workload (by hot set) with E above 1%, and its load.
    pub error_above_1pct: Option<(String, Option<f64>)>,
    /// The first workload whose speedup relative to perfect is below 0.9
    /// with every round below it too (the whole per-round range), and not
    /// within noise.
    pub speedup_below_0_9: Option<(String, Option<f64>)>,
    /// Workloads on which the speedup relative to perfect is within noise.
    pub within_noise: usize,
    /// The configuration's points in the study (one per workload).
    pub points: usize,
}

/// Per configuration, in column order, the first crossings over the
/// workloads ordered by hot set.
pub fn crossings(s: &Study) -> Vec<Crossing> {
    let mut labels: Vec<&str> = Vec::new();
    for p in &s.points {
        if !labels.contains(&p.label.as_str()) {
            labels.push(&p.label);
        }
    }
    let hot = |w: &str| {
        s.workloads
            .iter()
            .find(|x| x.name == w)
            .map_or(0.0, |x| x.distinct_per_interval)
    };
    labels
        .into_iter()
        .map(|label| {
            let mut mine: Vec<&StudyPoint> = s.points.iter().filter(|p| p.label == label).collect();
            mine.sort_by(|a, b| hot(&a.workload).total_cmp(&hot(&b.workload)));
            let at = |p: &&StudyPoint| (p.workload.clone(), p.load);
            Crossing {
                label: label.to_owned(),
                error_above_1pct: mine
                    .iter()
                    .find(|p| p.error.is_some_and(|e| e > 0.01))
                    .map(at),
                speedup_below_0_9: mine
                    .iter()
                    .find(|p| {
                        p.within_noise == Some(false)
                            && p.speedup_vs_perfect_high.is_some_and(|h| h < 0.9)
                    })
                    .map(at),
                within_noise: mine.iter().filter(|p| p.within_noise == Some(true)).count(),
                points: mine.len(),
            }
        })
        .collect()
}

fn opt(x: Option<f64>, f: impl Fn(f64) -> String) -> String {
    x.map_or_else(|| "-".to_owned(), f)
}

/// The study's tables (for the text and Markdown reports): the workloads,
/// the points, and the crossings.
pub fn render(s: &Study, markdown: bool) -> String {
    let mut out = String::new();
    let table = |out: &mut String, head: &[&str], rows: Vec<Vec<String>>| {
        if markdown {
            let _ = writeln!(out, "\n| {} |", head.join(" | "));
            let _ = writeln!(out, "|{}", "---|".repeat(head.len()));
            for r in rows {
                let _ = writeln!(out, "| {} |", r.join(" | "));
            }
        } else {
            let mut w: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
            for r in &rows {
                for (i, c) in r.iter().enumerate() {
                    w[i] = w[i].max(c.chars().count());
                }
            }
            let line = |cells: Vec<String>| {
                let padded: Vec<String> = cells
                    .iter()
                    .enumerate()
                    .map(|(i, c)| format!("{c:<width$}", width = w[i]))
                    .collect();
                padded.join("  ").trim_end().to_owned()
            };
            let _ = writeln!(
                out,
                "  {}",
                line(head.iter().map(|h| h.to_string()).collect())
            );
            for r in rows {
                let _ = writeln!(out, "  {}", line(r));
            }
        }
    };
    let _ = writeln!(
        out,
        "\nstudy: the workloads' hot sets (perfect profiler, interval {}, threshold {}%):",
        s.interval,
        100.0 * s.threshold
    );
    let wrows = s
        .workloads
        .iter()
        .map(|w| {
            vec![
                w.name.clone(),
                w.iterations.to_string(),
                w.hot_items.to_string(),
                format!("{:.0}", w.distinct_per_interval),
                format!("{:.1}", w.hot_per_interval),
                format!("{:.1}", 100.0 * w.top1_share),
            ]
        })
        .collect();
    table(
        &mut out,
        &[
            "workload",
            "iterations",
            "hot items",
            "distinct/interval",
            "over threshold/interval",
            "top 1% share %",
        ],
        wrows,
    );
    let _ = writeln!(
        out,
        "\nstudy: each model against its capacity (load = distinct tuples per interval / capacity):"
    );
    let prows = s
        .points
        .iter()
        .map(|p| {
            vec![
                p.workload.clone(),
                p.label.clone(),
                p.capacity.map_or_else(|| "-".into(), |c| c.to_string()),
                opt(p.load, |l| format!("{l:.2}")),
                opt(p.error, |e| format!("{:.2}", 100.0 * e)),
                match (p.false_positive, p.false_negative) {
                    (Some(a), Some(b)) => format!("{:.1}/{:.1}", 100.0 * a, 100.0 * b),
                    _ => "-".into(),
                },
                format!("{}/{}/{}", p.compiles, p.side_exits, p.guard_failures),
                match (
                    p.speedup_vs_perfect,
                    p.speedup_vs_perfect_low,
                    p.speedup_vs_perfect_high,
                ) {
                    (Some(x), Some(lo), Some(hi)) => format!("{x:.2}x [{lo:.2}-{hi:.2}]"),
                    (Some(x), ..) => format!("{x:.2}x"),
                    _ => "-".into(),
                },
                match p.within_noise {
                    Some(true) => "within noise".into(),
                    Some(false) => "beyond noise".into(),
                    None => "-".into(),
                },
            ]
        })
        .collect();
    table(
        &mut out,
        &[
            "workload",
            "config",
            "capacity",
            "load",
            "E %",
            "fp/fn %",
            "compiles/exits/guard fails",
            "x perfect [per-round range]",
            "noise",
        ],
        prows,
    );
    let _ = writeln!(
        out,
        "\nstudy: where the error shows (E > 1%) and where it costs (every round below 0.9x of perfect, beyond noise):"
    );
    if markdown {
        out.push('\n');
    }
    for c in crossings(s) {
        let at = |x: &Option<(String, Option<f64>)>| match x {
            Some((w, Some(l))) => format!("at {w} (load {l:.2})"),
            Some((w, None)) => format!("at {w}"),
            None => "on none of these workloads".to_owned(),
        };
        let _ = writeln!(
            out,
            "{}{}: E above 1% {}; speedup below 0.9x {}; within noise of perfect on {} of {} workloads",
            if markdown { "- " } else { "  " },
            c.label,
            at(&c.error_above_1pct),
            at(&c.speedup_below_0_9),
            c.within_noise,
            c.points
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(workload: &str, label: &str, e: f64, hi: f64, noise: bool) -> StudyPoint {
        StudyPoint {
            workload: workload.into(),
            label: label.into(),
            spec: label.into(),
            capacity: Some(64),
            load: Some(1.0),
            error: Some(e),
            false_positive: Some(0.0),
            false_negative: Some(e),
            speedup_vs_perfect: Some(hi - 0.02),
            speedup_vs_perfect_low: Some(hi - 0.05),
            speedup_vs_perfect_high: Some(hi),
            within_noise: Some(noise),
            state_bytes: 1,
            compiles: 1,
            side_exits: 0,
            guard_failures: 0,
        }
    }

    fn workload(name: &str, distinct: f64) -> Workload {
        Workload {
            name: name.into(),
            knobs: String::new(),
            command: String::new(),
            iterations: 1,
            hot_items: 1,
            distinct_per_interval: distinct,
            hot_per_interval: 1.0,
            top1_share: 0.5,
        }
    }

    #[test]
    fn crossings_follow_the_hot_set_and_respect_noise() {
        let s = Study {
            interval: 10_000,
            threshold: 0.01,
            // Listed out of order: crossings sort by hot set.
            workloads: vec![
                workload("big", 5000.0),
                workload("small", 50.0),
                workload("mid", 500.0),
            ],
            points: vec![
                point("big", "m", 0.5, 0.6, false),
                point("small", "m", 0.0, 1.02, true),
                // Below 0.9 but within noise: not a crossing.
                point("mid", "m", 0.2, 0.85, true),
            ],
        };
        let c = crossings(&s);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].error_above_1pct.as_ref().unwrap().0, "mid");
        assert_eq!(c[0].speedup_below_0_9.as_ref().unwrap().0, "big");
        assert_eq!((c[0].within_noise, c[0].points), (2, 3));
        let text = render(&s, false);
        assert!(text.contains("m: E above 1% at mid"), "{text}");
    }

    #[test]
    fn grids_give_one_workload_per_point_and_bad_knobs_are_refused() {
        let (cases, w) = cases(&["hot=4|8,n=200".to_owned()], false).unwrap();
        assert_eq!(cases.len(), 2);
        assert_eq!(w[0].name, "synth(hot=4,n=200)");
        assert_eq!(cases[1].args, vec![200]);
        assert!(w[1].distinct_per_interval > 0.0);
        let e = cases_err("hot=4,colour=red");
        assert!(e.contains("unknown knob `colour`"), "{e}");
        assert!(cases_err("hot=x").contains("hot=x"));
        assert!(cases_err("n=0").contains("iterations"));
        assert!(cases_err("hot=0").contains("--hot"));
        let huge = format!("hot={}", vec!["1"; 70].join("|"));
        let e = cases_err(&format!("{huge},zipf={}", vec!["1"; 70].join("|")));
        assert!(e.contains("4900 workloads"), "{e}");
        assert!(matches!(
            super::cases(&["n=0".to_owned()], false),
            Err(Error::SynthIterations { .. })
        ));
        assert!(matches!(
            super::cases(&["hot=4,colour=red".to_owned()], false),
            Err(Error::Synth(_))
        ));
    }

    fn cases_err(g: &str) -> String {
        match cases(&[g.to_owned()], false) {
            Ok(_) => panic!("`{g}` was accepted"),
            Err(e) => e.to_string(),
        }
    }
}
