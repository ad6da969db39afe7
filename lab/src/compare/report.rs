//! The comparison's results: one row per (program, configuration), a
//! summary per configuration with its Pareto mark, what a report records to
//! be reproduced, and the changes against an earlier report.

use serde::{Deserialize, Serialize};

use super::meta::Machine;
use super::specs::Choice;
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
    pub config: Choice,
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
        .filter(|&i| {
            out[i].error.is_some()
                && !matches!(
                    out[i].model.as_str(),
                    toyvm_profiler::spec::NONE | "perfect"
                )
        })
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

// What changed since a baseline report (`--baseline`; computed by
// `baseline::diff`).
/// One pair against an earlier report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Change {
    /// The program's name.
    pub program: String,
    /// The configuration as given in the new report (`multihash:tables=2`).
    pub label: String,
    /// The new report's canonical spec (every key).
    pub spec: String,
    /// The baseline's spec when it differs from `spec` (the pair was
    /// matched by its label): the change mixes a spec change in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_before: Option<String>,
    /// How the pair's runs went in the baseline.
    pub status_before: Status,
    /// How the pair's runs went now.
    pub status_after: Status,
    /// The baseline's speedup over the interpreter (interpreter time over
    /// this time); absent when that pair failed.
    pub speedup_before: Option<f64>,
    /// The speedup over the interpreter now; absent when the pair failed.
    pub speedup_after: Option<f64>,
    /// Relative change of the speedup over the interpreter, in percent.
    pub speedup_change_percent: Option<f64>,
    /// The baseline's error E against the perfect profiler (a fraction);
    /// absent when that pair's error was not measured.
    pub error_before: Option<f64>,
    /// Error E now (a fraction); absent when it was not measured.
    pub error_after: Option<f64>,
    /// Change of E in percentage points.
    pub error_change_points: Option<f64>,
}

/// What changed since an earlier report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BaselineDiff {
    /// The baseline report's path, as given to `--baseline`.
    pub file: String,
    /// The toyvm version that wrote the baseline.
    pub toyvm_version: String,
    /// When the baseline was taken (its report's date).
    pub date: String,
    /// One entry per pair both reports have, in the new report's row order.
    pub changes: Vec<Change>,
    /// Pairs only the baseline has (dropped programs or configurations).
    pub only_before: u64,
    /// Pairs only the new report has (added programs or configurations).
    pub only_after: u64,
    /// What differs between the two runs besides the code: specs, machine,
    /// repeat count. Each makes the changes less about the code.
    #[serde(default)]
    pub warnings: Vec<String>,
}

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
