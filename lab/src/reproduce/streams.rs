//! The streams the figures run on, and the sizes of a run.
//!
//! The papers measured SPEC programs whose hot sets dwarf their tables;
//! toyvm's stand-ins are streams with known distributions (Zipf-ranked
//! values with a noise tail of never-repeated tuples, and a program-like
//! walk over loops with biased branches, from [`toyvm_profiler::synth`]),
//! the recorded stream of a generated workload with a large hot set
//! (`toyvm synth --hot 4096`, run by the interpreter), and any `--trace`.

use std::path::PathBuf;

use toyvm_profiler::report::{ProfileReport, profile_stream};
use toyvm_profiler::synth::{noisy_zipf_stream, program_edges, zipf_stream};
use toyvm_profiler::{Kind, Tuple, parse_spec};

use crate::synth::{Knobs, generate};

/// A named stream.
#[derive(Clone, Debug)]
pub struct Stream {
    /// How the report names it (`zipf-wide`, `synth-hot4096`, or a
    /// `--trace` file's stem).
    pub name: String,
    /// The tuples, in stream order.
    pub tuples: Vec<Tuple>,
}

/// The sizes of a run: the papers' two settings (10K tuples per interval
/// at a 1% threshold; 1M at 0.1%) and how many intervals of each.
#[derive(Clone, Debug)]
pub struct Sizes {
    /// Whether these are `--quick`'s reduced sizes.
    pub quick: bool,
    /// The short setting's interval (the papers' 10,000).
    pub short: u64,
    /// The long setting's interval (the papers' 1,000,000; 100,000 with
    /// `--quick`).
    pub long: u64,
    /// Intervals of each setting a stream holds.
    pub intervals: u64,
    /// Monte Carlo trials (001 Fig 4).
    pub trials: usize,
}

impl Sizes {
    /// The full sizes (20 intervals of each setting, 400 trials), or with
    /// `quick` the reduced ones (8 intervals, a long interval of 100,000,
    /// 40 trials).
    pub fn new(quick: bool) -> Sizes {
        if quick {
            Sizes {
                quick,
                short: 10_000,
                long: 100_000,
                intervals: 8,
                trials: 40,
            }
        } else {
            Sizes {
                quick,
                short: 10_000,
                long: 1_000_000,
                intervals: 20,
                trials: 400,
            }
        }
    }

    /// Tuples in a stream of the short setting.
    pub fn short_len(&self) -> usize {
        (self.short * self.intervals) as usize
    }

    /// ... of the long setting.
    pub fn long_len(&self) -> usize {
        (self.long * self.intervals) as usize
    }

    /// The long setting as the report names it.
    pub fn long_words(&self) -> String {
        if self.quick {
            "100K/0.1% (the paper's 1M/0.1%, reduced by --quick)".to_owned()
        } else {
            "1M/0.1%".to_owned()
        }
    }
}

/// Most tuples read from one `--trace`.
pub const MAX_TRACE_TUPLES: usize = 50_000_000;

/// What every figure may use.
#[derive(Debug)]
pub struct Ctx {
    /// The sizes of this run.
    pub sizes: Sizes,
    /// Value streams of the long setting's length (figures of the short
    /// setting take a prefix).
    pub values: Vec<Stream>,
    /// Edge streams, likewise.
    pub edges: Vec<Stream>,
    /// Mixed streams: a generated workload's edges, values and calls.
    pub mixed: Vec<Stream>,
    /// The workload's instructions and tuples when it was recorded (it
    /// ran out of fuel: every instruction of the fuel ran).
    workload_run: (u64, u64),
}

impl Ctx {
    /// Builds the streams (fixed seeds) and reads `traces`.
    pub fn new(quick: bool, traces: &[PathBuf]) -> crate::Result<Ctx> {
        let sizes = Sizes::new(quick);
        let n = sizes.long_len();
        let (workload, workload_run) = record_synth(n)?;
        let of_kind =
            |k: Kind| -> Vec<Tuple> { workload.iter().copied().filter(|t| t.kind == k).collect() };
        let mut values = vec![
            Stream {
                name: "zipf-wide".into(),
                tuples: noisy_zipf_stream(n, 20_000, 1.0, 0.3, 11),
            },
            Stream {
                name: "zipf-skewed".into(),
                tuples: zipf_stream(n, 2_000, 1.3, 12),
            },
            Stream {
                name: "synth-hot4096".into(),
                tuples: of_kind(Kind::Value),
            },
        ];
        let mut edges = vec![
            Stream {
                name: "program-edges".into(),
                tuples: program_edges(n, 64, 32, 13),
            },
            Stream {
                name: "synth-hot4096".into(),
                tuples: of_kind(Kind::Edge),
            },
        ];
        let mut mixed = vec![Stream {
            name: "synth-hot4096".into(),
            tuples: workload,
        }];
        for path in traces {
            let at = |source| crate::Error::Trace {
                path: path.clone(),
                source,
            };
            let reader = toyvm_profiler::trace::TraceReader::open(path).map_err(at)?;
            let mut all = Vec::new();
            for t in reader.take(MAX_TRACE_TUPLES) {
                all.push(t.map_err(at)?);
            }
            let name = path
                .file_stem()
                .map_or_else(|| "trace".to_owned(), |s| s.to_string_lossy().into_owned());
            let v: Vec<Tuple> = all
                .iter()
                .copied()
                .filter(|t| t.kind == Kind::Value)
                .collect();
            let e: Vec<Tuple> = all
                .iter()
                .copied()
                .filter(|t| t.kind == Kind::Edge)
                .collect();
            if !v.is_empty() {
                values.push(Stream {
                    name: name.clone(),
                    tuples: v,
                });
            }
            if !e.is_empty() {
                edges.push(Stream {
                    name: name.clone(),
                    tuples: e,
                });
            }
            mixed.push(Stream { name, tuples: all });
        }
        Ok(Ctx {
            sizes,
            values,
            edges,
            mixed,
            workload_run,
        })
    }

    /// Instructions the generated workload ran to produce its first
    /// `tuples` tuples (pro rata: the stream is uniform over its run).
    pub fn workload_instructions(&self, tuples: usize) -> u64 {
        let (instructions, total) = self.workload_run;
        (instructions as f64 * tuples as f64 / total.max(1) as f64) as u64
    }
}

/// The first `len` tuples of a stream (all of it when shorter).
pub fn prefix(s: &Stream, len: usize) -> &[Tuple] {
    &s.tuples[..len.min(s.tuples.len())]
}

/// The stream of a generated workload with a hot set of 4,096 items
/// (functions 64, blocks 16; see `toyvm synth`), run by the interpreter
/// until it has produced `len` tuples of every kind together; also the
/// instructions and tuples of that run.
fn record_synth(len: usize) -> crate::Result<(Vec<Tuple>, (u64, u64))> {
    let knobs = Knobs {
        seed: 7,
        functions: 64,
        blocks: 16,
        hot: 4096,
        ..Knobs::default()
    };
    let program = toyvm_vm::asm::assemble(&generate(&knobs)?)?;
    let mut tuples: Vec<toyvm_vm::Tuple> = Vec::with_capacity(len + toyvm_vm::tuple::BATCH);
    let fuel = len as u64 * 8;
    let cfg = toyvm_vm::interp::Config {
        // A few instructions per tuple: enough fuel for `len` of them; the
        // fuel trap ends the run, and the tuples before it stand.
        fuel: Some(fuel),
        kinds: toyvm_vm::KindSet::ALL,
        ..Default::default()
    };
    let input = toyvm_vm::interp::Input {
        args: &[i64::MAX / 2],
        file: &[],
    };
    let ran =
        toyvm_vm::interp::run_with_sink(&program, input, &mut std::io::sink(), &mut tuples, &cfg);
    // The fuel trap is the expected end; any other trap or error is not.
    let instructions = match ran {
        Ok(outcome) => outcome.steps.unwrap_or(fuel),
        Err(toyvm_vm::Error::Trap(t))
            if matches!(t.kind, toyvm_vm::interp::TrapKind::OutOfFuel { .. }) =>
        {
            fuel
        }
        Err(e) => return Err(e.into()),
    };
    let run = (instructions, tuples.len() as u64);
    tuples.truncate(len);
    Ok((tuples, run))
}

/// Runs `specs` over `tuples` (the oracle beside them) and returns the
/// report: per spec, per interval and summary errors.
pub fn run_specs(tuples: &[Tuple], specs: &[String]) -> crate::Result<ProfileReport> {
    let parsed = specs
        .iter()
        .map(|s| parse_spec(s))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(profile_stream(tuples.iter().map(|t| Ok(*t)), &parsed)?)
}
