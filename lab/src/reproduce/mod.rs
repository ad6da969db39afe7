//! `toyvm reproduce`: the papers' experiments regenerated on toyvm's own
//! streams, each claim beside our figure with a verdict computed from the
//! measurement (never written in by hand).
//!
//! The experiments, by seed file (see `docs/papers.md` for the titles):
//! - **000** (multi-hash, Narayanasamy et al.): Figs 4-6 (distinct tuples,
//!   candidates and their change between intervals, section 5.6.1):
//!   `tuples`; Fig 7 (single hash with
//!   resetting and retaining, section 5.6.2), Fig 9 (the false-positive
//!   bound of section 6.2 beside measured rates), Figs 10-11 (tables x
//!   conservative update x reset, section 6.3), Fig 12 (the best
//!   configuration over table counts, 6.4.1), Fig 13 (error per interval),
//!   Fig 14 (edge profiles, 6.4.2): `multihash`.
//! - **001** (stratified sampling, Sastry et al.): Fig 4 (the Monte Carlo
//!   of the samplers' accuracy classes, section 3), Figs 7-9 (error
//!   convergence over events and the tagged compressor's overhead), Fig 10
//!   (A_16 and messages to software), Fig 11 (simultaneous edge and call
//!   profiles, error and overhead at 30 cycles per message): `stratified`;
//!   Fig 7's H\[P_512\] and overhead curves, Fig 9 (table sizes 512-4,096):
//!   `stratified_sizes`; Fig 8 (Fig 7's five compressors on the other
//!   workloads: the suite's programs and the compiled C programs):
//!   `stratified_programs`.
//! - **002** (Conte et al.): Fig 2 (BTB contentions against its size):
//!   `conte_btb`; Table I (the slowdown of profiled programs, a timing):
//!   `conte_slowdown`; Table IV (arc-weight error by block-weight
//!   bucket for the one-level, two-level and counter schemes, formula 2):
//!   `conte_rap`.
//! - **004** (RAP, Mysore et al.): Figs 2-3 (branching factor and merge
//!   period: memory and error), Fig 8 (nodes against eps): `conte_rap`;
//!   Fig 4 (the merging event buffer inline with a running program):
//!   `rap_buffer`; Fig 10 (hot-range error over
//!   32-bit code keys and over load values, a phased stream among each): `rap_hot`;
//!   Fig 8's value panels and Fig 9 (tree size over time): `rap_time`; the 2-D tree
//!   on `<pc, value>` ranges against the oracle's hot boxes: `rap2d`; what the RAP
//!   experiments share (keys, first merge, memory): `rapkeys`.
//!
//! Streams are synthetic ones with known distributions, the recorded
//! streams of generated workloads (`toyvm synth`), and any `--trace` given
//! ([`streams`]). Seeds are fixed, so a report's body is the same every run
//! at the same sizes; `--quick` runs every figure at reduced sizes (what
//! the tests run), and the report says which.

use std::path::PathBuf;
use std::time::Instant;

mod conte_btb;
mod conte_rap;
mod conte_slowdown;
mod multihash;
mod rap2d;
mod rap_buffer;
mod rap_hot;
mod rap_time;
mod rapkeys;
mod report;
mod stratified;
mod stratified_programs;
mod stratified_sizes;
pub mod streams;
mod tuples;

use streams::Ctx;

/// `toyvm reproduce`'s arguments.
#[derive(Clone, Debug)]
pub struct ReproduceArgs {
    /// Figures to run: ids (`000-fig12`) or prefixes (`000`, `004-fig`);
    /// all when none is given.
    pub figures: Vec<String>,
    /// Reduced sizes: every figure in a few minutes (what the tests run).
    pub quick: bool,
    /// Where REPORT.md and the SVGs go (created if missing).
    pub out: PathBuf,
    /// A trace (`toyvm profile` formats) to add to the streams.
    pub trace: Vec<PathBuf>,
    /// List the figures and exit.
    pub list: bool,
}

/// How a claim fared.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// Our measurement agrees with the paper's claim.
    Holds,
    /// With the reason: other workloads, a documented deviation, a defect.
    Differs(String),
    /// With why.
    NotApplicable(String),
}

impl Verdict {
    fn text(&self) -> String {
        match self {
            Verdict::Holds => "**holds**".to_owned(),
            Verdict::Differs(why) => format!("**differs**: {why}"),
            Verdict::NotApplicable(why) => format!("**not applicable**: {why}"),
        }
    }

    fn word(&self) -> &'static str {
        match self {
            Verdict::Holds => "holds",
            Verdict::Differs(_) => "differs",
            Verdict::NotApplicable(_) => "n/a",
        }
    }

    /// `Holds` when `ok`, else `Differs(why)`.
    pub fn check(ok: bool, why: impl FnOnce() -> String) -> Verdict {
        if ok {
            Verdict::Holds
        } else {
            Verdict::Differs(why())
        }
    }
}

/// What one figure produced.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Our figure in one line (the numbers the verdict is drawn from).
    pub ours: String,
    /// How the claim fared, computed from the same numbers.
    pub verdict: Verdict,
    /// A markdown table or list with the full numbers.
    pub detail: String,
    /// The chart's series, drawn into `<id>.svg`.
    pub chart: Option<Chart>,
}

/// A figure's chart.
#[derive(Clone, Debug)]
pub struct Chart {
    /// The x axis's label, with its unit where it has one (`eps (%)`).
    pub x: String,
    /// The y axis's label, with its unit where it has one (`mean E (%)`).
    pub y: String,
    /// Whether the x axis is logarithmic (for x values spanning decades).
    pub log_x: bool,
    /// One line per series: its legend name and its `(x, y)` points.
    pub series: Vec<crate::compare::chart::Line>,
}

/// One experiment.
#[derive(Debug)]
pub struct Figure {
    /// `000-fig12`: the seed file's number, then the figure as numbered.
    pub id: &'static str,
    /// The paper's claim in one line, with its number.
    pub claim: &'static str,
    /// Runs the experiment on the shared streams and sizes and measures
    /// the claim.
    pub run: fn(&Ctx) -> crate::Result<Outcome>,
}

/// Every figure, in report order: by seed file, then by figure number
/// (tables after figures), then by id.
pub fn figures() -> Vec<Figure> {
    let mut v = tuples::figures();
    v.extend(multihash::figures());
    v.extend(stratified::figures());
    v.extend(stratified_sizes::figures());
    v.extend(stratified_programs::figures());
    v.extend(conte_btb::figures());
    v.extend(conte_slowdown::figures());
    v.extend(conte_rap::figures());
    v.extend(rap_time::figures());
    v.sort_by_key(|f| order(f.id));
    v
}

/// A figure id's place in the report: `004-fig10-values` is `(004, 0, 10,
/// "-values")`; a table (`002-table4`) comes after the figures, an id that
/// is neither (`004-2d`) after both.
fn order(id: &str) -> (&str, u8, u32, &str) {
    let (seed, rest) = id.split_once('-').unwrap_or((id, ""));
    let (kind, num) = if let Some(n) = rest.strip_prefix("fig") {
        (0, n)
    } else if let Some(n) = rest.strip_prefix("table") {
        (1, n)
    } else {
        (2, rest)
    };
    let digits = num.find(|c: char| !c.is_ascii_digit()).unwrap_or(num.len());
    let n = num[..digits].parse().unwrap_or(0);
    (seed, kind, n, &num[digits..])
}

/// Figures named by `wanted` (ids or prefixes; all when empty).
pub fn select(wanted: &[String]) -> crate::Result<Vec<Figure>> {
    let all = figures();
    if wanted.is_empty() {
        return Ok(all);
    }
    for w in wanted {
        if w.is_empty() {
            return Err(crate::Error::Usage(
                "an empty figure name; name figures by id or prefix (`000-fig12`, `004`), or none for all"
                    .into(),
            ));
        }
        if !all.iter().any(|f| f.id.starts_with(w.as_str())) {
            let ids: Vec<&str> = all.iter().map(|f| f.id).collect();
            return Err(crate::Error::Usage(format!(
                "no figure `{w}`; the figures are {}",
                ids.join(", ")
            )));
        }
    }
    Ok(all
        .into_iter()
        .filter(|f| wanted.iter().any(|w| f.id.starts_with(w.as_str())))
        .collect())
}

/// One figure's row of the report.
#[derive(Clone, Debug)]
pub struct Row {
    /// The figure's id ([`Figure::id`]).
    pub id: &'static str,
    /// The paper's claim ([`Figure::claim`]).
    pub claim: &'static str,
    /// What the figure produced.
    pub outcome: Outcome,
    /// Wall time the figure took, in seconds (its chart included).
    pub seconds: f64,
}

/// Runs `toyvm reproduce`; returns the process status.
///
/// Progress lines go to standard error and are dropped when it cannot be
/// written (they are not the result); the summary table goes to standard
/// output, and a failed write of it is an error.
pub fn run(args: &ReproduceArgs) -> crate::Result<u8> {
    if args.list {
        let mut text = String::new();
        for f in figures() {
            text.push_str(&format!("{:<11} {}\n", f.id, f.claim));
        }
        return crate::output::stdout(text.as_bytes())
            .map(|()| 0)
            .map_err(crate::Error::Stdout);
    }
    let chosen = select(&args.figures)?;
    // Every output is checked before the first figure runs.
    let report_path = args.out.join("REPORT.md");
    crate::output::check_dir_writable(&args.out, "the report and charts")?;
    crate::output::check_writable(&report_path, "the report")?;
    for f in &chosen {
        let svg = args.out.join(format!("{}.svg", f.id));
        crate::output::check_writable(&svg, "the chart")?;
    }
    let progress = |line: String| {
        let _ = crate::output::stderr(line.as_bytes());
    };
    let start = Instant::now();
    let ctx = Ctx::new(args.quick, &args.trace)?;
    let mut rows = Vec::new();
    for f in chosen {
        let t = Instant::now();
        progress(format!("reproduce: {} ...\n", f.id));
        let outcome = (f.run)(&ctx)?;
        if let Some(c) = &outcome.chart {
            let path = args.out.join(format!("{}.svg", f.id));
            let title = [
                format!("{}: {}", f.id, f.claim),
                format!("ours: {}", outcome.ours),
            ];
            crate::compare::chart::lines(&path, &title, (&c.x, &c.y), c.log_x, &c.series)?;
        }
        let row = Row {
            id: f.id,
            claim: f.claim,
            outcome,
            seconds: t.elapsed().as_secs_f64(),
        };
        progress(format!(
            "reproduce: {} {} ({:.1} s)\n",
            row.id,
            row.outcome.verdict.word(),
            row.seconds
        ));
        rows.push(row);
    }
    let text = report::markdown(&rows, &ctx, start.elapsed().as_secs_f64());
    crate::output::replace_file(&report_path, text.as_bytes()).map_err(|source| {
        crate::Error::Io {
            path: report_path.clone(),
            source,
        }
    })?;
    let table = report::summary_table(&rows);
    crate::output::stdout(table.as_bytes()).map_err(crate::Error::Stdout)?;
    Ok(0)
}

/// `x` as a percentage with two decimals.
pub(crate) fn pct(x: f64) -> String {
    format!("{:.2}%", x * 100.0)
}
