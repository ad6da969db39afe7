//! REPORT.md: what was run, where, at which sizes, and one row per figure.

use std::fmt::Write as _;

use super::streams::Ctx;
use super::{Row, Verdict};

/// The machine in one line: cores, OS, CPU model (when readable).
fn machine() -> String {
    let cores = toyvm::runtime::cores();
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".to_owned());
    format!(
        "{cores} cores, {} {}, {cpu}",
        std::env::consts::OS,
        std::env::consts::ARCH
    )
}

/// Cells of a markdown table cannot hold `|` or newlines.
fn cell(s: &str) -> String {
    s.replace('|', "/").replace('\n', " ")
}

/// The summary table (also printed on stdout).
pub fn summary_table(rows: &[Row]) -> String {
    let mut t =
        String::from("| figure | the paper's claim | our figure | verdict |\n|---|---|---|---|\n");
    for r in rows {
        let _ = writeln!(
            t,
            "| {} | {} | {} | {} |",
            r.id,
            cell(r.claim),
            cell(&r.outcome.ours),
            cell(&r.outcome.verdict.text())
        );
    }
    t
}

/// The whole report. The body (everything below the header's timing and
/// machine lines) depends only on the sizes, seeds and traces.
pub fn markdown(rows: &[Row], ctx: &Ctx, seconds: f64) -> String {
    let s = &ctx.sizes;
    let mut t = String::from("# toyvm reproduce\n\n");
    let _ = writeln!(t, "- toyvm {}", env!("CARGO_PKG_VERSION"));
    let _ = writeln!(t, "- machine: {}", machine());
    let _ = writeln!(t, "- duration: {seconds:.1} s");
    let _ = writeln!(
        t,
        "- sizes: {} (short setting {} tuples per interval at 1%, long setting {}; {} intervals per stream; {} Monte Carlo trials)",
        if s.quick { "--quick" } else { "full" },
        s.short,
        s.long_words(),
        s.intervals,
        s.trials
    );
    let names = |v: &[super::streams::Source]| {
        v.iter()
            .map(|x| format!("{} ({} tuples)", x.name, x.len))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = writeln!(t, "- value streams: {}", names(&ctx.values));
    let _ = writeln!(t, "- edge streams: {}", names(&ctx.edges));
    let _ = writeln!(t, "- mixed streams: {}", names(&ctx.mixed));
    let _ = writeln!(
        t,
        "- seeds: fixed (streams 11-13, workload 7, models seed=1)\n"
    );
    let (holds, differs) = rows
        .iter()
        .fold((0, 0), |(h, d), r| match r.outcome.verdict {
            Verdict::Holds => (h + 1, d),
            Verdict::Differs(_) => (h, d + 1),
            Verdict::NotApplicable(_) => (h, d),
        });
    let _ = writeln!(
        t,
        "{} figures: {holds} hold, {differs} differ, {} not applicable.\n",
        rows.len(),
        rows.len() - holds - differs
    );
    t.push_str(&summary_table(rows));
    for r in rows {
        let _ = writeln!(t, "\n## {}\n\n{}\n", r.id, r.claim);
        let _ = writeln!(
            t,
            "Our figure: {}\n\nVerdict: {}\n",
            r.outcome.ours,
            r.outcome.verdict.text()
        );
        if r.outcome.chart.is_some() {
            let _ = writeln!(t, "![{}]({}.svg)\n", r.id, r.id);
        }
        t.push_str(&r.outcome.detail);
        t.push('\n');
    }
    t
}
