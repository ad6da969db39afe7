//! The `toyvm` command line.

use std::fmt::Write as _;
use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::{Parser, Subcommand, ValueEnum};
use toyvm::output;
use toyvm::record::RecordSink;
use toyvm::runstats::{Mode, StatsOut};
use toyvm_profiler::trace::Format;
use toyvm_vm::interp::{self, Config, Input};
use toyvm_vm::{KindSet, Program, asm};

/// toyvm: a bytecode VM whose execution feeds models of hardware profilers.
#[derive(Parser, Debug)]
#[command(name = "toyvm", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a program (`.bc` bytecode or `.tasm` assembly).
    ///
    /// The program's arguments are the entry function's parameters, as
    /// integers. Its exit status is the low byte of the entry function's
    /// return value; a trap prints its pc and reason and exits with 3.
    #[command(after_long_help = toyvm_profiler::spec::HELP)]
    Run {
        /// The program: bytecode or text assembly (told apart by the magic),
        /// or the name of a program in `programs/` (`sieve`), as `compare`
        /// takes it.
        file: PathBuf,
        /// Integer arguments for the entry function.
        #[arg(allow_negative_numbers = true)]
        args: Vec<String>,
        /// A file whose bytes are loaded into memory at the `.input` address
        /// (at most the words from there to the end of `.memory`).
        #[arg(long, value_name = "FILE")]
        input: Option<PathBuf>,
        /// Stop with a trap after this many executed instructions (the JIT
        /// stays on: compiled code counts its instructions too).
        #[arg(long, value_name = "N")]
        fuel: Option<u64>,
        /// Trap with a stack overflow when calls nest deeper than this
        /// (default 65536), in compiled code too.
        #[arg(long, value_name = "N")]
        max_depth: Option<usize>,
        /// Refuse, before running it, a program whose memory (`.memory`)
        /// is over this many words.
        #[arg(long, value_name = "WORDS")]
        max_memory: Option<u64>,
        /// The profiler model that watches the run: a spec such as
        /// `multihash:tables=4,entries=2048`, `perfect`, or `none`.
        #[arg(
            long,
            value_name = "SPEC",
            default_value = "none",
            conflicts_with = "record"
        )]
        profile: String,
        /// Print each interval's candidates (with `--profile`).
        #[arg(long)]
        candidates: bool,
        /// Interpret only: no compiled code even with a profiler model.
        #[arg(long)]
        no_jit: bool,
        /// Run the profiler model on the interpreter's thread (1) or its
        /// own (2); `auto`: 2 on a machine with more than one core.
        #[arg(long, value_name = "1|2|auto", default_value = "auto")]
        threads: toyvm::runtime::Threads,
        /// Tuples between an interval's end and its candidates reaching the
        /// JIT (default: the interval length). The same lag gives the same
        /// decisions on one thread or two.
        #[arg(long, value_name = "TUPLES")]
        lag: Option<u64>,
        /// Install compiled code as soon as the compiler thread has it,
        /// not at the interval end after it was planned: the interpreter
        /// never waits for the compiler, but runs are not repeatable.
        #[arg(long = "async")]
        async_install: bool,
        /// Tuples between planning a region and installing its code: the
        /// compiler thread's head start (0: at the interval end that
        /// planned it). Deterministic, unlike --async.
        #[arg(long, value_name = "TUPLES", default_value_t = 0)]
        install_lag: u64,
        /// Print what the JIT compiles, from which candidates, and every
        /// invalidation with its reason.
        #[arg(long)]
        jit_log: bool,
        /// Write each compiled region's Cranelift IR (annotated with
        /// bytecode pcs) to this directory.
        #[arg(long, value_name = "DIR")]
        dump_clif: Option<PathBuf>,
        /// Compile without value specialization (no guarded constants), to
        /// measure what it buys.
        #[arg(long)]
        no_value_spec: bool,
        /// Compile without call-target specialization (indirect calls stay
        /// with the interpreter), to measure what it buys.
        #[arg(long)]
        no_call_spec: bool,
        /// Record the tuple stream to this trace file.
        #[arg(long, value_name = "FILE")]
        record: Option<PathBuf>,
        /// Trace format for `--record`.
        #[arg(long, value_enum, default_value_t = TraceFormat::Text)]
        record_format: TraceFormat,
        /// Tuple kinds `--record` writes: `all` (the default), `none`, or a
        /// list of value,edge,call.
        #[arg(long, value_parser = parse_kinds)]
        kinds: Option<KindSet>,
        /// Print run statistics on standard error when the program ends.
        #[arg(long)]
        stats: bool,
        /// Print the statistics as JSON.
        #[arg(long, requires = "stats")]
        json: bool,
    },
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
    #[command(after_long_help = format!("{}\n{}", toyvm_profiler::report::TERMS, toyvm_profiler::spec::HELP))]
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
        /// Print the report as JSON.
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
    /// Exit status 0 only when every criterion passes (1 otherwise).
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
        /// Print the verdict as JSON.
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
    #[command(after_long_help = toyvm::compare::help())]
    Compare(toyvm::compare::CompareArgs),
    /// Generate a synthetic workload whose tuple stream's hot set, skew,
    /// call polymorphism, value locality, phases and noise are set by
    /// knobs, or (`--describe FILE`) measure a program's stream.
    Synth(toyvm::synth::SynthArgs),
    /// Regenerate the papers' experiments on toyvm's own streams: each
    /// claim beside our figure and a verdict, in DIR/REPORT.md with one
    /// SVG per figure (`--list` names them).
    Reproduce(toyvm::reproduce::ReproduceArgs),
    /// Work with traces: `toyvm trace import --from lackey IN -o OUT`.
    Trace(toyvm::import::TraceArgs),
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
enum TraceFormat {
    Text,
    Binary,
}

fn parse_kinds(s: &str) -> Result<KindSet, String> {
    s.parse()
}

/// An error and the exit status it maps to.
struct Failure {
    status: u8,
    msg: String,
}

impl Failure {
    fn usage(msg: impl Into<String>) -> Self {
        Failure {
            status: 2,
            msg: msg.into(),
        }
    }

    /// A failed write of `what`: quiet success when the reader went away
    /// (`| head`), otherwise an error.
    fn write(what: &str, e: &io::Error) -> Self {
        if output::is_closed_pipe(e) {
            Failure {
                status: 0,
                msg: String::new(),
            }
        } else {
            Failure::usage(format!("writing {what}: {e}"))
        }
    }
}

/// Writes the command's report to standard output.
fn out(text: &str) -> Result<(), Failure> {
    output::stdout(text.as_bytes()).map_err(|e| Failure::write("standard output", &e))
}

/// Writes diagnostics (statistics, logs) to standard error.
fn diag(text: &str) -> Result<(), Failure> {
    output::stderr(text.as_bytes()).map_err(|e| Failure::write("standard error", &e))
}

/// Program files (`run`, `asm`, `dis`, `verify`) and `verify --reference`
/// files are read whole: none may be larger than this (256 MiB), so a wrong
/// path such as `/dev/zero` fails at once instead of filling memory.
const MAX_FILE_BYTES: u64 = 256 << 20;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match dispatch(cli.command) {
        Ok(status) => ExitCode::from(status),
        Err(f) => {
            if !f.msg.is_empty() {
                // Nothing more can be done when standard error is unwritable.
                let _ = output::stderr(format!("toyvm: {}\n", f.msg).as_bytes());
            }
            ExitCode::from(f.status)
        }
    }
}

/// A writer that remembers whether its reader went away, so a run whose
/// output pipe closed ends quietly.
struct Watched<W> {
    inner: W,
    closed: bool,
}

impl<W: Write> Write for Watched<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.inner.write(buf).inspect_err(|e| {
            self.closed |= output::is_closed_pipe(e);
        })
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush().inspect_err(|e| {
            self.closed |= output::is_closed_pipe(e);
        })
    }
}

impl<W> Watched<W> {
    fn new(inner: W) -> Self {
        Watched {
            inner,
            closed: false,
        }
    }

    /// The failure for a run that ended with `e`: quiet if the output pipe
    /// closed (the program's writes failed because of it).
    fn failure(&self, e: Failure) -> Failure {
        if self.closed && e.status == 2 {
            Failure::write("", &io::ErrorKind::BrokenPipe.into())
        } else {
            e
        }
    }
}

fn dispatch(cmd: Command) -> Result<u8, Failure> {
    match cmd {
        Command::Run {
            file,
            args,
            input,
            fuel,
            max_depth,
            max_memory,
            profile,
            candidates,
            no_jit,
            threads,
            lag,
            async_install,
            install_lag,
            jit_log,
            dump_clif,
            no_value_spec,
            no_call_spec,
            record,
            record_format,
            kinds,
            stats,
            json,
        } => {
            let file = toyvm::compare::suite::resolve_path(file)
                .map_err(|e| Failure::usage(e.to_string()))?;
            toyvm::runflags::check(&toyvm::runflags::RunFlags {
                profile: &profile,
                no_jit,
                candidates,
                jit_log,
                async_install,
                dump_clif: dump_clif.is_some(),
                no_value_spec,
                no_call_spec,
                kinds: kinds.is_some(),
                record: record.is_some(),
            })
            .map_err(|e| Failure::usage(e.to_string()))?;
            if input.is_none() {
                warn_if_input_named(&file)?;
            }
            let kinds = kinds.unwrap_or(KindSet::ALL);
            let limits = toyvm::runtime::Limits {
                fuel,
                max_depth: max_depth.unwrap_or(Config::default().max_depth),
                max_memory_words: max_memory,
            };
            if record.is_none() {
                let jit = (!no_jit).then(|| {
                    let mut o = toyvm::runtime::JitOptions {
                        log: jit_log,
                        dump_clif,
                        async_install,
                        install_lag,
                        ..Default::default()
                    };
                    // A share above 1 is never reached: nothing specializes.
                    if no_value_spec {
                        o.plan.specialize.value_share = 2.0;
                    }
                    if no_call_spec {
                        o.plan.specialize.call_share = 2.0;
                        o.plan.max_dispatch = 0;
                    }
                    o
                });
                let opts = RunOptions {
                    limits,
                    profile: &profile,
                    candidates,
                    stats,
                    json,
                    jit,
                    threads,
                    lag,
                };
                return run_profiled(&file, &args, input.as_deref(), opts);
            }
            // Only the recording path reaches here (`--record` conflicts
            // with `--profile`).
            let program = load(&file)?;
            limits
                .check(&program)
                .and_then(|()| toyvm::runtime::no_imports(&program))
                .map_err(|e| Failure::usage(format!("{}: {e}", file.display())))?;
            let args = parse_args(&args)?;
            let input_bytes = read_input(input.as_deref(), &program)?;
            let cfg = Config {
                fuel,
                max_depth: limits.max_depth,
                count_steps: stats,
                kinds,
            };
            let run_input = Input {
                args: &args,
                file: &input_bytes,
            };
            let mut out = Watched::new(io::stdout().lock());
            let start = Instant::now();
            let mut lost_trace = None;
            let result = match &record {
                Some(path) => {
                    let f = fs::File::create(path).map_err(|e| {
                        Failure::usage(format!("cannot write the trace to {}: {e}", path.display()))
                    })?;
                    let format = match record_format {
                        TraceFormat::Text => Format::Text,
                        TraceFormat::Binary => Format::Binary,
                    };
                    let trace_err = |e: toyvm_profiler::Error| {
                        format!(
                            "writing the trace to {}: {e}; the trace is lost",
                            path.display()
                        )
                    };
                    let mut sink = RecordSink::new(io::BufWriter::new(f), format)
                        .map_err(|e| Failure::usage(trace_err(e)))?;
                    let r = interp::run_with_sink(&program, run_input, &mut out, &mut sink, &cfg);
                    // A trap does not hide a lost trace: both are reported.
                    lost_trace = sink.finish().err().map(trace_err);
                    r
                }
                None => interp::run(&program, run_input, &mut out, &cfg),
            };
            let elapsed = start.elapsed();
            let outcome = result.map_err(|e| {
                let f = match e {
                    toyvm_vm::Error::Trap(t) => Failure {
                        status: 3,
                        msg: format!("{}: {t}", file.display()),
                    },
                    other => out.failure(Failure::usage(format!("{}: {other}", file.display()))),
                };
                match lost_trace.take() {
                    Some(lost) if f.msg.is_empty() => Failure::usage(lost),
                    Some(lost) => Failure::usage(format!("{}\ntoyvm: {lost}", f.msg)),
                    None => f,
                }
            })?;
            if let Some(lost) = lost_trace {
                return Err(Failure::usage(lost));
            }
            if stats {
                let secs = elapsed.as_secs_f64();
                let s = toyvm::Stats {
                    wall_seconds: secs,
                    interpreter_seconds: secs,
                    instructions: outcome.steps.unwrap_or(0),
                    tuples: toyvm::runtime::TupleCounts {
                        value: outcome.tuples[0],
                        edge: outcome.tuples[1],
                        call: outcome.tuples[2],
                    },
                    profile: "none".into(),
                    ..Default::default()
                };
                let out = StatsOut::new(&s, Mode::of(&s, record.is_some()), outcome.value);
                diag(&if json { out.json() } else { out.text() })?;
            }
            Ok(outcome.exit_status())
        }
        Command::Asm { file, output } => {
            output::check_writable(&output, "the bytecode")
                .map_err(|e| Failure::usage(e.to_string()))?;
            let src = read(&file)?;
            let text = std::str::from_utf8(&src)
                .map_err(|_| Failure::usage(format!("{}: not UTF-8 text", file.display())))?;
            let program = asm::assemble(text)
                .map_err(|e| Failure::usage(format!("{}: {e}", file.display())))?;
            fs::write(&output, program.to_bytes())
                .map_err(|e| Failure::usage(format!("{}: {e}", output.display())))?;
            Ok(0)
        }
        Command::Profile {
            trace,
            profiles,
            json,
            top,
        } => {
            let specs = parse_profile_specs(&profiles)?;
            let reader = toyvm_profiler::trace::TraceReader::open(&trace)
                .map_err(|e| Failure::usage(format!("{}: {e}", trace.display())))?;
            let report = toyvm_profiler::report::profile_stream(reader, &specs)
                .map_err(|e| Failure::usage(format!("{}: {e}", trace.display())))?;
            let mut text = if json {
                report.to_json()
            } else {
                report.to_text(top)
            };
            text.push('\n');
            out(&text)?;
            Ok(0)
        }
        Command::Verify {
            file,
            args,
            profile,
            reference,
            input,
            margin,
            tolerance,
            quorum,
            json,
            jit,
        } => {
            let program = load(&file)?;
            let args = parse_args(&args)?;
            let input_bytes = read_input(input.as_deref(), &program)?;
            let spec = match parse_profile_specs(std::slice::from_ref(&profile))?.as_slice() {
                [one] => one.clone(),
                _ => return Err(Failure::usage("verify takes one --profile spec")),
            };
            if let Some(path) = reference.as_ref().filter(|p| !p.exists()) {
                output::check_writable(path, "the reference")
                    .map_err(|e| Failure::usage(e.to_string()))?;
            }
            let fail = |e: toyvm::Error| Failure::usage(format!("{}: {e}", file.display()));
            let given = toyvm::conformance::GivenTolerances {
                margin,
                tolerance,
                quorum,
            };
            let (reference_data, notes) = match &reference {
                Some(path) if path.exists() => {
                    let r = toyvm::conformance::reuse(path, &program, &args, &input_bytes, given)
                        .map_err(|e| Failure::usage(format!("{}: {e}", path.display())))?;
                    diag(&format!("pass 1: reusing {}\n", path.display()))?;
                    r
                }
                _ => {
                    let tol = given.resolve().map_err(|e| Failure::usage(e.to_string()))?;
                    let r = toyvm::conformance::record_reference(
                        &program,
                        &file.display().to_string(),
                        &args,
                        &input_bytes,
                        &spec,
                        tol,
                    )
                    .map_err(fail)?;
                    if let Some(path) = &reference {
                        let mut f = fs::File::create(path).map_err(|e| {
                            Failure::usage(format!(
                                "cannot write the reference to {}: {e}",
                                path.display()
                            ))
                        })?;
                        toyvm::conformance::save(&r, &mut f).map_err(|e| {
                            Failure::usage(format!(
                                "writing the reference to {}: {e}",
                                path.display()
                            ))
                        })?;
                        diag(&format!("pass 1: wrote {}\n", path.display()))?;
                    }
                    (r, Vec::new())
                }
            };
            let mut verdict = if jit {
                toyvm::conformance::check_jit(&program, &input_bytes, &spec, &reference_data)
            } else {
                toyvm::conformance::check(&program, &input_bytes, &spec, &reference_data)
            }
            .map_err(fail)?;
            verdict.notes.extend(notes);
            if json {
                let text = serde_json::to_string_pretty(&verdict)
                    .map_err(|e| Failure::usage(format!("the verdict as JSON: {e}")))?;
                out(&format!("{text}\n"))?;
            } else {
                out(&verdict.to_text())?;
            }
            Ok(if verdict.passed() { 0 } else { 1 })
        }
        Command::Compare(args) => {
            toyvm::compare::run(&args).map_err(|e| Failure::usage(e.to_string()))
        }
        Command::Synth(args) => toyvm::synth::run(&args).map_err(Failure::usage),
        Command::Reproduce(args) => {
            toyvm::reproduce::run(&args).map_err(|e| Failure::usage(e.to_string()))
        }
        Command::Trace(args) => toyvm::import::run(&args).map_err(Failure::usage),
        Command::Dis { file, output } => {
            if let Some(p) = &output {
                output::check_writable(p, "the disassembly")
                    .map_err(|e| Failure::usage(e.to_string()))?;
            }
            let program = load(&file)?;
            let text = asm::disassemble(&program);
            match output {
                Some(p) => fs::write(&p, text)
                    .map_err(|e| Failure::usage(format!("{}: {e}", p.display())))?,
                None => out(&text)?,
            }
            Ok(0)
        }
    }
}

/// Warns on standard error when the program's header names an input
/// (`# input:`) and no `--input` was given: it would read zeros.
fn warn_if_input_named(file: &Path) -> Result<(), Failure> {
    match toyvm::compare::suite::header_input(file, &read(file)?) {
        Some(named) => diag(&format!(
            "toyvm: warning: {}'s header names an input ({}) and no --input was given: the program reads zeros where its input goes\n",
            file.display(),
            named.display()
        )),
        None => Ok(()),
    }
}

/// Parses `--profile` values with the one spec-list grammar
/// ([`toyvm_profiler::spec::split_spec_list`]).
fn parse_profile_specs(values: &[String]) -> Result<Vec<toyvm_profiler::ProfilerSpec>, Failure> {
    toyvm_profiler::spec::split_spec_list(values)
        .map_err(|e| Failure::usage(e.to_string()))?
        .iter()
        .map(|s| toyvm_profiler::parse_spec(s).map_err(|e| Failure::usage(e.to_string())))
        .collect()
}

fn read(path: &Path) -> Result<Vec<u8>, Failure> {
    read_bounded(path, MAX_FILE_BYTES, "")
}

/// Reads at most `limit` bytes of `path`, refusing a larger file (before
/// reading it when its size is known, and after `limit + 1` bytes when it is
/// not, so `/dev/zero` fails quickly).
/// `why` follows the size in the message.
fn read_bounded(path: &Path, limit: u64, why: &str) -> Result<Vec<u8>, Failure> {
    let fail = |e: io::Error| Failure::usage(format!("{}: {e}", path.display()));
    let too_big = || {
        Failure::usage(format!(
            "{}: larger than the {limit} bytes allowed{why}",
            path.display()
        ))
    };
    let f = fs::File::open(path).map_err(fail)?;
    if let Ok(m) = f.metadata()
        && m.is_file()
        && m.len() > limit
    {
        return Err(too_big());
    }
    let mut bytes = Vec::new();
    f.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(fail)?;
    if bytes.len() as u64 > limit {
        return Err(too_big());
    }
    Ok(bytes)
}

/// The `--input` file: at most what the program's memory holds from its
/// `.input` address on (one byte per word).
fn read_input(path: Option<&Path>, program: &Program) -> Result<Vec<u8>, Failure> {
    let Some(path) = path else {
        return Ok(Vec::new());
    };
    let room = program.memory_words.saturating_sub(program.input_base);
    let why = format!(
        ": the program's memory holds {room} input bytes from its `.input` address {} (raise `.memory`)",
        program.input_base
    );
    read_bounded(path, room, &why)
}

fn load(path: &Path) -> Result<Program, Failure> {
    let bytes = read(path)?;
    Program::load_any(&bytes).map_err(|e| Failure::usage(format!("{}: {e}", path.display())))
}

fn parse_args(args: &[String]) -> Result<Vec<i64>, Failure> {
    args.iter()
        .enumerate()
        .map(|(i, a)| {
            let t = a.replace('_', "");
            let parsed = match t.strip_prefix("0x") {
                Some(h) => i64::from_str_radix(h, 16).ok(),
                None => t.parse::<i64>().ok().or_else(|| {
                    // Accept `1e7` style sizes, as the benchmarks are written.
                    t.parse::<f64>()
                        .ok()
                        .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e18)
                        .map(|f| f as i64)
                }),
            };
            parsed.ok_or_else(|| {
                Failure::usage(format!("argument {} (`{a}`) is not an integer", i + 1))
            })
        })
        .collect()
}

struct RunOptions<'a> {
    limits: toyvm::runtime::Limits,
    profile: &'a str,
    candidates: bool,
    stats: bool,
    json: bool,
    jit: Option<toyvm::runtime::JitOptions>,
    threads: toyvm::runtime::Threads,
    lag: Option<u64>,
}

fn run_profiled(
    file: &Path,
    args: &[String],
    input: Option<&Path>,
    o: RunOptions<'_>,
) -> Result<u8, Failure> {
    let RunOptions {
        limits,
        profile,
        candidates,
        stats,
        json,
        jit,
        threads,
        lag,
    } = o;
    if let Some(dir) = jit.as_ref().and_then(|j| j.dump_clif.as_ref()) {
        output::check_dir_writable(dir, "Cranelift IR")
            .map_err(|e| Failure::usage(e.to_string()))?;
    }
    let program = load(file)?;
    let args = parse_args(args)?;
    let input_bytes = read_input(input, &program)?;
    let spec = match toyvm_profiler::spec::split_spec_list(&[profile])
        .map_err(|e| Failure::usage(e.to_string()))?
        .as_slice()
    {
        [none] if none == "none" => None,
        [one] => Some(toyvm_profiler::parse_spec(one).map_err(|e| Failure::usage(e.to_string()))?),
        _ => return Err(Failure::usage("run takes one --profile spec")),
    };
    let rt = toyvm::Runtime::builder(program)
        .profile(spec)
        .limits(limits)
        .keep_candidates(candidates)
        .count_instructions(stats)
        .jit(jit)
        .threads(threads)
        .lag(lag)
        .build();
    let mut out = Watched::new(io::BufWriter::new(io::stdout()));
    let report = rt
        .run(
            Input {
                args: &args,
                file: &input_bytes,
            },
            &mut out,
        )
        .and_then(|r| {
            out.flush()
                .map_err(|e| toyvm::Error::Vm(toyvm_vm::Error::Output(e)))?;
            Ok(r)
        })
        .map_err(|e| match e {
            toyvm::Error::Vm(toyvm_vm::Error::Trap(t)) => Failure {
                status: 3,
                msg: format!("{}: {t}", file.display()),
            },
            other => out.failure(Failure::usage(format!("{}: {other}", file.display()))),
        })?;
    drop(out);
    // The run went on without its log or IR dump: say so, and fail.
    let lost = report
        .stats
        .jit
        .as_ref()
        .and_then(|j| j.output_error.clone());
    let mut text = String::new();
    if candidates {
        for i in &report.intervals {
            let _ = writeln!(
                text,
                "interval {}: {} candidates",
                i.index,
                i.candidates.len()
            );
            for c in &i.candidates {
                let _ = writeln!(text, "  {:>10}  {}", c.count, c.tuple);
            }
        }
    }
    if stats {
        let s = &report.stats;
        let out = StatsOut::new(s, Mode::of(s, false), report.outcome.value);
        text.push_str(&if json { out.json() } else { out.text() });
    }
    diag(&text)?;
    if let Some(lost) = lost {
        return Err(Failure::usage(lost));
    }
    Ok(report.outcome.exit_status())
}
