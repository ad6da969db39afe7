//! The comparison's results: one row per (program, configuration), a
//! summary per configuration with its Pareto mark, what a report records to
//! be reproduced, and the changes against an earlier report.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::cells::{Finished, ModelErrors, TimeOut};
use super::measure::median;
use super::meta::Machine;
use super::specs::Config;
use super::suite::Case;

/// How a pair's runs went.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Every run printed and returned what the interpreter did.
    Ok,
    /// A run's output or result differs from the interpreter's.
    Mismatch,
    /// A run failed (a trap, a compile error, the error pass failed).
    Error,
}

impl Status {
    /// How the status prints in tables: `ok`, `MISMATCH`, `ERROR`.
    pub fn word(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Mismatch => "MISMATCH",
            Status::Error => "ERROR",
        }
    }
}

/// One (program, configuration) pair.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// The program's name.
    pub program: String,
    /// The model's name (`none`: the interpreter alone).
    pub model: String,
    /// The configuration as given (`multihash`, `multihash:tables=2`).
    pub label: String,
    /// The canonical spec (every key).
    pub spec: String,
    /// Whether every run matched the interpreter.
    pub status: Status,
    /// What went wrong, when something did.
    pub detail: Option<String>,
    /// Timed runs.
    pub runs: u64,
    /// Median wall time; absent when the pair failed (a wrong result is
    /// never timed).
    pub median_seconds: Option<f64>,
    /// Fastest timed run.
    pub min_seconds: Option<f64>,
    /// Slowest timed run.
    pub max_seconds: Option<f64>,
    /// Interpreter time over this time.
    pub speedup_vs_interpreter: Option<f64>,
    /// The smallest and largest per-round ratio of the interpreter's time
    /// to this time (the error bars of the summary chart).
    #[serde(default)]
    pub speedup_vs_interpreter_low: Option<f64>,
    /// See `speedup_vs_interpreter_low`.
    #[serde(default)]
    pub speedup_vs_interpreter_high: Option<f64>,
    /// The perfect-profile JIT's time over this time.
    pub speedup_vs_perfect: Option<f64>,
    /// The smallest and largest per-round ratio of perfect's time to this
    /// time (runs go in rounds over every configuration, so a round's two
    /// runs met the same machine).
    #[serde(default)]
    pub speedup_vs_perfect_low: Option<f64>,
    /// See `speedup_vs_perfect_low`.
    #[serde(default)]
    pub speedup_vs_perfect_high: Option<f64>,
    /// This pair's run times and perfect's overlap (min-max): the
    /// difference from perfect is within run-to-run noise. Absent for
    /// perfect itself, the interpreter and failed pairs.
    #[serde(default)]
    pub within_noise: Option<bool>,
    /// Error E against the perfect profiler on the interpreter's stream
    /// (a fraction), and its four parts.
    pub error: Option<f64>,
    /// E's false-positive part (reported, not hot).
    pub false_positive: Option<f64>,
    /// E's false-negative part (hot, not reported).
    pub false_negative: Option<f64>,
    /// E's neutral-positive part (hot, reported, over-counted).
    pub neutral_positive: Option<f64>,
    /// E's neutral-negative part (hot, reported, under-counted).
    pub neutral_negative: Option<f64>,
    /// Precision of the candidate sets against perfect's.
    pub precision: Option<f64>,
    /// Recall of the candidate sets against perfect's.
    pub recall: Option<f64>,
    /// The harmonic mean of precision and recall.
    pub f1: Option<f64>,
    /// Modeled hardware state, messages to software and their cycles, in
    /// the timed run.
    pub state_bytes: u64,
    /// Messages the modeled hardware delivered to software.
    pub messages: u64,
    /// The modeled cycles of those messages.
    pub cycles: u64,
    /// Time inside the model in the timed run.
    pub model_seconds: f64,
    /// Time in the JIT's compiler (planning and code generation) in the
    /// timed run.
    #[serde(default)]
    pub compile_seconds: f64,
    /// Profiling intervals the timed run ended.
    pub intervals: u64,
    /// Regions the JIT compiled in the timed run.
    pub compiles: u64,
    /// Of those, compiles of a head compiled before.
    pub recompiles: u64,
    /// Compiled regions dropped.
    pub drops: u64,
    /// Exits off compiled traces.
    pub side_exits: u64,
    /// Exits through failing specialization guards.
    pub guard_failures: u64,
}

impl Row {
    /// A row that has not been measured yet: status ok, no figures.
    pub fn new(program: String, model: String, label: String, spec: String, runs: u64) -> Row {
        Row {
            program,
            model,
            label,
            spec,
            status: Status::Ok,
            detail: None,
            runs,
            median_seconds: None,
            min_seconds: None,
            max_seconds: None,
            speedup_vs_interpreter: None,
            speedup_vs_interpreter_low: None,
            speedup_vs_interpreter_high: None,
            speedup_vs_perfect: None,
            speedup_vs_perfect_low: None,
            speedup_vs_perfect_high: None,
            within_noise: None,
            error: None,
            false_positive: None,
            false_negative: None,
            neutral_positive: None,
            neutral_negative: None,
            precision: None,
            recall: None,
            f1: None,
            state_bytes: 0,
            messages: 0,
            cycles: 0,
            model_seconds: 0.0,
            compile_seconds: 0.0,
            intervals: 0,
            compiles: 0,
            recompiles: 0,
            drops: 0,
            side_exits: 0,
            guard_failures: 0,
        }
    }
}

/// The row's fields in CSV column order (a test checks it matches [`Row`]).
pub const COLUMNS: &[&str] = &[
    "program",
    "model",
    "label",
    "spec",
    "status",
    "detail",
    "runs",
    "median_seconds",
    "min_seconds",
    "max_seconds",
    "speedup_vs_interpreter",
    "speedup_vs_interpreter_low",
    "speedup_vs_interpreter_high",
    "speedup_vs_perfect",
    "speedup_vs_perfect_low",
    "speedup_vs_perfect_high",
    "within_noise",
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
    "cycles",
    "model_seconds",
    "compile_seconds",
    "intervals",
    "compiles",
    "recompiles",
    "drops",
    "side_exits",
    "guard_failures",
];

/// One configuration over every program.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SummaryRow {
    /// The model's name (`none`: the interpreter alone).
    pub model: String,
    /// The configuration as given.
    pub label: String,
    /// The canonical spec.
    pub spec: String,
    /// Programs whose runs all succeeded (the means are over these).
    pub programs: u64,
    /// Programs with a mismatch or an error.
    pub failures: u64,
    /// Geometric means of the speedups.
    pub speedup_vs_interpreter: Option<f64>,
    /// Geometric mean of the speedups over the perfect-profile JIT.
    pub speedup_vs_perfect: Option<f64>,
    /// Arithmetic means over programs.
    pub error: Option<f64>,
    /// Mean precision.
    pub precision: Option<f64>,
    /// Mean recall.
    pub recall: Option<f64>,
    /// The largest state over programs.
    pub state_bytes: u64,
    /// Totals over programs.
    pub messages: u64,
    /// Time inside the model, summed over programs.
    pub model_seconds: f64,
    /// No other hardware model has both less error and less state (the
    /// perfect profiler is the reference, not a candidate: its exact table
    /// grows with the program).
    pub pareto: bool,
}

/// A program as it was run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProgramInfo {
    /// The program's name.
    pub name: String,
    /// Where it was read from.
    pub path: String,
    /// The arguments it ran with.
    pub args: Vec<i64>,
    /// The input file it read, if any.
    pub input: Option<String>,
}

/// How the comparison was run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    /// Timed runs per pair.
    pub repeat: u64,
    /// Benchmark-size arguments (`# bench-args:`) rather than test size.
    pub bench: bool,
    /// Runs side by side (timings are noisier above 1).
    pub jobs: u64,
    /// Which stream error is measured on.
    pub error_stream: String,
}

/// The format version of the JSON report ([`CompareReport::format`]).
pub const REPORT_FORMAT: u32 = 1;

/// A whole comparison.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompareReport {
    /// The JSON report's format version, [`REPORT_FORMAT`] (0 in a
    /// baseline written before reports carried one).
    #[serde(default)]
    pub format: u32,
    /// The toyvm version that measured.
    pub toyvm_version: String,
    /// When it ran (UTC, ISO 8601).
    pub date: String,
    /// The machine it ran on.
    pub machine: Machine,
    /// How it was run.
    pub settings: Settings,
    /// The programs, in row order.
    pub programs: Vec<ProgramInfo>,
    /// Canonical specs in column order (`none` first).
    pub specs: Vec<String>,
    /// One row per (program, configuration).
    pub rows: Vec<Row>,
    /// One row per configuration.
    pub summary: Vec<SummaryRow>,
    /// Pairs that mismatched or failed.
    pub failures: u64,
    /// The changes against `--baseline`, when one was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<BaselineDiff>,
    /// The study of `--synth` workloads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub study: Option<super::study::Study>,
}

/// One interval's error, for `--intervals`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct IntervalPoint {
    /// 0-based interval number.
    pub index: u64,
    /// Tuples in the interval.
    pub tuples: u64,
    /// Error E in the interval (a fraction).
    pub error: f64,
    /// E's false-positive part.
    pub false_positive: f64,
    /// E's false-negative part.
    pub false_negative: f64,
    /// E's neutral-positive part.
    pub neutral_positive: f64,
    /// E's neutral-negative part.
    pub neutral_negative: f64,
}

/// The per-interval error of one (program, model) pair.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct IntervalSeries {
    /// The program's name.
    pub program: String,
    /// The configuration as given.
    pub label: String,
    /// The canonical spec.
    pub spec: String,
    /// One point per interval, in order.
    pub points: Vec<IntervalPoint>,
}

/// A configuration with the name it was given.
#[derive(Clone, Debug)]
pub struct Column {
    /// The name it was given on the command line.
    pub label: String,
    /// What it runs: the interpreter alone, or a model driving the JIT.
    pub config: Config,
}

fn series(case: &str, col: &Column, m: &ModelErrors) -> IntervalSeries {
    IntervalSeries {
        program: case.to_owned(),
        label: col.label.clone(),
        spec: m.spec.clone(),
        points: m.points.clone(),
    }
}

/// Builds the rows from every finished cell (in any order).
pub fn assemble(
    cases: &[Case],
    columns: &[Column],
    done: Vec<Finished>,
) -> (Vec<Row>, Vec<IntervalSeries>) {
    // Errors are the rows' details here: the cells keep their text.
    type Runs = Vec<(usize, Result<TimeOut, String>)>;
    let mut times: HashMap<(usize, usize), Runs> = HashMap::new();
    let mut errors: HashMap<(usize, usize), Result<ModelErrors, String>> = HashMap::new();
    for d in done {
        match d {
            Finished::Time {
                case,
                config,
                rep,
                result,
            } => times.entry((case, config)).or_default().push((rep, result)),
            Finished::Errors { case, result } => match result {
                Ok(models) => {
                    for (config, m) in models {
                        errors.insert((case, config), Ok(m));
                    }
                }
                Err(e) => {
                    for (config, c) in columns.iter().enumerate() {
                        if c.config.spec().is_some() {
                            errors
                                .entry((case, config))
                                .or_insert_with(|| Err(e.clone()));
                        }
                    }
                }
            },
        }
    }
    for runs in times.values_mut() {
        runs.sort_by_key(|r| r.0);
    }
    let interp = columns.iter().position(|c| c.config == Config::Interpreter);
    let mut rows = Vec::new();
    let mut all_series = Vec::new();
    for (ci, case) in cases.iter().enumerate() {
        let runs_of = |k: usize| times.get(&(ci, k)).map_or(&[][..], Vec::as_slice);
        let reference: Result<&TimeOut, String> = match interp.map(runs_of) {
            Some([(_, Ok(t)), ..]) => Ok(t),
            Some([(_, Err(e)), ..]) => Err(format!("the interpreter failed: {e}")),
            _ => Err("the interpreter did not run".to_owned()),
        };
        let mut case_rows: Vec<Row> = Vec::new();
        // Per configuration, each successful run's (round, seconds).
        let mut case_secs: Vec<Vec<(usize, f64)>> = Vec::new();
        for (k, col) in columns.iter().enumerate() {
            case_secs.push(Vec::new());
            let runs = runs_of(k);
            let mut row = Row::new(
                case.name.clone(),
                col.config.model_name().to_owned(),
                col.label.clone(),
                col.config.spec_string(),
                runs.len() as u64,
            );
            let failed = runs.iter().find_map(|(_, r)| r.as_ref().err());
            match (&reference, failed) {
                (_, Some(e)) => {
                    row.status = Status::Error;
                    row.detail = Some(e.clone());
                }
                (Err(e), None) => {
                    row.status = Status::Error;
                    row.detail = Some(e.clone());
                }
                (Ok(want), None) => {
                    let ok: Vec<&TimeOut> =
                        runs.iter().filter_map(|(_, r)| r.as_ref().ok()).collect();
                    let bad = ok
                        .iter()
                        .filter(|t| {
                            (t.output_hash, t.output_len, t.value)
                                != (want.output_hash, want.output_len, want.value)
                        })
                        .count();
                    if bad > 0 {
                        row.status = Status::Mismatch;
                        row.detail = Some(format!(
                            "output or result differs from the interpreter's in {bad} of {} runs",
                            ok.len()
                        ));
                    } else if ok.is_empty() {
                        row.status = Status::Error;
                        row.detail = Some("no run".to_owned());
                    }
                    // Stats of the run nearest the median (runs are
                    // deterministic, so only the timings differ).
                    let secs: Vec<f64> = ok.iter().map(|t| t.wall_s).collect();
                    let med = median(&secs);
                    if let Some(t) = ok
                        .iter()
                        .min_by(|a, b| (a.wall_s - med).abs().total_cmp(&(b.wall_s - med).abs()))
                    {
                        row.state_bytes = t.state_bytes;
                        row.messages = t.messages;
                        row.cycles = t.cycles;
                        row.model_seconds = t.model_s;
                        row.intervals = t.intervals;
                        if let Some(j) = &t.jit {
                            row.compile_seconds = j.compile_s;
                            row.compiles = j.compiles;
                            row.recompiles = j.recompiles;
                            row.drops = j.drops;
                            row.side_exits = j.side_exits;
                            row.guard_failures = j.guard_failures;
                        }
                    }
                    if row.status == Status::Ok {
                        case_secs[k] = runs
                            .iter()
                            .filter_map(|(rep, r)| Some((*rep, r.as_ref().ok()?.wall_s)))
                            .collect();
                        row.median_seconds = Some(med);
                        row.min_seconds = secs.iter().copied().reduce(f64::min);
                        row.max_seconds = secs.iter().copied().reduce(f64::max);
                    }
                }
            }
            match errors.get(&(ci, k)) {
                Some(Ok(m)) => {
                    let s = m;
                    row.error = Some(s.error);
                    row.false_positive = Some(s.false_positive);
                    row.false_negative = Some(s.false_negative);
                    row.neutral_positive = Some(s.neutral_positive);
                    row.neutral_negative = Some(s.neutral_negative);
                    row.precision = Some(s.precision);
                    row.recall = Some(s.recall);
                    row.f1 = Some(s.f1);
                    all_series.push(series(&case.name, col, m));
                }
                Some(Err(e)) => {
                    if row.status == Status::Ok {
                        row.status = Status::Error;
                    }
                    let d = format!("error pass: {e}");
                    row.detail = Some(match row.detail.take() {
                        Some(x) => format!("{x}; {d}"),
                        None => d,
                    });
                }
                None => {}
            }
            case_rows.push(row);
        }
        let interp_time = interp.and_then(|k| case_rows[k].median_seconds);
        let perfect_column = |spec: &Config| -> Option<usize> {
            let oracle = spec.spec()?.oracle().to_string();
            columns
                .iter()
                .position(|c| c.config.spec_string() == oracle)
                .or_else(|| {
                    columns
                        .iter()
                        .position(|c| c.config.model_name() == "perfect")
                })
        };
        let perfect: Vec<Option<usize>> =
            columns.iter().map(|c| perfect_column(&c.config)).collect();
        let medians: Vec<Option<f64>> = case_rows.iter().map(|r| r.median_seconds).collect();
        for (k, row) in case_rows.iter_mut().enumerate() {
            if let Some(t) = row.median_seconds.filter(|t| *t > 0.0) {
                row.speedup_vs_interpreter = interp_time.map(|i| i / t);
                if let Some(i) = interp.filter(|&i| i != k) {
                    let (lo, hi, _) = noise_against(&case_secs[k], &case_secs[i]);
                    (
                        row.speedup_vs_interpreter_low,
                        row.speedup_vs_interpreter_high,
                    ) = (lo, hi);
                }
                let Some(p) = perfect[k] else { continue };
                row.speedup_vs_perfect = medians[p].map(|m| m / t);
                if p != k {
                    let noise = noise_against(&case_secs[k], &case_secs[p]);
                    (
                        row.speedup_vs_perfect_low,
                        row.speedup_vs_perfect_high,
                        row.within_noise,
                    ) = noise;
                }
            }
        }
        rows.extend(case_rows);
    }
    (rows, all_series)
}

/// The per-round ratio range of `reference` time over `mine` (rounds both
/// ran), and whether the two sets of times overlap (min-max): a difference
/// that run-to-run noise could explain.
pub fn noise_against(
    mine: &[(usize, f64)],
    reference: &[(usize, f64)],
) -> (Option<f64>, Option<f64>, Option<bool>) {
    let ratios: Vec<f64> = mine
        .iter()
        .filter_map(|(rep, t)| {
            let (_, p) = reference.iter().find(|(r, _)| r == rep)?;
            (*t > 0.0).then(|| p / t)
        })
        .collect();
    let lo = ratios.iter().copied().reduce(f64::min);
    let hi = ratios.iter().copied().reduce(f64::max);
    let span = |xs: &[(usize, f64)]| {
        let lo = xs.iter().map(|x| x.1).reduce(f64::min)?;
        let hi = xs.iter().map(|x| x.1).reduce(f64::max)?;
        Some((lo, hi))
    };
    let overlap = span(mine)
        .zip(span(reference))
        .map(|((a, b), (c, d))| a <= d && c <= b);
    (lo, hi, overlap)
}

/// Marks the points no other point dominates, both coordinates minimized:
/// `q` dominates `p` when it is no worse in both and better in one.
pub fn pareto_front(points: &[(f64, f64)]) -> Vec<bool> {
    points
        .iter()
        .map(|p| {
            !points
                .iter()
                .any(|q| q.0 <= p.0 && q.1 <= p.1 && (q.0 < p.0 || q.1 < p.1))
        })
        .collect()
}

fn geomean(xs: &[f64]) -> Option<f64> {
    (!xs.is_empty()).then(|| (xs.iter().map(|x| x.ln()).sum::<f64>() / xs.len() as f64).exp())
}

fn mean(xs: &[f64]) -> Option<f64> {
    (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
}

/// One summary row per configuration, Pareto-marked on (mean error, state
/// bytes) among the hardware models.
pub fn summarize(columns: &[Column], rows: &[Row]) -> Vec<SummaryRow> {
    let mut out: Vec<SummaryRow> = columns
        .iter()
        .map(|c| {
            let spec = c.config.spec_string();
            let mine: Vec<&Row> = rows.iter().filter(|r| r.spec == spec).collect();
            let ok: Vec<&&Row> = mine.iter().filter(|r| r.status == Status::Ok).collect();
            let collect = |f: fn(&Row) -> Option<f64>| -> Vec<f64> {
                ok.iter().filter_map(|r| f(r)).collect()
            };
            SummaryRow {
                model: c.config.model_name().to_owned(),
                label: c.label.clone(),
                spec,
                programs: ok.len() as u64,
                failures: (mine.len() - ok.len()) as u64,
                speedup_vs_interpreter: geomean(&collect(|r| r.speedup_vs_interpreter)),
                speedup_vs_perfect: geomean(&collect(|r| r.speedup_vs_perfect)),
                error: mean(&collect(|r| r.error)),
                precision: mean(&collect(|r| r.precision)),
                recall: mean(&collect(|r| r.recall)),
                state_bytes: ok.iter().map(|r| r.state_bytes).max().unwrap_or(0),
                messages: ok.iter().map(|r| r.messages).sum(),
                model_seconds: ok.iter().map(|r| r.model_seconds).sum(),
                pareto: false,
            }
        })
        .collect();
    let candidates: Vec<usize> = (0..out.len())
        .filter(|&i| out[i].error.is_some() && !matches!(out[i].model.as_str(), "none" | "perfect"))
        .collect();
    let points: Vec<(f64, f64)> = candidates
        .iter()
        .map(|&i| (out[i].error.unwrap_or(0.0), out[i].state_bytes as f64))
        .collect();
    for (&i, p) in candidates.iter().zip(pareto_front(&points)) {
        out[i].pareto = p;
    }
    out
}

/// The programs as they were run.
pub fn programs(cases: &[Case]) -> Vec<ProgramInfo> {
    cases
        .iter()
        .map(|c| ProgramInfo {
            name: c.name.clone(),
            path: c.path.display().to_string(),
            args: c.args.clone(),
            input: c.input_path.as_ref().map(|p| p.display().to_string()),
        })
        .collect()
}

pub use super::baseline::{BaselineDiff, Change, diff};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pareto_keeps_the_undominated_points() {
        let pts = [
            (0.10, 1000.0), // dominated by (0.05, 800)
            (0.05, 800.0),
            (0.01, 4000.0),
            (0.20, 100.0),
            (0.05, 800.0), // a tie dominates neither copy
            (0.30, 100.0), // dominated by (0.20, 100): same state, more error
        ];
        assert_eq!(pareto_front(&pts), [false, true, true, true, true, false]);
        assert!(pareto_front(&[]).is_empty());
    }

    #[test]
    fn noise_is_overlapping_spreads_and_ratios_are_per_round() {
        let perfect = [(0, 1.0), (1, 1.2), (2, 1.1)];
        // Slower in every round, spreads apart: a real difference.
        let slow = [(0, 2.0), (1, 2.2), (2, 1.9)];
        let (lo, hi, noise) = noise_against(&slow, &perfect);
        assert_eq!(noise, Some(false));
        assert!((lo.unwrap() - 0.5).abs() < 1e-12, "{lo:?}");
        assert!((hi.unwrap() - 1.1 / 1.9).abs() < 1e-12, "{hi:?}");
        // Spreads overlap: within noise, even with a lower median.
        let near = [(0, 1.15), (1, 1.3), (2, 1.25)];
        assert_eq!(noise_against(&near, &perfect).2, Some(true));
        // A round only one of them ran gives no ratio.
        let (lo, hi, _) = noise_against(&[(5, 1.0)], &perfect);
        assert_eq!((lo, hi), (None, None));
        assert_eq!(noise_against(&[], &perfect), (None, None, None));
    }

    #[test]
    fn columns_name_every_field_of_a_row() {
        let mut row = Row::new("p".into(), "none".into(), "none".into(), "none".into(), 1);
        row.median_seconds = Some(1.0);
        let v = serde_json::to_value(&row).unwrap();
        let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        let mut cols = COLUMNS.to_vec();
        keys.sort_unstable();
        cols.sort_unstable();
        assert_eq!(keys, cols);
    }
}
