//! Running the comparison: timed runs of every (program, configuration)
//! pair, each checked against the interpreter's output, and one error pass
//! per program that measures every model against the perfect profiler.
//!
//! The error pass streams the interpreter's tuples (JIT off, every kind)
//! through a [`toyvm_profiler::evaluation::StreamProfiler`]: error is measured on
//! the stream the interpreter emits, the same for every model. The timed
//! runs have the JIT on, and compiled code emits no tuples, so the model
//! that drives a JIT run sees less than the whole stream; its state bytes,
//! messages and cycles in the table are those of the timed run.
//!
//! [`Runner`] is the seam between the comparison and the runtime: tests
//! substitute one that tampers with an output to prove that a mismatch is
//! caught.

use toyvm_profiler::ProfilerSpec;
use toyvm_profiler::evaluation::{ModelReport, ProfileReport, StreamProfiler};
use toyvm_vm::Tuple;
use toyvm_vm::interp;

use super::error::{Error, Result};
use super::specs::Choice;
use crate::suite::Case;
use toyvm::Stats;
use toyvm::runtime::link::Link;
use toyvm::runtime::model::{Ending, ModelSide};
use toyvm::runtime::{JitOptions, Threads};

/// What one run printed and returned, and its statistics.
#[derive(Clone, Debug)]
pub struct Run {
    /// What the program printed, as a digest: never held whole (a program
    /// may print gigabytes).
    pub output: Digest,
    /// The value `main` returned.
    pub value: i64,
    /// The run's statistics: wall time, the model's and the JIT's counters.
    pub stats: Stats,
}

/// Runs programs for the comparison.
pub trait Runner: Sync {
    /// Runs `case` once under `config`: the interpreter alone for
    /// [`Choice::None`], the model driving the JIT otherwise.
    fn run(&self, case: &Case, config: &Choice) -> Result<Run>;

    /// Every model of `specs` against the perfect profiler over the
    /// interpreter's tuple stream, in the order given.
    fn errors(&self, case: &Case, specs: &[ProfilerSpec]) -> Result<Vec<ModelReport>> {
        interpreter_errors(case, specs)
    }
}

/// The real runtime.
#[derive(Clone, Copy, Debug, Default)]
pub struct RuntimeRunner;

impl Runner for RuntimeRunner {
    fn run(&self, case: &Case, config: &Choice) -> Result<Run> {
        let (spec, jit) = match config {
            Choice::None => (None, None),
            Choice::Model(s) => (Some(s.clone()), Some(JitOptions::default())),
        };
        let rt = toyvm::Runtime::builder(case.program.clone())
            .profile(spec)
            .jit(jit)
            .build();
        let mut output = Digest::default();
        let report = match &case.wasm {
            Some(t) => {
                let mut wasi = case.wasi(t, &mut output);
                let report = rt.run_with_host_fns(case.input(), &mut std::io::sink(), &mut wasi)?;
                wasi.flush()
                    .map_err(|e| toyvm::Error::Vm(toyvm_vm::Error::Output(e)))?;
                report
            }
            None => rt.run(case.input(), &mut output)?,
        };
        Ok(Run {
            output,
            value: report.outcome.value,
            stats: report.stats,
        })
    }
}

/// Every spec over the interpreter's stream, as the model side of a
/// [`Link`]: the error pass feeds it the way a profiled run feeds its model.
struct Errors(StreamProfiler);

impl ModelSide for Errors {
    type Summary = ProfileReport;

    fn feed(&mut self, batch: &[Tuple], _: &mut dyn FnMut(Ending<'_>)) {
        self.0.feed(batch);
    }

    fn finish(self) -> ProfileReport {
        self.0.finish()
    }

    fn observed(report: &ProfileReport) -> u64 {
        report.tuples
    }
}

/// Runs the interpreter and every spec over its tuple stream, without
/// keeping the stream: the interpreter's sink is the runtime's link, which hands
/// its batches in recycled buffers to the specs on a thread of their own
/// (on a one-core machine, on the interpreter's), as a profiled run does.
pub fn interpreter_errors(case: &Case, specs: &[ProfilerSpec]) -> Result<Vec<ModelReport>> {
    if specs.is_empty() {
        return Ok(Vec::new());
    }
    std::thread::scope(|s| {
        let make = || Errors(StreamProfiler::new(specs));
        let mut link = if Threads::Auto.model_thread(None) {
            Link::spawn(s, make, 0, false).map_err(|source| toyvm::Error::Thread {
                what: "profiler model",
                source,
            })?
        } else {
            Link::inline(make(), 0, false)
        };
        let cfg = interp::Config::default();
        let ran = case.interpret(&mut std::io::sink(), &mut link, &cfg);
        let (report, _) = link.finish();
        ran.map_err(Error::Record)?;
        Ok(report?.models)
    })
}

/// The median of `xs` (the mean of the middle two for an even count).
pub fn median(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

use crate::suite::Digest;

/// A timed run, reduced to what the report needs.
#[derive(Clone, Debug)]
pub struct Timed {
    /// [`crate::suite::fnv1a64`] of what the run printed.
    pub output_hash: u64,
    /// The length of what the run printed, in bytes.
    pub output_len: u64,
    /// The value `main` returned.
    pub value: i64,
    /// The run's statistics (its wall time is the timing).
    pub stats: Stats,
}

/// What one unit of work produced.
#[derive(Debug)]
pub enum Done {
    /// A timed run finished.
    Time {
        /// Index of the program in the comparison's cases.
        case: usize,
        /// Index of the configuration in the comparison's columns.
        config: usize,
        /// Which round of `--repeat` (from 0).
        rep: usize,
        /// The run, or why it failed.
        result: Result<Box<Timed>>,
    },
    /// An error pass (or one part of it) finished.
    Errors {
        /// Index of the program in the comparison's cases.
        case: usize,
        /// Choice index and its report.
        result: Result<Vec<(usize, ModelReport)>>,
    },
}

/// One unit of work.
#[derive(Clone, Debug)]
pub enum Job {
    /// One timed run of a program under one configuration.
    Time {
        /// Index of the program in the comparison's cases.
        case: usize,
        /// Index of the configuration in the comparison's columns.
        config: usize,
        /// Which round of `--repeat` (from 0).
        rep: usize,
    },
    /// The error pass over `configs` (indices of model configurations).
    Errors {
        /// Index of the program in the comparison's cases.
        case: usize,
        /// Indices of the model configurations this part measures (never
        /// the interpreter alone).
        configs: Vec<usize>,
    },
}

/// The work of a comparison, in the order a single thread runs it: per
/// program its error pass, then `repeat` rounds over every configuration
/// (rounds rather than runs in a row, so slow drift of the machine spreads
/// over all configurations). With `jobs > 1` the error pass is split in
/// `jobs` parts that run side by side.
pub fn jobs(cases: usize, configs: &[Choice], repeat: usize, jobs: usize) -> Vec<Job> {
    let models: Vec<usize> = (0..configs.len())
        .filter(|&i| configs[i].spec().is_some())
        .collect();
    // At most MAX_MODELS_AT_ONCE models in one error pass: they are all
    // alive together.
    let parts = jobs
        .max(
            models
                .len()
                .div_ceil(toyvm_profiler::spec::MAX_MODELS_AT_ONCE),
        )
        .clamp(1, models.len().max(1));
    let mut v = Vec::new();
    for case in 0..cases {
        for p in 0..parts {
            let chunk: Vec<usize> = models.iter().copied().skip(p).step_by(parts).collect();
            if !chunk.is_empty() {
                v.push(Job::Errors {
                    case,
                    configs: chunk,
                });
            }
        }
        for rep in 0..repeat {
            for config in 0..configs.len() {
                v.push(Job::Time { case, config, rep });
            }
        }
    }
    v
}

/// Does one unit of work.
pub fn execute(job: &Job, cases: &[Case], configs: &[Choice], runner: &dyn Runner) -> Done {
    match job {
        Job::Time { case, config, rep } => {
            let result = runner.run(&cases[*case], &configs[*config]).map(|r| {
                Box::new(Timed {
                    output_hash: r.output.fnv1a64(),
                    output_len: r.output.bytes(),
                    value: r.value,
                    stats: r.stats,
                })
            });
            Done::Time {
                case: *case,
                config: *config,
                rep: *rep,
                result,
            }
        }
        Job::Errors {
            case,
            configs: which,
        } => {
            let specs: Vec<ProfilerSpec> = which
                .iter()
                .filter_map(|&i| configs[i].spec().cloned())
                .collect();
            let result = runner
                .errors(&cases[*case], &specs)
                .map(|models| which.iter().copied().zip(models).collect());
            Done::Errors {
                case: *case,
                result,
            }
        }
    }
}

/// A short description of a job for the progress bar.
pub fn describe(job: &Job, cases: &[Case], labels: &[String]) -> String {
    match job {
        Job::Time { case, config, rep } => {
            format!("{} {} #{}", cases[*case].name, labels[*config], rep + 1)
        }
        Job::Errors { case, configs } => {
            format!(
                "{} error pass ({} models)",
                cases[*case].name,
                configs.len()
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn jobs_cover_every_pair_and_split_the_error_pass() {
        let configs = super::super::specs::plan(&["multihash,perfect,conte".into()], &[]).unwrap();
        let j = jobs(2, &configs, 3, 2);
        let timed = j.iter().filter(|j| matches!(j, Job::Time { .. })).count();
        assert_eq!(timed, 2 * 3 * 4);
        let errors: Vec<&Vec<usize>> = j
            .iter()
            .filter_map(|j| match j {
                Job::Errors { case: 0, configs } => Some(configs),
                _ => None,
            })
            .collect();
        assert_eq!(errors, [&vec![1, 3], &vec![2]]);
    }
}
