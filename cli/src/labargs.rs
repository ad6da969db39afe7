//! The research commands' flags (`compare`, `synth`, `reproduce`): the clap
//! definitions of the lab's options, which the lab takes as plain structs
//! ([`toyvm_lab::compare::CompareArgs`], [`toyvm_lab::synth::SynthArgs`],
//! [`toyvm_lab::reproduce::ReproduceArgs`]), so that clap stays in the CLI.

use std::path::PathBuf;

use clap::ValueEnum;
use toyvm_lab::compare::Format;

/// `--format`'s values (see [`Format`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum FormatArg {
    /// A readable table, a summary per configuration and any failures.
    Table,
    /// One line per (program, configuration); absent values are empty.
    Csv,
    /// Everything, with the settings, machine and date.
    Json,
    /// The table as Markdown.
    Markdown,
}

impl From<FormatArg> for Format {
    fn from(f: FormatArg) -> Self {
        match f {
            FormatArg::Table => Format::Table,
            FormatArg::Csv => Format::Csv,
            FormatArg::Json => Format::Json,
            FormatArg::Markdown => Format::Markdown,
        }
    }
}

/// Run every profiler model on every program and compare speedup, profile
/// error, modeled state and overhead.
#[derive(clap::Args, Clone, Debug)]
pub(crate) struct CompareCmd {
    /// Programs: files, or names of programs in the program folder
    /// (default: every program there).
    pub(crate) programs: Vec<String>,
    /// Configurations to compare (default: none and every model at its
    /// papers' defaults). Specs contain commas: in a comma list a part
    /// named after a model (`perfect`, `rap:eps=1%`) or `none` starts a
    /// new spec; `;` also separates. The interpreter
    /// (`none`) is always run: it is the baseline and the output oracle.
    #[arg(long = "profile", alias = "profiles", value_name = "SPEC,SPEC,...")]
    pub(crate) profiles: Vec<String>,
    /// Timed runs per (program, configuration); the median is reported
    /// (1 to 1000, and at most 1,000,000 timed runs in all).
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub(crate) repeat: usize,
    /// Run programs with their `# bench-args:` instead of `# args:`.
    #[arg(long)]
    pub(crate) bench: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = FormatArg::Table)]
    pub(crate) format: FormatArg,
    /// Write the report here instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,
    /// Draw speedup per program and model, and error against state bytes,
    /// as SVG.
    #[arg(long, value_name = "FILE.svg")]
    pub(crate) chart: Option<PathBuf>,
    /// A design-space grid, e.g. `multihash:tables=1|2|4|8,entries=512|2048`:
    /// the cartesian product of the `|` alternatives is compared (with
    /// `none` and `perfect` as references unless `--profile` is given).
    /// At most 4096 configurations in all; a larger grid is refused before
    /// it is expanded.
    #[arg(long, value_name = "GRID")]
    pub(crate) sweep: Vec<String>,
    /// Runs side by side (default: 1, or every core with `--sweep`; at
    /// most 256). Timings are noisier above 1.
    #[arg(long, value_name = "N")]
    pub(crate) jobs: Option<usize>,
    /// Write each (program, model) pair's error per interval as CSV.
    #[arg(long, value_name = "FILE.csv")]
    pub(crate) intervals: Option<PathBuf>,
    /// Draw the error per interval of two models side by side (SVG).
    #[arg(long, value_name = "FILE.svg")]
    pub(crate) interval_chart: Option<PathBuf>,
    /// The two configurations `--interval-chart` shows (labels as given
    /// to `--profile`; default: the first two models other than perfect).
    #[arg(long, value_name = "A,B", requires = "interval_chart")]
    pub(crate) interval_models: Option<String>,
    /// An earlier JSON report: show how speedups and errors changed.
    #[arg(long, value_name = "OLD.json")]
    pub(crate) baseline: Option<PathBuf>,
    /// Where to find programs by name (default: `programs/`).
    #[arg(long, value_name = "DIR")]
    pub(crate) program_dir: Option<PathBuf>,
    /// Add generated workloads, one per point of a knob grid, e.g.
    /// `hot=16|64|256|1024,zipf=1.2`: keys are `toyvm synth`'s flags
    /// (seed, functions, blocks, hot, zipf, targets, value-share, phases,
    /// noise, work) and `n`, the iterations (default 10000, 300000 with
    /// `--bench`). The report adds the study: each model's error and
    /// speedup relative to perfect against the workload's hot set over the
    /// model's capacity, and where E passes 1% and the speedup falls below
    /// 0.9x beyond noise. Without PROGRAMS only the workloads are run.
    #[arg(long, value_name = "GRID")]
    pub(crate) synth: Vec<String>,
    /// Draw the study (with `--synth`): speedup relative to perfect with
    /// its per-round range against load and against state bytes (SVG).
    #[arg(long, value_name = "FILE.svg")]
    pub(crate) study_chart: Option<PathBuf>,
    /// Record each finished cell (a timed run, or a program's error pass)
    /// in FILE as one JSON line, appended as it finishes, after a header
    /// line with the study's fingerprint. See "Studies on a cluster" in
    /// the README.
    #[arg(long, value_name = "FILE.jsonl", alias = "out-dir")]
    pub(crate) cells: Option<PathBuf>,
    /// With --cells: run only the cells missing from FILE.
    #[arg(long, requires = "cells")]
    pub(crate) resume: bool,
    /// Run only shard I of N (0 <= I < N) of the study's cells, balanced by
    /// expected cost, and write them to --cells (the part file); then
    /// `toyvm compare --merge PARTS...` makes the report.
    #[arg(long, value_name = "I/N", requires = "cells")]
    pub(crate) shard: Option<String>,
    /// Make the report from part files (--cells of every --shard I/N of one
    /// study) instead of running; the study comes from the parts.
    #[arg(long, value_name = "PART", num_args = 1.., conflicts_with_all = ["programs", "profiles", "sweep", "synth", "cells", "shard", "resume", "bench", "repeat"])]
    pub(crate) merge: Vec<PathBuf>,
    /// Write one CSV row per timed run (raw timings, units in the column
    /// names) to FILE.csv, and the run's metadata to FILE.csv.meta.json.
    #[arg(long, value_name = "FILE.csv")]
    pub(crate) tidy: Option<PathBuf>,
}

impl From<CompareCmd> for toyvm_lab::compare::CompareArgs {
    fn from(c: CompareCmd) -> Self {
        toyvm_lab::compare::CompareArgs {
            programs: c.programs,
            profiles: c.profiles,
            repeat: c.repeat,
            bench: c.bench,
            format: c.format.into(),
            output: c.output,
            chart: c.chart,
            sweep: c.sweep,
            jobs: c.jobs,
            intervals: c.intervals,
            interval_chart: c.interval_chart,
            interval_models: c.interval_models,
            baseline: c.baseline,
            program_dir: c.program_dir,
            synth: c.synth,
            study_chart: c.study_chart,
            cells: c.cells,
            resume: c.resume,
            shard: c.shard,
            merge: c.merge,
            tidy: c.tidy,
        }
    }
}

/// `toyvm synth`: generate a program, or describe one.
#[derive(clap::Args, Clone, Debug)]
pub(crate) struct SynthCmd {
    /// Seed of the generator and of the program's random choices.
    #[arg(long, default_value_t = 1, conflicts_with = "describe")]
    pub(crate) seed: u64,
    /// Worker functions (code size).
    #[arg(long, default_value_t = 16, conflicts_with = "describe")]
    pub(crate) functions: u32,
    /// Blocks per worker function (code size).
    #[arg(long, default_value_t = 8, conflicts_with = "describe")]
    pub(crate) blocks: u32,
    /// Hot items per phase (each brings about five distinct tuples: edges,
    /// values and call targets).
    #[arg(long, default_value_t = 64, conflicts_with = "describe")]
    pub(crate) hot: u32,
    /// Skew of the hot items: the i-th gets a share proportional to 1/i^S.
    #[arg(
        long,
        value_name = "S",
        default_value_t = 1.0,
        conflicts_with = "describe"
    )]
    pub(crate) zipf: f64,
    /// Targets per indirect call site, the t-th with a share proportional
    /// to 1/t.
    #[arg(long, default_value_t = 2, conflicts_with = "describe")]
    pub(crate) targets: u32,
    /// Share of the dominant value at the value load and the arguments.
    #[arg(
        long,
        value_name = "P",
        default_value_t = 0.9,
        conflicts_with = "describe"
    )]
    pub(crate) value_share: f64,
    /// How many times the hot set moves over the run.
    #[arg(long, default_value_t = 0, conflicts_with = "describe")]
    pub(crate) phases: u32,
    /// Share of iterations that run a cold, rarely repeated item.
    #[arg(
        long,
        value_name = "P",
        default_value_t = 0.0,
        conflicts_with = "describe"
    )]
    pub(crate) noise: f64,
    /// Iterations of an inner loop in every block (0: none): work that
    /// compiled code speeds up, one edge tuple per iteration.
    #[arg(
        long,
        value_name = "W",
        default_value_t = 0,
        conflicts_with = "describe"
    )]
    pub(crate) work: u32,
    /// Where to write the program (standard output without it). The file
    /// is replaced only once the whole program is written.
    #[arg(short, long, value_name = "FILE.tasm", conflicts_with = "describe")]
    pub(crate) output: Option<PathBuf>,
    /// Instead of generating, run FILE under the perfect profiler and
    /// report its tuple stream's statistics.
    #[arg(long, value_name = "FILE")]
    pub(crate) describe: Option<PathBuf>,
    /// Arguments of the described program (default: its `# args:` line).
    #[arg(allow_negative_numbers = true, requires = "describe")]
    pub(crate) args: Vec<i64>,
    /// Interval length in tuples for `--describe` (at least 1).
    #[arg(long, default_value_t = 10_000, requires = "describe")]
    pub(crate) interval: u64,
    /// Candidate threshold for `--describe`: `1%` or `0.01`.
    #[arg(long, default_value = "1%", requires = "describe")]
    pub(crate) threshold: String,
    /// Print the description as JSON (`format` 1; see docs/json.md).
    #[arg(long, requires = "describe")]
    pub(crate) json: bool,
}

impl From<SynthCmd> for toyvm_lab::synth::SynthArgs {
    fn from(c: SynthCmd) -> Self {
        toyvm_lab::synth::SynthArgs {
            seed: c.seed,
            functions: c.functions,
            blocks: c.blocks,
            hot: c.hot,
            zipf: c.zipf,
            targets: c.targets,
            value_share: c.value_share,
            phases: c.phases,
            noise: c.noise,
            work: c.work,
            output: c.output,
            describe: c.describe,
            args: c.args,
            interval: c.interval,
            threshold: c.threshold,
            json: c.json,
        }
    }
}

/// `toyvm reproduce`'s arguments.
#[derive(clap::Args, Clone, Debug)]
pub(crate) struct ReproduceCmd {
    /// Figures to run: ids (`000-fig12`) or prefixes (`000`, `004-fig`);
    /// all when none is given.
    pub(crate) figures: Vec<String>,
    /// Reduced sizes: every figure in a few minutes (what the tests run).
    #[arg(long)]
    pub(crate) quick: bool,
    /// Where REPORT.md and the SVGs go (created if missing).
    #[arg(long, default_value = "reproduce-out")]
    pub(crate) out: PathBuf,
    /// A trace (`toyvm profile` formats) to add to the streams.
    #[arg(long, value_name = "FILE")]
    pub(crate) trace: Vec<PathBuf>,
    /// List the figures and exit.
    #[arg(long)]
    pub(crate) list: bool,
}

impl From<ReproduceCmd> for toyvm_lab::reproduce::ReproduceArgs {
    fn from(c: ReproduceCmd) -> Self {
        toyvm_lab::reproduce::ReproduceArgs {
            figures: c.figures,
            quick: c.quick,
            out: c.out,
            trace: c.trace,
            list: c.list,
        }
    }
}
