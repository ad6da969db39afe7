//! A report as a readable table, Markdown, CSV or JSON, and the
//! per-interval series as CSV.

use std::fmt::Write as _;

use super::report::{COLUMNS, CompareReport, IntervalSeries, Row, Status, SummaryRow};

fn pct(x: Option<f64>) -> String {
    x.map_or_else(|| "-".to_owned(), |x| format!("{:.2}", 100.0 * x))
}

fn times(x: Option<f64>) -> String {
    x.map_or_else(|| "-".to_owned(), |x| format!("{x:.2}x"))
}

fn ms(x: Option<f64>) -> String {
    x.map_or_else(|| "-".to_owned(), |x| format!("{:.2}", x * 1e3))
}

/// Numbers in one cell with thousands kept readable.
fn count(n: u64) -> String {
    if n >= 10_000_000 {
        format!("{:.1}M", n as f64 / 1e6)
    } else if n >= 100_000 {
        format!("{:.0}k", n as f64 / 1e3)
    } else {
        n.to_string()
    }
}

const ROW_HEAD: &[&str] = &[
    "program",
    "config",
    "ms",
    "x interp",
    "x perfect",
    "E %",
    "fp/fn/np/nn %",
    "P/R",
    "state B",
    "msgs",
    "cycles",
    "model ms",
    "jit ms",
    "jit c/r/x",
    "status",
];

/// Speedup relative to perfect, with the per-round range when the runs
/// give one and `≈` when the pair is within run-to-run noise of perfect.
fn perfect_cell(r: &Row) -> String {
    let Some(x) = r.speedup_vs_perfect else {
        return "-".to_owned();
    };
    let mut s = format!("{x:.2}x");
    if let (Some(lo), Some(hi)) = (r.speedup_vs_perfect_low, r.speedup_vs_perfect_high)
        && r.runs > 1
    {
        let _ = write!(s, " [{lo:.2}-{hi:.2}]");
    }
    if r.within_noise == Some(true) {
        s.push('≈');
    }
    s
}

fn row_cells(r: &Row) -> Vec<String> {
    let parts = match (
        r.false_positive,
        r.false_negative,
        r.neutral_positive,
        r.neutral_negative,
    ) {
        (Some(a), Some(b), Some(c), Some(d)) => format!(
            "{:.1}/{:.1}/{:.1}/{:.1}",
            100.0 * a,
            100.0 * b,
            100.0 * c,
            100.0 * d
        ),
        _ => "-".to_owned(),
    };
    let pr = match (r.precision, r.recall) {
        (Some(p), Some(q)) => format!("{p:.2}/{q:.2}"),
        _ => "-".to_owned(),
    };
    let model = !toyvm_profiler::spec::is_none(&r.model);
    vec![
        r.program.clone(),
        r.label.clone(),
        ms(r.median_seconds),
        times(r.speedup_vs_interpreter),
        perfect_cell(r),
        pct(r.error),
        parts,
        pr,
        if model {
            count(r.state_bytes)
        } else {
            "-".into()
        },
        if model { count(r.messages) } else { "-".into() },
        if model { count(r.cycles) } else { "-".into() },
        if model {
            format!("{:.2}", r.model_seconds * 1e3)
        } else {
            "-".into()
        },
        if model {
            format!("{:.2}", r.compile_seconds * 1e3)
        } else {
            "-".into()
        },
        if model {
            format!("{}/{}/{}", r.compiles, r.recompiles, count(r.side_exits))
        } else {
            "-".into()
        },
        r.status.word().to_owned(),
    ]
}

/// What the `x perfect` column's range and mark mean.
const NOISE_NOTE: &str = "x perfect: median ratio [smallest-largest per-round ratio]; ≈: the pair's run times overlap perfect's (min-max), a difference within run-to-run noise";

/// Every column and term of the report (`toyvm compare --help` prints
/// it; the README's `compare` section says the same).
pub const TERMS: &str = "\
Columns (one row per program and configuration):

  ms             median wall time of the --repeat timed runs
  x interp       the interpreter's (none) median time over this one's: the
                 speedup the model's JIT buys
  x perfect      the perfect-profile JIT's median time over this one's;
                 [lo-hi] is the smallest and largest ratio within one round
                 (each round runs every configuration once, so a round's
                 runs met the same machine); ≈ marks a pair whose run times
                 overlap perfect's (min to max): run-to-run noise can
                 explain the difference
  E %            profile error against the perfect profiler (multi-hash
                 paper, formula 1): per interval, the sum over tuples either
                 reports of |exact count - reported count| over the sum of
                 their exact counts, averaged over intervals. Measured on
                 the interpreter's tuple stream (JIT off), the same for
                 every model
                 (percent here; the JSON and CSV reports' `error` and
                 its parts are fractions, 0.01 = 1%; --tidy's error_pct
                 is percent)
  fp/fn/np/nn %  E's four parts, which add up to E: false positives
                 (reported, not hot), false negatives (hot, not reported),
                 neutral positive (hot and reported, over-counted) and
                 neutral negative (hot and reported, under-counted)
  P/R            precision and recall of the model's candidates against
                 perfect's, summed over intervals
  state B        the model's modeled hardware state in bytes
  msgs, cycles   messages the hardware model delivers to software, and
                 their modeled cost (30 cycles each)
  model ms       wall time inside the model in the timed run
  jit ms         wall time in the JIT's planner and compiler in the timed run
  jit c/r/x      the JIT's compiles / recompiles / side exits (exits from
                 compiled code back to the interpreter) in the timed run
  status         ok; MISMATCH: output or result differs from the
                 interpreter's (never timed); ERROR: a run failed

The summary per configuration: geometric means of the speedups, means of
E and P/R, the largest state, total messages and model time; * (pareto):
no other hardware model has both less mean E and less state.

Sizes: without --bench every program runs at its test size (`# args:`),
runs of a millisecond or so that check each configuration computes what
the interpreter does; their times are too short to compare. --bench runs
`# bench-args:` sizes. A --baseline taken at other sizes is refused; one
whose specs or machine differ is compared with a warning.

Progress: a bar on a terminal; otherwise one line per finished pair on
standard error.
";

const SUMMARY_HEAD: &[&str] = &[
    "config",
    "programs",
    "x interp (geomean)",
    "x perfect (geomean)",
    "mean E %",
    "mean P/R",
    "state B (max)",
    "msgs (sum)",
    "model ms (sum)",
    "pareto",
];

fn summary_cells(s: &SummaryRow) -> Vec<String> {
    let pr = match (s.precision, s.recall) {
        (Some(p), Some(q)) => format!("{p:.2}/{q:.2}"),
        _ => "-".to_owned(),
    };
    let model = !toyvm_profiler::spec::is_none(&s.model);
    vec![
        s.label.clone(),
        if s.failures > 0 {
            format!("{} ({} failed)", s.programs, s.failures)
        } else {
            s.programs.to_string()
        },
        times(s.speedup_vs_interpreter),
        times(s.speedup_vs_perfect),
        pct(s.error),
        pr,
        if model {
            count(s.state_bytes)
        } else {
            "-".into()
        },
        if model { count(s.messages) } else { "-".into() },
        if model {
            format!("{:.1}", s.model_seconds * 1e3)
        } else {
            "-".into()
        },
        if s.pareto { "*".into() } else { String::new() },
    ]
}

const CHANGE_HEAD: &[&str] = &[
    "program",
    "config",
    "x interp before",
    "after",
    "change %",
    "E % before",
    "after",
    "change pts",
    "status",
];

fn change_cells(r: &CompareReport) -> Vec<Vec<String>> {
    let Some(b) = &r.baseline else {
        return Vec::new();
    };
    b.changes
        .iter()
        .map(|c| {
            vec![
                c.program.clone(),
                c.label.clone(),
                times(c.speedup_before),
                times(c.speedup_after),
                c.speedup_change_percent
                    .map_or_else(|| "-".into(), |x| format!("{x:+.1}")),
                pct(c.error_before),
                pct(c.error_after),
                c.error_change_points
                    .map_or_else(|| "-".into(), |x| format!("{x:+.2}")),
                {
                    let mut st = if c.status_before == c.status_after {
                        c.status_after.word().to_owned()
                    } else {
                        format!("{} -> {}", c.status_before.word(), c.status_after.word())
                    };
                    if c.spec_before.is_some() {
                        st.push_str(", spec changed");
                    }
                    st
                },
            ]
        })
        .collect()
}

/// A plain text table: the first `left` columns aligned left, the rest right.
fn text_table(out: &mut String, head: &[&str], rows: &[Vec<String>], left: usize) {
    let mut w: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let line = |out: &mut String, cells: &mut dyn Iterator<Item = &str>| {
        let mut s = String::new();
        for (i, c) in cells.enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            let pad = w[i].saturating_sub(c.chars().count());
            if i < left {
                s.push_str(c);
                s.push_str(&" ".repeat(pad));
            } else {
                s.push_str(&" ".repeat(pad));
                s.push_str(c);
            }
        }
        let _ = writeln!(out, "{}", s.trim_end());
    };
    line(out, &mut head.iter().copied());
    let total: usize = w.iter().sum::<usize>() + 2 * (w.len() - 1);
    let _ = writeln!(out, "{}", "-".repeat(total));
    for r in rows {
        line(out, &mut r.iter().map(String::as_str));
    }
}

fn md_table(out: &mut String, head: &[&str], rows: &[Vec<String>]) {
    let esc = |s: &str| s.replace('|', "\\|");
    let _ = writeln!(out, "| {} |", head.join(" | "));
    let _ = writeln!(
        out,
        "|{}",
        head.iter()
            .enumerate()
            .map(|(i, _)| if i < 2 { " --- |" } else { " ---: |" })
            .collect::<String>()
    );
    for r in rows {
        let cells: Vec<String> = r.iter().map(|c| esc(c)).collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
}

fn preamble(r: &CompareReport) -> Vec<String> {
    let m = &r.machine;
    let mut v = vec![
        format!(
            "toyvm {} compare, {} (UTC); {} cores{}, {}/{}",
            r.toyvm_version,
            r.date,
            m.cores,
            m.cpu
                .as_ref()
                .map_or_else(String::new, |c| format!(", {c}")),
            m.os,
            m.arch
        ),
        format!(
            "median of {} runs per pair ({} at a time), {} arguments; error E against perfect on the {}",
            r.settings.repeat,
            r.settings.jobs,
            if r.settings.bench { "bench" } else { "test" },
            r.settings.error_stream
        ),
    ];
    let args: Vec<String> = r
        .programs
        .iter()
        .map(|p| {
            let a: Vec<String> = p.args.iter().map(i64::to_string).collect();
            format!("{}({})", p.name, a.join(" "))
        })
        .collect();
    v.push(format!("programs: {}", args.join(", ")));
    if !r.settings.bench {
        v.push(TEST_SIZES.to_owned());
    }
    v
}

/// Said wherever test-size times are shown.
pub const TEST_SIZES: &str = "test sizes: these runs check that every configuration computes what the interpreter does; many last a few milliseconds, too short to time (use --bench to time)";

fn specs_list(r: &CompareReport) -> Vec<String> {
    r.summary
        .iter()
        .filter(|s| s.label != s.spec)
        .map(|s| format!("{} = {}", s.label, s.spec))
        .collect()
}

fn failures(r: &CompareReport) -> Vec<String> {
    r.rows
        .iter()
        .filter(|x| x.status != Status::Ok)
        .map(|x| {
            format!(
                "{} {} under {}: {}",
                x.status.word(),
                x.program,
                x.label,
                x.detail.as_deref().unwrap_or("")
            )
        })
        .collect()
}

/// Why a profile with error `e` is off, worded from the parts of E that
/// are there: a profile that finds exactly perfect's candidates (no false
/// positives or negatives) is off only in its counts, and says so rather
/// than listing two zeros.
fn profile_off(x: &Row, e: f64) -> String {
    let part = |v: Option<f64>| v.unwrap_or(0.0);
    let (fp, fnn) = (part(x.false_positive), part(x.false_negative));
    let parts = [
        (fp, "false positives"),
        (fnn, "false negatives"),
        (part(x.neutral_positive), "over-counted"),
        (part(x.neutral_negative), "under-counted"),
    ];
    let shown: Vec<String> = parts
        .iter()
        .filter(|(v, _)| *v > 0.0)
        .map(|(v, name)| {
            if 100.0 * v < 0.05 {
                format!("{name} <0.1%")
            } else {
                format!("{name} {:.1}%", 100.0 * v)
            }
        })
        .collect();
    let pr = format!(
        "P/R {:.2}/{:.2}",
        x.precision.unwrap_or(0.0),
        x.recall.unwrap_or(0.0)
    );
    if fp == 0.0 && fnn == 0.0 {
        format!(
            "its counts are off (E {:.1}%, all of it from candidates perfect reports too: {}; {pr})",
            100.0 * e,
            shown.join(", ")
        )
    } else {
        format!(
            "its profile is off (E {:.1}%: {}; {pr})",
            100.0 * e,
            shown.join(", ")
        )
    }
}

/// Where a model's JIT buys less than 95% of the perfect profile's
/// speedup, and why, judged from the row beside perfect's: a profile that
/// differs (its error), other compile decisions, the model's own cost, or,
/// when it compiled exactly what perfect did, timing noise.
fn shortfalls(rows: &[Row]) -> Vec<String> {
    let mut out = Vec::new();
    for x in rows {
        let Some(rel) = x.speedup_vs_perfect else {
            continue;
        };
        if rel >= 0.95 || x.model == "perfect" || x.status != Status::Ok {
            continue;
        }
        let Some(p) = rows
            .iter()
            .find(|y| y.program == x.program && y.model == "perfect")
        else {
            continue;
        };
        let mut why = Vec::new();
        if let Some(e) = x.error.filter(|&e| e > 0.01) {
            why.push(profile_off(x, e));
        }
        let decisions = |y: &Row| (y.compiles, y.recompiles, y.side_exits, y.guard_failures);
        if decisions(x) != decisions(p) {
            why.push(format!(
                "it compiled other regions ({} compiles, {} recompiles, {} side exits, {} guard failures; perfect: {}, {}, {}, {})",
                x.compiles,
                x.recompiles,
                x.side_exits,
                x.guard_failures,
                p.compiles,
                p.recompiles,
                p.side_exits,
                p.guard_failures
            ));
        }
        if let Some(t) = x.median_seconds.filter(|&t| x.model_seconds > 0.1 * t) {
            why.push(format!(
                "the model itself takes {:.0}% of the run ({:.1} ms)",
                100.0 * x.model_seconds / t,
                1e3 * x.model_seconds
            ));
        }
        if x.within_noise == Some(true) {
            why.push(format!(
                "{}its run times overlap perfect's (per-round ratios {:.2}-{:.2}): within run-to-run noise",
                if why.is_empty() { "" } else { "but " },
                x.speedup_vs_perfect_low.unwrap_or(rel),
                x.speedup_vs_perfect_high.unwrap_or(rel)
            ));
        }
        if why.is_empty() {
            why.push(
                "it compiled exactly what perfect did, from an equally good profile: timing noise (raise --repeat)"
                    .to_owned(),
            );
        }
        out.push(format!(
            "{} under {}: {:.2}x of perfect's speedup: {}",
            x.program,
            x.label,
            rel,
            why.join("; ")
        ));
    }
    out
}

/// The human table.
pub fn table(r: &CompareReport) -> String {
    let mut s = String::new();
    for l in preamble(r) {
        let _ = writeln!(s, "{l}");
    }
    let _ = writeln!(s);
    let rows: Vec<Vec<String>> = r.rows.iter().map(row_cells).collect();
    text_table(&mut s, ROW_HEAD, &rows, 2);
    let _ = writeln!(s, "{NOISE_NOTE}");
    let _ = writeln!(
        s,
        "\nper configuration (* = Pareto-optimal among the hardware models on mean E vs state bytes):"
    );
    let rows: Vec<Vec<String>> = r.summary.iter().map(summary_cells).collect();
    text_table(&mut s, SUMMARY_HEAD, &rows, 1);
    let specs = specs_list(r);
    if !specs.is_empty() {
        let _ = writeln!(s, "\nspecs:");
        for l in specs {
            let _ = writeln!(s, "  {l}");
        }
    }
    if let Some(b) = &r.baseline {
        let _ = writeln!(
            s,
            "\nchanges since {} (toyvm {}, {}); {} pairs only there, {} only here:",
            b.file, b.toyvm_version, b.date, b.only_before, b.only_after
        );
        for w in &b.warnings {
            let _ = writeln!(s, "WARNING: {w}");
        }
        text_table(&mut s, CHANGE_HEAD, &change_cells(r), 2);
    }
    if let Some(st) = &r.study {
        s.push_str(&super::study::render(st, false));
    }
    let short = shortfalls(&r.rows);
    if !short.is_empty() {
        let _ = writeln!(s, "\nbelow 95% of the perfect profile's speedup, and why:");
        for l in short {
            let _ = writeln!(s, "  {l}");
        }
    }
    let f = failures(r);
    if !f.is_empty() {
        let _ = writeln!(s, "\n{} failed pairs:", f.len());
        for l in f {
            let _ = writeln!(s, "  {l}");
        }
    }
    s
}

/// The same as Markdown.
pub fn markdown(r: &CompareReport) -> String {
    let mut s = String::new();
    for l in preamble(r) {
        let _ = writeln!(s, "{l}  ");
    }
    let _ = writeln!(s);
    let rows: Vec<Vec<String>> = r.rows.iter().map(row_cells).collect();
    md_table(&mut s, ROW_HEAD, &rows);
    let _ = writeln!(s, "\n{NOISE_NOTE}");
    let _ = writeln!(
        s,
        "\nPer configuration (* = Pareto-optimal among the hardware models on mean E vs state bytes):\n"
    );
    let rows: Vec<Vec<String>> = r.summary.iter().map(summary_cells).collect();
    md_table(&mut s, SUMMARY_HEAD, &rows);
    let specs = specs_list(r);
    if !specs.is_empty() {
        let _ = writeln!(s, "\nSpecs:\n");
        for l in specs {
            let _ = writeln!(s, "- `{l}`");
        }
    }
    if let Some(b) = &r.baseline {
        let _ = writeln!(
            s,
            "\nChanges since {} (toyvm {}, {}):\n",
            b.file, b.toyvm_version, b.date
        );
        for w in &b.warnings {
            let _ = writeln!(s, "**Warning:** {w}\n");
        }
        md_table(&mut s, CHANGE_HEAD, &change_cells(r));
    }
    if let Some(st) = &r.study {
        s.push_str(&super::study::render(st, true));
    }
    let short = shortfalls(&r.rows);
    if !short.is_empty() {
        let _ = writeln!(
            s,
            "\nBelow 95% of the perfect profile's speedup, and why:\n"
        );
        for l in short {
            let _ = writeln!(s, "- {l}");
        }
    }
    let f = failures(r);
    if !f.is_empty() {
        let _ = writeln!(s, "\n**{} failed pairs:**\n", f.len());
        for l in f {
            let _ = writeln!(s, "- {l}");
        }
    }
    s
}

/// The report as pretty JSON.
pub fn json(r: &CompareReport) -> String {
    serde_json::to_string_pretty(r).expect("a report holds only serializable data") + "\n"
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

/// One line per row, the columns of [`COLUMNS`]; absent values are empty.
pub fn csv(r: &CompareReport) -> String {
    let mut s = COLUMNS.join(",") + "\n";
    for row in &r.rows {
        let v = serde_json::to_value(row).expect("rows serialize");
        let cells: Vec<String> = COLUMNS
            .iter()
            .map(|c| match &v[*c] {
                serde_json::Value::Null => String::new(),
                serde_json::Value::String(x) => csv_field(x),
                other => other.to_string(),
            })
            .collect();
        s.push_str(&cells.join(","));
        s.push('\n');
    }
    s
}

/// The per-interval error series, one line per (program, model, interval).
pub fn intervals_csv(series: &[IntervalSeries]) -> String {
    let mut s = String::from(
        "program,label,spec,interval,tuples,error,false_positive,false_negative,neutral_positive,neutral_negative\n",
    );
    for x in series {
        for p in &x.points {
            let _ = writeln!(
                s,
                "{},{},{},{},{},{},{},{},{},{}",
                csv_field(&x.program),
                csv_field(&x.label),
                csv_field(&x.spec),
                p.index,
                p.tuples,
                p.error,
                p.false_positive,
                p.false_negative,
                p.neutral_positive,
                p.neutral_negative
            );
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quotes_fields_with_commas() {
        assert_eq!(csv_field("a"), "a");
        assert_eq!(
            csv_field("multihash:tables=1,entries=512"),
            "\"multihash:tables=1,entries=512\""
        );
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }

    #[test]
    fn counts_stay_short() {
        assert_eq!(count(999), "999");
        assert_eq!(count(123_456), "123k");
        assert_eq!(count(12_345_678), "12.3M");
    }

    fn row(model: &str, rel: f64, error: f64, compiles: u64) -> Row {
        let mut v = serde_json::json!({
            "program": "p", "model": model, "label": model, "spec": model,
            "status": "ok", "detail": null, "runs": 3,
            "median_seconds": 1.0, "min_seconds": 1.0, "max_seconds": 1.0,
            "speedup_vs_interpreter": 4.0 * rel, "speedup_vs_perfect": rel,
            "error": error, "false_positive": error, "false_negative": 0.0,
            "neutral_positive": 0.0, "neutral_negative": 0.0,
            "precision": 1.0, "recall": 1.0, "f1": 1.0,
            "state_bytes": 0, "messages": 0, "cycles": 0, "model_seconds": 0.01,
            "compile_seconds": 0.001, "intervals": 9, "compiles": compiles,
            "recompiles": 0, "drops": 0, "side_exits": 0, "guard_failures": 0
        });
        v["status"] = serde_json::to_value(Status::Ok).unwrap();
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn shortfalls_say_why() {
        let rows = [
            row("perfect", 1.0, 0.0, 3),
            row("multihash", 0.99, 0.0, 3),
            row("stratified", 0.5, 0.35, 2),
            row("singlehash", 0.9, 0.0, 3),
        ];
        let s = shortfalls(&rows);
        assert_eq!(s.len(), 2, "{s:?}");
        assert!(s[0].starts_with("p under stratified: 0.50x"), "{}", s[0]);
        assert!(
            s[0].contains("E 35.0%") && s[0].contains("other regions"),
            "{}",
            s[0]
        );
        assert!(s[1].contains("timing noise"), "{}", s[1]);
    }

    #[test]
    fn shortfalls_word_the_error_from_its_parts() {
        // fib under conte: E from counts alone, no false positive or
        // negative: the line must not list two zeros as the reason.
        let mut conte = row("conte", 0.5, 0.064, 3);
        conte.false_positive = Some(0.0);
        conte.neutral_negative = Some(0.064);
        let s = shortfalls(&[row("perfect", 1.0, 0.0, 3), conte]);
        assert_eq!(s.len(), 1, "{s:?}");
        assert!(s[0].contains("its counts are off (E 6.4%"), "{}", s[0]);
        assert!(s[0].contains("under-counted 6.4%"), "{}", s[0]);
        assert!(!s[0].contains("0.0%"), "{}", s[0]);
        // Candidates missed: named, and only the parts that are there.
        let mut strat = row("stratified", 0.5, 0.30, 3);
        strat.false_positive = Some(0.0);
        strat.false_negative = Some(0.25);
        strat.neutral_negative = Some(0.05);
        let s = shortfalls(&[row("perfect", 1.0, 0.0, 3), strat]);
        assert!(
            s[0].contains(
                "its profile is off (E 30.0%: false negatives 25.0%, under-counted 5.0%;"
            ),
            "{}",
            s[0]
        );
        assert!(!s[0].contains("false positives"), "{}", s[0]);
    }
}
