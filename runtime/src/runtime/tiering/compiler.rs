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
//!    another, and run on several at once (its code reads no state of its
//!    own: exit counters and memory are the caller's). What the threads
//!    share is the program's [`SharedCode`], behind one lock.
//! 3. Dropping the compiler drops the job channel: the thread ends after
//!    the job in hand, and is joined, so no thread outlives the run.

use std::collections::{BTreeMap, HashMap, VecDeque};
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
    /// A whole closed function, natively, from its entry, its `calli`s
    /// specialized for `targets` (offset -> callee; see
    /// `toyvm_optimizer::CodeCache::compile_function_for`).
    Function {
        func: u32,
        targets: Arc<BTreeMap<u32, u32>>,
    },
}

/// A job's outcome: the code (and whether this job compiled it, rather
/// than finding it compiled), or why it could not be compiled.
pub(super) type Done = Result<(Arc<CompiledRegion>, bool), CompileError>;

/// Why a job's code could not be had.
#[derive(Debug, thiserror::Error)]
pub(super) enum CompileError {
    /// The optimizer refused or failed.
    #[error(transparent)]
    Optimizer(#[from] toyvm_optimizer::Error),
    /// No answer came for a job.
    #[error("no result from the compiler")]
    NoResult,
    /// The compiler's thread stopped (it panicked).
    #[error("the compiler's thread stopped")]
    Stopped,
}

/// One program's code cache (its native functions compiled) and the code
/// compiled in it, by region: every run that shares it (the instances of
/// one [`crate::engine::Module`]) gets a region another run compiled
/// without compiling it again, as the same plan gives the same text.
///
/// Invariant: every region in `compiled` was compiled by `cache` from the
/// program the runs share, with the cache's fuel metering; so it is
/// valid for any of them, with any memory of that program's size (the
/// code checks every access against the length it is given).
pub struct SharedCode {
    inner: parking_lot::Mutex<CodeStore>,
}

struct CodeStore {
    cache: CodeCache,
    /// By region text (`fn N` for a whole function).
    compiled: HashMap<String, Arc<CompiledRegion>>,
}

impl std::fmt::Debug for SharedCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedCode").finish_non_exhaustive()
    }
}

impl SharedCode {
    /// A code cache for `program` with its closed functions compiled;
    /// compiled code counts fuel when `metered`.
    pub fn new(program: &Program, metered: bool, dump_clif: bool) -> crate::Result<Self> {
        let mut cache = CodeCache::new()?;
        cache.set_fuel_metering(metered);
        cache.set_dump_clif(dump_clif);
        // Every closed function, once: regions call them natively.
        cache.compile_natives(program)?;
        Ok(SharedCode {
            inner: parking_lot::Mutex::new(CodeStore {
                cache,
                compiled: HashMap::new(),
            }),
        })
    }

    /// A code cache whose natives are compiled by the jobs that need them
    /// (a region that calls them, or a whole function), those each job
    /// reaches (see `toyvm_optimizer::CodeCache::compile_natives_for`), on
    /// the compiler's thread, instead of before the run: compiling every
    /// closed function took 0.4-0.5 ms for the suite's small programs and
    /// 5.6 ms for richards (14 functions), more than a short run's whole
    /// interpretation, a run that compiles no calling region never needs
    /// them, and a compiled C program's library is dozens of functions
    /// most runs never call natively.
    ///
    /// The code runs on a thread whose stack was sized before the natives'
    /// frames are known (see `lazy_jit_stack_bytes` in the runtime). They
    /// are used whatever their frames measure: every native call checks
    /// the stack limit (see `enter`), so a recursion deeper than the stack
    /// holds goes on in the interpreter, exact as ever. (They were once
    /// used only when recursion to the depth limit fitted twice over,
    /// which left every native of a compiled C program, whose formatting
    /// functions have frames of kilobytes, to the interpreter.)
    pub fn lazy(metered: bool, dump_clif: bool) -> crate::Result<Self> {
        let mut cache = CodeCache::new()?;
        cache.set_fuel_metering(metered);
        cache.set_dump_clif(dump_clif);
        Ok(SharedCode {
            inner: parking_lot::Mutex::new(CodeStore {
                cache,
                compiled: HashMap::new(),
            }),
        })
    }

    /// The machine stack native recursion to `max_depth` may need (see
    /// [`CodeCache::native_stack_bytes`]).
    pub fn native_stack_bytes(&self, max_depth: usize) -> usize {
        self.inner.lock().cache.native_stack_bytes(max_depth)
    }

    /// Regions and functions compiled into the cache so far.
    pub fn compiled(&self) -> usize {
        self.inner.lock().compiled.len()
    }

    /// The job's code: compiled before by any run sharing this code, or
    /// compiled now. The lock is held while compiling, so two runs that
    /// want the same region compile it once.
    fn compile(&self, program: &Program, job: &Job) -> Done {
        let key = match job {
            Job::Region(r) => r.to_string(),
            Job::Function { func, targets } => format!("fn {func} {targets:?}"),
        };
        let mut store = self.inner.lock();
        if let Some(code) = store.compiled.get(&key) {
            return Ok((Arc::clone(code), false));
        }
        // The natives the job calls, compiled when first needed (a whole
        // function compiles its own).
        if let Job::Region(r) = job
            && (r.native_calls().next().is_some() || r.calls_by_value())
        {
            store.cache.compile_natives_for_region(program, r)?;
        }
        let code = match job {
            Job::Region(r) => store.cache.compile_in(program, r),
            Job::Function { func, targets } => {
                store.cache.compile_function_for(program, *func, targets)
            }
        }?;
        let code = Arc::new(code);
        store.compiled.insert(key, Arc::clone(&code));
        Ok((code, true))
    }
}

/// The machine stack a compile on the interpreter's thread may take:
/// Cranelift took 60-70 KiB for the suite's programs (the smallest thread
/// that ran `fib`, `regex`, `lz77`, `phase` and others with compiles on it
/// had 76-80 KiB, against under 20 KiB without them).
const COMPILE_STACK: usize = 160 << 10;

/// `code.compile(program, job)` on this thread, or, when less than
/// [`COMPILE_STACK`] of its stack is left (a compile at an interval end
/// deep in a recursion, or on a host thread with a small stack), on a
/// thread of its own that this one waits for: the same code at the same
/// point, so runs stay deterministic, and the stack compiled code checks
/// stays the interpreter's (see `enter`).
fn compile_here(code: &SharedCode, program: &Program, job: &Job) -> Done {
    use toyvm_optimizer::stack;
    let low = stack::thread_stack_low();
    if low.is_none_or(|low| stack::stack_pointer().saturating_sub(low) >= COMPILE_STACK) {
        return code.compile(program, job);
    }
    std::thread::scope(|scope| {
        let compiling = std::thread::Builder::new()
            .name("toyvm-compile".into())
            .spawn_scoped(scope, || code.compile(program, job));
        match compiling {
            Ok(t) => t
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            Err(_) => Err(CompileError::Stopped),
        }
    })
}

enum Mode {
    /// Compiles at submission; results wait here until taken.
    Here {
        code: Arc<SharedCode>,
        program: Arc<Program>,
        done: VecDeque<Done>,
    },
    /// A compiler thread owns the cache.
    Thread {
        jobs: Option<mpsc::Sender<Job>>,
        done: mpsc::Receiver<Done>,
        /// Set when the run ends: jobs still queued are not compiled.
        stop: Arc<AtomicBool>,
        thread: Option<JoinHandle<()>>,
        /// The thread's side until the first job starts it: a run that
        /// compiles nothing starts no thread.
        unstarted: Option<Unstarted>,
    },
}

/// What the compiler thread takes when the first job starts it.
struct Unstarted {
    code: Arc<SharedCode>,
    program: Arc<Program>,
    jobs: mpsc::Receiver<Job>,
    done: mpsc::Sender<Done>,
    stop: Arc<AtomicBool>,
}

impl Unstarted {
    /// Starts the thread; gives back the cache and the program when the
    /// system cannot start one.
    fn start(self) -> Result<JoinHandle<()>, (Arc<SharedCode>, Arc<Program>)> {
        let (code, program) = (Arc::clone(&self.code), Arc::clone(&self.program));
        std::thread::Builder::new()
            .name("toyvm-compiler".into())
            .spawn(move || {
                for job in self.jobs {
                    if self.stop.load(Ordering::Relaxed) {
                        break;
                    }
                    if self
                        .done
                        .send(self.code.compile(&self.program, &job))
                        .is_err()
                    {
                        break;
                    }
                }
            })
            .map_err(|_| (code, program))
    }
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
    /// A compiler into `code` (the program's), on a thread of its own
    /// when `background`, started by the first job (a JIT run that
    /// compiles nothing pays for no thread; one the system refuses leaves
    /// the jobs to the submitting thread).
    pub fn new(code: Arc<SharedCode>, program: Arc<Program>, background: bool) -> Self {
        let mode = if background {
            let (jobs, jobs_rx) = mpsc::channel::<Job>();
            let (done_tx, done) = mpsc::channel::<Done>();
            let stop = Arc::new(AtomicBool::new(false));
            Mode::Thread {
                jobs: Some(jobs),
                done,
                stop: Arc::clone(&stop),
                thread: None,
                unstarted: Some(Unstarted {
                    code,
                    program,
                    jobs: jobs_rx,
                    done: done_tx,
                    stop,
                }),
            }
        } else {
            Mode::Here {
                code,
                program,
                done: VecDeque::new(),
            }
        };
        Compiler {
            mode,
            in_flight: 0,
            waited: Duration::ZERO,
        }
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
                code,
                program,
                done,
            } => done.push_back(compile_here(code, program, &job)),
            Mode::Thread {
                thread, unstarted, ..
            } if unstarted.is_some() => {
                let first = unstarted.take().expect("checked");
                match first.start() {
                    Ok(t) => *thread = Some(t),
                    Err((code, program)) => {
                        // No thread to be had: compile on this one, as a
                        // run on one core does (the same results, at the
                        // same points of the run).
                        self.mode = Mode::Here {
                            code,
                            program,
                            done: VecDeque::new(),
                        };
                    }
                }
                self.in_flight -= 1;
                self.submit(job);
            }
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
                let r = done.recv().unwrap_or(Err(CompileError::Stopped));
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
                Err(mpsc::TryRecvError::Disconnected) => Some(Err(CompileError::Stopped)),
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

#[cfg(test)]
mod tests {
    use super::*;

    const FIB: &str = ".func fib(n)\n  blti n, 2, base\n  subi r1, n, 1\n  call r1, fib, r1, 1\n  \
                       subi r2, n, 2\n  call r2, fib, r2, 1\n  add r1, r1, r2\n  ret r1\nbase:\n  \
                       ret n\n.end\n.func main(n)\n  call r1, fib, n, 1\n  ret r1\n.end\n";

    #[test]
    fn the_compiler_thread_starts_with_the_first_job() {
        let program = Arc::new(toyvm_vm::asm::assemble(FIB).unwrap());
        let code = Arc::new(SharedCode::lazy(false, false).unwrap());
        let mut compiler = Compiler::new(code, program, true);
        assert!(compiler.background());
        assert!(
            matches!(&compiler.mode, Mode::Thread { thread: None, .. }),
            "no thread before a job"
        );
        compiler.submit(Job::Function {
            func: 0,
            targets: Arc::default(),
        });
        assert!(matches!(
            &compiler.mode,
            Mode::Thread {
                thread: Some(_),
                unstarted: None,
                ..
            }
        ));
        assert!(compiler.wait().expect("one job in flight").is_ok());
        assert!(compiler.wait().is_none());
    }

    #[test]
    fn lazy_natives_compile_on_first_need() {
        let program = toyvm_vm::asm::assemble(FIB).unwrap();
        let code = SharedCode::lazy(false, false).unwrap();
        assert!(
            code.inner.lock().cache.native_frame_bytes() == 0,
            "nothing before a job"
        );
        // The whole function compiles, its natives with it.
        code.compile(
            &program,
            &Job::Function {
                func: 0,
                targets: Arc::default(),
            },
        )
        .unwrap();
        assert!(code.inner.lock().cache.native_frame_bytes() > 0);
    }
}
