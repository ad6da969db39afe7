//! The native functions of the program a [`CodeCache`] serves (see
//! [`crate::native`]): compiled when first needed, a batch at a time, into
//! the cache's natives module.
//!
//! A batch is what one need reaches: the functions regions and entry stubs
//! are about to call, and every native function those may call directly (a
//! closed function's `calli` reaches every function of its arity, all
//! closed, and a bailing one's those it may call; an open function's
//! `calli` finds what is compiled when it runs: the table is shared, see
//! [`Table`]). Functions outside every batch so far have no native code yet:
//! an open function compiled before them calls the interpreter for them,
//! a bailing one bails there, and the natives' table (what `calli`s look up)
//! has no address for them. Later batches call earlier ones directly (one
//! module, each function declared once, under the name of its batch), so
//! nothing is compiled twice. A C program's library holds dozens of open
//! functions (`printf`'s machinery) that most runs never call natively:
//! compiling all of them on the first need cost 80 ms of a 0.4 s run.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use cranelift_codegen::ir;
use cranelift_module::{FuncId, Linkage, Module};
use toyvm_vm::isa::Instr;
use toyvm_vm::{Function, Program};

use super::{CodeCache, NativesCompiled, SmallCallees, declarer, dump, inlinable, trampolines};
use super::{estimated_frame_bytes, frame_bytes};
use crate::codegen::{func as fcodegen, strength};
use crate::native::{self, Native};
use crate::region::{Region, Step};
use crate::{Error, Result};

/// The native functions of one program compiled so far.
pub(super) struct Natives {
    /// The program they came from (a cache serves one program at a time;
    /// another program gets a fresh set).
    pub(super) functions: Vec<Function>,
    /// Per function: how it runs natively.
    pub(super) kinds: Vec<Native>,
    /// Per function: its native function, once compiled.
    pub(super) ids: Vec<Option<FuncId>>,
    /// Per function: the batch that compiled it (its name's number).
    batch: Vec<u32>,
    /// Machine stack bytes of the largest native frame.
    pub(super) frame: usize,
    /// Calls between natives compiled inline (see `SmallCallees`).
    pub(super) inlined: usize,
    /// Per function: the IR of its native function, before optimization,
    /// where it is small enough to inline (see `inline::inlinable`), with
    /// its size: what a native caller of a later batch inlines.
    small: Vec<Option<(ir::Function, usize)>>,
    /// Those of `small` that call nothing: what a region inlines where it
    /// calls the function (its IR names no function of the natives'
    /// module, which the region's module does not know).
    pub(super) leaves: Vec<Option<(ir::Function, usize)>>,
    /// The most registers any function of the program has.
    pub(super) max_regs: u16,
    /// Per function, with `set_dump_clif(true)`: its native function's IR
    /// and machine code, for the dumps of the regions that call it.
    pub(super) dumps: Vec<Option<String>>,
    /// The finalized address of each native function, by name: what a
    /// region's module resolves its imports to.
    pub(super) symbols: Arc<HashMap<String, usize>>,
    /// What `NativeCtx::table` points at (see [`Table`]).
    pub(super) table: Arc<Table>,
    /// Per function: the call targets its native function was compiled
    /// for (`calli` offset -> callee; see `codegen::func::lower_function`),
    /// empty for none.
    pub(super) targets: Vec<Arc<BTreeMap<u32, u32>>>,
}

/// Per function, `[address, parameters]` of its native code: the
/// parameters (marked where a bailing function may not call it:
/// [`native::table_params`]) from the start, the address 0 until a batch
/// compiles it. Code compiled before a batch finds that batch's functions
/// too (a whole function whose `calli` calls a comparator compiled after
/// it, say). An entry's address word changes from 0 to the address, and
/// again when the function is compiled for other call targets (see
/// [`CodeCache::compile_native_for_targets`]), each time by one aligned
/// store after the code is finalized, so code reading the table on
/// another thread sees no native code or code that is ready (the old or
/// the new: natives are never freed), with the right parameters either
/// way.
pub(super) type Table = Vec<[AtomicU64; 2]>;

impl Natives {
    fn new(program: &Program) -> Natives {
        let n = program.functions.len();
        let kinds = native::native_functions(program);
        Natives {
            functions: program.functions.clone(),
            ids: vec![None; n],
            batch: vec![0; n],
            frame: 0,
            inlined: 0,
            small: vec![None; n],
            leaves: vec![None; n],
            max_regs: program.functions.iter().map(|f| f.regs).max().unwrap_or(0),
            dumps: vec![None; n],
            symbols: Arc::new(HashMap::new()),
            table: Arc::new(
                (0..n)
                    .map(|f| {
                        let params = program.functions[f].params;
                        let word = native::table_params(kinds[f], params);
                        [AtomicU64::new(0), AtomicU64::new(word)]
                    })
                    .collect(),
            ),
            kinds,
            targets: vec![Arc::default(); n],
        }
    }

    /// The name of `f`'s native function in the natives' module.
    pub(super) fn name(&self, f: usize) -> String {
        format!("native{}_f{f}", self.batch[f])
    }

    /// The functions without native code yet that `roots` reach through
    /// direct calls (and closed functions' `calli`s), in index order; also
    /// the pure and bailing functions of each arity of `by_value` (those a
    /// region's `calli` may find in the table) and what they reach.
    fn reached(
        &self,
        program: &Program,
        roots: impl IntoIterator<Item = u32>,
        by_value: &[u8],
    ) -> Vec<usize> {
        let mut seen = vec![false; self.kinds.len()];
        let mut stack: Vec<usize> = roots.into_iter().map(|f| f as usize).collect();
        for &n in by_value {
            stack.extend(
                native::calli_targets(program, n)
                    .map(|g| g as usize)
                    .filter(|&g| self.kinds[g].callable_from_bailing()),
            );
        }
        while let Some(f) = stack.pop() {
            if f >= seen.len() || seen[f] || !self.kinds[f].callable() {
                continue;
            }
            seen[f] = true;
            let kind = self.kinds[f];
            for i in &program.functions[f].code {
                match *i {
                    Instr::Call { f: g, .. } => stack.push(g as usize),
                    // A closed `calli` calls every function of its arity,
                    // a bailing one those of them it may call.
                    Instr::Calli { n, .. } if kind != Native::Open => {
                        stack.extend(
                            native::calli_targets(program, n)
                                .map(|g| g as usize)
                                .filter(|&g| {
                                    kind != Native::Bails || self.kinds[g].callable_from_bailing()
                                }),
                        );
                    }
                    _ => {}
                }
            }
        }
        (0..seen.len())
            .filter(|&f| seen[f] && self.ids[f].is_none())
            .collect()
    }
}

impl CodeCache {
    /// Compiles every closed, bailing and open function of `program` (see
    /// [`crate::native::native_functions`]) to native code: what
    /// [`compile_natives_for`](Self::compile_natives_for) compiles as
    /// needed, all at once (up front: no region's
    /// [`natives_compiled`](crate::CompiledRegion::natives_compiled)).
    pub fn compile_natives(&mut self, program: &Program) -> Result<()> {
        let done = self.compile_natives_for(program, 0..program.functions.len() as u32);
        self.natives_pending = NativesCompiled::default();
        done
    }

    /// Compiles the native functions `roots` reach (see the module docs)
    /// that have no native code yet: regions whose
    /// [`Step::Call`](crate::region::Step::Call)s call them need this
    /// first. For another program than the last it starts a fresh set
    /// (regions compiled before keep calling the old ones); functions of
    /// `roots` that cannot run natively are skipped.
    pub fn compile_natives_for(
        &mut self,
        program: &Program,
        roots: impl IntoIterator<Item = u32>,
    ) -> Result<()> {
        self.compile_reached(program, roots, &[])
    }

    /// Compiles the native functions `region` calls (see
    /// [`compile_natives_for`](Self::compile_natives_for)), and the pure
    /// and bailing functions its `calli`s may find in the natives' table
    /// by value ([`Region::calls_by_value`]).
    pub fn compile_natives_for_region(&mut self, program: &Program, region: &Region) -> Result<()> {
        let mut by_value: Vec<u8> = region
            .steps
            .iter()
            .filter_map(|s| match s {
                Step::Dispatch {
                    instr: Instr::Calli { n, .. },
                    ..
                }
                | Step::Interpreted {
                    instr: Instr::Calli { n, .. },
                    ..
                } => Some(*n),
                _ => None,
            })
            .collect();
        by_value.sort_unstable();
        by_value.dedup();
        let roots: Vec<u32> = region.native_calls().map(|(f, _)| f).collect();
        self.compile_reached(program, roots, &by_value)
    }

    /// Compiles function `func`'s native function again, for the call
    /// targets `targets` (`calli` offset -> callee): its `calli`s there
    /// call that callee directly, and inline it where it is small (see
    /// `codegen::func::lower_function`), when the value names it. The new
    /// code replaces the old in the natives' table and for what is compiled
    /// from now on; code compiled before keeps calling the old, which stays
    /// valid (natives are never freed). Nothing is compiled when the
    /// function's native already has these targets, or when `targets` is
    /// empty and it has native code (a profile without call targets keeps
    /// what was specialized). The callees get native code first.
    pub(super) fn compile_native_for_targets(
        &mut self,
        program: &Program,
        func: u32,
        targets: &BTreeMap<u32, u32>,
    ) -> Result<()> {
        let f = func as usize;
        let have = self
            .natives
            .as_ref()
            .filter(|n| n.functions == program.functions)
            .map(|n| (n.ids[f].is_some(), Arc::clone(&n.targets[f])));
        if let Some((true, had)) = &have
            && (targets.is_empty() || *had.as_ref() == *targets)
        {
            return Ok(());
        }
        // Its callees first (not itself: a function that calls itself by
        // value is its own target, compiled once, below).
        let callees = targets.values().copied().filter(|&g| g != func);
        // That compile (even of none) left the natives this program's.
        self.compile_natives_for(program, callees)?;
        if let Some(n) = self.natives.as_mut() {
            n.targets[f] = Arc::new(targets.clone());
            n.ids[f] = None;
        }
        self.compile_natives_for(program, [func])
    }

    fn compile_reached(
        &mut self,
        program: &Program,
        roots: impl IntoIterator<Item = u32>,
        by_value: &[u8],
    ) -> Result<()> {
        if !self
            .natives
            .as_ref()
            .is_some_and(|n| n.functions == program.functions)
        {
            self.natives = Some(Natives::new(program));
        }
        let mut natives = self.natives.take().expect("set above");
        let batch = natives.reached(program, roots, by_value);
        let done = self.compile_batch(program, &mut natives, &batch);
        // A batch that failed may have declared functions it never
        // defined: the next need starts a fresh set, under new names.
        self.natives = done.is_ok().then_some(natives);
        done
    }

    /// Compiles the functions of `batch` (none compiled yet) into the
    /// natives' module and adds them to `natives`.
    fn compile_batch(
        &mut self,
        program: &Program,
        natives: &mut Natives,
        batch: &[usize],
    ) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let number = self.generation;
        self.generation += 1;
        let start = Instant::now();
        let mut module = self.memory.lock();
        let failed = |f: usize, e: &dyn fmt::Display| Error::Codegen {
            head: format!("native function f{f}"),
            msg: e.to_string(),
        };
        // Declare all first, then define: (mutually) recursive calls need
        // their callee's id before its body exists.
        for &f in batch {
            natives.batch[f] = number;
            let sig = fcodegen::native_signature(&*self.isa, program.functions[f].params);
            let id = module
                .declare_function(&natives.name(f), Linkage::Local, &sig)
                .map_err(|e| failed(f, &e))?;
            natives.ids[f] = Some(id);
        }
        // What lowering may call natively: functions with native code now
        // (any other call is one to a function without: see `native`).
        let kinds: Vec<Native> = (0..natives.kinds.len())
            .map(|f| match natives.ids[f] {
                Some(_) => natives.kinds[f],
                None => Native::No,
            })
            .collect();
        // Lower all first: a caller inlines its small callees' bodies (of
        // this batch, or kept from earlier ones).
        let mut lowered = natives.small.clone();
        for &f in batch {
            let mut declare = declarer(&mut module, Some(&natives.ids));
            lowered[f] = Some(fcodegen::lower_function(
                program,
                f as u32,
                &kinds,
                &natives.targets[f],
                &*self.isa,
                &mut self.fctx,
                &mut declare,
                self.metering,
                trampolines(),
            )?);
        }
        let by_id: HashMap<u32, usize> = natives
            .ids
            .iter()
            .enumerate()
            .filter_map(|(f, id)| Some((id.as_ref()?.as_u32(), f)))
            .collect();
        for &f in batch {
            let id = natives.ids[f].expect("declared above");
            let (func, _) = lowered[f].clone().expect("lowered above");
            self.ctx.clear();
            self.ctx.func = func;
            let mut inliner = SmallCallees::new(&lowered, &by_id);
            self.ctx.inline(&mut inliner).map_err(|e| failed(f, &e))?;
            let inlined = inliner.inlined;
            natives.inlined += inlined.len();
            strength::reduce(&mut self.ctx.func, &*self.isa);
            let mut text = self
                .dump_clif
                .then(|| format!("; native function f{f}\n{}", self.ctx.func.display()));
            self.ctx.set_disasm(text.is_some());
            let defined = module.define_function(id, &mut self.ctx);
            if let Some(text) = &mut text {
                dump::machine_code(text, &self.ctx);
            }
            natives.dumps[f] = text;
            if let Some(c) = self.ctx.compiled_code() {
                let bytes = frame_bytes(c.code_buffer()).unwrap_or_else(|| {
                    // The inlined bodies' registers live in this frame too.
                    std::iter::once(f)
                        .chain(inlined)
                        .map(|g| estimated_frame_bytes(&program.functions[g]))
                        .sum()
                });
                natives.frame = natives.frame.max(bytes);
            }
            module.clear_context(&mut self.ctx);
            defined.map_err(|e| failed(f, &e))?;
        }
        module.finalize_definitions().map_err(|e| failed(0, &e))?;
        let mut symbols = HashMap::clone(&natives.symbols);
        for &f in batch {
            let id = natives.ids[f].expect("declared above");
            let addr = module.get_finalized_function(id);
            symbols.insert(natives.name(f), addr as usize);
            natives.table[f][0].store(addr as u64, Ordering::Release);
            let small = lowered[f].take().filter(|(_, size)| inlinable(*size));
            natives.leaves[f] = small.clone().filter(|(b, _)| b.dfg.ext_funcs.is_empty());
            natives.small[f] = small;
        }
        natives.symbols = Arc::new(symbols);
        let instructions = batch.iter().map(|&f| program.functions[f].code.len());
        self.natives_pending
            .add(batch.len(), instructions.sum(), start.elapsed());
        Ok(())
    }
}
