//! Where regions are compiled: on the interpreter's thread, or on a
//! compiler thread of their own, as HotSpot and V8 compile in the
//! background.
//!
//! The policy submits a job at an interval end and installs its result
//! later (see [`super::policy`]): by default at the next interval end, so
//! the point at which compiled code takes over is counted in tuples and
//! the run is deterministic whether the compile happened here or on the
//! other thread (which the interpreter then waits for only if it is still
//! compiling); in the asynchronous mode as soon as it is ready.
//!
//! Invariants relied on:
//! 1. Results come back in the order jobs were submitted (one compiler,
//!    first in, first out), so a job's result is the next one received.
//! 2. A compiled region owns its code memory (an `Arc` to its module and
//!    to the natives' module), so it may be built on one thread and run on
//!    another; nothing else is shared between the threads.
//! 3. Dropping the compiler drops the job channel: the thread ends after
//!    the job in hand, and is joined, so no thread outlives the run.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use toyvm_optimizer::{CodeCache, CompiledRegion, Region};
use toyvm_vm::Program;

/// What to compile.
#[derive(Debug)]
pub(super) enum Job {
    /// A planned region (trace, tree or loop).
    Region(Region),
    /// A whole closed function, natively, from its entry.
    Function(u32),
}

/// A job's outcome: the code, or why it could not be compiled.
pub(super) type Done = Result<CompiledRegion, String>;

fn compile(cache: &mut CodeCache, program: &Program, job: &Job) -> Done {
    match job {
        Job::Region(r) => cache.compile(r),
        Job::Function(f) => cache.compile_function(program, *f),
    }
    .map_err(|e| e.to_string())
}

enum Mode {
    /// Compiles at submission; results wait here until taken.
    Here {
        cache: Box<CodeCache>,
        program: Program,
        done: VecDeque<Done>,
    },
    /// A compiler thread owns the cache.
    Thread {
        jobs: Option<mpsc::Sender<Job>>,
        done: mpsc::Receiver<Done>,
        /// Set when the run ends: jobs still queued are not compiled.
        stop: Arc<AtomicBool>,
        thread: Option<JoinHandle<()>>,
    },
}

/// The compiler of one run.
pub(super) struct Compiler {
    mode: Mode,
    /// Jobs submitted and not yet taken.
    in_flight: usize,
    /// Time spent blocked in [`Compiler::wait`].
    pub waited: Duration,
}

impl Compiler {
    /// A compiler over `cache` (its natives compiled), on a thread of its
    /// own when `background`.
    pub fn new(cache: CodeCache, program: &Program, background: bool) -> crate::Result<Self> {
        let program = program.clone();
        let mode = if background {
            let (jobs, jobs_rx) = mpsc::channel::<Job>();
            let (done_tx, done) = mpsc::channel::<Done>();
            let mut cache = cache;
            let stop = Arc::new(AtomicBool::new(false));
            let stopped = Arc::clone(&stop);
            let thread = std::thread::Builder::new()
                .name("toyvm-compiler".into())
                .spawn(move || {
                    for job in jobs_rx {
                        if stopped.load(Ordering::Relaxed) {
                            break;
                        }
                        if done_tx.send(compile(&mut cache, &program, &job)).is_err() {
                            break;
                        }
                    }
                })
                .map_err(|source| crate::Error::Thread {
                    what: "compiler",
                    source,
                })?;
            Mode::Thread {
                jobs: Some(jobs),
                done,
                stop,
                thread: Some(thread),
            }
        } else {
            Mode::Here {
                cache: Box::new(cache),
                program,
                done: VecDeque::new(),
            }
        };
        Ok(Compiler {
            mode,
            in_flight: 0,
            waited: Duration::ZERO,
        })
    }

    /// Whether jobs run on a thread of their own.
    pub fn background(&self) -> bool {
        matches!(self.mode, Mode::Thread { .. })
    }

    /// Hands a job over; its result is taken, in order, by [`wait`] or
    /// [`ready`](Self::ready).
    pub fn submit(&mut self, job: Job) {
        self.in_flight += 1;
        match &mut self.mode {
            Mode::Here {
                cache,
                program,
                done,
            } => done.push_back(compile(cache, program, &job)),
            Mode::Thread { jobs, .. } => {
                let sent = jobs.as_ref().is_some_and(|j| j.send(job).is_ok());
                if !sent {
                    // The thread is gone (it panicked): the job fails.
                    self.mode_failed();
                }
            }
        }
    }

    /// The oldest job's result, waiting for it if it is still compiling.
    /// `None` when nothing is in flight.
    pub fn wait(&mut self) -> Option<Done> {
        if self.in_flight == 0 {
            return None;
        }
        self.in_flight -= 1;
        match &mut self.mode {
            Mode::Here { done, .. } => done.pop_front(),
            Mode::Thread { done, .. } => {
                let start = Instant::now();
                let r = done
                    .recv()
                    .unwrap_or_else(|_| Err("the compiler's thread stopped".to_owned()));
                self.waited += start.elapsed();
                Some(r)
            }
        }
    }

    /// The oldest job's result if it is finished, without waiting.
    pub fn ready(&mut self) -> Option<Done> {
        if self.in_flight == 0 {
            return None;
        }
        let r = match &mut self.mode {
            Mode::Here { done, .. } => done.pop_front(),
            Mode::Thread { done, .. } => match done.try_recv() {
                Ok(r) => Some(r),
                Err(mpsc::TryRecvError::Empty) => None,
                Err(mpsc::TryRecvError::Disconnected) => {
                    Some(Err("the compiler's thread stopped".to_owned()))
                }
            },
        };
        if r.is_some() {
            self.in_flight -= 1;
        }
        r
    }

    fn mode_failed(&mut self) {
        if let Mode::Thread { jobs, .. } = &mut self.mode {
            *jobs = None;
        }
    }
}

impl Drop for Compiler {
    fn drop(&mut self) {
        if let Mode::Thread {
            jobs, thread, stop, ..
        } = &mut self.mode
        {
            // Ends the thread's loop after the job in hand (invariant 3).
            stop.store(true, Ordering::Relaxed);
            *jobs = None;
            if let Some(t) = thread.take() {
                let _ = t.join();
            }
        }
    }
}
