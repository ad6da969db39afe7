//! `toyvm trace import`: other tools' event logs as toyvm traces.
//!
//! The parser lives in the profiler crate ([`toyvm_profiler::lackey`]): it
//! needs only tuples and the trace writer, so a runtime that embeds the
//! profiler can profile native streams without the VM. This module is the
//! command line around it: paths, `-` for standard input and output, the
//! summary on standard error.

use std::fs;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};
use toyvm_profiler::lackey::{self, ImportStats};
use toyvm_profiler::trace::{Format, TraceWriter};

use toyvm_lab::output;

use crate::status::Failure;
use crate::streams::note;

/// `toyvm trace`'s arguments.
#[derive(Args, Debug)]
pub(crate) struct TraceArgs {
    #[command(subcommand)]
    command: TraceCommand,
}

#[derive(Subcommand, Debug)]
enum TraceCommand {
    /// Convert another tool's event log into a toyvm trace for
    /// `toyvm profile`.
    ///
    /// `--from lackey` reads `valgrind --tool=lackey --trace-mem=yes
    /// --log-file=IN PROGRAM` output: an edge per control transfer that does
    /// not fall through, a value `<pc, address>` per load, a call per
    /// inferred x86 call; pcs are the native addresses. The summary goes to
    /// standard error. `profiler/TRACE-FORMAT.md` says what is lost.
    Import(ImportArgs),
}

/// `toyvm trace import`'s arguments.
#[derive(Args, Debug)]
struct ImportArgs {
    /// The tool that wrote the input.
    #[arg(long, value_enum)]
    from: Source,
    /// The tool's output (`-` for standard input).
    input: PathBuf,
    /// Where to write the trace (`-` for standard output).
    #[arg(short, long, value_name = "OUT")]
    output: PathBuf,
    /// Trace format to write.
    #[arg(long, value_enum, default_value_t = TraceFormat::Text)]
    format: TraceFormat,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Source {
    /// Valgrind's Lackey tool with `--trace-mem=yes`.
    Lackey,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum TraceFormat {
    Text,
    Binary,
}

/// Runs `toyvm trace`: the exit status.
pub(crate) fn run(args: &TraceArgs) -> Result<u8, Failure> {
    let TraceCommand::Import(a) = &args.command;
    let Source::Lackey = a.from;
    let format = match a.format {
        TraceFormat::Text => Format::Text,
        TraceFormat::Binary => Format::Binary,
    };
    let stdin = a.input.as_os_str() == "-";
    let name = if stdin {
        "standard input".to_string()
    } else {
        a.input.display().to_string()
    };
    let to_stdout = a.output.as_os_str() == "-";
    if !to_stdout {
        output::check_writable(&a.output, "the trace")?;
    }
    let input: Box<dyn BufRead> = if stdin {
        Box::new(io::stdin().lock())
    } else {
        Box::new(BufReader::new(
            fs::File::open(&a.input).map_err(|e| Failure::io(format!("{name}: {e}")))?,
        ))
    };
    let stats = if to_stdout {
        convert(input, BufWriter::new(io::stdout().lock()), format)
            .map_err(|e| e.failure(&name, "standard output"))?
    } else {
        let out = &a.output;
        let (f, file) = output::Replacement::create(out)
            .map_err(|e| Failure::write(&format!("the trace {}", out.display()), &e))?;
        // A partial trace would pass for a whole one: it replaces `out`
        // only once whole, so a failure leaves `out` as it was.
        let stats = convert(input, BufWriter::new(f), format).map_err(|e| {
            let f = e.failure(&name, &out.display().to_string());
            Failure::new(
                f.status,
                format!("{}; {} not written", f.msg, out.display()),
            )
        })?;
        file.commit()
            .map_err(|e| Failure::write(&format!("the trace {}", out.display()), &e))?;
        stats
    };
    let to = if to_stdout {
        "standard output".to_string()
    } else {
        a.output.display().to_string()
    };
    note(&format!("{name} -> {to}: {}\n", stats.summary()));
    Ok(0)
}

enum Failed {
    Read(toyvm_profiler::Error),
    Write(io::Error),
}

impl Failed {
    fn failure(&self, input: &str, out: &str) -> Failure {
        match self {
            Failed::Read(e) => Failure::of(input, e),
            Failed::Write(e) => Failure::write(out, e),
        }
    }
}

fn convert<W: Write>(input: impl BufRead, out: W, format: Format) -> Result<ImportStats, Failed> {
    let io_err = |e: toyvm_profiler::Error| match e {
        toyvm_profiler::Error::Io(e) => Failed::Write(e),
        other => Failed::Read(other),
    };
    let mut w = TraceWriter::new(out, format).map_err(io_err)?;
    let mut reader = lackey::LackeyReader::new(input);
    for t in reader.by_ref() {
        w.write(&t.map_err(Failed::Read)?).map_err(io_err)?;
    }
    w.finish().map_err(io_err)?;
    Ok(reader.stats().clone())
}
