//! Embedding toyvm, the way wasmtime is embedded: an [`Engine`] holds the
//! configuration (profiler model, JIT policy, limits), a [`Module`] a
//! verified program and the code compiled for it, and an [`Instance`] one
//! running copy of the module: its memory, its profiler model's state and
//! the compiled regions it installed. The host looks a function up by name
//! once ([`Instance::get_typed_func`], [`Instance::get_func`]: a handle,
//! its argument count checked) and calls it as many times as it likes
//! (or calls by name, [`Instance::call`]); the profile and the compiled
//! code carry over from call to call, and instances of one module (on any
//! threads) share the code any of them compiled.
//!
//! ```
//! use toyvm::engine::{Engine, Instance, Module};
//!
//! // `tri(n, acc)` adds n + (n-1) + ... + 1 to `acc`; its loop starts at
//! // its first instruction.
//! let src = "
//! .func tri(n, acc)
//! top:
//!   jz n, done
//!   add acc, acc, n
//!   subi n, n, 1
//!   jmp top
//! done:
//!   ret acc
//! .end
//! .func main()
//!   li r0, 0
//!   ret r0
//! .end
//! .entry main
//! ";
//! let engine = Engine::builder().profile_str("multihash:interval=1000")?.build();
//! let module = Module::from_bytes(&engine, src.as_bytes())?;
//! let mut instance = Instance::new(&module)?;
//! // Looked up once, checked to take two arguments.
//! let tri = instance.get_typed_func::<2>("tri")?;
//! assert_eq!(tri.call(&mut instance, [100_000, 0])?, 5_000_050_000);
//! let compiled = instance.stats().jit.unwrap().compiles;
//! assert!(compiled >= 1);
//! // The second call runs the loop compiled during the first, from its
//! // first instruction, and compiles nothing new.
//! assert_eq!(tri.call(&mut instance, [10, 5])?, 60);
//! // By name: a lookup, then the same call.
//! assert_eq!(instance.call("tri", &[3, 0])?, 6);
//! assert_eq!(instance.stats().jit.unwrap().compiles, compiled);
//! # Ok::<(), toyvm::Error>(())
//! ```
//!
//! An instance runs calls on the calling thread, compiled code included,
//! as wasmtime does: compiled functions call each other on the machine
//! stack, and each native call first checks the stack pointer against a
//! limit near the end of the calling thread's stack (see
//! [`toyvm_optimizer::stack`]); below it the interpreter, whose frames are
//! on the heap, makes the calls, so a deep recursion runs to the call-depth
//! limit and traps there as the interpreter does, never overflowing the
//! host's stack. Where the thread's stack is not known (a target whose C
//! library does not say) or has too little room left above the limit, the
//! call runs on the instance's own thread instead, with a stack large
//! enough for native recursion to the call-depth limit: started by the
//! first such call, handed each call's state and arguments through a
//! channel and giving them back with the result, joined when the instance
//! is dropped. A host function runs on the thread that runs the call; if
//! it panics, the panic continues in the caller of [`Instance::call`] and
//! the instance stays usable (where panics unwind: a binary built with
//! `panic = "abort"`, as this workspace's release profile is, aborts
//! instead). The
//! profiler model runs within the call too (the threaded model of
//! [`crate::Runtime`] is for whole runs). Decisions are deterministic: the
//! same calls in the same order compile the same regions at the same
//! points.

use std::io::Write;
use std::sync::Arc;

use toyvm_profiler::ProfilerSpec;

use toyvm_vm::Program;
use toyvm_vm::interp::{self, Call};

use crate::runtime::{Jit, JitOptions, JitStats, Limits, SharedCode, jit_stack_bytes};
use crate::{Error, Result};

mod func;
mod imports;
pub(crate) mod runner;

pub use func::{Func, TypedFunc};
use imports::Linked;
pub use imports::{HostFn, Imports};
use runner::{ModelThread, Runner, check_arity};
pub use toyvm_vm::interp::HostError;

/// The configuration every module and instance made from it shares: the
/// profiler model, the JIT's policy and the limits. Cheap to clone, and
/// shareable across threads.
#[derive(Clone, Debug, Default)]
pub struct Engine {
    config: Arc<EngineConfig>,
}

/// An engine's options (see [`EngineBuilder`]), which a whole run
/// ([`crate::Runtime`]) takes too; a [`Runner`] runs calls with them.
#[derive(Clone, Debug)]
pub(crate) struct EngineConfig {
    pub(crate) profile: Option<ProfilerSpec>,
    pub(crate) jit: Option<JitOptions>,
    pub(crate) limits: Limits,
    pub(crate) lag: Option<u64>,
    pub(crate) count: bool,
}

impl EngineConfig {
    /// Tuples between an interval's end and its decisions taking effect,
    /// with a model: the lag set, or the spec's interval.
    pub(crate) fn model_lag(&self) -> Option<u64> {
        let spec = self.profile.as_ref()?;
        Some(self.lag.unwrap_or(spec.interval))
    }
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            profile: None,
            jit: Some(JitOptions::default()),
            limits: Limits::default(),
            lag: None,
            count: false,
        }
    }
}

/// Builds an [`Engine`]; [`crate::RuntimeBuilder`] takes the same options
/// (it wraps one).
#[derive(Clone, Debug, Default)]
pub struct EngineBuilder {
    config: EngineConfig,
}

impl EngineBuilder {
    /// The profiler model each instance runs (`None`, the default:
    /// interpret only, as the JIT acts on a model's candidates).
    pub fn profile(mut self, spec: Option<ProfilerSpec>) -> Self {
        self.config.profile = spec;
        self
    }

    /// Parses and sets the profiler spec (`none`: no model).
    pub fn profile_str(self, spec: &str) -> Result<Self> {
        Ok(self.profile(crate::runtime::parse_profile(spec)?))
    }

    /// The JIT's policy (`None`: interpret only). On by default.
    pub fn jit(mut self, jit: Option<JitOptions>) -> Self {
        self.config.jit = jit;
        self
    }

    /// The limits every instance honours: its fuel at instantiation (see
    /// [`Instance::set_fuel`]), the call-depth limit, and the most memory a
    /// module may have.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.config.limits = limits;
        self
    }

    /// Stop with an out-of-fuel trap after this many instructions (an
    /// instance's over all its calls, until [`Instance::set_fuel`]).
    ///
    /// The interpreter counts each instruction and traps exactly at the
    /// limit. Compiled code (the JIT stays on) counts the instructions it
    /// runs a basic block at a time, exactly, and stops at the start of a
    /// block when none is left: a run that reaches the limit inside
    /// compiled code traps at most one basic block of the original program
    /// past it, at that block's first instruction. A run that ends within
    /// the limit ends as it would without one, with the same instruction
    /// count.
    pub fn fuel(mut self, fuel: Option<u64>) -> Self {
        self.config.limits.fuel = fuel;
        self
    }

    /// The call-depth limit (default 65,536; at most
    /// [`MAX_CALL_DEPTH`](crate::runtime::MAX_CALL_DEPTH)): a call nested
    /// deeper traps with a stack overflow naming it, in the interpreter
    /// and in compiled code's native calls alike.
    pub fn max_depth(mut self, depth: usize) -> Self {
        self.config.limits.max_depth = depth;
        self
    }

    /// The most memory, in words, a program may have (`None`: what
    /// `.memory` asks, up to its own bound of 1 GiB): a program asking
    /// for more is refused before it runs, with [`Error::MemoryLimit`].
    pub fn max_memory_words(mut self, words: Option<u64>) -> Self {
        self.config.limits.max_memory_words = words;
        self
    }

    /// Tuples between an interval's end and its decisions taking effect
    /// (`None`: the spec's interval).
    pub fn lag(mut self, lag: Option<u64>) -> Self {
        self.config.lag = lag;
        self
    }

    /// Count the instructions each call executes (see
    /// [`InstanceStats::instructions`]); always on with fuel.
    pub fn count_instructions(mut self, count: bool) -> Self {
        self.config.count = count;
        self
    }

    /// The engine.
    pub fn build(self) -> Engine {
        Engine {
            config: Arc::new(self.config),
        }
    }
}

impl Engine {
    /// A builder: no profiler model (interpret only), the JIT's default
    /// policy, default limits.
    pub fn builder() -> EngineBuilder {
        EngineBuilder::default()
    }

    /// The limits instances of this engine honour.
    pub fn limits(&self) -> &Limits {
        &self.config.limits
    }

    /// The engine's options.
    pub(crate) fn config(&self) -> &EngineConfig {
        &self.config
    }

    /// Whether instances compile code: a JIT and a profiler model to
    /// drive it.
    fn jits(&self) -> bool {
        self.config.jit.is_some() && self.config.profile.is_some()
    }
}

/// A verified program ready to be instantiated, with the code compiled for
/// it: its closed functions' native code, and every region any of its
/// instances compiled, which the others then take instead of compiling it
/// again. Cheap to clone, and shareable across threads.
#[derive(Clone, Debug)]
pub struct Module {
    engine: Engine,
    program: Arc<Program>,
    code: Option<Arc<SharedCode>>,
}

impl Module {
    /// Verifies `program` and checks it against the engine's limits; with
    /// the JIT on, compiles its closed functions.
    pub fn new(engine: &Engine, program: Program) -> Result<Module> {
        toyvm_vm::verify::verify(&program)?;
        engine.config.limits.check(&program)?;
        let code = match &engine.config.jit {
            Some(opts) if engine.jits() => Some(Arc::new(SharedCode::new(
                &program,
                engine.config.limits.fuel.is_some(),
                opts.dump_clif.is_some(),
            )?)),
            _ => None,
        };
        Ok(Module {
            engine: engine.clone(),
            program: Arc::new(program),
            code,
        })
    }

    /// Loads a module from a `.bc` image or text assembly (told apart by
    /// the magic), as `toyvm run` does.
    pub fn from_bytes(engine: &Engine, bytes: &[u8]) -> Result<Module> {
        Module::new(engine, Program::load_any(bytes)?)
    }

    /// The program.
    pub fn program(&self) -> &Program {
        &self.program
    }

    /// The index of the function named `name`.
    pub fn function(&self, name: &str) -> Option<u32> {
        self.program.function_index(name)
    }

    /// Regions and whole functions compiled for this module so far, by all
    /// its instances together (each once).
    pub fn compiled(&self) -> usize {
        self.code.as_ref().map_or(0, |c| c.compiled())
    }
}

/// What an instance has done over its calls.
#[derive(Clone, Debug, Default)]
pub struct InstanceStats {
    /// Calls made (trapped ones included).
    pub calls: u64,
    /// Instructions executed over all calls, when counted (with fuel, or
    /// [`EngineBuilder::count_instructions`]): the interpreter's, and with
    /// fuel compiled code's too.
    pub instructions: u64,
    /// What the JIT did (absent when it is off).
    pub jit: Option<JitStats>,
}

/// One running copy of a module: its memory, its profiler model's state
/// and its installed compiled code, kept from call to call. A trap ends
/// the call, not the instance: memory stays as the trap left it.
///
/// With compiled code, a call from a thread without room on its stack runs
/// on the instance's own thread (see the module docs), started at the
/// first such call and joined when the instance is dropped.
pub struct Instance {
    /// `Some` but while a call runs on the worker thread (which has it).
    state: Option<Box<State>>,
    /// The thread calls run on, once the first call started it.
    worker: Option<Worker>,
}

/// What a call works on: everything of the instance but its thread.
struct State {
    module: Module,
    mem: interp::Memory,
    input_len: usize,
    /// Its model's link (on the calling thread), its JIT, its fuel left.
    runner: Runner<'static>,
    /// The stack of the instance's own thread, with compiled code.
    stack: Option<usize>,
    /// The host functions, by import index.
    host_fns: Linked,
    out: Box<dyn Write + Send>,
    stats: InstanceStats,
}

/// A call for the worker thread: the state it runs on, and the call.
struct Job {
    state: Box<State>,
    func: u32,
    args: Vec<i64>,
}

/// What the worker sends back: the state, and the call's result or the
/// panic it raised.
type Done = (Box<State>, std::thread::Result<Result<i64>>);

/// An instance's thread, with the stack native code needs. It waits for
/// jobs and sends back each one's state with its result; it ends when its
/// job channel closes (the instance is dropped).
struct Worker {
    /// `None` only while the worker is dropped (closing the channel).
    jobs: Option<std::sync::mpsc::Sender<Job>>,
    done: std::sync::mpsc::Receiver<Done>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Worker {
    fn start(stack: usize) -> Result<Worker> {
        let (jobs, job_rx) = std::sync::mpsc::channel::<Job>();
        let (done_tx, done) = std::sync::mpsc::channel::<Done>();
        let thread = std::thread::Builder::new()
            .name("toyvm-instance".into())
            .stack_size(stack)
            .spawn(move || {
                // Where the C library does not tell.
                toyvm_optimizer::stack::assume_thread_stack(stack);
                while let Ok(Job {
                    mut state,
                    func,
                    args,
                }) = recv_soon(&job_rx)
                {
                    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        state.call_here(func, &args)
                    }));
                    if done_tx.send((state, r)).is_err() {
                        return;
                    }
                }
            })
            .map_err(|source| Error::Thread {
                what: "instance",
                source,
            })?;
        Ok(Worker {
            jobs: Some(jobs),
            done,
            thread: Some(thread),
        })
    }
}

/// The least machine stack above the stack limit (see
/// [`toyvm_optimizer::stack`]) for a call with compiled code to run on the
/// calling thread: native recursion gets at least this much before the
/// interpreter takes over.
const MIN_ROOM: usize = 64 << 10;

/// Whether a call with compiled code runs on the calling thread: its
/// stack's bounds are known and leave [`MIN_ROOM`] above the limit.
fn room_here() -> bool {
    let limit = crate::runtime::stack_limit_here();
    limit != usize::MAX && toyvm_optimizer::stack::stack_room(limit) >= MIN_ROOM
}

/// How long a thread waiting for the other side of a call spins before it
/// sleeps: a host calling a short function in a loop, and a call that
/// returns within it, then cost no trip through the kernel's scheduler
/// (measured by `examples/call_cost.rs`: a sleep and wake-up each way cost
/// about 13 us on a 2-core virtual machine).
const SPIN: std::time::Duration = std::time::Duration::from_micros(50);

/// `rx.recv()`, spinning for [`SPIN`] first where there is a core to
/// spare (on one core the spinning thread would only keep the other from
/// running).
fn recv_soon<T>(
    rx: &std::sync::mpsc::Receiver<T>,
) -> std::result::Result<T, std::sync::mpsc::RecvError> {
    use std::sync::mpsc::TryRecvError;
    if crate::runtime::cores() < 2 {
        return rx.recv();
    }
    let start = std::time::Instant::now();
    loop {
        match rx.try_recv() {
            Ok(v) => return Ok(v),
            Err(TryRecvError::Disconnected) => return Err(std::sync::mpsc::RecvError),
            Err(TryRecvError::Empty) if start.elapsed() < SPIN => std::hint::spin_loop(),
            Err(TryRecvError::Empty) => return rx.recv(),
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        // Closing the job channel ends the thread's loop.
        self.jobs = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl std::fmt::Debug for Instance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.state();
        f.debug_struct("Instance")
            .field("memory_words", &s.mem.len())
            .field("fuel", &s.runner.fuel)
            .field("stats", &s.stats)
            .field("worker", &self.worker.is_some())
            .finish_non_exhaustive()
    }
}

impl Instance {
    /// An instance of `module` (which imports nothing) with no input
    /// file; output goes to standard output (see
    /// [`set_output`](Self::set_output)).
    pub fn new(module: &Module) -> Result<Instance> {
        Instance::with_imports(module, Imports::new(), &[])
    }

    /// An instance with `file`'s bytes in memory at the program's
    /// `.input` address, as `toyvm run --input` loads them.
    pub fn with_input(module: &Module, file: &[u8]) -> Result<Instance> {
        Instance::with_imports(module, Imports::new(), file)
    }

    /// An instance whose module's imports are linked to `imports` (every
    /// import offered, with its number of arguments, or
    /// [`Error::Link`] before anything runs), with `file`'s bytes at the
    /// `.input` address.
    pub fn with_imports(module: &Module, imports: Imports, file: &[u8]) -> Result<Instance> {
        let host_fns = imports.link(&module.program)?;
        let config = &module.engine.config;
        let mem = interp::memory(&module.program, file)?;
        let stack = module
            .code
            .as_ref()
            .map(|c| jit_stack_bytes(c, config.limits.max_depth));
        let runner = Runner::new(
            config,
            &module.program,
            module.code.clone(),
            ModelThread::Here,
            false,
        )?;
        let state = State {
            module: module.clone(),
            mem,
            input_len: file.len(),
            runner,
            stack,
            host_fns,
            out: Box::new(std::io::stdout()),
            stats: InstanceStats::default(),
        };
        Ok(Instance {
            state: Some(Box::new(state)),
            worker: None,
        })
    }

    fn state(&self) -> &State {
        self.state
            .as_deref()
            .expect("the state is away only during a call, which holds `&mut self`")
    }

    fn state_mut(&mut self) -> &mut State {
        self.state
            .as_deref_mut()
            .expect("the state is away only during a call, which holds `&mut self`")
    }

    /// Where the program's output (`putn`, `putc`) goes from now on.
    pub fn set_output(&mut self, out: impl Write + Send + 'static) {
        self.state_mut().out = Box::new(out);
    }

    /// The module instantiated.
    pub fn module(&self) -> &Module {
        &self.state().module
    }

    /// Calls the function named `name` with `args` (one per parameter) and
    /// returns what it returns (or `halt`'s operand): a lookup by name,
    /// then [`Func::call`]. To call a function many times, look it up
    /// once with [`get_func`](Self::get_func) or
    /// [`get_typed_func`](Self::get_typed_func).
    ///
    /// An unknown name is [`Error::NoSuchFunction`], another number of
    /// arguments than the function takes [`Error::Arity`].
    pub fn call(&mut self, name: &str, args: &[i64]) -> Result<i64> {
        self.get_func(name)?.call(self, args)
    }

    /// Calls function `func` (an index into the program's functions): an
    /// index past them is [`Error::NoSuchFunction`], another number of
    /// arguments than the function takes [`Error::Arity`].
    pub fn call_index(&mut self, func: u32, args: &[i64]) -> Result<i64> {
        let program = &self.module().program;
        if func as usize >= program.functions.len() {
            return Err(Error::NoSuchFunction(format!("#{func}")));
        }
        check_arity(program, func, args.len())?;
        self.run_call(func, args)
    }

    /// Runs a call of `func` (a function of the module, called with its
    /// number of arguments) on the calling thread, or on the instance's
    /// own thread where this one has too little stack for compiled code.
    fn run_call(&mut self, func: u32, args: &[i64]) -> Result<i64> {
        let Some(stack) = self.state().stack else {
            return self.state_mut().call_here(func, args);
        };
        if room_here() {
            return self.state_mut().call_here(func, args);
        }
        if self.worker.is_none() {
            self.worker = Some(Worker::start(stack)?);
        }
        let worker = self.worker.as_ref().expect("started above");
        let state = self.state.take().expect("here between calls");
        let job = Job {
            state,
            func,
            args: args.to_vec(),
        };
        let jobs = worker.jobs.as_ref().expect("closed only on drop");
        if let Err(std::sync::mpsc::SendError(job)) = jobs.send(job) {
            // The thread is gone (it cannot be while the instance lives).
            self.state = Some(job.state);
            self.worker = None;
            return Err(Error::Thread {
                what: "instance",
                source: std::io::Error::other("the instance's thread has ended"),
            });
        }
        let (state, result) = recv_soon(&worker.done)
            .expect("the thread sends every job back: a panic is caught and sent too");
        self.state = Some(state);
        // A panic in the call (a host function's) goes on in the caller,
        // as it would without the thread; the instance stays usable.
        result.unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    }
}

impl State {
    /// The call, on this thread: the one path, [`Runner::call`].
    fn call_here(&mut self, func: u32, args: &[i64]) -> Result<i64> {
        let call = Call {
            func,
            args,
            input_len: self.input_len,
        };
        let (result, steps, _) = self.runner.call(
            &self.module.program,
            &mut self.mem,
            call,
            &mut *self.out,
            &mut self.host_fns,
        );
        self.stats.calls += 1;
        self.stats.instructions += steps;
        // The interpreter flushes `out` after each write to it, so there is
        // nothing left to flush here (flushing stdout anyway was about 140
        // instructions of a call that prints nothing).
        Ok(result?.value)
    }
}

impl Instance {
    /// The instance's memory, word by word.
    pub fn memory(&self) -> &[i64] {
        &self.state().mem
    }

    /// The instance's memory, to write from the host between calls.
    pub fn memory_mut(&mut self) -> &mut [i64] {
        &mut self.state_mut().mem
    }

    /// `len` words of memory from word address `addr`, or
    /// [`Error::MemoryAccess`] if they are not all inside it.
    pub fn read(&self, addr: u64, len: usize) -> Result<&[i64]> {
        let range = self.range(addr, len)?;
        Ok(&self.state().mem[range])
    }

    /// Writes `words` to memory from word address `addr`, or returns
    /// [`Error::MemoryAccess`] (writing nothing) if they do not all fit.
    pub fn write(&mut self, addr: u64, words: &[i64]) -> Result<()> {
        let range = self.range(addr, words.len())?;
        self.state_mut().mem[range].copy_from_slice(words);
        Ok(())
    }

    fn range(&self, addr: u64, len: usize) -> Result<std::ops::Range<usize>> {
        let size = self.state().mem.len() as u64;
        let end = addr.checked_add(len as u64).filter(|&e| e <= size);
        match end {
            Some(end) => Ok(addr as usize..end as usize),
            None => Err(Error::MemoryAccess { addr, len, size }),
        }
    }

    /// Fuel left, when the engine set a fuel limit: instructions the
    /// instance may still execute over its next calls.
    pub fn fuel(&self) -> Option<u64> {
        self.state().runner.fuel
    }

    /// Refuels the instance. Only with a fuel limit on the engine (its
    /// compiled code is then metered); otherwise a usage error.
    pub fn set_fuel(&mut self, fuel: u64) -> Result<()> {
        match &mut self.state_mut().runner.fuel {
            Some(f) => {
                *f = fuel;
                Ok(())
            }
            None => Err(Error::Usage(
                "this engine has no fuel limit: set one with `EngineBuilder::limits` to meter instances".into(),
            )),
        }
    }

    /// What the instance has done so far.
    pub fn stats(&self) -> InstanceStats {
        let s = self.state();
        InstanceStats {
            jit: s.runner.jit.as_ref().map(Jit::stats),
            ..s.stats.clone()
        }
    }
}
