//! Machine code: the code cache that owns it and the compiled regions that
//! run it. Every `unsafe` of the workspace is in this module:
//!
//! 1. one transmute of a finalized code pointer to [`RegionFn`], in
//!    `CodeCache::finish` (for regions and whole-function stubs alike);
//! 2. the call through that pointer, in [`CompiledRegion::run_with`];
//! 3. freeing the code memory, in `CodeMemory`'s `Drop`;
//! 4. asking the C library for the thread's stack bounds, in [`stack`].
//!
//! Native functions (see [`crate::native`]) live in the same module: the
//! cache compiles them as regions first need them
//! ([`CodeCache::compile_natives_for`], see `natives`); regions call them
//! directly. No Rust
//! code ever calls a native function except through a region. Small
//! natives are inlined by Cranelift's inliner (`cranelift_codegen::inline`)
//! into the natives that call them, one level deep, and those that call
//! nothing into the regions that call them (see `SmallCallees`).
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

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use cranelift_codegen::Context;
use cranelift_codegen::ir;
use cranelift_codegen::isa::OwnedTargetIsa;
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::FunctionBuilderContext;
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{FuncId, Linkage, Module, default_libcall_names};
use toyvm_vm::isa::Instr;
use toyvm_vm::{Pc, Program};

use crate::codegen::{self, Lowered, func as fcodegen, strength};
use crate::native::{self, NativeCtx};
use crate::region::Region;
use crate::{Error, Result};

mod compiled;
mod dump;
mod frames;
mod host;
mod inline;
mod natives;
pub mod stack;
use frames::{estimated_frame_bytes, frame_bytes};
use natives::Natives;

pub use compiled::{CompiledRegion, Fuel, NativesCompiled};
pub use host::{Called, HostCalls, Interpreter};

use inline::{SmallCallees, inlinable};

/// Where compiled code's calls into the runtime go: this module's
/// trampolines, handed to the code generator.
fn trampolines() -> codegen::Trampolines {
    codegen::Trampolines {
        hcall: host::trampoline_address(),
        interp: host::interp_trampoline_address(),
        limit: host::limit_trampoline_address(),
    }
}

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
    /// Native functions compiled since the last region or function was
    /// compiled: that one's (see [`CompiledRegion::natives_compiled`]).
    natives_pending: NativesCompiled,
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
            natives_pending: NativesCompiled::default(),
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
    /// limit. Set it before [`compile_natives`](Self::compile_natives)
    /// (or the first [`compile_natives_for`](Self::compile_natives_for)):
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

    /// Calls from one native function to another that were compiled
    /// inline (0 before `compile_natives`).
    pub fn inlined_calls(&self) -> usize {
        self.natives.as_ref().map_or(0, |n| n.inlined)
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
        let mut imported = HashMap::new();
        let mut declare = importer(
            &mut module,
            &*self.isa,
            self.natives.as_ref(),
            &mut imported,
        );
        let lowered = codegen::lower(
            region,
            &*self.isa,
            &mut self.fctx,
            &mut declare,
            self.metering,
            None,
            trampolines(),
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
        let calls: Vec<(u32, &Instr)> = region.native_calls().collect();
        if calls.is_empty() {
            return Ok(false);
        }
        let natives = self.natives.as_ref().ok_or_else(|| {
            invalid("the region makes native calls: run `compile_natives_for` first".into())
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

    /// Forgets the native functions (after [`compile_natives`](Self::compile_natives)
    /// found that their recursion does not fit the thread's stack): regions
    /// compiled from now on find none in the natives' table.
    pub fn discard_natives(&mut self) {
        self.natives = None;
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
        self.compile_function_for(program, func, &BTreeMap::new())
    }

    /// [`compile_function`](Self::compile_function) with call-target
    /// specialization: `targets` maps offsets of the function's `calli`s to
    /// the callee the profile found dominant there (see
    /// [`crate::plan::call_targets`]). An open function's native code then
    /// calls that callee directly when the value names it, inlining it
    /// where it is small, and takes the natives' table otherwise; a native
    /// function compiled for other targets is compiled again for these and
    /// replaces the old one in the natives' table, so a program whose
    /// callbacks change by phase (a sort's comparator) gets each phase's
    /// direct calls. Empty `targets` keep whatever native code the function
    /// has.
    pub fn compile_function_for(
        &mut self,
        program: &Program,
        func: u32,
        targets: &BTreeMap<u32, u32>,
    ) -> Result<CompiledRegion> {
        let f = program
            .functions
            .get(func as usize)
            .ok_or(Error::NoSuchFunction {
                func,
                count: program.functions.len(),
            })?;
        self.compile_native_for_targets(program, func, targets)?;
        let invalid = |msg: &str| Error::InvalidRegion {
            head: Pc::new(func, 0).to_string(),
            msg: msg.into(),
        };
        // `compile_natives` compiled exactly the closed, bailing and open
        // functions.
        let closed = self
            .natives
            .as_ref()
            .is_some_and(|n| n.ids[func as usize].is_some());
        if !closed {
            return Err(invalid(
                "the function is neither closed, bailing nor open: it cannot run natively",
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
        let mut imported = HashMap::new();
        let lowered = {
            let mut declare = importer(
                &mut module,
                &*self.isa,
                self.natives.as_ref(),
                &mut imported,
            );
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
        let regs = Some(program.functions.iter().map(|f| f.regs).max());
        let mut compiled = self.finish(module, lowered, &imported, (func, 0), regs, clif, start)?;
        compiled.needs_interpreter = self.reaches_open([func]);
        Ok(self.with_natives_dumped(compiled, [func]))
    }

    /// Whether any of `callees` is an open native function (see
    /// [`crate::native`]): code that calls one needs an interpreter.
    fn reaches_open(&self, callees: impl IntoIterator<Item = u32>) -> bool {
        self.natives.as_ref().is_some_and(|n| {
            callees
                .into_iter()
                .any(|f| n.kinds.get(f as usize) == Some(&native::Native::Open))
        })
    }

    /// Appends to a region's dump those of the native functions it reaches.
    fn with_natives_dumped(
        &self,
        mut compiled: CompiledRegion,
        callees: impl IntoIterator<Item = u32>,
    ) -> CompiledRegion {
        if let (Some(text), Some(n)) = (&mut compiled.clif, &self.natives) {
            text.push_str(&dump::natives(&n.functions, &n.dumps, callees));
        }
        compiled
    }

    /// Compiles `region` (lowering, verification, Cranelift's optimizer and
    /// code emission) into a callable [`CompiledRegion`]. Its exits store
    /// back every register the region writes; [`compile_in`](Self::compile_in)
    /// knows the whole function and stores fewer.
    pub fn compile(&mut self, region: &Region) -> Result<CompiledRegion> {
        self.compile_with(region, None, None)
    }

    /// [`compile`](Self::compile) for a region of `program`'s function
    /// `region.func`: an exit that hands control to the interpreter stores
    /// back only the registers live where the interpreter resumes
    /// ([`toyvm_vm::dataflow::live_in`]), so a temporary the loop
    /// recomputes every trip is not carried around it for the exits' sake.
    /// Errors when the region's instructions are not the function's (the
    /// liveness would be another function's).
    pub fn compile_in(&mut self, program: &Program, region: &Region) -> Result<CompiledRegion> {
        let f = program
            .functions
            .get(region.func as usize)
            .ok_or(Error::NoSuchFunction {
                func: region.func,
                count: program.functions.len(),
            })?;
        if let Some(pc) = region.mismatch(f) {
            return Err(Error::InvalidRegion {
                head: region.head_pc().to_string(),
                msg: format!(
                    "its instruction at offset {pc} is not function f{}'s",
                    region.func
                ),
            });
        }
        let live = toyvm_vm::dataflow::live_in(f);
        let max_regs = program.functions.iter().map(|f| f.regs).max();
        self.compile_with(region, Some(&live), max_regs)
    }

    /// `max_regs`: the most registers of any function of the program, if known.
    fn compile_with(
        &mut self,
        region: &Region,
        live: Option<&[toyvm_vm::dataflow::RegSet]>,
        max_regs: Option<u16>,
    ) -> Result<CompiledRegion> {
        let start = Instant::now();
        let calls_native = self.check_native_calls(region)?;
        // Regions that call the interpreter count as calling out too: they
        // need the depth and the machine stack (see `CompiledRegion`).
        let calls_out = calls_native || region.calls_interpreter();
        let mut module = self.region_module();
        let mut imported = HashMap::new();
        let lowered = {
            let mut declare = importer(
                &mut module,
                &*self.isa,
                self.natives.as_ref(),
                &mut imported,
            );
            codegen::lower(
                region,
                &*self.isa,
                &mut self.fctx,
                &mut declare,
                self.metering,
                live,
                trampolines(),
            )?
        };
        let clif = self.dump_clif.then(|| codegen::annotate(&lowered, region));
        let mut compiled = self.finish(
            module,
            lowered,
            &imported,
            (region.func, region.head),
            calls_out.then_some(max_regs),
            clif,
            start,
        )?;
        compiled.needs_interpreter = self.reaches_open(region.native_calls().map(|(f, _)| f));
        Ok(self.with_natives_dumped(compiled, region.native_calls().map(|(f, _)| f)))
    }

    /// Defines and finalizes a lowered region in its own `module` and wraps
    /// it up. `calls_out`: `Some` for code that calls native code or the
    /// interpreter, with the most registers of any function of the
    /// program when known.
    #[allow(clippy::too_many_arguments)]
    fn finish(
        &mut self,
        mut module: JITModule,
        lowered: Lowered,
        imported: &HashMap<u32, usize>,
        (func, head): (u32, u32),
        calls_out: Option<Option<u16>>,
        clif: Option<String>,
        start: Instant,
    ) -> Result<CompiledRegion> {
        let failed = |e: &dyn fmt::Display| Error::Codegen {
            head: Pc::new(func, head).to_string(),
            msg: e.to_string(),
        };
        let calls_native = calls_out.is_some();
        // Unknown: assume the widest frames, so the register-stack limit is
        // never missed (see `CompiledRegion::run_with`).
        let max_regs = calls_out.map_or(0, |known| {
            known
                .or(self.natives.as_ref().map(|n| n.max_regs))
                .unwrap_or(256)
        });
        let name = format!("region{}_f{}_{}", self.compiled, func, head);
        let id = module
            .declare_function(&name, Linkage::Local, &lowered.func.signature)
            .map_err(|e| failed(&e))?;
        self.ctx.clear();
        self.ctx.func = lowered.func;
        // Small natives that call nothing are inlined where the region
        // calls them (a native's own calls name functions of the natives'
        // module, which the region's module does not know).
        let mut inlined = 0;
        if let Some(n) = &self.natives {
            let mut inliner = SmallCallees::new(&n.leaves, imported);
            self.ctx.inline(&mut inliner).map_err(|e| failed(&e))?;
            inlined = inliner.inlined.len();
        }
        let reduced = strength::reduce(&mut self.ctx.func, &*self.isa);
        // With the IR dump, the machine code too (Cranelift's own listing
        // of what it emitted, after register allocation).
        self.ctx.set_disasm(clif.is_some());
        let defined = module.define_function(id, &mut self.ctx);
        let code_size = self
            .ctx
            .compiled_code()
            .map_or(0, |c| c.code_info().total_size as usize);
        let clif = clif.map(|mut text| {
            dump::machine_code(&mut text, &self.ctx);
            text
        });
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
            needs_interpreter: false,
            max_regs,
            exits: lowered.exits,
            code_size,
            inlined,
            reduced,
            compile_time: start.elapsed(),
            natives: std::mem::take(&mut self.natives_pending),
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
    imported: &'a mut HashMap<u32, usize>,
) -> impl FnMut(u32, &mut ir::Function) -> ir::FuncRef + 'a {
    move |callee, func| {
        let natives = natives.expect("callees are checked to be compiled natives before lowering");
        let params = natives.functions[callee as usize].params;
        let sig = fcodegen::native_signature(isa, params);
        let name = natives.name(callee as usize);
        let id = module
            .declare_function(&name, Linkage::Import, &sig)
            .expect("one name, one signature: the import declares cleanly");
        imported.insert(id.as_u32(), callee as usize);
        let r = module.declare_func_in_func(id, func);
        func.dfg.ext_funcs[r].colocated = false;
        r
    }
}
