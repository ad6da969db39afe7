//! The `toyvm` command line.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::{Parser, Subcommand, ValueEnum};
use toyvm::record::RecordSink;
use toyvm_profiler::trace::Format;
use toyvm_vm::interp::{self, Config, Input, Outcome};
use toyvm_vm::{KindMask, Program, asm};

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
    Run {
        /// The program: bytecode or text assembly (told apart by the magic).
        file: PathBuf,
        /// Integer arguments for the entry function.
        #[arg(allow_negative_numbers = true)]
        args: Vec<String>,
        /// A file whose bytes are loaded into memory at the `.input` address.
        #[arg(long, value_name = "FILE")]
        input: Option<PathBuf>,
        /// Stop with a trap after this many executed instructions.
        #[arg(long, value_name = "N")]
        fuel: Option<u64>,
        /// Record the tuple stream to this trace file.
        #[arg(long, value_name = "FILE")]
        record: Option<PathBuf>,
        /// Trace format for `--record`.
        #[arg(long, value_enum, default_value_t = TraceFormat::Text)]
        record_format: TraceFormat,
        /// Tuple kinds to emit: `all`, `none`, or a list of value,edge,call.
        #[arg(long, default_value = "all", value_parser = parse_kinds)]
        kinds: KindMask,
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

fn parse_kinds(s: &str) -> Result<KindMask, String> {
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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match dispatch(cli.command) {
        Ok(status) => ExitCode::from(status),
        Err(f) => {
            eprintln!("toyvm: {}", f.msg);
            ExitCode::from(f.status)
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
            record,
            record_format,
            kinds,
            stats,
            json,
        } => {
            let program = load(&file)?;
            let args = parse_args(&args)?;
            let input_bytes = match &input {
                Some(p) => read(p)?,
                None => Vec::new(),
            };
            let cfg = Config {
                fuel,
                count_steps: stats,
                kinds,
                ..Config::default()
            };
            let run_input = Input {
                args: &args,
                file: &input_bytes,
            };
            let stdout = io::stdout();
            let mut out = stdout.lock();
            let start = Instant::now();
            let result = match &record {
                Some(path) => {
                    let f = fs::File::create(path)
                        .map_err(|e| Failure::usage(format!("{}: {e}", path.display())))?;
                    let format = match record_format {
                        TraceFormat::Text => Format::Text,
                        TraceFormat::Binary => Format::Binary,
                    };
                    let mut sink = RecordSink::new(io::BufWriter::new(f), format)
                        .map_err(|e| Failure::usage(format!("{}: {e}", path.display())))?;
                    let r = interp::run_with_sink(&program, run_input, &mut out, &mut sink, &cfg);
                    sink.finish()
                        .map_err(|e| Failure::usage(format!("{}: {e}", path.display())))?;
                    r
                }
                None => interp::run(&program, run_input, &mut out, &cfg),
            };
            let elapsed = start.elapsed();
            let outcome = result.map_err(|e| match e {
                toyvm_vm::Error::Trap(t) => Failure {
                    status: 3,
                    msg: format!("{}: {t}", file.display()),
                },
                other => Failure::usage(format!("{}: {other}", file.display())),
            })?;
            if stats {
                print_stats(&outcome, elapsed.as_secs_f64(), json);
            }
            Ok(outcome.exit_status())
        }
        Command::Asm { file, output } => {
            let src = read(&file)?;
            let text = std::str::from_utf8(&src)
                .map_err(|_| Failure::usage(format!("{}: not UTF-8 text", file.display())))?;
            let program = asm::assemble(text)
                .map_err(|e| Failure::usage(format!("{}: {e}", file.display())))?;
            fs::write(&output, program.to_bytes())
                .map_err(|e| Failure::usage(format!("{}: {e}", output.display())))?;
            Ok(0)
        }
        Command::Dis { file, output } => {
            let program = load(&file)?;
            let text = asm::disassemble(&program);
            match output {
                Some(p) => fs::write(&p, text)
                    .map_err(|e| Failure::usage(format!("{}: {e}", p.display())))?,
                None => io::stdout()
                    .write_all(text.as_bytes())
                    .map_err(|e| Failure::usage(format!("writing output: {e}")))?,
            }
            Ok(0)
        }
    }
}

fn read(path: &Path) -> Result<Vec<u8>, Failure> {
    fs::read(path).map_err(|e| Failure::usage(format!("{}: {e}", path.display())))
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

fn print_stats(o: &Outcome, secs: f64, json: bool) {
    let steps = o.steps.unwrap_or(0);
    let ns_per = if steps > 0 {
        secs * 1e9 / steps as f64
    } else {
        0.0
    };
    if json {
        let v = serde_json::json!({
            "wall_seconds": secs,
            "instructions": steps,
            "ns_per_instruction": ns_per,
            "tuples": { "value": o.tuples[0], "edge": o.tuples[1], "call": o.tuples[2] },
            "result": o.value,
        });
        eprintln!("{v}");
    } else {
        eprintln!("-- toyvm stats --");
        eprintln!("wall time          {:.3} s", secs);
        eprintln!("instructions       {steps}");
        eprintln!("ns / instruction   {ns_per:.2} (counting on)");
        eprintln!(
            "tuples             value {} / edge {} / call {}",
            o.tuples[0], o.tuples[1], o.tuples[2]
        );
        eprintln!("result             {}", o.value);
    }
}
