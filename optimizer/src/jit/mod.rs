//! Machine code: the code cache that owns it and the compiled regions that
//! run it. Every `unsafe` of the workspace is in this module:
//!
//! 1. one transmute of a finalized code pointer to [`RegionFn`], in
//!    [`CodeCache::compile`];
//! 2. the call through that pointer, in [`CompiledRegion::run`];
//! 3. freeing the code memory, in `CodeMemory`'s `Drop`.
//!
//! Ownership: one `CodeMemory` holds the `cranelift_jit::JITModule`, and so
//! all code memory. The [`CodeCache`] and every [`CompiledRegion`] hold an
//! `Arc` to it, so code is freed only when the cache and all regions are
//! gone: dropping a region is a logical drop (its code stays mapped until
//! then), and no region can outlive its code.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use cranelift_codegen::Context;
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::FunctionBuilderContext;
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{Linkage, Module, default_libcall_names};

use crate::codegen;
use crate::exit::{Exit, ExitSite};
use crate::region::Region;
use crate::{Error, Result};

/// The machine-level signature of a compiled region (see [`crate::codegen`]
/// for what the code does with each argument).
pub type RegionFn =
    unsafe extern "C" fn(regs: *mut i64, mem: *mut i64, mem_len: u64, counters: *mut u64) -> u64;

/// The owner of all code memory.
struct CodeMemory {
    module: Mutex<Option<JITModule>>,
}

impl Drop for CodeMemory {
    fn drop(&mut self) {
        let module = self
            .module
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(module) = module {
            // SAFETY: `CodeMemory` is dropped when the last `Arc` to it goes,
            // and every `CompiledRegion` (the only holder of pointers into
            // this module's code) holds one of those `Arc`s; so no region is
            // running or can run again.
            unsafe { module.free_memory() };
        }
    }
}

/// Compiles regions to machine code and owns that code.
pub struct CodeCache {
    memory: Arc<CodeMemory>,
    ctx: Context,
    fctx: FunctionBuilderContext,
    compiled: u64,
    dump_clif: bool,
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
        let module = JITModule::new(JITBuilder::with_isa(isa, default_libcall_names()));
        Ok(CodeCache {
            ctx: module.make_context(),
            memory: Arc::new(CodeMemory {
                module: Mutex::new(Some(module)),
            }),
            fctx: FunctionBuilderContext::new(),
            compiled: 0,
            dump_clif: false,
        })
    }

    /// Whether compiled regions keep their annotated Cranelift IR
    /// ([`CompiledRegion::clif`]), for `--dump-clif`.
    pub fn set_dump_clif(&mut self, on: bool) {
        self.dump_clif = on;
    }

    /// Regions compiled so far.
    pub fn compiled(&self) -> u64 {
        self.compiled
    }

    /// The Cranelift IR of `region`, verified, with each instruction group
    /// preceded by a comment naming the region step and bytecode pc it
    /// implements. Compiles nothing.
    pub fn clif(&mut self, region: &Region) -> Result<String> {
        let mut guard = self
            .memory
            .module
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let module = guard
            .as_mut()
            .expect("the module lives as long as the cache");
        let lowered = codegen::lower(region, module.isa(), &mut self.fctx)?;
        Ok(codegen::annotate(&lowered, region))
    }

    /// Compiles `region` (lowering, verification, Cranelift's optimizer and
    /// code emission) into a callable [`CompiledRegion`].
    pub fn compile(&mut self, region: &Region) -> Result<CompiledRegion> {
        let start = Instant::now();
        let head = region.head_pc().to_string();
        let failed = |e: &dyn fmt::Display| Error::Codegen {
            head: head.clone(),
            msg: e.to_string(),
        };
        let mut guard = self
            .memory
            .module
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let module = guard
            .as_mut()
            .expect("the module lives as long as the cache");
        let lowered = codegen::lower(region, module.isa(), &mut self.fctx)?;
        let clif = self.dump_clif.then(|| codegen::annotate(&lowered, region));
        let name = format!("region{}_f{}_{}", self.compiled, region.func, region.head);
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
        // `RegionFn`'s: four pointer-sized integer arguments and an i64
        // result in the host's default (C) calling convention. The memory
        // stays mapped while the returned region holds `self.memory`.
        let entry = unsafe { std::mem::transmute::<*const u8, RegionFn>(code) };
        drop(guard);
        self.compiled += 1;
        Ok(CompiledRegion {
            entry,
            func: region.func,
            head: region.head,
            exits: lowered.exits,
            code_size,
            compile_time: start.elapsed(),
            clif,
            _memory: Arc::clone(&self.memory),
        })
    }
}

/// A region in machine code.
///
/// Counter layout: `counters[i]` counts the exits taken through
/// [`exits()`](CompiledRegion::exits)`[i]`; the runtime allocates
/// `exits().len()` zeroed `u64`s per region and reads them to find hot side
/// exits (kind `Side`), failing guards (`Guard`) and instructions handed to
/// the interpreter (`Interpret`).
pub struct CompiledRegion {
    entry: RegionFn,
    func: u32,
    head: u32,
    exits: Vec<ExitSite>,
    code_size: usize,
    compile_time: Duration,
    clif: Option<String>,
    _memory: Arc<CodeMemory>,
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
    /// On return, `regs` holds every register as the interpreter would have
    /// it at the returned [`Exit::resume`] offset, and `mem` likewise. The
    /// runtime then interprets at least the instruction at `resume` before
    /// entering any region there: an `Interpret` exit has not run it, and a
    /// guard that resumes at the head would otherwise re-enter forever.
    /// Compiled loops do not count fuel: a fuel limit is checked only in
    /// the interpreter.
    ///
    /// # Panics
    ///
    /// If `counters` is shorter than [`exits()`](Self::exits).
    pub fn run(&self, regs: &mut [i64; 256], mem: &mut [i64], counters: &mut [u64]) -> Exit {
        assert!(
            counters.len() >= self.exits.len(),
            "region f{}:{} needs {} exit counters, {} given",
            self.func,
            self.head,
            self.exits.len(),
            counters.len()
        );
        // SAFETY: `entry` points at live code (`_memory` keeps it mapped)
        // with `RegionFn`'s signature. The code reads and writes
        // `regs[0..256]` only (register operands are `u8`), touches `mem`
        // only at word indices it has checked against `mem_len` (unsigned,
        // so negative addresses fail), and `counters` only at indices below
        // `exits.len()`, checked above. The three exclusive borrows do not
        // alias and outlive the call.
        let raw = unsafe {
            (self.entry)(
                regs.as_mut_ptr(),
                mem.as_mut_ptr(),
                mem.len() as u64,
                counters.as_mut_ptr(),
            )
        };
        Exit::decode(raw).expect("compiled code returns only encoded exits")
    }

    /// The exit sites, in counter order.
    pub fn exits(&self) -> &[ExitSite] {
        &self.exits
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
