//! `toyvm synth` on the command line.

use std::io::Write as _;
use std::path::PathBuf;

use toyvm_vm::Program;

use super::{Generated, Knobs, describe, header_args};
use crate::{Error, Result, output};

/// `toyvm synth`: generate a program, or describe one.
#[derive(Clone, Debug)]
pub struct SynthArgs {
    /// Seed of the generator and of the program's random choices.
    pub seed: u64,
    /// Worker functions (code size).
    pub functions: u32,
    /// Blocks per worker function (code size).
    pub blocks: u32,
    /// Hot items per phase (each brings about five distinct tuples: edges,
    /// values and call targets).
    pub hot: u32,
    /// Skew of the hot items: the i-th gets a share proportional to 1/i^S.
    pub zipf: f64,
    /// Targets per indirect call site, the t-th with a share proportional
    /// to 1/t.
    pub targets: u32,
    /// Share of the dominant value at the value load and the arguments.
    pub value_share: f64,
    /// How many times the hot set moves over the run.
    pub phases: u32,
    /// Share of iterations that run a cold, rarely repeated item.
    pub noise: f64,
    /// Iterations of an inner loop in every block (0: none): work that
    /// compiled code speeds up, one edge tuple per iteration.
    pub work: u32,
    /// Where to write the program (standard output without it). The file
    /// is replaced only once the whole program is written.
    pub output: Option<PathBuf>,
    /// Instead of generating, run FILE under the perfect profiler and
    /// report its tuple stream's statistics.
    pub describe: Option<PathBuf>,
    /// Arguments of the described program (default: its `# args:` line).
    pub args: Vec<i64>,
    /// Interval length in tuples for `--describe` (at least 1).
    pub interval: u64,
    /// Candidate threshold for `--describe`: `1%` or `0.01`.
    pub threshold: String,
    /// Print the description as JSON (`format` 1; see docs/json.md).
    pub json: bool,
}

impl SynthArgs {
    /// The generator's knobs.
    pub fn knobs(&self) -> Knobs {
        Knobs {
            seed: self.seed,
            functions: self.functions,
            blocks: self.blocks,
            hot: self.hot,
            zipf: self.zipf,
            targets: self.targets,
            value_share: self.value_share,
            phases: self.phases,
            noise: self.noise,
            work: self.work,
        }
    }
}

/// The format version of `synth --describe --json`'s document.
pub const DESCRIBE_JSON_FORMAT: u32 = 1;

/// Runs `toyvm synth`; returns the exit status.
pub fn run(args: &SynthArgs) -> Result<u8> {
    if let Some(file) = &args.describe {
        return describe_file(args, file);
    }
    // The output path is checked before the work, and replaced only once
    // the whole program is written.
    if let Some(p) = &args.output {
        output::check_writable(p, "the program")?;
    }
    let program = Generated::new(&args.knobs())?;
    match &args.output {
        Some(p) => {
            let io = |source| Error::Io {
                path: p.clone(),
                source,
            };
            let (f, file) = output::Replacement::create(p).map_err(io)?;
            let mut w = std::io::BufWriter::new(f);
            program.write_to(&mut w).map_err(io)?;
            drop(w);
            file.commit().map_err(io)?;
        }
        None => {
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            program.write_to(&mut out).map_err(Error::Stdout)?;
        }
    }
    Ok(0)
}

fn describe_file(args: &SynthArgs, file: &std::path::Path) -> Result<u8> {
    let threshold = args
        .threshold
        .strip_suffix('%')
        .map_or_else(
            || args.threshold.parse(),
            |p| p.parse().map(|p: f64| p / 100.0),
        )
        .map_err(|_| {
            Error::Usage(format!(
                "--threshold `{}` is not a fraction (`1%` or `0.01`)",
                args.threshold
            ))
        })?;
    if args.interval == 0 {
        return Err(Error::Usage("--interval must be at least 1 tuple".into()));
    }
    if !(threshold > 0.0 && threshold <= 1.0) {
        return Err(Error::Usage(format!(
            "--threshold `{}` must be in (0, 1] (0% < T <= 100%)",
            args.threshold
        )));
    }
    let text =
        crate::files::read_bounded(file, crate::files::MAX_FILE_BYTES).map_err(|source| {
            Error::Io {
                path: file.to_owned(),
                source,
            }
        })?;
    let in_file = |source: toyvm::Error| Error::Program {
        path: file.to_owned(),
        source,
    };
    let program = Program::load_any(&text).map_err(|e| in_file(e.into()))?;
    let call_args = if args.args.is_empty() {
        header_args(&String::from_utf8_lossy(&text)).unwrap_or_default()
    } else {
        args.args.clone()
    };
    drop(text);
    let st = describe(&program, &call_args, args.interval, threshold).map_err(in_file)?;
    let text = if args.json {
        output::json_pretty(DESCRIBE_JSON_FORMAT, &st) + "\n"
    } else {
        st.to_text()
    };
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(Error::Stdout)?;
    Ok(0)
}
