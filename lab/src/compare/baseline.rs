//! `--baseline OLD.json`: what changed since an earlier report, and whether
//! the two can be compared at all.
//!
//! A baseline taken at other sizes (test against `--bench`, or a program
//! run with other arguments or input) is refused before any run: its times
//! measure other work. One whose configuration specs, machine or repeat
//! count differ is compared, with a warning in the report and on standard
//! error for each difference, and the changed specs marked on their rows.

use std::path::Path;

use super::error::{Error, Result, SizeChange};
use super::report::{BaselineDiff, Change, CompareReport, ProgramInfo};

/// A program's arguments and input file name, as the sizes to compare.
fn size_of(p: &ProgramInfo) -> String {
    let args: Vec<String> = p.args.iter().map(i64::to_string).collect();
    let input = p
        .input
        .as_deref()
        .map(|i| {
            let name = Path::new(i)
                .file_name()
                .map_or_else(|| i.to_owned(), |n| n.to_string_lossy().into_owned());
            format!(" --input {name}")
        })
        .unwrap_or_default();
    format!("({}){input}", args.join(" "))
}

/// Refuses a baseline whose runs did other work: other sizes, or a program
/// of the same name run with other arguments or input.
pub fn check_sizes(
    old: &CompareReport,
    file: &str,
    bench: bool,
    programs: &[ProgramInfo],
) -> Result<()> {
    if old.settings.bench != bench {
        return Err(Error::BaselineSizes {
            file: file.to_owned(),
            baseline_bench: old.settings.bench,
            bench,
        });
    }
    let differ: Vec<SizeChange> = programs
        .iter()
        .filter_map(|p| {
            let o = old.programs.iter().find(|o| o.name == p.name)?;
            let (baseline, now) = (size_of(o), size_of(p));
            (baseline != now).then(|| SizeChange {
                program: p.name.clone(),
                baseline,
                now,
            })
        })
        .collect();
    if !differ.is_empty() {
        return Err(Error::BaselinePrograms {
            file: file.to_owned(),
            programs: differ,
        });
    }
    Ok(())
}

/// What differs between the two runs besides the code and the sizes.
fn warnings(before: &CompareReport, after: &CompareReport, changes: &[Change]) -> Vec<String> {
    let mut w = Vec::new();
    let mut respecified: Vec<(&str, &str, &str)> = Vec::new();
    for c in changes {
        if let Some(old) = &c.spec_before
            && !respecified.iter().any(|r| r.0 == c.label)
        {
            respecified.push((&c.label, old, &c.spec));
        }
    }
    for (label, old, new) in respecified {
        w.push(format!(
            "`{label}` is another configuration than in the baseline ({old} there, {new} here): \
             its changes mix the spec change with the code's"
        ));
    }
    let (m0, m1) = (&before.machine, &after.machine);
    if m0 != m1 {
        let show = |m: &super::meta::Machine| {
            format!(
                "{} cores, {}, {}/{}",
                m.cores,
                m.cpu.as_deref().unwrap_or("unknown CPU"),
                m.os,
                m.arch
            )
        };
        w.push(format!(
            "the baseline ran on another machine ({} there, {} here): speed changes mix the machines",
            show(m0),
            show(m1)
        ));
    }
    if before.settings.repeat != after.settings.repeat {
        w.push(format!(
            "the baseline took medians of {} runs, this run of {}",
            before.settings.repeat, after.settings.repeat
        ));
    }
    if before.settings.jobs != after.settings.jobs {
        w.push(format!(
            "the baseline ran {} runs side by side, this run {}: timings are noisier above 1",
            before.settings.jobs, after.settings.jobs
        ));
    }
    w
}

/// Matches pairs by program and canonical spec (or, when the spec's
/// defaults changed, by program and label) and reports what moved, with
/// [`BaselineDiff::warnings`] for everything else that differs.
pub fn diff(before: &CompareReport, after: &CompareReport, file: &str) -> BaselineDiff {
    let mut used = vec![false; before.rows.len()];
    let mut changes = Vec::new();
    for r in &after.rows {
        let found = before
            .rows
            .iter()
            .position(|b| b.program == r.program && b.spec == r.spec)
            .or_else(|| {
                before
                    .rows
                    .iter()
                    .enumerate()
                    .position(|(i, b)| !used[i] && b.program == r.program && b.label == r.label)
            });
        let Some(i) = found else { continue };
        used[i] = true;
        let b = &before.rows[i];
        let both = |x: Option<f64>, y: Option<f64>| x.zip(y);
        changes.push(Change {
            program: r.program.clone(),
            label: r.label.clone(),
            spec: r.spec.clone(),
            spec_before: (b.spec != r.spec).then(|| b.spec.clone()),
            status_before: b.status,
            status_after: r.status,
            speedup_before: b.speedup_vs_interpreter,
            speedup_after: r.speedup_vs_interpreter,
            speedup_change_percent: both(b.speedup_vs_interpreter, r.speedup_vs_interpreter)
                .map(|(x, y)| (y / x - 1.0) * 100.0),
            error_before: b.error,
            error_after: r.error,
            error_change_points: both(b.error, r.error).map(|(x, y)| (y - x) * 100.0),
        });
    }
    let matched = used.iter().filter(|u| **u).count() as u64;
    BaselineDiff {
        file: file.to_owned(),
        toyvm_version: before.toyvm_version.clone(),
        date: before.date.clone(),
        only_before: before.rows.len() as u64 - matched,
        only_after: after.rows.len() as u64 - changes.len() as u64,
        warnings: warnings(before, after, &changes),
        changes,
    }
}
