//! The command line's grammar: every command, flag and argument (clap
//! derive), with the help texts `toyvm help` prints.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};
use toyvm_vm::KindSet;

/// toyvm: a bytecode VM whose execution feeds models of hardware profilers.
#[derive(Parser, Debug)]
#[command(name = "toyvm", version, about, long_about = None, after_help = crate::status::TABLE)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Subcommand, Debug)]
pub(crate) enum Command {
    /// Run a program (`.bc` bytecode, `.tasm` assembly or a `.wasm` module).
    ///
    /// The program's arguments are the entry function's parameters, as
    /// integers. Exit status 0 when the program returns (its value is
    /// `result` in `--stats`; `--exit-code` makes its low byte the exit
    /// status); a trap prints its pc and reason and exits with 4 (see
    /// `toyvm --help` for every status).
    #[command(after_long_help = toyvm_profiler::spec::HELP)]
    Run(RunArgs),
    /// Assemble text assembly into a `.bc` bytecode file.
    Asm {
        /// The assembly source.
        file: PathBuf,
        /// Where to write the bytecode.
        #[arg(short, long, value_name = "OUT")]
        output: PathBuf,
    },
    /// Run profiler models over a recorded tuple trace.
    ///
    /// Each model is compared against the perfect profiler at its own
    /// interval length; the report gives state bytes, messages to software,
    /// the error figures and the hottest candidates.
    #[command(after_long_help = format!("{}\n{}", toyvm_profiler::evaluation::TERMS, toyvm_profiler::spec::HELP))]
    Profile {
        /// A text or binary trace (as written by `toyvm run --record`).
        #[arg(long, value_name = "FILE")]
        trace: PathBuf,
        /// Model specs, e.g. `multihash:tables=4,entries=2048`. Several
        /// specs may be given by repeating the flag, separated by `;`, or in
        /// one comma list (a part named after a model starts a new spec):
        /// `--profile 'multihash,stratified,rap:eps=1%'`.
        #[arg(long = "profile", value_name = "SPEC", required = true)]
        profiles: Vec<String>,
        /// Print the report as JSON (`format` 1; see docs/json.md).
        #[arg(long)]
        json: bool,
        /// Candidates to list per model in the text report.
        #[arg(long, default_value_t = 10)]
        top: usize,
    },
    /// Verify a profiler model against a perfect profile, in two passes.
    ///
    /// Pass 1 runs the program under the perfect profiler and records, per
    /// interval, the entries a correct model must report (saved with
    /// `--reference`). Pass 2 runs the model and checks, over all intervals,
    /// that it finds the hot entries, estimates their counts within what
    /// the model guarantees (the tolerance; sampling noise for a sampler),
    /// reports no systematic false positives and stays within its overhead
    /// budget, and for RAP that its hot ranges hold within its error bound.
    /// Exit status 0 only when every criterion passes (1 otherwise; 2 to 5
    /// when there is no verdict, see `toyvm --help`).
    #[command(after_long_help = toyvm_profiler::spec::HELP)]
    Verify {
        /// The program (bytecode or assembly).
        file: PathBuf,
        /// Integer arguments for the entry function.
        #[arg(allow_negative_numbers = true)]
        args: Vec<String>,
        /// The model under test.
        #[arg(long, value_name = "SPEC")]
        profile: String,
        /// Reference file: reused if it exists, otherwise pass 1 writes it.
        #[arg(long, value_name = "REF.json")]
        reference: Option<PathBuf>,
        /// A file loaded into memory at the program's `.input` address.
        #[arg(long, value_name = "FILE")]
        input: Option<PathBuf>,
        /// Width of the neutral band around the threshold (fraction of it;
        /// default 0.25). The margin, tolerance and quorum default to a
        /// reused reference's; given, they replace them and the verdict says so.
        #[arg(long)]
        margin: Option<f64>,
        /// Allowed relative error of a reported count (default 0.10).
        #[arg(long)]
        tolerance: Option<f64>,
        /// Fraction of intervals that must conform for a criterion to pass
        /// (default 0.90).
        #[arg(long)]
        quorum: Option<f64>,
        /// Print the verdict as JSON (`format` 1; see docs/json.md).
        #[arg(long)]
        json: bool,
        /// Pass 2 with the JIT on (driven by the model under test), against
        /// the JIT-off reference: checks the output and that every reported
        /// entry was hot without the JIT (the other criteria need the
        /// events compiled code hides).
        #[arg(long)]
        jit: bool,
    },
    /// Compare every profiler model on every program: speedup, profile
    /// error against perfect, modeled state and overhead.
    #[command(after_long_help = toyvm_lab::compare::help())]
    Compare(crate::labargs::CompareCmd),
    /// Generate a synthetic workload whose tuple stream's hot set, skew,
    /// call polymorphism, value locality, phases and noise are set by
    /// knobs, or (`--describe FILE`) measure a program's stream.
    Synth(crate::labargs::SynthCmd),
    /// Regenerate the papers' experiments on toyvm's own streams: each
    /// claim beside our figure and a verdict, in DIR/REPORT.md with one
    /// SVG per figure (`--list` names them).
    Reproduce(crate::labargs::ReproduceCmd),
    /// Work with traces: `toyvm trace import --from lackey IN -o OUT`.
    Trace(crate::import::TraceArgs),
    /// Disassemble a program into canonical text assembly.
    ///
    /// `toyvm asm` on the output reproduces the `.bc` file byte for byte.
    Dis {
        /// The program (bytecode or assembly).
        file: PathBuf,
        /// Write here instead of standard output.
        #[arg(short, long, value_name = "OUT")]
        output: Option<PathBuf>,
    },
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum TraceFormat {
    Text,
    Binary,
}

/// `toyvm run`'s arguments.
#[derive(clap::Args, Debug)]
pub(crate) struct RunArgs {
    /// The program: bytecode, text assembly or a WebAssembly module
    /// (told apart by the magic), or the name of a program in
    /// `programs/` (`sieve`), as `compare` takes it.
    pub(crate) file: PathBuf,
    /// Integer arguments for the entry function (for a WebAssembly
    /// module: its command-line arguments, any text).
    #[arg(allow_negative_numbers = true)]
    pub(crate) args: Vec<String>,
    /// A WebAssembly module's clock and random bytes come from the host
    /// (default: deterministic, so runs compare byte for byte).
    #[arg(long)]
    pub(crate) real_time: bool,
    /// A file whose bytes are loaded into memory at the `.input` address
    /// (at most the words from there to the end of `.memory`).
    #[arg(long, value_name = "FILE")]
    pub(crate) input: Option<PathBuf>,
    /// Stop with a trap after this many executed instructions (the JIT
    /// stays on: compiled code counts its instructions too).
    #[arg(long, value_name = "N")]
    pub(crate) fuel: Option<u64>,
    /// Trap with a stack overflow when calls nest deeper than this
    /// (default 65536), in compiled code too.
    #[arg(long, value_name = "N")]
    pub(crate) max_depth: Option<usize>,
    /// Refuse, before running it, a program whose memory (`.memory`)
    /// is over this many words.
    #[arg(long, value_name = "WORDS")]
    pub(crate) max_memory: Option<u64>,
    /// The profiler model that watches the run: a spec such as
    /// `multihash:tables=4,entries=2048`, `perfect`, or `none`.
    #[arg(
        long,
        value_name = "SPEC",
        default_value = "none",
        conflicts_with = "record"
    )]
    pub(crate) profile: String,
    /// Print each interval's candidates (with `--profile`).
    #[arg(long)]
    pub(crate) candidates: bool,
    /// Interpret only: no compiled code even with a profiler model.
    #[arg(long)]
    pub(crate) no_jit: bool,
    /// Run the profiler model on the interpreter's thread (1) or its
    /// own (2); `auto`: 2 on a machine with more than one core, the
    /// model moving to its thread after its first 16,384 tuples, except
    /// for a JIT run with a lag under 8,192 tuples, which would wait
    /// for the model at nearly every batch.
    #[arg(long, value_name = "1|2|auto")]
    pub(crate) threads: Option<toyvm::runtime::Threads>,
    /// Tuples between an interval's end and its candidates reaching the
    /// JIT (default: the interval length). The same lag gives the same
    /// decisions on one thread or two.
    #[arg(long, value_name = "TUPLES")]
    pub(crate) lag: Option<u64>,
    /// Install compiled code as soon as the compiler thread has it,
    /// not at the interval end after it was planned: the interpreter
    /// never waits for the compiler, but runs are not repeatable.
    #[arg(long = "async")]
    pub(crate) async_install: bool,
    /// Tuples between planning a region and installing its code: the
    /// compiler thread's head start (0: at the interval end that
    /// planned it). Deterministic, unlike --async.
    #[arg(long, value_name = "TUPLES")]
    pub(crate) install_lag: Option<u64>,
    /// Print what the JIT compiles, from which candidates, and every
    /// invalidation with its reason.
    #[arg(long)]
    pub(crate) jit_log: bool,
    /// Write each compiled region's Cranelift IR (annotated with
    /// bytecode pcs) to this directory.
    #[arg(long, value_name = "DIR")]
    pub(crate) dump_clif: Option<PathBuf>,
    /// Compile without value specialization (no guarded constants), to
    /// measure what it buys.
    #[arg(long)]
    pub(crate) no_value_spec: bool,
    /// Compile without call-target specialization (indirect calls stay
    /// with the interpreter), to measure what it buys.
    #[arg(long)]
    pub(crate) no_call_spec: bool,
    /// Record the tuple stream to this trace file.
    #[arg(long, value_name = "FILE")]
    pub(crate) record: Option<PathBuf>,
    /// Trace format for `--record` (default: text).
    #[arg(long, value_enum)]
    pub(crate) record_format: Option<TraceFormat>,
    /// Tuple kinds `--record` writes: `all` (the default), `none`, or a
    /// list of value,edge,call.
    #[arg(long, value_parser = <KindSet as std::str::FromStr>::from_str)]
    pub(crate) kinds: Option<KindSet>,
    /// Print run statistics when the program ends: as text on standard
    /// error, or with --json as one JSON line on standard output after
    /// the program's output (or in --stats-file).
    #[arg(long)]
    pub(crate) stats: bool,
    /// The statistics as JSON (`format` 1; see docs/json.md), on
    /// standard output after the program's output, on a line of its own.
    #[arg(long, requires = "stats")]
    pub(crate) json: bool,
    /// Write the statistics to this file instead (checked before the
    /// run; replaced only once written).
    #[arg(long, value_name = "FILE", requires = "stats")]
    pub(crate) stats_file: Option<PathBuf>,
    /// Exit with the low byte of the program's return value (as a shell
    /// command does) instead of 0: a value of 1 to 5 then reads like
    /// one of toyvm's own statuses.
    #[arg(long)]
    pub(crate) exit_code: bool,
}
