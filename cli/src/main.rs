//! The `toyvm` command line.

mod args;
mod import;
mod runflags;
mod runstats;
mod wasm;

use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use crate::runstats::{Mode, StatsOut};
use clap::Parser;
use toyvm::record::RecordSink;
use toyvm_lab::output;
use toyvm_profiler::trace::Format;
use toyvm_vm::interp::{self, Config, Input};
use toyvm_vm::{KindSet, Program, asm};

use args::{Cli, Command, TraceFormat};

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
            real_time,
        } => {
            let file =
                toyvm_lab::suite::resolve_path(file).map_err(|e| Failure::usage(e.to_string()))?;
            crate::runflags::check(&crate::runflags::RunFlags {
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
                        log: jit_log.then(toyvm::runtime::JitLog::stderr),
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
                    real_time,
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
                    // The trace replaces `path` only once whole: a lost
                    // trace leaves `path` as it was.
                    let (f, file) = output::Replacement::create(path).map_err(|e| {
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
                    lost_trace = match sink.finish() {
                        Ok(w) => {
                            drop(w);
                            file.commit().err().map(|e| trace_err(e.into()))
                        }
                        Err(e) => Some(trace_err(e)),
                    };
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
            output::replace_file(&output, &program.to_bytes())
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
            let fail = |e: toyvm_lab::Error| Failure::usage(format!("{}: {e}", file.display()));
            let given = toyvm_lab::conformance::GivenTolerances {
                margin,
                tolerance,
                quorum,
            };
            let (reference_data, notes) = match &reference {
                Some(path) if path.exists() => {
                    let r =
                        toyvm_lab::conformance::reuse(path, &program, &args, &input_bytes, given)
                            .map_err(|e| Failure::usage(format!("{}: {e}", path.display())))?;
                    diag(&format!("pass 1: reusing {}\n", path.display()))?;
                    r
                }
                _ => {
                    let tol = given.resolve().map_err(|e| Failure::usage(e.to_string()))?;
                    let r = toyvm_lab::conformance::record_reference(
                        &program,
                        &file.display().to_string(),
                        &args,
                        &input_bytes,
                        &spec,
                        tol,
                    )
                    .map_err(fail)?;
                    if let Some(path) = &reference {
                        let (mut f, file) = output::Replacement::create(path).map_err(|e| {
                            Failure::usage(format!(
                                "cannot write the reference to {}: {e}",
                                path.display()
                            ))
                        })?;
                        toyvm_lab::conformance::save(&r, &mut f)
                            .and_then(|()| {
                                drop(f);
                                file.commit()
                            })
                            .map_err(|e| {
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
                toyvm_lab::conformance::check_jit(&program, &input_bytes, &spec, &reference_data)
            } else {
                toyvm_lab::conformance::check(&program, &input_bytes, &spec, &reference_data)
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
            toyvm_lab::compare::run(&args).map_err(|e| Failure::usage(e.to_string()))
        }
        Command::Synth(args) => toyvm_lab::synth::run(&args).map_err(Failure::usage),
        Command::Reproduce(args) => {
            toyvm_lab::reproduce::run(&args).map_err(|e| Failure::usage(e.to_string()))
        }
        Command::Trace(args) => crate::import::run(&args).map_err(Failure::usage),
        Command::Dis { file, output } => {
            if let Some(p) = &output {
                output::check_writable(p, "the disassembly")
                    .map_err(|e| Failure::usage(e.to_string()))?;
            }
            let program = load(&file)?;
            let text = asm::disassemble(&program);
            match output {
                Some(p) => output::replace_file(&p, text.as_bytes())
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
    match toyvm_lab::suite::header_input(file, &read(file)?) {
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
    read_bounded(path, toyvm_lab::files::MAX_FILE_BYTES, "")
}

/// [`toyvm_lab::files::read_bounded`] with a person's message; `why` follows
/// the size when the file is too large.
fn read_bounded(path: &Path, limit: u64, why: &str) -> Result<Vec<u8>, Failure> {
    toyvm_lab::files::read_bounded(path, limit).map_err(|e| {
        let why = if e.kind() == io::ErrorKind::FileTooLarge {
            why
        } else {
            ""
        };
        Failure::usage(format!("{}: {e}{why}", path.display()))
    })
}

/// The `--input` file: at most what the program's memory holds from its
/// `.input` address on (one byte per word).
fn read_input(path: Option<&Path>, program: &Program) -> Result<Vec<u8>, Failure> {
    let Some(path) = path else {
        return Ok(Vec::new());
    };
    let room = toyvm_lab::files::input_room(program);
    let why = format!(
        ": the program's memory holds {room} input bytes from its `.input` address {} (raise `.memory`)",
        program.input_base
    );
    read_bounded(path, room, &why)
}

fn load(path: &Path) -> Result<Program, Failure> {
    load_any(path).map(|l| l.program)
}

/// A program from bytecode, text assembly or a WebAssembly module.
fn load_any(path: &Path) -> Result<wasm::Loaded, Failure> {
    let bytes = read(path)?;
    if wasm::is_module(&bytes) {
        return wasm::translate(path, &bytes).map_err(Failure::usage);
    }
    Program::load_any(&bytes)
        .map(|program| wasm::Loaded {
            program,
            wasm: None,
        })
        .map_err(|e| Failure::usage(format!("{}: {e}", path.display())))
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
    real_time: bool,
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
        real_time,
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
    let loaded = load_any(file)?;
    let program = loaded.program;
    // A module's arguments are its argv, text; a program's are integers.
    let int_args = match loaded.wasm {
        Some(_) => Vec::new(),
        None => parse_args(args)?,
    };
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
    let run_input = Input {
        args: &int_args,
        file: &input_bytes,
    };
    let ran = match &loaded.wasm {
        Some(t) => {
            let mut host = wasm::host(t, file, args, real_time);
            let r = rt.run_with_host_fns(run_input, &mut out, &mut host);
            // The module's own output: a failure to write it is the run's.
            r.and_then(|r| {
                host.flush()
                    .map_err(|e| toyvm::Error::Vm(toyvm_vm::Error::Output(e)))?;
                Ok(r)
            })
        }
        None => rt.run(run_input, &mut out),
    };
    let report = ran
        .and_then(|r| {
            out.flush()
                .map_err(|e| toyvm::Error::Vm(toyvm_vm::Error::Output(e)))?;
            Ok(r)
        })
        .map_err(|e| match e {
            toyvm::Error::Vm(toyvm_vm::Error::Trap(t)) => Failure {
                status: 3,
                msg: match &loaded.wasm {
                    Some(w) => format!("{}: {}", file.display(), w.describe_trap(&t)),
                    None => format!("{}: {t}", file.display()),
                },
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
