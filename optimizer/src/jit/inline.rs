//! Inlining small native functions with Cranelift's inliner
//! (`cranelift_codegen::inline`): the cache directs it, per call, to inline
//! a callee whose IR is small, into native callers (one level deep) and,
//! for callees that call nothing, into regions.

use std::collections::HashMap;

use cranelift_codegen::ir;

/// The CLIF instructions a native callee may have to be inlined into its
/// callers (one level: an inlined body's own calls stay calls), and the
/// most a caller takes in all. fib's body is under 64, so its two calls are
/// both inlined: `toyvm run programs/fib.tasm 32 --profile multihash`, min
/// of 15 alternated runs, 20.1 ms without inlining, 16.4 ms with one call
/// inlined, 14.7 ms with both, 15.4 ms inlining two levels deep. A sort
/// specialized for its comparator (see `codegen::func::lower_function`'s
/// call targets) calls it from six sites, and a comparator with bounds
/// checks on two records is 55-100 instructions: at 64 and 256, qsort.wasm's
/// descending comparator was never inlined and the ascending one at four
/// sites of six; at 128 and 768 every site inlines both, 0.96 [0.91-0.98]
/// of the time (`qsort 600000`, 15 alternated runs), the other C programs
/// within 0.98-1.01.
const INLINE_MAX_INSTS: usize = 128;
const INLINE_BUDGET: usize = 768;

/// Cranelift's inliner directed to inline direct calls of small natives
/// into a native caller, or into a region (given only the natives that
/// call nothing: their IR names no function of the natives' module, which
/// the region's module does not know). Inlining CLIF is exact: the callee's depth check,
/// trap record, fuel and `trapped` result are its own instructions, now
/// run in the caller's frame (one machine frame then serves two call
/// depths, so the frame-per-depth bound of the JIT stack still holds with
/// the larger frame).
pub(super) struct SmallCallees<'a> {
    /// Per function: its native function's IR, before optimization, and
    /// its size (see [`inlinable`]).
    lowered: &'a [Option<(ir::Function, usize)>],
    /// Function index by module function id.
    by_id: &'a HashMap<u32, usize>,
    /// The functions inlined so far (with repeats).
    pub(super) inlined: Vec<usize>,
    /// Instructions the caller may still take in.
    budget: usize,
}

impl<'a> SmallCallees<'a> {
    pub(super) fn new(
        lowered: &'a [Option<(ir::Function, usize)>],
        by_id: &'a HashMap<u32, usize>,
    ) -> Self {
        SmallCallees {
            lowered,
            by_id,
            inlined: Vec::new(),
            budget: INLINE_BUDGET,
        }
    }
}

/// Whether a native function's IR is small enough to inline.
///
/// A native function's size here is its instructions but those of its
/// calls' paths to the interpreter at the stack limit (cold, and about as
/// many per call as the rest of a small function: see
/// `codegen::func::limit`), as `lower_function` counts them.
pub(super) fn inlinable(size: usize) -> bool {
    size <= INLINE_MAX_INSTS
}

impl cranelift_codegen::inline::Inline for SmallCallees<'_> {
    fn inline(
        &mut self,
        caller: &ir::Function,
        _: ir::Inst,
        _: ir::Opcode,
        callee: ir::FuncRef,
        _: &[ir::Value],
    ) -> cranelift_codegen::inline::InlineCommand<'_> {
        use cranelift_codegen::inline::InlineCommand;
        let ir::ExternalName::User(name) = caller.dfg.ext_funcs[callee].name else {
            return InlineCommand::KeepCall;
        };
        let name = &caller.params.user_named_funcs()[name];
        let body = (name.namespace == 0)
            .then(|| self.by_id.get(&name.index))
            .flatten()
            .and_then(|&g| Some((g, self.lowered.get(g)?.as_ref()?)));
        match body {
            Some((g, (body, size))) if inlinable(*size) && self.budget >= *size => {
                self.budget -= *size;
                self.inlined.push(g);
                InlineCommand::Inline {
                    callee: std::borrow::Cow::Borrowed(body),
                    visit_callee: false,
                }
            }
            _ => InlineCommand::KeepCall,
        }
    }
}
