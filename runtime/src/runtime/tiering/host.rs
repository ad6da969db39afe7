//! The hosts a run or a call of the interpreter runs with, chosen in one
//! place ([`with_host`]): [`JitHost`] with a profiler model and the JIT
//! (interval ends drive compilation, the interpreter enters compiled
//! regions at their heads), a [`Feeder`] with a model alone (batches go
//! to the model), no sink without a model.

use std::time::{Duration, Instant};

use toyvm_vm::interp::{self, NoJit};
use toyvm_vm::tuple::NoSink;
use toyvm_vm::{KindSet, Tuple, TupleSink};

use super::Jit;
use crate::runtime::{Link, RunModel};

/// Exit tuples are fed to the model in batches of at most this many.
const EXIT_BATCH: usize = 1024;

/// What runs with the host [`with_host`] chose: the interpreter's entry,
/// generic over the host so that each host's loop is compiled for it.
pub(crate) trait WithHost {
    /// What the run gives back.
    type Output;
    /// Runs with `host`.
    fn run<H: interp::Host>(self, host: &mut H) -> Self::Output;
}

/// Runs `run` with the host for `link` (the model, if any) and `jit` (the
/// JIT, if any): the JIT host with both, a feeder with a model alone, no
/// sink without one. Returns its output and the time the JIT's decisions
/// took (zero without the JIT host).
pub(crate) fn with_host<W: WithHost>(
    link: Option<&mut Link<'_, RunModel>>,
    jit: Option<&mut Jit>,
    kinds: KindSet,
    run: W,
) -> (W::Output, Duration) {
    match (link, jit) {
        (Some(link), Some(jit)) => {
            let mut host = JitHost::new(link, jit, kinds);
            let out = run.run(&mut host);
            (out, host.end())
        }
        (Some(link), None) => (run.run(&mut NoJit(&mut Feeder(link))), Duration::ZERO),
        (None, _) => (run.run(&mut NoJit(&mut NoSink)), Duration::ZERO),
    }
}

/// The sink of a profiled run without a JIT: batches go to the model.
struct Feeder<'a, 's>(&'a mut Link<'s, RunModel>);

impl TupleSink for Feeder<'_, '_> {
    fn accept(&mut self, batch: &[Tuple]) {
        self.0.send(batch);
    }
}

impl<'a, 's> JitHost<'a, 's> {
    fn new(link: &'a mut Link<'s, RunModel>, jit: &'a mut Jit, kinds: KindSet) -> Self {
        JitHost {
            link,
            jit,
            compile_time: Duration::ZERO,
            kinds,
            exit_tuples: Vec::new(),
        }
    }

    /// Hands over the last exit tuples; returns the time the JIT's
    /// decisions took.
    fn end(mut self) -> Duration {
        self.flush_exit_tuples();
        self.compile_time
    }

    /// Hands a batch to the model, then applies the interval ends whose
    /// point (`lag` tuples after them) the stream has now passed.
    fn feed(&mut self, batch: &[Tuple]) {
        self.jit.ran(batch.len() as u64);
        self.link.send(batch);
        while let Some(end) = self.link.due() {
            let start = Instant::now();
            self.jit.on_interval(end.index, &end.candidates);
            self.compile_time += start.elapsed();
        }
    }

    fn flush_exit_tuples(&mut self) {
        let batch = std::mem::take(&mut self.exit_tuples);
        self.jit.stats.exit_tuples += batch.len() as u64;
        self.feed(&batch);
        self.exit_tuples = batch;
        self.exit_tuples.clear();
    }
}

/// The host with a JIT: interval ends drive compilation, and the
/// interpreter enters compiled regions at their heads.
pub(crate) struct JitHost<'a, 's> {
    link: &'a mut Link<'s, RunModel>,
    pub(super) jit: &'a mut Jit,
    compile_time: Duration,
    /// The profiled kinds: what exits report.
    pub(super) kinds: KindSet,
    /// Tuples the last region run's exits reported.
    pub(super) exit_tuples: Vec<Tuple>,
}

impl TupleSink for JitHost<'_, '_> {
    fn accept(&mut self, batch: &[Tuple]) {
        // Tuples that compiled code's exits reported since the last batch
        // go first: they happened before the batch's last tuples, so the
        // stream is at most one batch out of order, and deterministic.
        if !self.exit_tuples.is_empty() {
            self.flush_exit_tuples();
        }
        self.feed(batch);
    }
}

impl interp::Host for JitHost<'_, '_> {
    const JIT: bool = true;

    #[inline(always)]
    fn region_at(&mut self, func: u32, pc: u32) -> Option<u32> {
        self.jit.region_at(func, pc)
    }

    fn run_region(
        &mut self,
        id: u32,
        regs: &mut [i64; 256],
        mem: &mut interp::Memory,
        host_fns: &mut dyn interp::HostFunctions,
        depth: usize,
        fuel: &mut u64,
        vm: &mut interp::Reentry<'_>,
    ) -> Result<u32, toyvm_vm::interp::Trap> {
        let resume = super::run_region(self, id, regs, mem, host_fns, depth, fuel, vm);
        if self.exit_tuples.len() >= EXIT_BATCH {
            self.flush_exit_tuples();
        }
        resume
    }
}
