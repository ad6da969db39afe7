//! The streams the figures run on, and the sizes of a run.
//!
//! The papers measured SPEC programs whose hot sets dwarf their tables;
//! toyvm's stand-ins are streams with known distributions (Zipf-ranked
//! values with a noise tail of never-repeated tuples, and a program-like
//! walk over loops with biased branches, from [`toyvm_profiler::synth`]),
//! the recorded stream of a generated workload with a large hot set
//! (`toyvm synth --hot 4096`, run by the interpreter), and any `--trace`.

use std::path::PathBuf;

use toyvm_profiler::evaluation::{ProfileReport, profile_stream};
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

/// How a stream is made: every stream is regenerated (fixed seeds) or
/// re-read when a figure asks for it, and dropped by that figure, so a run
/// holds at most the streams one figure works on (a 20M-tuple stream is
/// 480 MB).
#[derive(Clone, Debug)]
enum Gen {
    /// [`noisy_zipf_stream`].
    NoisyZipf {
        distinct: usize,
        s: f64,
        noise: f64,
        seed: u64,
    },
    /// [`zipf_stream`].
    Zipf { distinct: usize, s: f64, seed: u64 },
    /// [`program_edges`].
    ProgramEdges {
        functions: u32,
        blocks: u32,
        seed: u64,
    },
    /// The generated workload's first `n` tuples ([`record_synth`]), of one
    /// kind or all.
    Workload { n: usize, kind: Option<Kind> },
    /// A `--trace`'s first [`MAX_TRACE_TUPLES`], of one kind or all.
    Trace { path: PathBuf, kind: Option<Kind> },
}

/// A named stream, made when a figure loads it ([`Source::load`]).
#[derive(Clone, Debug)]
pub struct Source {
    /// How the report names it (`zipf-wide`, `synth-hot4096`, or a
    /// `--trace` file's stem).
    pub name: String,
    /// Its length in tuples.
    pub len: usize,
    generator: Gen,
}

impl Source {
    /// The stream's first `len` tuples (all of it when shorter): the same
    /// tuples every time (the generators and the workload's run are
    /// deterministic and each is a prefix of a longer one).
    pub fn load(&self, len: usize) -> crate::Result<Stream> {
        let len = len.min(self.len);
        let tuples = match &self.generator {
            &Gen::NoisyZipf {
                distinct,
                s,
                noise,
                seed,
            } => noisy_zipf_stream(len, distinct, s, noise, seed),
            &Gen::Zipf { distinct, s, seed } => zipf_stream(len, distinct, s, seed),
            &Gen::ProgramEdges {
                functions,
                blocks,
                seed,
            } => program_edges(len, functions, blocks, seed),
            &Gen::Workload { n, kind } => {
                let mut keep = Keep::new(n, kind, len);
                record_synth(n, &mut keep)?;
                keep.out
            }
            Gen::Trace { path, kind } => {
                let mut keep = Keep::new(MAX_TRACE_TUPLES, *kind, len);
                read_trace(path, &mut keep)?;
                keep.out
            }
        };
        Ok(Stream {
            name: self.name.clone(),
            tuples,
        })
    }

    /// The whole stream.
    pub fn load_all(&self) -> crate::Result<Stream> {
        self.load(self.len)
    }
}

/// What every figure may use.
#[derive(Debug)]
pub struct Ctx {
    /// The sizes of this run.
    pub sizes: Sizes,
    /// Value streams of the long setting's length (figures of the short
    /// setting take a prefix).
    pub values: Vec<Source>,
    /// Edge streams, likewise.
    pub edges: Vec<Source>,
    /// Mixed streams: a generated workload's edges, values and calls.
    pub mixed: Vec<Source>,
    /// The workload's instructions and tuples when it was recorded (it
    /// ran out of fuel: every instruction of the fuel ran).
    workload_run: (u64, u64),
}

/// A sink keeping, of a stream's first `seen_max` tuples, the first `want`
/// of one kind (or of all), and counting each kind's tuples among them.
struct Keep {
    seen_max: usize,
    seen: usize,
    kind: Option<Kind>,
    want: usize,
    out: Vec<Tuple>,
    counts: [usize; 3],
}

impl Keep {
    fn new(seen_max: usize, kind: Option<Kind>, want: usize) -> Keep {
        Keep {
            seen_max,
            seen: 0,
            kind,
            want,
            out: Vec::new(),
            counts: [0; 3],
        }
    }

    fn take(&mut self, t: Tuple) {
        if self.seen == self.seen_max {
            return;
        }
        self.seen += 1;
        self.counts[t.kind as usize] += 1;
        if self.out.len() < self.want && self.kind.is_none_or(|k| k == t.kind) {
            self.out.push(t);
        }
    }
}

impl toyvm_vm::tuple::TupleSink for Keep {
    fn accept(&mut self, batch: &[toyvm_vm::Tuple]) {
        for &t in batch {
            self.take(t);
        }
    }
}

/// Reads a trace's tuples into `keep`.
fn read_trace(path: &PathBuf, keep: &mut Keep) -> crate::Result<()> {
    let at = |source| crate::Error::Trace {
        path: path.clone(),
        source,
    };
    let reader = toyvm_profiler::trace::TraceReader::open(path).map_err(at)?;
    for t in reader.take(MAX_TRACE_TUPLES) {
        keep.take(t.map_err(at)?);
    }
    Ok(())
}

impl Ctx {
    /// Describes the streams (fixed seeds) and counts `traces`' tuples;
    /// the workload is run once here to count its tuples, and again by
    /// each figure that loads one of its streams.
    pub fn new(quick: bool, traces: &[PathBuf]) -> crate::Result<Ctx> {
        let sizes = Sizes::new(quick);
        let n = sizes.long_len();
        let mut count = Keep::new(n, None, 0);
        let workload_run = record_synth(n, &mut count)?;
        let source = |name: &str, len: usize, generator: Gen| Source {
            name: name.into(),
            len,
            generator,
        };
        let workload = |kind: Option<Kind>| Gen::Workload { n, kind };
        let mut values = vec![
            source(
                "zipf-wide",
                n,
                Gen::NoisyZipf {
                    distinct: 20_000,
                    s: 1.0,
                    noise: 0.3,
                    seed: 11,
                },
            ),
            source(
                "zipf-skewed",
                n,
                Gen::Zipf {
                    distinct: 2_000,
                    s: 1.3,
                    seed: 12,
                },
            ),
            source(
                "synth-hot4096",
                count.counts[Kind::Value as usize],
                workload(Some(Kind::Value)),
            ),
        ];
        let mut edges = vec![
            source(
                "program-edges",
                n,
                Gen::ProgramEdges {
                    functions: 64,
                    blocks: 32,
                    seed: 13,
                },
            ),
            source(
                "synth-hot4096",
                count.counts[Kind::Edge as usize],
                workload(Some(Kind::Edge)),
            ),
        ];
        let mut mixed = vec![source("synth-hot4096", count.seen, workload(None))];
        for path in traces {
            let mut count = Keep::new(MAX_TRACE_TUPLES, None, 0);
            read_trace(path, &mut count)?;
            let name = path
                .file_stem()
                .map_or_else(|| "trace".to_owned(), |s| s.to_string_lossy().into_owned());
            let trace = |kind: Option<Kind>| Gen::Trace {
                path: path.clone(),
                kind,
            };
            for (k, to) in [(Kind::Value, &mut values), (Kind::Edge, &mut edges)] {
                let len = count.counts[k as usize];
                if len > 0 {
                    to.push(source(&name, len, trace(Some(k))));
                }
            }
            mixed.push(source(&name, count.seen, trace(None)));
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

    /// Instructions the generated workload ran to produce the first `n`
    /// tuples of `source`, one of its one-kind streams (pro rata over the
    /// run's tuples of every kind); `None` for a stream that is not the
    /// workload's.
    pub fn workload_instructions_of(&self, source: &Source, n: usize) -> Option<u64> {
        let all = self
            .mixed
            .iter()
            .find(|m| matches!(m.generator, Gen::Workload { kind: None, .. }))?;
        match source.generator {
            Gen::Workload { .. } => Some(self.workload_instructions(
                (n as f64 * all.len as f64 / source.len.max(1) as f64) as usize,
            )),
            _ => None,
        }
    }
}

/// Runs the generated workload with a hot set of 4,096 items (functions
/// 64, blocks 16; see `toyvm synth`) in the interpreter, with fuel for
/// `len` tuples of every kind together, its tuples into `sink`; returns the
/// instructions and tuples of that run.
fn record_synth(len: usize, sink: &mut Keep) -> crate::Result<(u64, u64)> {
    let mut counted = Counted { sink, tuples: 0 };
    let instructions = run_synth(4096, len as u64 * 8, &mut counted)?;
    Ok((instructions, counted.tuples))
}

/// Runs the generated workload with a hot set of `hot` items (seed 7,
/// functions 64, blocks 16; see `toyvm synth`) in the interpreter for
/// `fuel` instructions, its tuples of every kind into `sink`; returns the
/// instructions it ran.
pub(super) fn run_synth<S: toyvm_vm::tuple::TupleSink>(
    hot: u32,
    fuel: u64,
    sink: &mut S,
) -> crate::Result<u64> {
    let knobs = Knobs {
        seed: 7,
        functions: 64,
        blocks: 16,
        hot,
        ..Knobs::default()
    };
    let program = toyvm_vm::asm::assemble(&generate(&knobs)?)?;
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
    let ran = toyvm_vm::interp::run_with_sink(&program, input, &mut std::io::sink(), sink, &cfg);
    // The fuel trap is the expected end; any other trap or error is not.
    match ran {
        Ok(outcome) => Ok(outcome.steps.unwrap_or(fuel)),
        Err(toyvm_vm::Error::Trap(t))
            if matches!(t.kind, toyvm_vm::interp::TrapKind::OutOfFuel { .. }) =>
        {
            Ok(fuel)
        }
        Err(e) => Err(e.into()),
    }
}

/// Counts every tuple of a run (beyond what [`Keep`] keeps).
struct Counted<'a> {
    sink: &'a mut Keep,
    tuples: u64,
}

impl toyvm_vm::tuple::TupleSink for Counted<'_> {
    fn accept(&mut self, batch: &[toyvm_vm::Tuple]) {
        self.tuples += batch.len() as u64;
        self.sink.accept(batch);
    }
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
