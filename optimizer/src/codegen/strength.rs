//! Strength reduction of multiplications by induction variables (Allen,
//! Cocke and Kennedy's classic loop optimization), on the Cranelift IR of a
//! region or a native function before Cranelift compiles it.
//!
//! A loop head is a block whose parameters carry the registers around the
//! loop. A product `v = imul p, x` of two of the head's parameters (or of
//! one and a constant, or a value defined before the loop) is worth carrying around the loop itself when some
//! back edge passes `p + c` for `p` (a constant step `c`) and `x`
//! unchanged: on that edge the product's next value is `v + c*x`, an
//! addition instead of a multiplication. The head gets a new parameter `q`
//! that every edge into it sets to the product of the values it passes
//! for `p` and `x`: by the step's addition on such back edges, by a
//! multiplication in the branching block on every other edge (the loop's
//! entry, an outer loop's back edge). `q` then equals `p * x` wherever `p`
//! and `x` are in scope, and `v` becomes an alias of `q`. Only where every
//! trip around the loop computes the product already (its block dominates
//! every back edge): a product on some paths of the loop only would trade a
//! multiplication on those trips for an addition on every trip.
//!
//! Exact, not approximate: the VM's `mul` and `add` wrap modulo 2^64, and
//! `(p + c) * x = p*x + c*x` holds in that ring, so every value the loop
//! computes, and every register a side exit writes back, is unchanged.
//!
//! `loop`'s `(i * j) % 7` over `j` is the case that motivated it: its inner
//! loop loses a multiply and a register move (`imul` pins `rax`) per trip.

use cranelift_codegen::cursor::{Cursor, FuncCursor};
use cranelift_codegen::dominator_tree::DominatorTree;
use cranelift_codegen::flowgraph::ControlFlowGraph;
use cranelift_codegen::ir::{
    self, Block, BlockArg, Inst, InstBuilder, InstructionData, Opcode, Value, ValueDef, types,
};
use cranelift_codegen::isa::TargetIsa;

/// The other factor of a product of a head's parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Factor {
    /// The head's parameter with this index.
    Param(usize),
    /// A constant.
    Const(i64),
    /// A value defined before the loop (in a block that strictly
    /// dominates the head), the same on every edge.
    Invariant(Value),
}

/// A factor as an edge into the head passes it.
#[derive(Clone, Copy, Debug)]
enum Operand {
    Value(Value),
    Const(i64),
}

/// What an edge into the head passes for the new parameter.
#[derive(Clone, Copy, Debug)]
enum Next {
    /// The parameter plus `step` times the other factor.
    Step(i64, Operand),
    /// The product of the values passed for both factors.
    Product(Value, Operand),
}

/// A product to reduce.
#[derive(Debug)]
struct Product {
    inst: Inst,
    head: Block,
    /// Per edge into the head: the branch, which of its destinations, and
    /// what the edge passes for the new parameter.
    edges: Vec<(Inst, usize, Next)>,
}

/// Reduces every product of an induction variable in `func`; how many.
///
/// The rewritten function is verified (lowering verified the input, and
/// `define_function` does not verify again): should the rewrite ever be
/// malformed, the function is put back as it was and nothing is reduced,
/// so a bug here costs the optimization, never a crash in Cranelift or
/// wrong code. Debug builds (the tests) fail loudly instead.
pub(crate) fn reduce(func: &mut ir::Function, isa: &dyn TargetIsa) -> usize {
    let cfg = ControlFlowGraph::with_function(func);
    let domtree = DominatorTree::with_function(func, &cfg);
    let mut products = Vec::new();
    for block in func.layout.blocks() {
        for inst in func.layout.block_insts(block) {
            if let Some(p) = product(func, &cfg, &domtree, inst) {
                products.push(p);
            }
        }
    }
    if products.is_empty() {
        return 0;
    }
    let before = func.clone();
    // Rewriting one product appends a parameter to its head and an
    // argument to the edges into it: the parameter indices and edges that
    // another product found stay valid, and no edge is added or removed.
    for p in &products {
        rewrite(func, p);
    }
    if let Err(errors) = cranelift_codegen::verify_function(func, isa) {
        debug_assert!(
            false,
            "strength reduction broke the IR: {}",
            cranelift_codegen::print_errors::pretty_verifier_error(func, None, errors)
        );
        *func = before;
        return 0;
    }
    products.len()
}

/// `inst` as a product worth reducing, with what each edge into its head
/// passes for the new parameter.
fn product(
    func: &ir::Function,
    cfg: &ControlFlowGraph,
    domtree: &DominatorTree,
    inst: Inst,
) -> Option<Product> {
    let dfg = &func.dfg;
    let InstructionData::Binary {
        opcode: Opcode::Imul,
        args,
    } = dfg.insts[inst]
    else {
        return None;
    };
    let v = *dfg.inst_results(inst).first()?;
    if dfg.value_type(v) != types::I64 {
        return None;
    }
    let [a, b] = args.map(|x| dfg.resolve_aliases(x));
    let entry = func.layout.entry_block()?;
    let computed_in = func.layout.inst_block(inst)?;
    // Either order of the factors; the first that reduces.
    [(a, b), (b, a)].into_iter().find_map(|(p, x)| {
        let ValueDef::Param(head, pi) = dfg.value_def(p) else {
            return None;
        };
        if head == entry {
            return None;
        }
        let factor = match dfg.value_def(x) {
            ValueDef::Param(h, xi) if h == head && xi != pi => Factor::Param(xi),
            _ => match constant(func, x) {
                Some(k) => Factor::Const(k),
                None => {
                    let defined_in = match dfg.value_def(x) {
                        ValueDef::Param(b, _) => b,
                        ValueDef::Result(i, _) => func.layout.inst_block(i)?,
                        _ => return None,
                    };
                    // Then it is defined before the branch of every edge
                    // into the head, too.
                    if defined_in == head || !domtree.block_dominates(defined_in, head) {
                        return None;
                    }
                    Factor::Invariant(x)
                }
            },
        };
        let mut edges = Vec::new();
        let mut steps_back = false;
        for (branch, from) in cfg.pred_iter(head).map(|p| (p.inst, p.block)) {
            if edges.iter().any(|&(b, _, _)| b == branch) {
                continue; // a `brif` with both arms into the head, seen
            }
            let data = &dfg.insts[branch];
            if !matches!(
                data,
                InstructionData::Jump { .. } | InstructionData::Brif { .. }
            ) {
                return None;
            }
            // Worth it only if every trip around the loop computes the
            // product now: else a sum per trip would replace a product on
            // some trips only.
            let back = domtree.block_dominates(head, from);
            if back && !domtree.block_dominates(computed_in, from) {
                return None;
            }
            let dests = data.branch_destination(&dfg.jump_tables, &dfg.exception_tables);
            for (d, call) in dests.iter().enumerate() {
                if call.block(&dfg.value_lists) != head {
                    continue;
                }
                let arg = |i: usize| match call.args(&dfg.value_lists).nth(i)? {
                    BlockArg::Value(v) => Some(dfg.resolve_aliases(v)),
                    _ => None,
                };
                let pa = arg(pi)?;
                let xa = match factor {
                    Factor::Param(xi) => Operand::Value(arg(xi)?),
                    Factor::Const(k) => Operand::Const(k),
                    Factor::Invariant(v) => Operand::Value(v),
                };
                let unchanged = match xa {
                    Operand::Value(v) => v == x,
                    Operand::Const(_) => true,
                };
                let next = match step(func, pa, p) {
                    Some(c) if unchanged => {
                        steps_back |= back;
                        Next::Step(c, xa)
                    }
                    _ => Next::Product(pa, xa),
                };
                edges.push((branch, d, next));
            }
        }
        steps_back.then_some(Product { inst, head, edges })
    })
}

/// `c` when `v` is `p + c` (or `p - (-c)`) for a constant `c`.
fn step(func: &ir::Function, v: Value, p: Value) -> Option<i64> {
    let dfg = &func.dfg;
    let ValueDef::Result(inst, 0) = dfg.value_def(v) else {
        return None;
    };
    let InstructionData::Binary { opcode, args } = dfg.insts[inst] else {
        return None;
    };
    match (opcode, args.map(|x| dfg.resolve_aliases(x))) {
        (Opcode::Iadd, [s, t]) if s == p => constant(func, t),
        (Opcode::Iadd, [s, t]) if t == p => constant(func, s),
        (Opcode::Isub, [s, t]) if s == p => constant(func, t).map(i64::wrapping_neg),
        _ => None,
    }
}

/// The constant `v` is, if it is an `iconst`.
fn constant(func: &ir::Function, v: Value) -> Option<i64> {
    let ValueDef::Result(inst, 0) = func.dfg.value_def(v) else {
        return None;
    };
    match func.dfg.insts[inst] {
        InstructionData::UnaryImm {
            opcode: Opcode::Iconst,
            imm,
        } => Some(imm.bits()),
        _ => None,
    }
}

/// Gives the head its new parameter, each edge its argument, and makes the
/// product an alias of the parameter.
fn rewrite(func: &mut ir::Function, p: &Product) {
    let q = func.dfg.append_block_param(p.head, types::I64);
    for &(branch, d, next) in &p.edges {
        let mut pos = FuncCursor::new(func).at_inst(branch);
        let mut operand = |o: Operand| match o {
            Operand::Value(v) => v,
            Operand::Const(k) => pos.ins().iconst(types::I64, k),
        };
        let arg = match next {
            Next::Step(1, x) => {
                let x = operand(x);
                pos.ins().iadd(q, x)
            }
            Next::Step(c, Operand::Const(k)) => {
                let step = pos.ins().iconst(types::I64, c.wrapping_mul(k));
                pos.ins().iadd(q, step)
            }
            Next::Step(c, Operand::Value(x)) => {
                let c = pos.ins().iconst(types::I64, c);
                let step = pos.ins().imul(x, c);
                pos.ins().iadd(q, step)
            }
            Next::Product(a, x) => {
                let x = operand(x);
                pos.ins().imul(a, x)
            }
        };
        let dfg = &mut func.dfg;
        let dests = dfg.insts[branch]
            .branch_destination_mut(&mut dfg.jump_tables, &mut dfg.exception_tables);
        dests[d].append_argument(arg, &mut dfg.value_lists);
    }
    let v = func.dfg.inst_results(p.inst)[0];
    func.layout.remove_inst(p.inst);
    func.dfg.clear_results(p.inst);
    func.dfg.change_to_alias(v, q);
}
