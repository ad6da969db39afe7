//! Building a report's tables from finished cells: the rows and interval
//! series from every cell, then the study's points from the rows. Above
//! the report's and the study's types (`report`, `study`), which know
//! nothing of cells.

use std::collections::HashMap;

use super::cells::{Finished, ModelErrors, TimeOut};
use super::measure::median;
use super::report::{Column, IntervalSeries, Row, Status, noise_against};
use super::specs::Choice;
use super::study::{DESCRIBE_INTERVAL, DESCRIBE_THRESHOLD, Study, StudyPoint, Workload};
use super::suite::Case;

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
    let interp = columns.iter().position(|c| c.config == Choice::None);
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
        let perfect_column = |spec: &Choice| -> Option<usize> {
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

/// The study's points: every model row on a workload.
pub fn study(workloads: Vec<Workload>, columns: &[Column], rows: &[Row]) -> Study {
    let mut points = Vec::new();
    for w in &workloads {
        for c in columns {
            let Some(spec) = c.config.spec() else {
                continue;
            };
            if c.config.model_name() == "perfect" {
                continue;
            }
            let canonical = c.config.spec_string();
            let Some(r) = rows
                .iter()
                .find(|r| r.program == w.name && r.spec == canonical)
            else {
                continue;
            };
            let capacity = spec.model.capacity(spec.interval);
            let ok = r.status == Status::Ok;
            points.push(StudyPoint {
                workload: w.name.clone(),
                label: c.label.clone(),
                spec: canonical,
                capacity,
                load: capacity.map(|c| w.distinct_per_interval / c as f64),
                error: r.error,
                false_positive: r.false_positive,
                false_negative: r.false_negative,
                speedup_vs_perfect: r.speedup_vs_perfect.filter(|_| ok),
                speedup_vs_perfect_low: r.speedup_vs_perfect_low.filter(|_| ok),
                speedup_vs_perfect_high: r.speedup_vs_perfect_high.filter(|_| ok),
                within_noise: r.within_noise.filter(|_| ok),
                state_bytes: r.state_bytes,
                compiles: r.compiles,
                side_exits: r.side_exits,
                guard_failures: r.guard_failures,
            });
        }
    }
    Study {
        interval: DESCRIBE_INTERVAL,
        threshold: DESCRIBE_THRESHOLD,
        workloads,
        points,
    }
}
