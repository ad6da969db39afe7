//! The one path every call takes, an instance's and a whole run's alike:
//! a [`Runner`] holds what runs calls of one program under an engine's
//! options (the profiler model's link, the JIT, the fuel left) and runs
//! each call through the host they make (the JIT host with both, a
//! feeder with a model alone, no sink without one).
//!
//! An [`Instance`](super::Instance) keeps one runner from call to call,
//! its model on the calling thread; a whole run
//! ([`crate::Runtime`]) makes one for its one call of the entry function,
//! with the model on a thread of its own where that pays
//! ([`ModelThread::Own`], or [`ModelThread::Later`] once the run is long
//! enough) and the JIT compiling on a thread of its own then too.

use std::io::Write;
use std::sync::Arc;
use std::thread::Scope;
use std::time::Duration;

use toyvm_vm::interp::{self, Call, Config, HostFunctions, Memory, Outcome};
use toyvm_vm::{KindSet, Program};

use super::EngineConfig;
use crate::runtime::{Jit, JitLimits, Link, RunModel, SharedCode, WithHost, with_host};
use crate::{Error, Result};

/// Where a runner's profiler model runs.
pub(crate) enum ModelThread<'s, 'e> {
    /// On the thread that runs the calls (an instance's model, or a whole
    /// run's on one core).
    Here,
    /// On a thread of its own in this scope, which the link's end (its
    /// `finish`, or its drop when a call unwinds) ends; the JIT then
    /// compiles on a thread of its own too.
    Own(&'s Scope<'s, 'e>),
    /// On the thread that runs the calls for a run's first tuples, then on
    /// a thread of its own in this scope ([`Link::deferred`]): a short run
    /// never starts one. The JIT compiles on a thread of its own.
    Later(&'s Scope<'s, 'e>),
}

/// What runs calls of one program: its profiler model's link (with a
/// model), its JIT (with compiled code), the fuel left (with a fuel
/// limit), and the interpreter's settings.
pub(crate) struct Runner<'s> {
    /// The model's link, with a model.
    pub(crate) link: Option<Link<'s, RunModel>>,
    /// The JIT, with a model and the engine's JIT on.
    pub(crate) jit: Option<Jit>,
    /// Fuel left, with a fuel limit.
    pub(crate) fuel: Option<u64>,
    kinds: KindSet,
    count: bool,
    max_depth: usize,
}

impl<'s> Runner<'s> {
    /// A runner of `program` with `config`'s options: a JIT taking its
    /// code from `code` (when the JIT is on and there is code: a model to
    /// drive it), the model placed by `model` (keeping every interval's
    /// candidates when `keep`).
    pub(crate) fn new(
        config: &EngineConfig,
        program: &Arc<Program>,
        code: Option<Arc<SharedCode>>,
        model: ModelThread<'s, '_>,
        keep: bool,
    ) -> Result<Runner<'s>> {
        let background = matches!(model, ModelThread::Own(_) | ModelThread::Later(_));
        let jit = match (&config.jit, code) {
            (Some(opts), Some(code)) => {
                let mut opts = opts.clone();
                opts.timing = opts.timing || config.count;
                let limits = JitLimits {
                    fuel: config.limits.fuel,
                    max_depth: config.limits.max_depth,
                };
                Some(Jit::new(
                    Arc::clone(program),
                    code,
                    opts,
                    background,
                    limits,
                )?)
            }
            _ => None,
        };
        let link = match (&config.profile, config.model_lag()) {
            (Some(spec), Some(lag)) => {
                let want_ends = jit.is_some();
                Some(match model {
                    ModelThread::Here => Link::inline(RunModel::new(spec, keep), lag, want_ends),
                    ModelThread::Own(scope) => {
                        // Built on its own thread (a model need not be
                        // `Send`), from a spec of its own.
                        let spec = spec.clone();
                        let make = move || RunModel::new(&spec, keep);
                        Link::spawn(scope, make, lag, want_ends).map_err(|source| {
                            Error::Thread {
                                what: "profiler model",
                                source,
                            }
                        })?
                    }
                    ModelThread::Later(scope) => {
                        Link::deferred(scope, RunModel::new(spec, keep), lag, want_ends)
                    }
                })
            }
            _ => None,
        };
        Ok(Runner {
            link,
            jit,
            fuel: config.limits.fuel,
            kinds: config.profile.as_ref().map_or(KindSet::EMPTY, |p| p.kinds),
            count: config.count,
            max_depth: config.limits.max_depth,
        })
    }

    /// Runs `call` of `program` (a function of it, with its number of
    /// arguments) on this thread, in `mem`, through the host of this
    /// runner's link and JIT; takes the instructions it executed from the
    /// fuel left. Returns the call's outcome, those instructions (when
    /// counted), and the time the JIT's decisions took.
    pub(crate) fn call(
        &mut self,
        program: &Program,
        mem: &mut Memory,
        call: Call<'_>,
        out: &mut dyn Write,
        host_fns: &mut dyn HostFunctions,
    ) -> (toyvm_vm::Result<Outcome>, u64, Duration) {
        let cfg = Config {
            fuel: self.fuel,
            count_steps: self.count,
            max_depth: self.max_depth,
            kinds: self.kinds,
        };
        if let Some(jit) = &mut self.jit {
            jit.set_fuel_limit(self.fuel);
        }
        let run = CallRun {
            program,
            mem,
            call,
            out,
            host_fns,
            cfg: &cfg,
        };
        let ((result, steps), decide_time) =
            with_host(self.link.as_mut(), self.jit.as_mut(), self.kinds, run);
        if let Some(fuel) = &mut self.fuel {
            *fuel = fuel.saturating_sub(steps);
        }
        (result, steps, decide_time)
    }
}

/// [`Error::Arity`] unless function `func` of `program` takes `given`
/// arguments.
pub(crate) fn check_arity(program: &Program, func: u32, given: usize) -> Result<()> {
    let f = &program.functions[func as usize];
    if given == f.params as usize {
        return Ok(());
    }
    Err(Error::Arity {
        function: f.name.clone(),
        expected: f.params as usize,
        given,
    })
}

/// One call, for [`with_host`] to run with the host it chooses.
struct CallRun<'r> {
    program: &'r Program,
    mem: &'r mut Memory,
    call: Call<'r>,
    out: &'r mut dyn Write,
    host_fns: &'r mut dyn HostFunctions,
    cfg: &'r Config,
}

impl WithHost for CallRun<'_> {
    type Output = (toyvm_vm::Result<Outcome>, u64);

    fn run<H: interp::Host>(self, host: &mut H) -> Self::Output {
        interp::call_with_host(
            self.program,
            self.mem,
            self.call,
            self.out,
            host,
            self.host_fns,
            self.cfg,
        )
    }
}
