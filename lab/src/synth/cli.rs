//! `toyvm synth` on the command line.

use std::path::PathBuf;

use toyvm_vm::Program;

use super::{Knobs, describe, generate, header_args};

/// `toyvm synth`: generate a program, or describe one.
#[derive(clap::Args, Clone, Debug)]
pub struct SynthArgs {
    /// Seed of the generator and of the program's random choices.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Worker functions (code size).
    #[arg(long, default_value_t = 16)]
    pub functions: u32,
    /// Blocks per worker function (code size).
    #[arg(long, default_value_t = 8)]
    pub blocks: u32,
    /// Hot items per phase (each brings about five distinct tuples: edges,
    /// values and call targets).
    #[arg(long, default_value_t = 64)]
    pub hot: u32,
    /// Skew of the hot items: the i-th gets a share proportional to 1/i^S.
    #[arg(long, value_name = "S", default_value_t = 1.0)]
    pub zipf: f64,
    /// Targets per indirect call site, the t-th with a share proportional
    /// to 1/t.
    #[arg(long, default_value_t = 2)]
    pub targets: u32,
    /// Share of the dominant value at the value load and the arguments.
    #[arg(long, value_name = "P", default_value_t = 0.9)]
    pub value_share: f64,
    /// How many times the hot set moves over the run.
    #[arg(long, default_value_t = 0)]
    pub phases: u32,
    /// Share of iterations that run a cold, rarely repeated item.
    #[arg(long, value_name = "P", default_value_t = 0.0)]
    pub noise: f64,
    /// Iterations of an inner loop in every block (0: none): work that
    /// compiled code speeds up, one edge tuple per iteration.
    #[arg(long, value_name = "W", default_value_t = 0)]
    pub work: u32,
    /// Where to write the program (standard output without it).
    #[arg(short, long, value_name = "FILE.tasm", conflicts_with = "describe")]
    pub output: Option<PathBuf>,
    /// Instead of generating, run FILE under the perfect profiler and
    /// report its tuple stream's statistics.
    #[arg(long, value_name = "FILE")]
    pub describe: Option<PathBuf>,
    /// Arguments of the described program (default: its `# args:` line).
    #[arg(allow_negative_numbers = true, requires = "describe")]
    pub args: Vec<i64>,
    /// Interval length in tuples for `--describe`.
    #[arg(long, default_value_t = 10_000, requires = "describe")]
    pub interval: u64,
    /// Candidate threshold for `--describe`: `1%` or `0.01`.
    #[arg(long, default_value = "1%", requires = "describe")]
    pub threshold: String,
    /// Print the description as JSON.
    #[arg(long, requires = "describe")]
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

/// Runs `toyvm synth`; returns the exit status or a message.
pub fn run(args: &SynthArgs) -> std::result::Result<u8, String> {
    if let Some(file) = &args.describe {
        let text = crate::files::read_bounded(file, crate::files::MAX_FILE_BYTES)
            .map_err(|e| format!("{}: {e}", file.display()))?;
        let program = Program::load_any(&text).map_err(|e| format!("{}: {e}", file.display()))?;
        let call_args = if args.args.is_empty() {
            header_args(&String::from_utf8_lossy(&text)).unwrap_or_default()
        } else {
            args.args.clone()
        };
        let threshold = args
            .threshold
            .strip_suffix('%')
            .map_or_else(
                || args.threshold.parse(),
                |p| p.parse().map(|p: f64| p / 100.0),
            )
            .map_err(|_| format!("--threshold `{}` is not a fraction", args.threshold))?;
        let st = describe(&program, &call_args, args.interval, threshold)
            .map_err(|e| format!("{}: {e}", file.display()))?;
        if args.json {
            println!(
                "{}",
                serde_json::to_string_pretty(&st).expect("stats serialize")
            );
        } else {
            print!("{}", st.to_text());
        }
        return Ok(0);
    }
    let text = generate(&args.knobs()).map_err(|e| e.to_string())?;
    match &args.output {
        Some(p) => std::fs::write(p, text).map_err(|e| format!("{}: {e}", p.display()))?,
        None => print!("{text}"),
    }
    Ok(0)
}
