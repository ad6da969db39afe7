//! `toyvm run`: a program under the interpreter, recording its trace, or
//! with a profiler model driving the JIT.

use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::Path;
use std::time::Instant;

use toyvm::record::RecordSink;
use toyvm_lab::output;
use toyvm_profiler::trace::Format;
use toyvm_vm::interp::{self, Config, Input, Outcome};
use toyvm_vm::{KindSet, Program};

use crate::args::{RunArgs, TraceFormat};
use crate::inputs::{
    link_without_host, load_any, parse_args, read_input, resolve, warn_if_input_named,
};
use crate::runstats::{Mode, StatsOut};
use crate::status::{Failure, Status};
use crate::streams::{GuestOut, diag};

/// Runs `toyvm run`.
pub(crate) fn run(a: RunArgs) -> Result<u8, Failure> {
    let file = resolve(a.file.clone())?;
    crate::runflags::check(&crate::runflags::RunFlags {
        profile: &a.profile,
        no_jit: a.no_jit,
        candidates: a.candidates,
        jit_log: a.jit_log,
        async_install: a.async_install,
        dump_clif: a.dump_clif.is_some(),
        no_value_spec: a.no_value_spec,
        no_call_spec: a.no_call_spec,
        kinds: a.kinds.is_some(),
        record: a.record.is_some(),
        record_format: a.record_format.is_some(),
        lag: a.lag.is_some(),
        threads: a.threads.is_some(),
        install_lag: a.install_lag.is_some(),
    })
    .map_err(|e| Failure::usage(e.to_string()))?;
    // Every output is checked before the run.
    if let Some(p) = &a.stats_file {
        output::check_writable(p, "the statistics")?;
    }
    if let Some(p) = &a.record {
        output::check_writable(p, "the trace")?;
    }
    if let Some(dir) = &a.dump_clif {
        output::check_dir_writable(dir, "Cranelift IR")?;
    }
    if a.input.is_none() {
        warn_if_input_named(&file)?;
    }
    let loaded = load_any(&file)?;
    let program = loaded.program;
    let translation = loaded.cost;
    // Linked before it runs: a WebAssembly module's imports are its WASI
    // host's (a whole run of anything else has no host functions).
    let wasm = loaded.wasm;
    if wasm.is_none() {
        link_without_host(&file, &program)?;
    }
    // A module's arguments are its argv, text; a program's are integers.
    let args = match wasm {
        Some(_) => Vec::new(),
        None => parse_args(&a.args)?,
    };
    let input_bytes = read_input(a.input.as_deref(), &program)?;
    let limits = toyvm::runtime::Limits {
        fuel: a.fuel,
        max_depth: a.max_depth.unwrap_or(Config::default().max_depth),
        max_memory_words: a.max_memory,
    };
    limits
        .check(&program)
        .map_err(|e| Failure::of(file.display(), &e))?;
    let input = Input {
        args: &args,
        file: &input_bytes,
    };
    let mut out = GuestOut::new(io::BufWriter::new(io::stdout()));
    let ran = match &a.record {
        Some(path) => recorded(&a, path, &file, wasm.as_deref(), &program, input, &mut out),
        None => profiled(&a, &file, wasm.as_deref(), limits, program, input, &mut out),
    };
    // The program's output is flushed before anything is said of the run.
    let flushed = out.flush();
    let Ran {
        outcome,
        stats,
        text,
        lost,
    } = ran.map_err(|e| match e {
        RunError::Run(e) => Failure::of(file.display(), &e),
        RunError::Other(f) => f,
    })?;
    flushed.map_err(|e| Failure::write("standard output", &e))?;
    let mut text = text;
    if a.stats {
        let s = StatsOut::new(&stats, Mode::of(&stats, a.record.is_some()), outcome.value)
            .translation(translation);
        let body = if a.json { s.json() } else { s.text() };
        match &a.stats_file {
            Some(p) => output::replace_file(p, body.as_bytes())
                .map_err(|e| Failure::write(&p.display().to_string(), &e))?,
            None if a.json => {
                // Data where a script expects it: standard output, on a
                // line of its own after the program's.
                let sep = if out.mid_line() { "\n" } else { "" };
                out.write_all(format!("{sep}{body}").as_bytes())
                    .and_then(|()| out.flush())
                    .map_err(|e| Failure::write("standard output", &e))?;
            }
            None => text.push_str(&body),
        }
    }
    drop(out);
    diag(&text)?;
    // The run went on without its log, IR dump or trace: say so, and fail.
    if let Some(lost) = lost {
        return Err(Failure::io(lost));
    }
    Ok(if a.exit_code {
        outcome.exit_status()
    } else {
        Status::Success.code()
    })
}

/// What a run gave: its outcome and statistics, the text asked for on
/// standard error (`--candidates`), and an output the run lost on the way
/// (the JIT log, the IR dump, the trace).
struct Ran {
    outcome: Outcome,
    stats: toyvm::Stats,
    text: String,
    lost: Option<String>,
}

enum RunError {
    /// The run failed (a trap, a write of the program's output).
    Run(toyvm::Error),
    /// Something around it failed, with its own status.
    Other(Failure),
}

impl From<toyvm::Error> for RunError {
    fn from(e: toyvm::Error) -> Self {
        RunError::Run(e)
    }
}

/// The interpreter alone, writing the tuple stream to `path` (a
/// WebAssembly module's with its WASI host).
fn recorded(
    a: &RunArgs,
    path: &Path,
    file: &Path,
    wasm: Option<&toyvm_wasm::Translation>,
    program: &Program,
    input: Input<'_>,
    out: &mut dyn Write,
) -> Result<Ran, RunError> {
    let cfg = Config {
        fuel: a.fuel,
        max_depth: a.max_depth.unwrap_or(Config::default().max_depth),
        count_steps: a.stats,
        kinds: a.kinds.unwrap_or(KindSet::ALL),
    };
    let trace_err = |e: &dyn std::fmt::Display| {
        format!(
            "writing the trace to {}: {e}; the trace is lost",
            path.display()
        )
    };
    // The trace replaces `path` only once whole: a lost trace leaves
    // `path` as it was.
    let (f, trace_file) = output::Replacement::create(path)
        .map_err(|e| RunError::Other(Failure::write(&path.display().to_string(), &e)))?;
    let format = match a.record_format.unwrap_or(TraceFormat::Text) {
        TraceFormat::Text => Format::Text,
        TraceFormat::Binary => Format::Binary,
    };
    let mut sink = RecordSink::new(io::BufWriter::new(f), format)
        .map_err(|e| RunError::Other(Failure::io(trace_err(&e))))?;
    let start = Instant::now();
    let r = match wasm {
        Some(t) => {
            let mut host = crate::wasm::host(t, file, &a.args, a.real_time);
            let r = interp::run_hosted(
                program,
                input,
                out,
                &mut interp::NoJit(&mut sink),
                &mut host,
                &cfg,
            );
            // The module's own output: a failure to write it is the run's.
            r.and_then(|o| host.flush().map_err(toyvm_vm::Error::Output).map(|()| o))
        }
        None => interp::run_with_sink(program, input, out, &mut sink, &cfg),
    };
    let elapsed = start.elapsed();
    // A trap does not hide a lost trace: both are reported.
    let lost = match sink.finish() {
        Ok(w) => {
            drop(w);
            trace_file.commit().err().map(|e| trace_err(&e))
        }
        Err(e) => Some(trace_err(&e)),
    };
    let outcome = match (r, lost) {
        (Ok(o), lost) => {
            let secs = elapsed.as_secs_f64();
            let stats = toyvm::Stats {
                wall_seconds: secs,
                interpreter_seconds: secs,
                instructions: o.steps.unwrap_or(0),
                tuples: toyvm::TupleCounts {
                    value: o.tuples[0],
                    edge: o.tuples[1],
                    call: o.tuples[2],
                },
                profile: toyvm_profiler::spec::NONE.into(),
                ..Default::default()
            };
            return Ok(Ran {
                outcome: o,
                stats,
                text: String::new(),
                lost,
            });
        }
        (Err(e), None) => e,
        (Err(e), Some(lost)) => {
            crate::streams::note(&format!("toyvm: {lost}\n"));
            e
        }
    };
    Err(match wasm {
        Some(t) => wasm_trap(file, t, outcome.into()),
        None => RunError::Run(outcome.into()),
    })
}

/// A WebAssembly module's trap names the WebAssembly trap, operator and
/// offset; any other failure is the run's.
fn wasm_trap(file: &Path, t: &toyvm_wasm::Translation, e: toyvm::Error) -> RunError {
    match e {
        toyvm::Error::Vm(toyvm_vm::Error::Trap(trap)) => RunError::Other(Failure::new(
            Status::Trap,
            format!("{}: {}", file.display(), t.describe_trap(&trap)),
        )),
        e => RunError::Run(e),
    }
}

/// The runtime: the interpreter alone, a model, or a model driving the JIT;
/// a WebAssembly module with its WASI host.
fn profiled(
    a: &RunArgs,
    file: &Path,
    wasm: Option<&toyvm_wasm::Translation>,
    limits: toyvm::runtime::Limits,
    program: Program,
    input: Input<'_>,
    out: &mut (dyn Write + Send),
) -> Result<Ran, RunError> {
    let spec = match toyvm_profiler::spec::split_spec_list(&[a.profile.as_str()])
        .map_err(|e| RunError::Other(e.into()))?
        .as_slice()
    {
        [one] => toyvm_profiler::Choice::parse(one)
            .map_err(|e| RunError::Other(e.into()))?
            .into_spec(),
        _ => {
            return Err(RunError::Other(Failure::usage(
                "run takes one --profile spec",
            )));
        }
    };
    let jit = (!a.no_jit).then(|| {
        let mut o = toyvm::runtime::JitOptions {
            log: a.jit_log.then(toyvm::runtime::JitLog::stderr),
            dump_clif: a.dump_clif.clone(),
            async_install: a.async_install,
            install_lag: a.install_lag.unwrap_or(0),
            ..Default::default()
        };
        // A share above 1 is never reached: nothing specializes.
        if a.no_value_spec {
            o.plan.specialize.value_share = 2.0;
        }
        if a.no_call_spec {
            o.plan.specialize.call_share = 2.0;
            o.plan.max_dispatch = 0;
        }
        o
    });
    let rt = toyvm::Runtime::builder(program)
        .profile(spec)
        .limits(limits)
        .keep_candidates(a.candidates)
        .count_instructions(a.stats)
        .jit(jit)
        .threads(a.threads.unwrap_or(toyvm::runtime::Threads::Auto))
        .lag(a.lag)
        .build();
    let report = match wasm {
        Some(t) => {
            let mut host = crate::wasm::host(t, file, &a.args, a.real_time);
            let r = rt.run_with_host_fns(input, out, &mut host);
            // The module's own output: a failure to write it is the run's.
            let r = r.and_then(|r| {
                host.flush()
                    .map_err(|e| toyvm::Error::Vm(toyvm_vm::Error::Output(e)))?;
                Ok(r)
            });
            r.map_err(|e| wasm_trap(file, t, e))?
        }
        None => rt.run(input, out)?,
    };
    let lost = report
        .stats
        .jit
        .as_ref()
        .and_then(|j| j.output_error.clone());
    let mut text = String::new();
    if a.candidates {
        for i in &report.intervals {
            let _ = writeln!(
                text,
                "interval {}: {} candidates",
                i.index,
                i.candidates.len()
            );
            for c in &i.candidates {
                let source = wasm.map_or_else(String::new, |t| crate::wasm::source(t, &c.tuple));
                let _ = writeln!(text, "  {:>10}  {}{source}", c.count, c.tuple);
            }
        }
    }
    Ok(Ran {
        outcome: report.outcome,
        stats: report.stats,
        text,
        lost,
    })
}
