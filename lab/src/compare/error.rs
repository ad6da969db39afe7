//! What can stop `toyvm compare`: a bad flag, spec, grid or program, a
//! baseline that cannot be compared, an output that cannot be written.
//!
//! A run that fails once the comparison is under way does not stop it: its
//! pair is a row with status `ERROR` and the error's message in the row's
//! detail (the [`Runner`](super::Runner) seam returns [`Error::Run`] and
//! the error pass its own variants, which become that detail).

use std::fmt;
use std::path::PathBuf;

/// Everything that can go wrong in a comparison.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A program of the suite could not be found, read or loaded.
    #[error(transparent)]
    Suite(#[from] crate::suite::Error),
    /// A `--profile` spec, or the spec list, does not parse.
    #[error(transparent)]
    Spec(#[from] toyvm_profiler::Error),
    /// A `--sweep` grid does not split into specs, or one of its points is
    /// not a valid spec.
    #[error("sweep `{grid}`: {source}")]
    Sweep {
        /// The grid as given to `--sweep`.
        grid: String,
        /// What the spec parser said.
        source: toyvm_profiler::Error,
    },
    /// An option of a grid (`--sweep`, `--synth`) is not
    /// `key=value|value...`.
    #[error("{grid}: option `{option}` is not key=value|value...")]
    GridOption {
        /// The grid, as the message names it (``sweep `...` `` or
        /// ``--synth `...` ``).
        grid: String,
        /// The option that lacks its `=`.
        option: String,
    },
    /// A key of a grid has no values (`key=`).
    #[error("{grid}: key `{key}` has no values")]
    GridKey {
        /// The grid, as the message names it.
        grid: String,
        /// The key without values.
        key: String,
    },
    /// A grid has more points than a comparison runs
    /// ([`MAX_CONFIGS`](super::specs::MAX_CONFIGS));
    /// refused before it is expanded.
    #[error(
        "{grid} has {} {points}; at most {limit} are compared \
         (each runs on every program): split it or give fewer values",
        count(.total)
    )]
    TooManyPoints {
        /// The grid, as the message names it.
        grid: String,
        /// Its points so far (`usize::MAX`: more than 2^64).
        total: usize,
        /// What a point is: `configurations` or `workloads`.
        points: &'static str,
        /// The most a comparison runs.
        limit: usize,
    },
    /// `--profile` and `--sweep` together give more configurations than
    /// [`MAX_CONFIGS`](super::specs::MAX_CONFIGS).
    #[error("{count} configurations to compare; at most {limit}")]
    TooManyConfigs {
        /// The configurations asked for.
        count: usize,
        /// The most a comparison runs.
        limit: usize,
    },
    /// A file could not be read: a baseline report, a cells file.
    #[error("{}: {source}", .path.display())]
    Read {
        /// The file or folder.
        path: PathBuf,
        /// Why it could not be read.
        source: std::io::Error,
    },
    /// `--synth`: a knob is unknown or out of range, or the generator
    /// refused the knobs.
    #[error("--synth: {0}")]
    Synth(#[source] toyvm::Error),
    /// `--synth`: the iterations (`n=`) are not a number in range.
    #[error("--synth: `n={value}`: iterations must be in 1..={limit}")]
    SynthIterations {
        /// The value given.
        value: String,
        /// The most iterations a workload runs
        /// ([`MAX_ITERATIONS`](super::study::MAX_ITERATIONS)).
        limit: i64,
    },
    /// A generated workload does not assemble, or its stream could not be
    /// measured.
    #[error("{name}: {source}")]
    Workload {
        /// The workload's name (`synth(hot=64,...)`).
        name: String,
        /// What failed.
        source: toyvm::Error,
    },
    /// A `--baseline` report is larger than a report may be.
    #[error("{}: larger than the {limit} bytes a baseline report may hold", .path.display())]
    BaselineTooLarge {
        /// The baseline report.
        path: PathBuf,
        /// The most a report may hold, in bytes.
        limit: u64,
    },
    /// A `--baseline` file is not a `--format json` report of compare.
    #[error("{}: not a compare JSON report: {source}", .path.display())]
    BaselineJson {
        /// The baseline report.
        path: PathBuf,
        /// What the JSON parser said.
        source: serde_json::Error,
    },
    /// The baseline ran at other sizes (test against `--bench`): its
    /// times measure other work.
    #[error(
        "--baseline {file} ran at {}, this comparison at {}: their times measure other work. \
         Run with the baseline's sizes or take a new baseline",
        sizes(.baseline_bench),
        sizes(.bench)
    )]
    BaselineSizes {
        /// The baseline report, as given to `--baseline`.
        file: String,
        /// Whether the baseline ran with `--bench`.
        baseline_bench: bool,
        /// Whether this comparison runs with `--bench`.
        bench: bool,
    },
    /// The baseline ran programs of the same names with other arguments
    /// or input.
    #[error(
        "--baseline {file} ran programs at other sizes: {}. Their times measure other work; \
         take a new baseline",
        join(.programs)
    )]
    BaselinePrograms {
        /// The baseline report, as given to `--baseline`.
        file: String,
        /// Each program that ran otherwise, with both sizes.
        programs: Vec<SizeChange>,
    },
    /// `--interval-models` names a configuration that is not compared (or
    /// is the interpreter alone).
    #[error("--interval-models: `{0}` is not one of the compared models")]
    UnknownIntervalModel(String),
    /// An output path cannot be written (checked before any run).
    #[error(transparent)]
    Output(#[from] crate::output::NotWritable),
    /// Writing an output file failed.
    #[error("writing {what} to {}: {source}", .path.display())]
    Write {
        /// The output: `the report`, `the interval CSV`.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// Why the write failed.
        source: std::io::Error,
    },
    /// Writing the report to standard output failed (a full disk, or the
    /// reader went away before the report ended).
    #[error("writing the report to standard output: {0}")]
    Stdout(#[source] std::io::Error),
    /// A chart could not be drawn or written.
    #[error("cannot write the chart to {}: {cause}", .path.display())]
    Chart {
        /// The SVG file.
        path: PathBuf,
        /// Why, as the plotting library says it (without its prefixes).
        cause: String,
    },
    /// A run of a program failed (it trapped, or the runtime could not set
    /// it up). Such an error becomes a row's detail; it does not stop the
    /// comparison.
    #[error(transparent)]
    Run(#[from] toyvm::Error),
    /// The interpreter's run of an error pass failed.
    #[error("recording the tuple stream: {0}")]
    Record(#[source] toyvm_vm::Error),
    /// Flags that do not go together, or a flag's value out of range.
    #[error("{0}")]
    Usage(String),
    /// A cells file or the parts of a merge cannot be used: another
    /// study's, a missing or duplicate shard, a damaged line.
    #[error("{0}")]
    Parts(String),
}

/// The result of a comparison's steps, with [`Error`] by default.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A program a baseline ran with other arguments or input than this
/// comparison does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SizeChange {
    /// The program's name.
    pub program: String,
    /// Its arguments and input in the baseline: `(3000) --input x.txt`.
    pub baseline: String,
    /// Its arguments and input now.
    pub now: String,
}

impl fmt::Display for SizeChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ran as {} there, {} here",
            self.program, self.baseline, self.now
        )
    }
}

fn count(total: &usize) -> String {
    if *total == usize::MAX {
        "more than 2^64".to_owned()
    } else {
        total.to_string()
    }
}

fn sizes(bench: &bool) -> &'static str {
    if *bench {
        "benchmark sizes (--bench)"
    } else {
        "test sizes (no --bench)"
    }
}

fn join(changes: &[SizeChange]) -> String {
    changes
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}
