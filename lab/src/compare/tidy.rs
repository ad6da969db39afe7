//! Tidy data (`--tidy FILE.csv`): one row per timed run, with its raw
//! timings, units in the column names, and the run's metadata beside it in
//! `FILE.csv.meta.json`.
//!
//! Times are in seconds (`_s`), errors in percent (`_pct`, the unit of the
//! table's `E %`; the report's JSON and CSV give `error` as a fraction).
//! Each row also carries its pair's error figures, which come from the
//! program's one error pass (the same in every round).

use std::collections::HashMap;
use std::fmt::Write as _;

use serde::Serialize;

use super::Comparison;
use super::cells::{Finished, ModelErrors, TimeOut};

/// The version of the tidy format (columns and metadata).
pub const FORMAT_VERSION: u32 = 1;

/// The columns, in order, with what each holds.
pub const COLUMNS: &[(&str, &str)] = &[
    ("program", "the program's name"),
    ("config", "the configuration as given"),
    ("spec", "its canonical spec"),
    ("round", "the round of --repeat, from 1"),
    (
        "status",
        "ok; mismatch: output or result differs from the interpreter's; error: the run failed",
    ),
    ("wall_s", "wall time of the run, seconds"),
    ("model_s", "time inside the profiler model, seconds"),
    (
        "compile_s",
        "time in the JIT's planner and compiler, seconds",
    ),
    ("state_bytes", "the model's modeled hardware state, bytes"),
    ("messages", "messages to software"),
    ("cycles", "their modeled cycles"),
    ("intervals", "intervals the model ended"),
    ("compiles", "regions the JIT compiled"),
    ("recompiles", "of those, compiled again"),
    ("side_exits", "exits off compiled code"),
    ("guard_failures", "failing specialization guards"),
    (
        "error_pct",
        "E against the perfect profiler on the interpreter's stream, percent (the table's E %)",
    ),
    ("false_positive_pct", "E's false-positive part, percent"),
    ("false_negative_pct", "E's false-negative part, percent"),
    ("neutral_positive_pct", "E's neutral-positive part, percent"),
    ("neutral_negative_pct", "E's neutral-negative part, percent"),
    ("precision", "precision of the candidates, 0 to 1"),
    ("recall", "recall of the candidates, 0 to 1"),
    ("detail", "why a run failed or mismatched"),
];

fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

/// The CSV: a header line of [`COLUMNS`], then one line per timed run in
/// program, round, configuration order.
pub fn csv(c: &Comparison) -> String {
    let mut runs: Vec<(usize, usize, usize, &Result<TimeOut, String>)> = Vec::new();
    let mut errors: HashMap<(usize, usize), Result<&ModelErrors, &str>> = HashMap::new();
    for f in &c.cells {
        match f {
            Finished::Time {
                case,
                config,
                rep,
                result,
            } => runs.push((*case, *rep, *config, result)),
            Finished::Errors { case, result } => match result {
                Ok(ms) => {
                    for (k, m) in ms {
                        errors.insert((*case, *k), Ok(m));
                    }
                }
                Err(e) => {
                    for (k, col) in c.columns.iter().enumerate() {
                        if col.config.spec().is_some() {
                            errors.insert((*case, k), Err(e.as_str()));
                        }
                    }
                }
            },
        }
    }
    runs.sort_by_key(|r| (r.0, r.1, r.2));
    let interp = c
        .columns
        .iter()
        .position(|col| col.config == super::specs::Choice::None);
    let reference = |case: usize| {
        runs.iter()
            .filter(|r| r.0 == case && Some(r.2) == interp)
            .find_map(|r| r.3.as_ref().ok())
    };
    let names: Vec<&str> = COLUMNS.iter().map(|c| c.0).collect();
    let mut out = names.join(",") + "\n";
    for &(case, rep, k, result) in &runs {
        let col = &c.columns[k];
        let mut cells: Vec<String> = vec![
            field(&c.report.programs[case].name),
            field(&col.label),
            field(&col.config.spec_string()),
            (rep + 1).to_string(),
        ];
        let mut detail = String::new();
        match result {
            Ok(t) => {
                let want = reference(case);
                let same = want.is_some_and(|w| {
                    (w.output_hash, w.output_len, w.value) == (t.output_hash, t.output_len, t.value)
                });
                cells.push(if same { "ok" } else { "mismatch" }.into());
                if !same {
                    detail = "output or result differs from the interpreter's".into();
                }
                let j = t.jit.as_ref();
                for v in [
                    t.wall_s.to_string(),
                    t.model_s.to_string(),
                    j.map_or(String::new(), |j| j.compile_s.to_string()),
                    t.state_bytes.to_string(),
                    t.messages.to_string(),
                    t.cycles.to_string(),
                    t.intervals.to_string(),
                    j.map_or(String::new(), |j| j.compiles.to_string()),
                    j.map_or(String::new(), |j| j.recompiles.to_string()),
                    j.map_or(String::new(), |j| j.side_exits.to_string()),
                    j.map_or(String::new(), |j| j.guard_failures.to_string()),
                ] {
                    cells.push(v);
                }
            }
            Err(e) => {
                cells.push("error".into());
                cells.extend(std::iter::repeat_n(String::new(), 11));
                detail = e.clone();
            }
        }
        match errors.get(&(case, k)) {
            Some(Ok(m)) => {
                for x in [
                    m.error,
                    m.false_positive,
                    m.false_negative,
                    m.neutral_positive,
                    m.neutral_negative,
                ] {
                    cells.push((100.0 * x).to_string());
                }
                cells.push(m.precision.to_string());
                cells.push(m.recall.to_string());
            }
            other => {
                cells.extend(std::iter::repeat_n(String::new(), 7));
                if let Some(Err(e)) = other {
                    if !detail.is_empty() {
                        detail.push_str("; ");
                    }
                    let _ = write!(detail, "error pass: {e}");
                }
            }
        }
        cells.push(field(&detail));
        out.push_str(&cells.join(","));
        out.push('\n');
    }
    out
}

/// Where the metadata of the tidy file `path` goes: `path` + `.meta.json`.
pub fn meta_path(path: &std::path::Path) -> std::path::PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".meta.json");
    s.into()
}

#[derive(Serialize)]
struct Meta<'a> {
    format: &'static str,
    format_version: u32,
    date: &'a str,
    machine: &'a super::meta::Machine,
    toyvm_version: &'a str,
    bench: bool,
    repeat: u64,
    jobs: u64,
    programs: &'a [super::report::ProgramInfo],
    columns: Vec<Column<'a>>,
}

#[derive(Serialize)]
struct Column<'a> {
    name: &'a str,
    description: &'a str,
}

/// The metadata: format and version, date, machine, toyvm version,
/// `--bench`, `--repeat`, `--jobs`, the programs with their arguments, and
/// every column with its unit.
pub fn meta(c: &Comparison) -> String {
    let r = &c.report;
    let m = Meta {
        format: "toyvm-tidy",
        format_version: FORMAT_VERSION,
        date: &r.date,
        machine: &r.machine,
        toyvm_version: &r.toyvm_version,
        bench: r.settings.bench,
        repeat: r.settings.repeat,
        jobs: r.settings.jobs,
        programs: &r.programs,
        columns: COLUMNS
            .iter()
            .map(|(name, description)| Column { name, description })
            .collect(),
    };
    serde_json::to_string_pretty(&m).unwrap_or_default() + "\n"
}
