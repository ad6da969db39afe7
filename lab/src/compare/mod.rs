//! `toyvm compare`: every profiler model on every program, side by side.
//!
//! For each program (by default every one in `programs/`, run with its
//! header's `# args:`, or `# bench-args:` with `--bench`) and each
//! configuration (by default the interpreter alone, `none`, and every model
//! at its papers' defaults driving the JIT), the comparison reports:
//!
//! - the median wall time over `--repeat` runs, the speedup over the
//!   interpreter and relative to the perfect-profile JIT;
//! - the model's error E against the perfect profiler, its four parts
//!   (false/neutral positive/negative), precision and recall. **Error is
//!   measured on the interpreter's tuple stream** (JIT off, every kind),
//!   one pass per program for all models: compiled code emits no tuples, so
//!   the stream a JIT run's model sees depends on what that model had
//!   compiled, and would not be comparable across models;
//! - modeled state bytes, messages to software and modeled cycles, the time
//!   inside the model, and what the JIT did (compiles, recompiles, side
//!   exits), all from the timed run.
//!
//! Every run's output and result are checked against the interpreter's; a
//! pair that differs is a failure (its timings are not reported and the
//! exit status is 1).
//!
//! `--sweep 'multihash:tables=1|2|4|8,entries=512|2048'` adds the grid's
//! cartesian product, runs side by side on every core, and the summary
//! marks the configurations on the Pareto front of mean error against state
//! bytes. Reports record the toyvm version, canonical specs, arguments,
//! machine and date; `--baseline OLD.json` shows what changed since.
//!
//! Pieces: [`suite`] finds programs and reads their headers, [`specs`]
//! expands `--profile` and `--sweep`, [`measure`] runs (behind the
//! [`measure::Runner`] seam), [`cells`] are the units of work a study is
//! recorded, resumed and sharded in ([`shard`]), [`assemble`] builds the
//! tables from finished cells, [`report`] is what a report holds (rows,
//! summary with Pareto marks, baseline changes; [`baseline`] checks an old
//! one can be compared, [`meta`] the machine and date), [`study`] adds the
//! synthetic workloads, [`render`] prints it all, [`tidy`] writes one CSV
//! row per timed run, [`chart`] draws SVG. What can stop a comparison is
//! an [`Error`].

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rayon::prelude::*;

pub mod assemble;
pub mod baseline;
pub mod cells;
pub mod chart;
mod error;
pub mod measure;
pub mod meta;
pub mod render;
pub mod report;
pub mod shard;
pub mod specs;
pub mod study;
pub mod tidy;
pub use crate::suite;

pub use error::{Error, Result, SizeChange};
pub use measure::{Run, Runner, RuntimeRunner};
pub use report::{Column, CompareReport, IntervalSeries, Row, Status, SummaryRow};

/// How the report is printed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Format {
    /// A readable table, a summary per configuration and any failures.
    #[default]
    Table,
    /// One line per (program, configuration); absent values are empty.
    Csv,
    /// Everything, with the settings, machine and date.
    Json,
    /// The table as Markdown.
    Markdown,
}

/// Run every profiler model on every program and compare speedup, profile
/// error, modeled state and overhead.
#[derive(Clone, Debug)]
pub struct CompareArgs {
    /// Programs: files, or names of programs in the program folder
    /// (default: every program there).
    pub programs: Vec<String>,
    /// Configurations to compare (default: none and every model at its
    /// papers' defaults). Specs contain commas: in a comma list a part
    /// named after a model (`perfect`, `rap:eps=1%`) or `none` starts a
    /// new spec; `;` also separates. The interpreter
    /// (`none`) is always run: it is the baseline and the output oracle.
    pub profiles: Vec<String>,
    /// Timed runs per (program, configuration); the median is reported
    /// (1 to 1000, and at most 1,000,000 timed runs in all).
    pub repeat: usize,
    /// Run programs with their `# bench-args:` instead of `# args:`.
    pub bench: bool,
    /// Output format.
    pub format: Format,
    /// Write the report here instead of standard output.
    pub output: Option<PathBuf>,
    /// Draw speedup per program and model, and error against state bytes,
    /// as SVG.
    pub chart: Option<PathBuf>,
    /// A design-space grid, e.g. `multihash:tables=1|2|4|8,entries=512|2048`:
    /// the cartesian product of the `|` alternatives is compared (with
    /// `none` and `perfect` as references unless `--profile` is given).
    /// At most 4096 configurations in all; a larger grid is refused before
    /// it is expanded.
    pub sweep: Vec<String>,
    /// Runs side by side (default: 1, or every core with `--sweep`; at
    /// most 256). Timings are noisier above 1.
    pub jobs: Option<usize>,
    /// Write each (program, model) pair's error per interval as CSV.
    pub intervals: Option<PathBuf>,
    /// Draw the error per interval of two models side by side (SVG).
    pub interval_chart: Option<PathBuf>,
    /// The two configurations `--interval-chart` shows (labels as given
    /// to `--profile`; default: the first two models other than perfect).
    pub interval_models: Option<String>,
    /// An earlier JSON report: show how speedups and errors changed.
    pub baseline: Option<PathBuf>,
    /// Where to find programs by name (default: `programs/`).
    pub program_dir: Option<PathBuf>,
    /// Add generated workloads, one per point of a knob grid, e.g.
    /// `hot=16|64|256|1024,zipf=1.2`: keys are `toyvm synth`'s flags
    /// (seed, functions, blocks, hot, zipf, targets, value-share, phases,
    /// noise, work) and `n`, the iterations (default 10000, 300000 with
    /// `--bench`). The report adds the study: each model's error and
    /// speedup relative to perfect against the workload's hot set over the
    /// model's capacity, and where E passes 1% and the speedup falls below
    /// 0.9x beyond noise. Without PROGRAMS only the workloads are run.
    pub synth: Vec<String>,
    /// Draw the study (with `--synth`): speedup relative to perfect with
    /// its per-round range against load and against state bytes (SVG).
    pub study_chart: Option<PathBuf>,
    /// Record each finished cell (a timed run, or a program's error pass)
    /// in FILE as one JSON line, appended as it finishes, after a header
    /// line with the study's fingerprint. See "Studies on a cluster" in
    /// the README.
    pub cells: Option<PathBuf>,
    /// With --cells: run only the cells missing from FILE.
    pub resume: bool,
    /// Run only shard I of N (0 <= I < N) of the study's cells, balanced by
    /// expected cost, and write them to --cells (the part file); then
    /// `toyvm compare --merge PARTS...` makes the report.
    pub shard: Option<String>,
    /// Make the report from part files (--cells of every --shard I/N of one
    /// study) instead of running; the study comes from the parts.
    pub merge: Vec<PathBuf>,
    /// Write one CSV row per timed run (raw timings, units in the column
    /// names) to FILE.csv, and the run's metadata to FILE.csv.meta.json.
    pub tidy: Option<PathBuf>,
}

impl Default for CompareArgs {
    /// What the command line gives without flags.
    fn default() -> Self {
        CompareArgs {
            programs: Vec::new(),
            profiles: Vec::new(),
            repeat: 3,
            bench: false,
            format: Format::Table,
            output: None,
            chart: None,
            sweep: Vec::new(),
            jobs: None,
            intervals: None,
            interval_chart: None,
            interval_models: None,
            baseline: None,
            program_dir: None,
            synth: Vec::new(),
            study_chart: None,
            cells: None,
            resume: false,
            shard: None,
            merge: Vec::new(),
            tidy: None,
        }
    }
}

/// A finished comparison: the report and the per-interval error series.
#[derive(Clone, Debug)]
pub struct Comparison {
    /// The report itself: rows, summary, settings, machine and date
    /// (`--format json` prints all of it).
    pub report: CompareReport,
    /// Per-interval error of every (program, model) pair whose error pass
    /// succeeded, for the interval chart.
    pub series: Vec<IntervalSeries>,
    /// The configurations compared, in column order (`none` first).
    pub columns: Vec<Column>,
    /// Every finished cell of the study (the tidy data's rows).
    pub cells: Vec<cells::Finished>,
}

/// The configurations `args` asks for, with their labels.
pub fn columns(args: &CompareArgs) -> Result<Vec<Column>> {
    let configs = specs::plan(&args.profiles, &args.sweep)?;
    let mut labels: Vec<String> = Vec::new();
    if !args.profiles.is_empty() || !args.sweep.is_empty() {
        labels.push(toyvm_profiler::spec::NONE.into());
        if args.profiles.is_empty() {
            labels.push("perfect".into());
        }
        if !args.profiles.is_empty() {
            labels.extend(specs::split_specs(&args.profiles)?);
        }
        for g in &args.sweep {
            labels.extend(specs::expand_sweep(g)?);
        }
    }
    // Labels follow the plan's order; duplicates were dropped there, so
    // match each configuration to the first label that parses to it.
    Ok(configs
        .into_iter()
        .map(|config| {
            let canonical = config.spec_string();
            let label = labels
                .iter()
                .find(|l| specs::Choice::parse(l).is_ok_and(|c| c.spec_string() == canonical))
                .cloned()
                .unwrap_or_else(|| config.model_name().to_owned());
            Column { label, config }
        })
        .collect())
}

/// The programs `args` asks for, loaded (the suite's or the named ones,
/// then any `--synth` workloads).
pub fn cases(args: &CompareArgs) -> Result<(Vec<suite::Case>, Vec<study::Workload>)> {
    let (mut synth, workloads) = study::cases(&args.synth, args.bench)?;
    let mut cases = if args.programs.is_empty() && !args.synth.is_empty() {
        Vec::new()
    } else {
        suite_cases(args)?
    };
    cases.append(&mut synth);
    Ok((cases, workloads))
}

fn suite_cases(args: &CompareArgs) -> Result<Vec<suite::Case>> {
    let dir = args.program_dir.clone().unwrap_or_else(suite::default_dir);
    let paths = if args.programs.is_empty() {
        suite::list(&dir)?
    } else {
        args.programs
            .iter()
            .map(|p| suite::resolve(p, &dir))
            .collect::<Result<_, _>>()?
    };
    paths
        .iter()
        .map(|p| suite::load(p, args.bench).map_err(Error::from))
        .collect()
}

/// How a comparison shows its progress.
#[derive(Debug)]
pub enum Progress {
    /// A bar that redraws in place (standard error is a terminal).
    Bar(ProgressBar),
    /// One line per finished (program, configuration) pair and per error
    /// pass on standard error (it is a pipe or a file: a log, CI).
    Lines,
    /// Nothing (tests, embedding).
    Hidden,
}

impl Progress {
    /// A bar on a terminal, lines otherwise.
    pub fn for_stderr() -> Progress {
        if !std::io::stderr().is_terminal() {
            return Progress::Lines;
        }
        let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template(
            "{elapsed_precise} [{wide_bar}] {pos}/{len} (eta {eta}) {msg}",
        ) {
            bar.set_style(style.progress_chars("=> "));
        }
        Progress::Bar(bar)
    }
}

/// Counts finished runs per pair, to say when a pair is done.
struct PairLog<'a> {
    cases: &'a [suite::Case],
    labels: &'a [String],
    repeat: usize,
    start: std::time::Instant,
    runs: std::sync::Mutex<PairRuns>,
}

/// Per (case, config) the successful runs' seconds and the failed runs,
/// and how many pairs have finished.
type PairRuns = (Vec<(Vec<f64>, usize)>, usize);

impl PairLog<'_> {
    /// The line for `done`, when it finishes a pair or is an error pass.
    fn line(&self, done: &measure::Done) -> Option<String> {
        let pairs = self.cases.len() * self.labels.len();
        let at = format!("{:.0}s", self.start.elapsed().as_secs_f64());
        match done {
            measure::Done::Time {
                case,
                config,
                result,
                ..
            } => {
                let mut g = self.runs.lock().unwrap_or_else(|e| e.into_inner());
                let (runs, finished) = &mut *g;
                let k = case * self.labels.len() + config;
                let slot = runs.get_mut(k)?;
                match result {
                    Ok(t) => slot.0.push(t.stats.wall_seconds),
                    Err(_) => slot.1 += 1,
                }
                if slot.0.len() + slot.1 < self.repeat {
                    return None;
                }
                *finished += 1;
                let what = if slot.1 > 0 {
                    format!("{} of {} runs failed", slot.1, self.repeat)
                } else {
                    format!(
                        "median {:.2} ms of {} runs",
                        1e3 * measure::median(&slot.0),
                        self.repeat
                    )
                };
                Some(format!(
                    "toyvm compare: [{finished}/{pairs}, {at}] {} under {}: {what}",
                    self.cases[*case].name, self.labels[*config]
                ))
            }
            measure::Done::Errors { case, result } => Some(format!(
                "toyvm compare: [{at}] {}: error pass {}",
                self.cases[*case].name,
                match result {
                    Ok(m) => format!("done ({} models)", m.len()),
                    Err(e) => format!("failed: {e}"),
                }
            )),
        }
    }
}

/// Runs the comparison with `runner`, `jobs` runs at a time, showing
/// `progress`.
pub fn compare(
    cases: &[suite::Case],
    columns: &[Column],
    repeat: usize,
    jobs: usize,
    runner: &dyn Runner,
    progress: &Progress,
) -> (Vec<Row>, Vec<IntervalSeries>) {
    let finished = run_all(cases, columns, repeat, jobs, runner, progress);
    assemble::assemble(cases, columns, finished)
}

/// Every job of the comparison, run in memory, as finished cells.
fn run_all(
    cases: &[suite::Case],
    columns: &[Column],
    repeat: usize,
    jobs: usize,
    runner: &dyn Runner,
    progress: &Progress,
) -> Vec<cells::Finished> {
    let configs: Vec<specs::Choice> = columns.iter().map(|c| c.config.clone()).collect();
    let work = measure::jobs(cases.len(), &configs, repeat.max(1), jobs);
    let done = execute_jobs(
        cases,
        columns,
        repeat,
        &work,
        jobs,
        runner,
        progress,
        &|_, _| {},
    );
    work.iter()
        .zip(&done)
        .filter_map(|(j, d)| cells::finished(j, cells::outcome(d)).ok())
        .collect()
}

/// Runs `work`, `jobs` at a time, showing `progress`; `sink` sees each
/// job's index in `work` and what it produced as soon as it finishes.
#[allow(clippy::too_many_arguments)]
pub fn execute_jobs(
    cases: &[suite::Case],
    columns: &[Column],
    repeat: usize,
    work: &[measure::Job],
    jobs: usize,
    runner: &dyn Runner,
    progress: &Progress,
    sink: &(dyn Fn(usize, &measure::Done) + Sync),
) -> Vec<measure::Done> {
    let configs: Vec<specs::Choice> = columns.iter().map(|c| c.config.clone()).collect();
    let labels: Vec<String> = columns.iter().map(|c| c.label.clone()).collect();
    let repeat = repeat.max(1);
    let log = PairLog {
        cases,
        labels: &labels,
        repeat,
        start: std::time::Instant::now(),
        runs: std::sync::Mutex::new((vec![(Vec::new(), 0); cases.len() * labels.len()], 0)),
    };
    if let Progress::Bar(bar) = progress {
        bar.set_length(work.len() as u64);
    }
    let step = |(i, job): (usize, &measure::Job)| {
        if let Progress::Bar(bar) = progress {
            bar.set_message(measure::describe(job, cases, &labels));
        }
        let d = measure::execute(job, cases, &configs, runner);
        sink(i, &d);
        match progress {
            Progress::Bar(bar) => bar.inc(1),
            Progress::Lines => {
                if let Some(l) = log.line(&d) {
                    // Progress is a courtesy: a closed standard error does
                    // not stop the comparison.
                    let _ = crate::output::stderr(format!("{l}\n").as_bytes());
                }
            }
            Progress::Hidden => {}
        }
        d
    };
    let done: Vec<measure::Done> = if jobs <= 1 {
        work.iter().enumerate().map(step).collect()
    } else {
        match rayon::ThreadPoolBuilder::new().num_threads(jobs).build() {
            Ok(pool) => pool.install(|| work.par_iter().enumerate().map(step).collect()),
            Err(_) => work.iter().enumerate().map(step).collect(),
        }
    };
    if let Progress::Bar(bar) = progress {
        bar.finish_and_clear();
    }
    done
}

fn write_file(path: &Path, text: &str, what: &'static str) -> Result<()> {
    crate::output::replace_file(path, text.as_bytes()).map_err(|source| Error::Write {
        what,
        path: path.to_owned(),
        source,
    })
}

/// Every output path the comparison will write, checked before any run:
/// a bad path fails in a moment, not after minutes of runs.
fn check_outputs(args: &CompareArgs) -> Result<()> {
    let outputs = [
        (&args.output, "the report"),
        (&args.chart, "the chart"),
        (&args.intervals, "the interval CSV"),
        (&args.interval_chart, "the interval chart"),
        (&args.study_chart, "the study chart"),
        (&args.tidy, "the tidy data"),
    ];
    for (path, what) in outputs {
        if let Some(p) = path {
            crate::output::check_writable(p, what)?;
        }
    }
    Ok(())
}

/// The most a `--baseline` report may hold (256 MiB): it is read whole.
const MAX_BASELINE_BYTES: u64 = 256 << 20;

/// The most `--repeat` a comparison takes.
pub const MAX_REPEAT: usize = 1000;

/// The most `--jobs`: runs side by side beyond the cores only add noise,
/// and each is a thread.
pub const MAX_JOBS: usize = 256;

/// The most timed runs (programs x configurations x repeat) one
/// comparison makes: its job list is built before the first run.
pub const MAX_TIMED_RUNS: u64 = 1_000_000;

/// Reads at most [`MAX_BASELINE_BYTES`] of a baseline report.
fn read_baseline(p: &Path) -> Result<Vec<u8>> {
    crate::files::read_bounded(p, MAX_BASELINE_BYTES).map_err(|source| {
        if source.kind() == std::io::ErrorKind::FileTooLarge {
            Error::BaselineTooLarge {
                path: p.to_owned(),
                limit: MAX_BASELINE_BYTES,
            }
        } else {
            Error::Read {
                path: p.to_owned(),
                source,
            }
        }
    })
}

/// The flags' ranges and combinations.
pub(crate) fn check_flags(args: &CompareArgs) -> Result<()> {
    if !(1..=MAX_REPEAT).contains(&args.repeat) {
        return Err(Error::Usage(format!(
            "--repeat must be between 1 and {MAX_REPEAT}, not {}",
            args.repeat
        )));
    }
    if let Some(j) = args.jobs
        && !(1..=MAX_JOBS).contains(&j)
    {
        return Err(Error::Usage(format!(
            "--jobs must be between 1 and {MAX_JOBS}, not {j}"
        )));
    }
    if args.study_chart.is_some() && args.synth.is_empty() {
        return Err(Error::Usage(
            "--study-chart draws the study of --synth workloads: give --synth".into(),
        ));
    }
    Ok(())
}

/// Every timed run is a job made before the first runs: bound them.
pub(crate) fn check_size(cases: usize, columns: usize, repeat: usize) -> Result<()> {
    let runs = (cases as u128) * (columns as u128) * (repeat as u128);
    if runs > MAX_TIMED_RUNS as u128 {
        return Err(Error::Usage(format!(
            "{cases} programs x {columns} configurations x --repeat {repeat} = {runs} timed \
             runs, over the {MAX_TIMED_RUNS} one comparison may make: compare fewer programs \
             or configurations, or repeat fewer times"
        )));
    }
    Ok(())
}

/// Runs side by side: `--jobs`, or 1, or every core with `--sweep`.
pub(crate) fn default_jobs(args: &CompareArgs) -> usize {
    let cores = toyvm::runtime::cores();
    args.jobs
        .unwrap_or(if args.sweep.is_empty() { 1 } else { cores })
        .max(1)
}

/// Builds the whole report for `args` with `runner` (no output written).
pub fn build(args: &CompareArgs, runner: &dyn Runner, progress: &Progress) -> Result<Comparison> {
    // With --merge the study comes from the parts.
    let parts = match args.merge.as_slice() {
        [] => None,
        paths => Some(shard::read_parts(paths)?),
    };
    let merged;
    let args = match &parts {
        Some(p) => {
            merged = shard::merged_args(args, &p.header);
            &merged
        }
        None => args,
    };
    check_flags(args)?;
    let columns = columns(args)?;
    let (cases, workloads) = cases(args)?;
    let baseline = match &args.baseline {
        Some(p) => {
            let bytes = read_baseline(p)?;
            let old: CompareReport =
                serde_json::from_slice(&bytes).map_err(|source| Error::BaselineJson {
                    path: p.to_owned(),
                    source,
                })?;
            Some((p.display().to_string(), old))
        }
        None => None,
    };
    if let Some((file, old)) = &baseline {
        baseline::check_sizes(old, file, args.bench, &report::programs(&cases))?;
    }
    check_size(cases.len(), columns.len(), args.repeat)?;
    let jobs = default_jobs(args);
    let finished = match (&parts, &args.cells) {
        (Some(p), _) => shard::merged_cells(p, &cases, &columns, args)?,
        (None, Some(path)) => {
            let ran = shard::run(args, path, &cases, &columns, jobs, runner, progress)?;
            shard::file_cells(&ran.file, path, &cases, &columns, args.repeat)?
        }
        (None, None) => run_all(&cases, &columns, args.repeat, jobs, runner, progress),
    };
    let jobs = parts.as_ref().map_or(jobs, |p| p.header.jobs as usize);
    let (rows, series) = assemble::assemble(&cases, &columns, finished.clone());
    let summary = report::summarize(&columns, &rows);
    let failures = rows.iter().filter(|r| r.status != Status::Ok).count() as u64;
    let mut report = CompareReport {
        format: report::REPORT_FORMAT,
        toyvm_version: env!("CARGO_PKG_VERSION").to_owned(),
        date: meta::now_utc(),
        machine: meta::Machine::this(),
        settings: report::Settings {
            repeat: args.repeat as u64,
            bench: args.bench,
            jobs: jobs as u64,
            error_stream: "interpreter's tuple stream (JIT off, every kind)".into(),
        },
        programs: report::programs(&cases),
        specs: columns.iter().map(|c| c.config.spec_string()).collect(),
        rows,
        summary,
        failures,
        baseline: None,
        study: None,
    };
    if !workloads.is_empty() {
        report.study = Some(assemble::study(workloads, &columns, &report.rows));
    }
    if let Some((file, old)) = baseline {
        report.baseline = Some(baseline::diff(&old, &report, &file));
    }
    Ok(Comparison {
        report,
        series,
        columns,
        cells: finished,
    })
}

/// The two configurations of the interval chart.
fn interval_models(args: &CompareArgs, columns: &[Column]) -> Result<[String; 2]> {
    let chosen: Vec<String> = match &args.interval_models {
        Some(s) => specs::split_specs(std::slice::from_ref(s))?,
        None => columns
            .iter()
            .filter(|c| {
                !matches!(
                    c.config.model_name(),
                    toyvm_profiler::spec::NONE | "perfect"
                )
            })
            .map(|c| c.label.clone())
            .collect(),
    };
    let find = |want: &str| -> Result<String> {
        columns
            .iter()
            .find(|c| c.label == want || c.config.spec_string() == want)
            .or_else(|| columns.iter().find(|c| c.config.model_name() == want))
            .filter(|c| c.config.spec().is_some())
            .map(|c| c.label.clone())
            .ok_or_else(|| Error::UnknownIntervalModel(want.to_owned()))
    };
    match chosen.as_slice() {
        [a, b, ..] => Ok([find(a)?, find(b)?]),
        [a] => Ok([find(a)?, find(a)?]),
        [] => Err(Error::Usage(
            "--interval-chart needs two models other than perfect".into(),
        )),
    }
}

/// What `toyvm compare --help` prints after the flags: every column and
/// term of the report, then the spec grammar.
pub fn help() -> String {
    format!("{}\n{}", render::TERMS, toyvm_profiler::spec::HELP)
}

/// `toyvm compare`: exit status 0, or 1 when any pair mismatched or failed.
pub fn run(args: &CompareArgs) -> Result<u8> {
    run_with(args, &RuntimeRunner)
}

/// [`run`] with another runner (tests use one that tampers with outputs).
pub fn run_with(args: &CompareArgs, runner: &dyn Runner) -> Result<u8> {
    // Fail on a bad option or output path before minutes of runs, not after.
    let shown = match &args.interval_chart {
        Some(_) => Some(interval_models(args, &columns(args)?)?),
        None => None,
    };
    check_outputs(args)?;
    if let Some(status) = shard::run_part(args, runner)? {
        return Ok(status);
    }
    let c = build(args, runner, &Progress::for_stderr())?;
    let mut notes = String::new();
    if !args.bench {
        notes.push_str(&format!("toyvm compare: {}\n", render::TEST_SIZES));
    }
    if let Some(b) = &c.report.baseline {
        for w in &b.warnings {
            notes.push_str(&format!("toyvm compare: WARNING: {w}\n"));
        }
    }
    if !notes.is_empty() {
        let _ = crate::output::stderr(notes.as_bytes());
    }
    let text = match args.format {
        Format::Table => render::table(&c.report),
        Format::Csv => render::csv(&c.report),
        Format::Json => render::json(&c.report),
        Format::Markdown => render::markdown(&c.report),
    };
    if let Some(p) = &args.output {
        write_file(p, &text, "the report")?;
    }
    if let Some(p) = &args.chart {
        chart::summary(&c.report, p)?;
    }
    if let (Some(p), Some(s)) = (&args.study_chart, &c.report.study) {
        chart::study(s, p)?;
    }
    if let Some(p) = &args.intervals {
        write_file(p, &render::intervals_csv(&c.series), "the interval CSV")?;
    }
    if let Some(p) = &args.tidy {
        write_file(p, &tidy::csv(&c), "the tidy data")?;
        let meta = tidy::meta_path(p);
        write_file(&meta, &tidy::meta(&c), "the tidy data's metadata")?;
    }
    if let (Some(p), Some([a, b])) = (&args.interval_chart, shown) {
        let shown: Vec<IntervalSeries> = c
            .series
            .iter()
            .filter(|s| s.label == a || s.label == b)
            .cloned()
            .collect();
        chart::intervals(&shown, [a.as_str(), b.as_str()], &c.report, p)?;
    }
    let status = if c.report.failures > 0 { 1 } else { 0 };
    // Standard output last, after every file. A failed write is an error,
    // but never hides failed pairs: their status 1 stands, and the
    // write's failure is said beside it.
    if args.output.is_none()
        && let Err(e) = crate::output::stdout(text.as_bytes())
    {
        if status == 0 {
            return Err(Error::Stdout(e));
        }
        let note = format!("toyvm compare: writing the report to standard output: {e}\n");
        let _ = crate::output::stderr(note.as_bytes());
    }
    if c.report.failures > 0 {
        let note = format!(
            "toyvm compare: {} pairs failed (output mismatch or error); see the report\n",
            c.report.failures
        );
        // Exit status 1 says it when standard error cannot.
        let _ = crate::output::stderr(note.as_bytes());
    }
    Ok(status)
}
