//! Machine code: the code cache that owns it and the compiled regions that
//! run it. Every `unsafe` of the workspace is in this module:
//!
//! 1. one transmute of a finalized code pointer to [`RegionFn`], in
//!    `CodeCache::finish` (for regions and whole-function stubs alike);
//! 2. the call through that pointer, in [`CompiledRegion::run_with`];
//! 3. freeing the code memory, in `CodeMemory`'s `Drop`.
//!
//! Native functions (see [`crate::native`]) live in the same module: the
//! cache compiles every closed function of a program once
//! ([`CodeCache::compile_natives`]); regions call them directly. No Rust
//! code ever calls a native function except through a region.
//!
//! Ownership: a `CodeMemory` holds one `cranelift_jit::JITModule` and so its
//! code memory. The native functions of the cache live in one module, which
//! the [`CodeCache`] and every [`CompiledRegion`] hold an `Arc` to (regions
//! call into it); each region lives in a module of its own, which only that
//! region holds. Dropping a region frees its code at once (a runtime that
//! drops and recompiles thousands of times keeps only live code mapped),
//! and no region can outlive its code or the natives it calls. A region
//! calls a native function through an import resolved to the native's
//! finalized address (`Natives::symbols`).

use std::collections::HashMap;
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use cranelift_codegen::Context;
use cranelift_codegen::ir;
use cranelift_codegen::isa::OwnedTargetIsa;
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::FunctionBuilderContext;
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{FuncId, Linkage, Module, default_libcall_names};
use toyvm_vm::isa::Instr;
use toyvm_vm::{Function, Pc, Program};

use crate::codegen::{self, Lowered, func as fcodegen};
use crate::exit::{Exit, ExitKind, ExitSite};
use crate::native::{self, NativeCtx, NativeTrap};
use crate::region::{Region, Step};
use crate::{Error, Result};

mod host;

pub use host::HostCalls;
pub(crate) use host::trampoline_address;

/// The machine-level signature of a compiled region (see the private `codegen`
/// module for what the code does with each argument). `ctx` points at the run's
/// native context (memory, depth limit, trap record); `depth` is the
/// interpreter's frame count for the region's frame.
pub type RegionFn = unsafe extern "C" fn(
    regs: *mut i64,
    mem: *mut i64,
    mem_len: u64,
    counters: *mut u64,
    ctx: *mut NativeCtx,
    depth: u64,
) -> u64;

/// The interpreter's default call-depth limit (`interp::Config::max_depth`),
/// which [`CompiledRegion::run`] assumes.
pub const DEFAULT_MAX_DEPTH: usize = 1 << 16;

/// The closed and bailing functions of one program, compiled.
struct Natives {
    /// The program they came from (a cache serves one program at a time;
    /// another program gets a fresh set).
    functions: Vec<Function>,
    /// Per function: its native function, if it has one.
    ids: Vec<Option<FuncId>>,
    /// Machine stack bytes of the largest native frame.
    frame: usize,
    /// The most registers any function of the program has.
    max_regs: u16,
    /// Which set this is: names its functions (`native{generation}_f{f}`).
    generation: u32,
    /// The finalized address of each native function, by name: what a
    /// region's module resolves its imports to.
    symbols: Arc<HashMap<String, usize>>,
    /// Per function, `[address, parameters]` of its native code where a
    /// bailing function may call it through `calli` (address 0
    /// elsewhere): what `NativeCtx::table` points at.
    table: Arc<Vec<[u64; 2]>>,
}

impl Natives {
    fn name(generation: u32, f: usize) -> String {
        format!("native{generation}_f{f}")
    }
}

/// The machine stack one call of this code takes (return address
/// included), read from Cranelift's x86-64 prologue (`push rbp; mov rbp,
/// rsp; sub rsp, N`, the callee-saved registers stored inside the `N`);
/// `None` for any other shape or host.
fn frame_bytes(code: &[u8]) -> Option<usize> {
    if !cfg!(target_arch = "x86_64") {
        return None;
    }
    let rest = code.strip_prefix(&[0x55, 0x48, 0x89, 0xe5])?;
    let sub = match rest {
        [0x48, 0x83, 0xec, n, ..] => *n as usize,
        [0x48, 0x81, 0xec, a, b, c, d, ..] => u32::from_le_bytes([*a, *b, *c, *d]) as usize,
        // Pushes of callee-saved registers: a shape not measured here.
        [0x50..=0x57, ..] | [0x41, 0x50..=0x57, ..] => return None,
        // No stack adjustment: a leaf with nothing to spill or save.
        _ => 0,
    };
    Some(16 + sub)
}

/// A generous frame estimate where the prologue cannot be read: the
/// callee-saved registers and a spill slot per bytecode register and
/// native argument.
fn estimated_frame_bytes(f: &Function) -> usize {
    96 + 8 * (f.regs as usize + 8)
}

/// The owner of all code memory.
struct CodeMemory {
    module: Mutex<Option<JITModule>>,
}

impl CodeMemory {
    fn new(module: JITModule) -> Arc<CodeMemory> {
        Arc::new(CodeMemory {
            module: Mutex::new(Some(module)),
        })
    }

    /// The module, locked.  A poisoned lock is taken over: every use of
    /// the module either finishes or fails as a whole.
    fn lock(&self) -> ModuleGuard<'_> {
        ModuleGuard(self.module.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// The locked module (present until `CodeMemory` is dropped).
struct ModuleGuard<'a>(MutexGuard<'a, Option<JITModule>>);

impl Deref for ModuleGuard<'_> {
    type Target = JITModule;
    fn deref(&self) -> &JITModule {
        self.0
            .as_ref()
            .expect("the module lives as long as the cache")
    }
}

impl DerefMut for ModuleGuard<'_> {
    fn deref_mut(&mut self) -> &mut JITModule {
        self.0
            .as_mut()
            .expect("the module lives as long as the cache")
    }
}

impl Drop for CodeMemory {
    fn drop(&mut self) {
        let module = self
            .module
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(module) = module {
            // SAFETY: `CodeMemory` is dropped when the last `Arc` to it goes.
            // Pointers into a module's code are held only by the regions
            // whose code it holds (their entry) and by the regions that call
            // its natives (resolved imports); each of those holds an `Arc`
            // to it. So no code of this module is running or can run again.
            unsafe { module.free_memory() };
        }
    }
}

/// Compiles regions to machine code and owns that code.
pub struct CodeCache {
    /// The native functions' module.
    memory: Arc<CodeMemory>,
    isa: OwnedTargetIsa,
    natives: Option<Natives>,
    /// Native sets compiled so far (names native functions uniquely).
    generation: u32,
    ctx: Context,
    fctx: FunctionBuilderContext,
    compiled: u64,
    dump_clif: bool,
    metering: bool,
}

impl fmt::Debug for CodeCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CodeCache")
            .field("compiled", &self.compiled)
            .field("dump_clif", &self.dump_clif)
            .finish_non_exhaustive()
    }
}

impl CodeCache {
    /// A cache generating code for the host, optimizing for speed.
    pub fn new() -> Result<CodeCache> {
        let mut flags = settings::builder();
        for (k, v) in [
            ("opt_level", "speed"),
            ("is_pic", "false"),
            ("use_colocated_libcalls", "false"),
            // `codegen::lower` verifies with a readable error; the second
            // run inside `define_function` would only repeat it.
            ("enable_verifier", "false"),
        ] {
            flags
                .set(k, v)
                .map_err(|e| Error::Host(format!("setting {k}={v}: {e}")))?;
        }
        let isa = cranelift_native::builder()
            .map_err(|e| Error::Host(e.to_string()))?
            .finish(settings::Flags::new(flags))
            .map_err(|e| Error::Host(e.to_string()))?;
        let module = JITModule::new(JITBuilder::with_isa(isa.clone(), default_libcall_names()));
        Ok(CodeCache {
            isa,
            natives: None,
            generation: 0,
            ctx: module.make_context(),
            memory: CodeMemory::new(module),
            fctx: FunctionBuilderContext::new(),
            compiled: 0,
            dump_clif: false,
            metering: false,
        })
    }

    /// Whether code compiled from now on charges fuel (see
    /// `codegen`: a basic block's instructions at its start, with
    /// the instructions an exit did not run given back), so that
    /// [`CompiledRegion::run_metered`] stops within one basic block of the
    /// limit. Set it before [`compile_natives`](Self::compile_natives):
    /// native functions compiled before keep their setting.
    pub fn set_fuel_metering(&mut self, on: bool) {
        self.metering = on;
    }

    /// Whether compiled regions keep their annotated Cranelift IR
    /// ([`CompiledRegion::clif`]), for `--dump-clif`.
    pub fn set_dump_clif(&mut self, on: bool) {
        self.dump_clif = on;
    }

    /// The machine stack that running compiled code with native calls
    /// may need at interpreter depth limit `max_depth`: `max_depth` times
    /// the largest frame among this cache's native functions (measured
    /// from their machine code), plus 1 MiB for the interpreter, the
    /// region's frame and Rust's own. Native recursion runs on the thread
    /// that calls [`CompiledRegion::run_with`]; the runtime should run the
    /// interpreter on a thread with at least this much stack
    /// (`std::thread::Builder::stack_size`). 1 MiB before
    /// [`compile_natives`](Self::compile_natives).
    pub fn native_stack_bytes(&self, max_depth: usize) -> usize {
        let frame = self.natives.as_ref().map_or(0, |n| n.frame);
        max_depth.saturating_mul(frame).saturating_add(1 << 20)
    }

    /// The largest native frame in bytes (0 before `compile_natives`).
    pub fn native_frame_bytes(&self) -> usize {
        self.natives.as_ref().map_or(0, |n| n.frame)
    }

    /// Regions compiled so far.
    pub fn compiled(&self) -> u64 {
        self.compiled
    }

    /// The Cranelift IR of `region`, verified, with each instruction group
    /// preceded by a comment naming the region step and bytecode pc it
    /// implements. Compiles nothing.
    pub fn clif(&mut self, region: &Region) -> Result<String> {
        self.check_native_calls(region)?;
        let mut module = self.region_module();
        let mut declare = importer(&mut module, &*self.isa, self.natives.as_ref());
        let lowered = codegen::lower(
            region,
            &*self.isa,
            &mut self.fctx,
            &mut declare,
            self.metering,
        )?;
        Ok(codegen::annotate(&lowered, region))
    }

    /// A module of its own for one region, whose imports resolve to the
    /// current natives.
    fn region_module(&self) -> JITModule {
        let mut builder = JITBuilder::with_isa(self.isa.clone(), default_libcall_names());
        if let Some(symbols) = self.natives.as_ref().map(|n| Arc::clone(&n.symbols)) {
            builder.symbol_lookup_fn(Box::new(move |name| {
                symbols.get(name).map(|&a| a as *const u8)
            }));
        }
        JITModule::new(builder)
    }

    /// Whether `region` makes native calls, after checking that each goes
    /// to a compiled native function of the right arity.
    fn check_native_calls(&self, region: &Region) -> Result<bool> {
        let invalid = |msg: String| Error::InvalidRegion {
            head: region.head_pc().to_string(),
            msg,
        };
        let calls: Vec<(u32, &Instr)> = region
            .steps
            .iter()
            .flat_map(|s| match s {
                Step::Call { callee, instr, .. } => vec![(*callee, instr)],
                Step::Dispatch { callees, instr, .. } => {
                    callees.iter().map(|&c| (c, instr)).collect()
                }
                _ => vec![],
            })
            .collect();
        if calls.is_empty() {
            return Ok(false);
        }
        let natives = self.natives.as_ref().ok_or_else(|| {
            invalid("the region makes native calls: run `compile_natives` first".into())
        })?;
        for (callee, instr) in calls {
            let params = natives.functions.get(callee as usize).map(|f| f.params);
            let n = match *instr {
                Instr::Call { n, .. } | Instr::Calli { n, .. } => Some(n),
                _ => None,
            };
            let compiled = natives.ids.get(callee as usize).copied().flatten();
            if compiled.is_none() || params != n {
                return Err(invalid(format!(
                    "f{callee} is not a closed function taking {n:?} arguments"
                )));
            }
        }
        Ok(true)
    }

    /// Compiles every closed and every bailing function of `program` (see
    /// [`crate::native::native_functions`]) to native code, once: regions
    /// with [`Step::Call`]s need this first. Calling it again for the same
    /// program does nothing; for another program it compiles that one's
    /// (regions compiled before keep calling the old ones).
    pub fn compile_natives(&mut self, program: &Program) -> Result<()> {
        if self
            .natives
            .as_ref()
            .is_some_and(|n| n.functions == program.functions)
        {
            return Ok(());
        }
        let natives = native::native_functions(program);
        let generation = self.generation;
        self.generation += 1;
        let mut module = self.memory.lock();
        let failed = |f: usize, e: &dyn fmt::Display| Error::Codegen {
            head: format!("native function f{f}"),
            msg: e.to_string(),
        };
        // Declare all first, then define: (mutually) recursive calls need
        // their callee's id before its body exists.
        let mut ids = vec![None; program.functions.len()];
        let mut frame = 0;
        for (f, func) in program.functions.iter().enumerate() {
            if natives[f].callable() {
                let sig = fcodegen::native_signature(&*self.isa, func.params);
                let name = Natives::name(generation, f);
                let id = module
                    .declare_function(&name, Linkage::Local, &sig)
                    .map_err(|e| failed(f, &e))?;
                ids[f] = Some(id);
            }
        }
        for (f, id) in ids.iter().enumerate() {
            let Some(id) = *id else { continue };
            let func = {
                let mut declare = declarer(&mut module, Some(&ids));
                fcodegen::lower_function(
                    program,
                    f as u32,
                    &natives,
                    &*self.isa,
                    &mut self.fctx,
                    &mut declare,
                    self.metering,
                )?
            };
            self.ctx.clear();
            self.ctx.func = func;
            let defined = module.define_function(id, &mut self.ctx);
            if let Some(c) = self.ctx.compiled_code() {
                let bytes = frame_bytes(c.code_buffer())
                    .unwrap_or_else(|| estimated_frame_bytes(&program.functions[f]));
                frame = frame.max(bytes);
            }
            module.clear_context(&mut self.ctx);
            defined.map_err(|e| failed(f, &e))?;
        }
        module.finalize_definitions().map_err(|e| failed(0, &e))?;
        let symbols = ids
            .iter()
            .enumerate()
            .filter_map(|(f, id)| {
                let addr = module.get_finalized_function((*id)?) as usize;
                Some((Natives::name(generation, f), addr))
            })
            .collect();
        let table = ids
            .iter()
            .enumerate()
            .map(|(f, id)| {
                let addr = match id {
                    Some(id) if natives[f].callable_from_bailing() => {
                        module.get_finalized_function(*id) as u64
                    }
                    _ => 0,
                };
                [addr, u64::from(program.functions[f].params)]
            })
            .collect();
        drop(module);
        self.natives = Some(Natives {
            functions: program.functions.clone(),
            ids,
            frame,
            max_regs: program.functions.iter().map(|f| f.regs).max().unwrap_or(0),
            generation,
            symbols: Arc::new(symbols),
            table: Arc::new(table),
        });
        Ok(())
    }

    /// The whole closed or bailing function `func` as a region at its offset 0, for
    /// the runtime to enter through the usual [`CompiledRegion::run_with`]
    /// when the interpreter starts the function. The region calls the
    /// function's native code in the frame the interpreter already pushed
    /// (so at the region's `depth`), stores the result into the register
    /// of the function's first `ret` instruction, and returns an
    /// `Interpret` exit at that `ret`: the interpreter then runs the `ret`
    /// and returns the value as if it had run the whole body. A trap
    /// returns `Err` from `run_with`; a bail returns an `Interpret` exit at
    /// offset 0, for the interpreter to run the function itself. Exit
    /// sites: `[Interpret at the ret, Trap, Interpret at 0]`. Errors if the
    /// function cannot run natively or has no `ret`.
    pub fn compile_function(&mut self, program: &Program, func: u32) -> Result<CompiledRegion> {
        let f = program
            .functions
            .get(func as usize)
            .ok_or(Error::NoSuchFunction {
                func,
                count: program.functions.len(),
            })?;
        self.compile_natives(program)?;
        let invalid = |msg: &str| Error::InvalidRegion {
            head: Pc::new(func, 0).to_string(),
            msg: msg.into(),
        };
        // `compile_natives` compiled exactly the closed and bailing
        // functions.
        let closed = self
            .natives
            .as_ref()
            .is_some_and(|n| n.ids[func as usize].is_some());
        if !closed {
            return Err(invalid(
                "the function is neither closed nor bailing: it cannot run natively",
            ));
        }
        let (ret_pc, ret_reg) = f
            .code
            .iter()
            .enumerate()
            .find_map(|(pc, i)| match *i {
                Instr::Ret { a } => Some((pc as u32, a)),
                _ => None,
            })
            .ok_or_else(|| invalid("the function has no `ret`"))?;
        let start = Instant::now();
        let mut module = self.region_module();
        let lowered = {
            let mut declare = importer(&mut module, &*self.isa, self.natives.as_ref());
            fcodegen::lower_stub(
                program,
                func,
                ret_pc,
                ret_reg,
                &*self.isa,
                &mut self.fctx,
                &mut declare,
                self.metering,
            )?
        };
        let clif = self
            .dump_clif
            .then(|| format!("; whole function f{func}\n{}", lowered.func.display()));
        self.finish(module, lowered, func, 0, true, clif, start)
    }

    /// Compiles `region` (lowering, verification, Cranelift's optimizer and
    /// code emission) into a callable [`CompiledRegion`].
    pub fn compile(&mut self, region: &Region) -> Result<CompiledRegion> {
        let start = Instant::now();
        let calls_native = self.check_native_calls(region)?;
        let mut module = self.region_module();
        let lowered = {
            let mut declare = importer(&mut module, &*self.isa, self.natives.as_ref());
            codegen::lower(
                region,
                &*self.isa,
                &mut self.fctx,
                &mut declare,
                self.metering,
            )?
        };
        let clif = self.dump_clif.then(|| codegen::annotate(&lowered, region));
        self.finish(
            module,
            lowered,
            region.func,
            region.head,
            calls_native,
            clif,
            start,
        )
    }

    /// Defines and finalizes a lowered region in its own `module` and wraps
    /// it up.
    #[allow(clippy::too_many_arguments)]
    fn finish(
        &mut self,
        mut module: JITModule,
        lowered: Lowered,
        func: u32,
        head: u32,
        calls_native: bool,
        clif: Option<String>,
        start: Instant,
    ) -> Result<CompiledRegion> {
        let failed = |e: &dyn fmt::Display| Error::Codegen {
            head: Pc::new(func, head).to_string(),
            msg: e.to_string(),
        };
        let max_regs = if calls_native {
            self.natives.as_ref().map_or(0, |n| n.max_regs)
        } else {
            0
        };
        let name = format!("region{}_f{}_{}", self.compiled, func, head);
        let id = module
            .declare_function(&name, Linkage::Local, &lowered.func.signature)
            .map_err(|e| failed(&e))?;
        self.ctx.clear();
        self.ctx.func = lowered.func;
        let defined = module.define_function(id, &mut self.ctx);
        let code_size = self
            .ctx
            .compiled_code()
            .map_or(0, |c| c.code_info().total_size as usize);
        module.clear_context(&mut self.ctx);
        defined.map_err(|e| failed(&e))?;
        module.finalize_definitions().map_err(|e| failed(&e))?;
        let code = module.get_finalized_function(id);
        // SAFETY: `code` is the finalized (executable, icache-flushed) entry
        // of the function just defined with `codegen::signature`, which is
        // `RegionFn`'s: five pointer-sized integer arguments and a u64 (all
        // i64 in the IR), an i64 result, in the host's default (C) calling
        // convention. The memory stays mapped while the returned region
        // holds `memory`, the module's owner.
        let entry = unsafe { std::mem::transmute::<*const u8, RegionFn>(code) };
        self.compiled += 1;
        Ok(CompiledRegion {
            entry,
            metered: self.metering,
            func,
            head,
            calls_native,
            max_regs,
            exits: lowered.exits,
            code_size,
            compile_time: start.elapsed(),
            clif,
            _memory: CodeMemory::new(module),
            _natives: Arc::clone(&self.memory),
            table: self
                .natives
                .as_ref()
                .map_or_else(Default::default, |n| Arc::clone(&n.table)),
        })
    }
}

/// How lowering resolves a native callee: its `FuncRef` in the function
/// being built. Calls are not `colocated`: code memory comes in separate
/// allocations that a 32-bit displacement might not bridge, so each call
/// loads the callee's absolute address.
fn declarer<'a>(
    module: &'a mut JITModule,
    ids: Option<&'a [Option<FuncId>]>,
) -> impl FnMut(u32, &mut ir::Function) -> ir::FuncRef + 'a {
    move |callee, func| {
        let id = ids
            .and_then(|ids| ids.get(callee as usize).copied().flatten())
            .expect("callees are checked to be compiled natives before lowering");
        let r = module.declare_func_in_func(id, func);
        func.dfg.ext_funcs[r].colocated = false;
        r
    }
}

/// How lowering resolves a native callee in a region's own module: an
/// import of the native function by name (declared on first use), which
/// the module resolves to the native's finalized address.
fn importer<'a>(
    module: &'a mut JITModule,
    isa: &'a dyn cranelift_codegen::isa::TargetIsa,
    natives: Option<&'a Natives>,
) -> impl FnMut(u32, &mut ir::Function) -> ir::FuncRef + 'a {
    move |callee, func| {
        let natives = natives.expect("callees are checked to be compiled natives before lowering");
        let params = natives.functions[callee as usize].params;
        let sig = fcodegen::native_signature(isa, params);
        let name = Natives::name(natives.generation, callee as usize);
        let id = module
            .declare_function(&name, Linkage::Import, &sig)
            .expect("one name, one signature: the import declares cleanly");
        let r = module.declare_func_in_func(id, func);
        func.dfg.ext_funcs[r].colocated = false;
        r
    }
}

/// A fuel limit as compiled code sees it (see
/// [`CompiledRegion::run_metered`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fuel {
    /// The run's limit, in instructions (for the out-of-fuel trap's message).
    pub limit: u64,
    /// Instructions the run may still execute.
    pub left: u64,
}

impl Fuel {
    /// No limit.
    pub const UNLIMITED: Fuel = Fuel {
        limit: u64::MAX,
        left: u64::MAX,
    };
}

/// A region in machine code.
///
/// Counter layout: `counters[i]` counts the exits taken through
/// [`exits()`](CompiledRegion::exits)`[i]`, and the last,
/// `counters[exits().len()]`, the times control reached the region's head
/// (once per entry that passes the entry guards, plus once per loop
/// iteration: a looping region's trips). The runtime allocates
/// [`counters_len()`](CompiledRegion::counters_len) zeroed `u64`s per
/// region and reads them to find hot side exits (kind `Side`), failing
/// guards (`Guard`, against the trips) and instructions handed to the
/// interpreter (`Interpret`).
pub struct CompiledRegion {
    entry: RegionFn,
    /// Compiled with fuel metering.
    metered: bool,
    func: u32,
    head: u32,
    calls_native: bool,
    /// For regions that call native code: the most registers of any
    /// function of the program (see `run_with`).
    max_regs: u16,
    exits: Vec<ExitSite>,
    code_size: usize,
    compile_time: Duration,
    clif: Option<String>,
    /// The region's own module: freed when the region is dropped.
    _memory: Arc<CodeMemory>,
    /// The natives' module, which the region's code calls into.
    _natives: Arc<CodeMemory>,
    /// The natives' `calli` table (see `NativeCtx::table`), empty when the
    /// region was compiled before any natives.
    table: Arc<Vec<[u64; 2]>>,
}

impl fmt::Debug for CompiledRegion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompiledRegion")
            .field("func", &self.func)
            .field("head", &self.head)
            .field("exits", &self.exits)
            .field("code_size", &self.code_size)
            .field("compile_time", &self.compile_time)
            .finish_non_exhaustive()
    }
}

impl CompiledRegion {
    /// Runs the region on the current frame's register window and the
    /// program's memory, from the region head until an exit.
    ///
    /// `depth` is the interpreter's frame count while this frame runs (its
    /// `frames.len()`: 0 in the entry function) and `max_depth` its call
    /// depth limit (`interp::Config::max_depth`): native calls check and
    /// trap exactly as the interpreter's `call` would.
    ///
    /// On `Ok`, `regs` holds every register as the interpreter would have
    /// it at the returned [`Exit::resume`] offset, and `mem` likewise. The
    /// runtime then interprets at least the instruction at `resume` before
    /// entering any region there: an `Interpret` exit has not run it, and a
    /// guard that resumes at the head would otherwise re-enter forever.
    /// This does not count fuel: see [`run_metered`](Self::run_metered).
    ///
    /// `Err` is a trap inside native code (the region took its `Trap` exit,
    /// counted like any other): the program stops with the interpreter's
    /// trap, [`NativeTrap::to_trap`]; `mem` holds what the interpreter's
    /// would at that trap. Native recursion runs on the machine stack: see
    /// [`CodeCache::native_stack_bytes`].
    ///
    /// A region that calls native code returns at once, without running,
    /// with an `Interpret` exit at its head (no counter incremented) when
    /// `max_depth` lets the interpreter's register-stack limit come into
    /// play (a program with a 256-register function at the default limit;
    /// see [`crate::native`]): native frames do not model it, and the
    /// interpreter then runs the code and traps where it should.
    ///
    /// # Panics
    ///
    /// If `counters` is shorter than [`exits()`](Self::exits).
    pub fn run_with(
        &self,
        regs: &mut [i64; 256],
        mem: &mut [i64],
        counters: &mut [u64],
        depth: usize,
        max_depth: usize,
    ) -> std::result::Result<Exit, NativeTrap> {
        let mut fuel = Fuel::UNLIMITED;
        self.run_metered(regs, mem, counters, depth, max_depth, &mut fuel)
            .map(|(exit, _)| exit)
    }

    /// [`run_with`](Self::run_with) under a fuel limit, also saying which
    /// exit site was taken (an index into [`exits()`](Self::exits); `None`
    /// when the region did not run).
    ///
    /// Code compiled with [`CodeCache::set_fuel_metering`] charges
    /// `fuel.left` a basic block at a time and leaves when a block starts
    /// with none left: an `Interpret` exit at that block (the interpreter
    /// then traps there, out of fuel), or in native code the interpreter's
    /// out-of-fuel trap at that block's first instruction. `fuel.left` is
    /// what is left on return (0 when the last block ran past the limit),
    /// so the instructions counted are exactly the ones run, and a run
    /// stops at most one basic block past the limit. Code compiled without
    /// metering leaves `fuel` alone.
    pub fn run_metered(
        &self,
        regs: &mut [i64; 256],
        mem: &mut [i64],
        counters: &mut [u64],
        depth: usize,
        max_depth: usize,
        fuel: &mut Fuel,
    ) -> std::result::Result<(Exit, Option<usize>), NativeTrap> {
        self.run_hosted(
            regs,
            mem,
            counters,
            depth,
            max_depth,
            fuel,
            &mut HostCalls::none(),
        )
    }

    /// [`run_metered`](Self::run_metered) with the host functions the
    /// region's `hcall`s call (see [`HostCalls`]). A host function's
    /// failure is the returned trap ([`TrapKind::Host`]); a host function
    /// that panics panics here, once compiled code has left.
    ///
    /// [`TrapKind::Host`]: toyvm_vm::interp::TrapKind::Host
    #[allow(clippy::too_many_arguments)]
    pub fn run_hosted(
        &self,
        regs: &mut [i64; 256],
        mem: &mut [i64],
        counters: &mut [u64],
        depth: usize,
        max_depth: usize,
        fuel: &mut Fuel,
        host: &mut HostCalls<'_>,
    ) -> std::result::Result<(Exit, Option<usize>), NativeTrap> {
        assert!(
            counters.len() >= self.counters_len(),
            "region {} needs {} counters, {} given",
            Pc::new(self.func, self.head),
            self.counters_len(),
            counters.len()
        );
        if self.calls_native && !native::register_stack_unreachable(max_depth, self.max_regs) {
            let exit = Exit {
                kind: ExitKind::Interpret,
                resume: self.head,
            };
            return Ok((exit, None));
        }
        let mem_len = mem.len() as u64;
        let mem_ptr = mem.as_mut_ptr();
        let mut ctx = NativeCtx {
            mem: mem_ptr,
            mem_len,
            max_depth: max_depth as u64,
            trap_kind: native::TRAP_NONE,
            trap_func: 0,
            trap_pc: 0,
            trap_addr: 0,
            fuel: fuel.left.min(i64::MAX as u64) as i64,
            host: std::ptr::from_mut(host).cast(),
            table: self.table.as_ptr(),
            table_len: self.table.len() as u64,
        };
        // SAFETY: `entry` points at live code (`_memory` keeps it mapped)
        // with `RegionFn`'s signature, and so does every native function it
        // calls (in the natives' module, which `_natives` keeps mapped, with
        // the signature their callers' IR declares: imports are declared
        // with `native_signature` of the callee's arity). The code reads and writes `regs[0..256]`
        // only (register operands are `u8`), touches `mem` (through the
        // argument or `ctx.mem`, the same pointer and length) only at word
        // indices it has checked against `mem_len` (unsigned, so negative
        // addresses fail), `counters` only at indices up to `exits.len()`
        // (below `counters_len()`, checked above), and `ctx` only within
        // the `NativeCtx` it points at; a bailing function's `calli` reads
        // `ctx.table` below `ctx.table_len` (the table `self.table` keeps
        // alive) and calls only its non-zero addresses, each the finalized
        // entry of a native function in the natives' module taking as many
        // parameters as the call passes, with `native_signature` of that
        // count.
        // The exclusive borrows do not alias and outlive the call; `mem` is
        // not otherwise used while `ctx` holds its pointer. An `hcall`
        // calls `host::trampoline` (a plain `extern "C"` function with the
        // signature the code generator declares for it), which reaches
        // `host` and the memory through `ctx` only while the code waits on
        // it; neither is used here until the code returns.
        let raw = unsafe {
            (self.entry)(
                regs.as_mut_ptr(),
                mem_ptr,
                mem_len,
                counters.as_mut_ptr(),
                &mut ctx,
                depth as u64,
            )
        };
        let exit = Exit::decode(raw).expect("compiled code returns only encoded exits");
        if self.metered {
            fuel.left = ctx.fuel.max(0) as u64;
        }
        match ctx.trap(max_depth, fuel.limit, host) {
            Some(trap) => {
                debug_assert_eq!(exit.kind, ExitKind::Trap);
                Err(trap)
            }
            None => Ok((exit, Exit::site(raw))),
        }
    }

    /// [`run_with`](Self::run_with) for the entry function's frame (depth 0)
    /// under the interpreter's default depth limit: exact for regions that
    /// make no native calls ([`calls_native`](Self::calls_native) false),
    /// the regions of the previous API.
    ///
    /// # Panics
    ///
    /// If `counters` is too short, or if native code traps (use `run_with`,
    /// which returns the trap, for regions with native calls).
    pub fn run(&self, regs: &mut [i64; 256], mem: &mut [i64], counters: &mut [u64]) -> Exit {
        self.run_with(regs, mem, counters, 0, DEFAULT_MAX_DEPTH)
            .unwrap_or_else(|t| panic!("native code trapped ({t:?}): use `run_with`"))
    }

    /// Whether the region calls native code (a whole-function region, or a
    /// region with [`Step::Call`]s): it then needs `run_with`'s depth, may
    /// return a trap, and uses the machine stack.
    pub fn calls_native(&self) -> bool {
        self.calls_native
    }

    /// The exit sites, in counter order.
    pub fn exits(&self) -> &[ExitSite] {
        &self.exits
    }

    /// The counters a run needs: one per exit site and the head's
    /// arrivals (see the type's docs).
    pub fn counters_len(&self) -> usize {
        self.exits.len() + 1
    }

    /// The function this region belongs to.
    pub fn func(&self) -> u32 {
        self.func
    }

    /// The head offset: run this region when the interpreter reaches it.
    pub fn head(&self) -> u32 {
        self.head
    }

    /// Bytes of machine code.
    pub fn code_size(&self) -> usize {
        self.code_size
    }

    /// Wall time from lowering to finalized code.
    pub fn compile_time(&self) -> Duration {
        self.compile_time
    }

    /// The annotated Cranelift IR, when the cache had `set_dump_clif(true)`.
    pub fn clif(&self) -> Option<&str> {
        self.clif.as_deref()
    }
}
