//! Basic blocks and the weighted control-flow graph (WCFG) of a function.
//!
//! Profiles see only arcs that leave a branch (`Edge` tuples: conditional
//! branches, `loop` and `jtab`, taken and fall-through both). The other arcs
//! (a fall-through into a leader, a `jmp`, the return point after a call)
//! have no instruction that could report them; as Conte et al. propose
//! (002, section 3.1, solution 1) their weights are recovered from "the
//! structure of the static graph" by flow conservation: what enters a block
//! leaves it. Node weights are then the maximum of flow in and flow out
//! (section 3.4), the estimate the paper found most accurate for sampled
//! profiles, where the two need not agree.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use toyvm_vm::isa::{Instr, Op};
use toyvm_vm::{Function, Pc, Program};

use crate::{Error, Result};

/// Edge counts as profiles report them: `(branch pc, next pc) -> count`.
pub type EdgeCounts = HashMap<(Pc, Pc), u64>;

/// A block's index in [`Cfg::blocks`].
pub type BlockId = usize;

/// Instructions `start .. end` of one function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BasicBlock {
    /// The offset of the block's first instruction (its leader).
    pub start: u32,
    /// The offset one past the block's last instruction (exclusive).
    pub end: u32,
}

impl BasicBlock {
    /// Instructions in the block (never zero).
    pub fn len(&self) -> usize {
        (self.end - self.start) as usize
    }

    /// Always false: blocks hold at least one instruction. (For clippy's
    /// `len_without_is_empty`.)
    pub fn is_empty(&self) -> bool {
        self.end == self.start
    }

    /// The offset of the block's last instruction.
    pub fn last(&self) -> u32 {
        self.end - 1
    }
}

/// Whether `i` ends a basic block.
fn ends_block(i: &Instr) -> bool {
    let op = i.op();
    op.is_conditional_branch()
        || matches!(
            op,
            Op::Jtab | Op::Jmp | Op::Call | Op::Calli | Op::Ret | Op::Halt | Op::Trap
        )
}

/// Whether the profile reports the arcs leaving `i` (it emits Edge tuples).
pub fn is_profiled_branch(i: &Instr) -> bool {
    i.op().is_conditional_branch() || i.op() == Op::Jtab
}

/// The static control-flow graph of one function.
#[derive(Clone, Debug)]
pub struct Cfg {
    func: u32,
    blocks: Vec<BasicBlock>,
    /// For every instruction offset, the block containing it.
    block_of: Vec<BlockId>,
    succs: Vec<Vec<BlockId>>,
    preds: Vec<Vec<BlockId>>,
    profiled: Vec<bool>,
    /// Arcs numbered block by block in [`Cfg::succs`] order: block `b`'s
    /// are `arc_start[b] .. arc_start[b + 1]` (`n + 1` entries).
    arc_start: Vec<usize>,
    /// Per arc, its source and its target.
    arcs: Vec<(BlockId, BlockId)>,
    /// Per block, the numbers of the arcs entering it.
    in_arcs: Vec<Vec<usize>>,
}

impl Cfg {
    /// Splits `f` (function number `func`) into basic blocks. Leaders are
    /// offset 0, every branch, `jmp`, `loop` and jump-table target, and the
    /// instruction after any branch, `jtab`, call, `ret` or `halt`.
    pub fn new(func: u32, f: &Function) -> Cfg {
        let len = f.code.len();
        let mut leader = vec![false; len + 1];
        if len > 0 {
            leader[0] = true;
        }
        for (at, i) in f.code.iter().enumerate() {
            if ends_block(i) {
                leader[at + 1] = true;
            }
            for t in static_targets(f, i) {
                if (t as usize) < len {
                    leader[t as usize] = true;
                }
            }
        }
        let mut blocks = Vec::new();
        let mut block_of = vec![0; len];
        for at in 0..len {
            if leader[at] {
                blocks.push(BasicBlock {
                    start: at as u32,
                    end: at as u32 + 1,
                });
            }
            let b = blocks.len() - 1;
            blocks[b].end = at as u32 + 1;
            block_of[at] = b;
        }
        let mut succs = vec![Vec::new(); blocks.len()];
        let mut profiled = vec![false; blocks.len()];
        for (b, blk) in blocks.iter().enumerate() {
            let last = &f.code[blk.last() as usize];
            profiled[b] = is_profiled_branch(last);
            let mut targets: Vec<u32> = static_targets(f, last);
            if last.op().falls_through() {
                targets.push(blk.end);
            }
            for t in targets {
                if (t as usize) < len {
                    let s = block_of[t as usize];
                    if !succs[b].contains(&s) {
                        succs[b].push(s);
                    }
                }
            }
        }
        let mut preds = vec![Vec::new(); blocks.len()];
        let mut in_arcs = vec![Vec::new(); blocks.len()];
        let mut arc_start = Vec::with_capacity(blocks.len() + 1);
        let mut arcs = Vec::new();
        for (b, ss) in succs.iter().enumerate() {
            arc_start.push(arcs.len());
            for &s in ss {
                preds[s].push(b);
                in_arcs[s].push(arcs.len());
                arcs.push((b, s));
            }
        }
        arc_start.push(arcs.len());
        Cfg {
            func,
            blocks,
            block_of,
            succs,
            preds,
            profiled,
            arc_start,
            arcs,
            in_arcs,
        }
    }

    /// The function index.
    pub fn func(&self) -> u32 {
        self.func
    }

    /// The basic blocks, in code order (by start offset), covering every
    /// instruction once; a [`BlockId`] indexes this slice.
    pub fn blocks(&self) -> &[BasicBlock] {
        &self.blocks
    }

    /// The block containing instruction `offset`.
    pub fn block_at(&self, offset: u32) -> Option<BlockId> {
        self.block_of.get(offset as usize).copied()
    }

    /// The block starting exactly at `offset`.
    pub fn block_starting_at(&self, offset: u32) -> Option<BlockId> {
        self.block_at(offset)
            .filter(|&b| self.blocks[b].start == offset)
    }

    /// Successors, in a fixed order (branch targets, then fall-through).
    pub fn succs(&self, b: BlockId) -> &[BlockId] {
        &self.succs[b]
    }

    /// Predecessors of block `b`: each block with an arc to it, once, in
    /// block order.
    pub fn preds(&self, b: BlockId) -> &[BlockId] {
        &self.preds[b]
    }

    /// Whether the block's exit arcs are measured by Edge tuples.
    pub fn is_profiled(&self, b: BlockId) -> bool {
        self.profiled[b]
    }
}

/// Branch, `jmp`, `loop` and jump-table targets of `i` (not fall-through).
fn static_targets(f: &Function, i: &Instr) -> Vec<u32> {
    match *i {
        Instr::Jtab { t, .. } => f.tables.get(t as usize).cloned().unwrap_or_default(),
        _ => i.label().into_iter().collect(),
    }
}

/// A [`Cfg`] with arc and node weights.
#[derive(Clone, Debug)]
pub struct WeightedCfg {
    cfg: Arc<Cfg>,
    /// Per arc (numbered as in [`Cfg`]), its target and weight: block
    /// `b`'s successors in the order of [`Cfg::succs`].
    out: Vec<(BlockId, u64)>,
    /// Per arc, whether its weight was recovered by flow conservation
    /// rather than measured.
    recovered: Vec<bool>,
    weights: Vec<u64>,
}

impl WeightedCfg {
    /// The WCFG of function `func` of `program` from `edges` (arcs of other
    /// functions and arcs that are not in the static graph are ignored: a
    /// sampled or hashed profile may report them).
    pub fn build(program: &Program, func: u32, edges: &EdgeCounts) -> Result<WeightedCfg> {
        let f = program
            .functions
            .get(func as usize)
            .ok_or(Error::NoSuchFunction {
                func,
                count: program.functions.len(),
            })?;
        Ok(WeightedCfg::from_cfg(Cfg::new(func, f), edges))
    }

    /// Weighs an existing CFG with `edges` (a shared one is not copied).
    pub fn from_cfg(cfg: impl Into<Arc<Cfg>>, edges: &EdgeCounts) -> WeightedCfg {
        let cfg: Arc<Cfg> = cfg.into();
        let n = cfg.blocks.len();
        let func = cfg.func;
        let arcs_of = |b: BlockId| cfg.arc_start[b]..cfg.arc_start[b + 1];
        // Per arc, `None` until known: measured (profiled blocks), or
        // recovered. Flat arrays: planning weighs every candidate function
        // at every interval end.
        let mut w: Vec<Option<u64>> = cfg
            .arcs
            .iter()
            .map(|&(b, _)| cfg.profiled[b].then_some(0))
            .collect();
        // A profile holds few edges and a function many arcs: each of the
        // function's edges finds its arc (one at most: successors are
        // distinct), rather than every arc looking itself up.
        for (&(from, to), &count) in edges {
            if from.func() != func || to.func() != func {
                continue;
            }
            let Some(b) = cfg.block_at(from.offset()).filter(|&b| cfg.profiled[b]) else {
                continue;
            };
            if cfg.blocks[b].last() != from.offset() {
                continue;
            }
            if let Some(a) = (cfg.arc_start[b]..cfg.arc_start[b + 1])
                .find(|&a| cfg.blocks[cfg.arcs[a].1].start == to.offset())
            {
                w[a] = Some(count);
            }
        }
        let recovered: Vec<bool> = w.iter().map(Option::is_none).collect();
        // Flow conservation, to a fixpoint. Block 0 is exempt on the way in:
        // calls enter it, and no arc records that.
        let mut changed = true;
        while changed {
            changed = false;
            for b in 1..n {
                let ins = &cfg.in_arcs[b];
                let known_in: Option<u64> = ins.iter().map(|&a| w[a]).sum();
                let out = arcs_of(b);
                // Forward: a block's single unmeasured exit carries its inflow.
                if out.len() == 1
                    && w[out.start].is_none()
                    && let Some(flow) = known_in
                {
                    w[out.start] = Some(flow);
                    changed = true;
                }
                // Backward: with the outflow known, one unknown inflow arc
                // carries the rest.
                let known_out: Option<u64> = w[out.clone()].iter().copied().sum();
                if !out.is_empty()
                    && let Some(flow) = known_out
                {
                    let mut unknown = ins.iter().copied().filter(|&a| w[a].is_none());
                    if let (Some(a), None) = (unknown.next(), unknown.next()) {
                        let rest: u64 = ins.iter().filter_map(|&a| w[a]).sum();
                        w[a] = Some(flow.saturating_sub(rest));
                        changed = true;
                    }
                }
            }
        }
        // What conservation cannot pin down (e.g. a chain hanging off the
        // entry block) gets the lower bound its source's known inflow gives.
        for b in 0..n {
            if w[arcs_of(b)].iter().any(Option::is_none) {
                let flow: u64 = cfg.in_arcs[b].iter().filter_map(|&a| w[a]).sum();
                for a in arcs_of(b) {
                    w[a].get_or_insert(flow);
                }
            }
        }
        let out: Vec<(BlockId, u64)> = cfg
            .arcs
            .iter()
            .zip(&w)
            .map(|(&(_, s), w)| (s, w.unwrap_or(0)))
            .collect();
        let mut wcfg = WeightedCfg {
            cfg,
            out,
            recovered,
            weights: Vec::new(),
        };
        wcfg.weights = (0..n)
            .map(|b| wcfg.flow_in(b).max(wcfg.flow_out(b)))
            .collect();
        wcfg
    }

    /// The static graph these weights are on.
    pub fn cfg(&self) -> &Cfg {
        &self.cfg
    }

    /// The node weight: max(flow in, flow out).
    pub fn weight(&self, b: BlockId) -> u64 {
        self.weights[b]
    }

    /// Successors with arc weights.
    pub fn out_arcs(&self, b: BlockId) -> &[(BlockId, u64)] {
        &self.out[self.cfg.arc_start[b]..self.cfg.arc_start[b + 1]]
    }

    /// The weight of arc `from -> to` (0 when there is no such arc).
    pub fn arc(&self, from: BlockId, to: BlockId) -> u64 {
        self.out_arcs(from)
            .iter()
            .find(|&&(s, _)| s == to)
            .map_or(0, |&(_, w)| w)
    }

    /// The sum of the weights of the arcs entering block `b` (calls into
    /// block 0 are not arcs and are not counted).
    pub fn flow_in(&self, b: BlockId) -> u64 {
        self.cfg.in_arcs[b].iter().map(|&a| self.out[a].1).sum()
    }

    /// The sum of the weights of the arcs leaving block `b` (zero for a
    /// block ending in `ret` or `halt`).
    pub fn flow_out(&self, b: BlockId) -> u64 {
        self.out_arcs(b).iter().map(|&(_, w)| w).sum()
    }
}

/// One line per block: `START..END w=WEIGHT -> SUCC:ARC ...`, successors by
/// start offset, recovered (unmeasured) arcs marked `~`.
impl fmt::Display for WeightedCfg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (b, blk) in self.cfg.blocks.iter().enumerate() {
            write!(f, "{}..{} w={}", blk.start, blk.end, self.weights[b])?;
            if !self.out_arcs(b).is_empty() {
                f.write_str(" ->")?;
            }
            let first = self.cfg.arc_start[b];
            for (k, &(s, w)) in self.out_arcs(b).iter().enumerate() {
                let mark = if self.recovered[first + k] { "~" } else { "" };
                write!(f, " {}:{mark}{w}", self.cfg.blocks[s].start)?;
            }
            writeln!(f)?;
        }
        Ok(())
    }
}

/// Edge counts from a tuple stream (for tests and offline tools).
pub fn edge_counts(tuples: &[toyvm_vm::Tuple]) -> EdgeCounts {
    let mut m = EdgeCounts::new();
    for t in tuples.iter().filter(|t| t.kind == toyvm_vm::Kind::Edge) {
        *m.entry((Pc(t.a), Pc(t.b))).or_insert(0) += 1;
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use toyvm_vm::asm::assemble;
    use toyvm_vm::interp;

    use crate::testing::LOOP_NEST as NESTED;

    fn profile(src: &str, args: &[i64]) -> (Program, EdgeCounts) {
        let p = assemble(src).unwrap();
        let mut tuples = Vec::new();
        let input = interp::Input { args, file: &[] };
        interp::run_with_sink(&p, input, &mut Vec::new(), &mut tuples, &Default::default())
            .unwrap();
        let edges = edge_counts(&tuples);
        (p, edges)
    }

    #[test]
    fn leaders_split_blocks() {
        let p = assemble(NESTED).unwrap();
        let cfg = Cfg::new(0, &p.functions[0]);
        let spans: Vec<(u32, u32)> = cfg.blocks().iter().map(|b| (b.start, b.end)).collect();
        assert_eq!(spans, [(0, 2), (2, 3), (3, 7), (7, 8), (8, 10)]);
        assert_eq!(cfg.succs(2), [2, 3]);
        assert_eq!(cfg.preds(1), [0, 3]);
        assert!(cfg.is_profiled(2) && !cfg.is_profiled(1));
        assert_eq!(cfg.block_at(5), Some(2));
        assert_eq!(cfg.block_starting_at(5), None);
    }

    #[test]
    fn unconditional_arcs_are_recovered_by_flow_conservation() {
        let (p, edges) = profile(NESTED, &[10]);
        let w = WeightedCfg::build(&p, 0, &edges).unwrap();
        // The entry's fall-through and the outer header's fall-through are
        // never reported; conservation recovers both exactly.
        assert_eq!(
            w.to_string(),
            "\
0..2 w=1 -> 2:~1
2..3 w=10 -> 3:~10
3..7 w=100 -> 3:90 7:10
7..8 w=10 -> 2:9 8:1
8..10 w=1
"
        );
    }

    #[test]
    fn node_weight_is_max_of_flow_in_and_out_when_samples_disagree() {
        let p = assemble(NESTED).unwrap();
        // A sampled profile where the inner block's arcs sum to more than
        // what flows in.
        let e = |a: u32, b: u32| (Pc::new(0, a), Pc::new(0, b));
        let edges: EdgeCounts = [(e(6, 3), 500), (e(6, 7), 40), (e(7, 2), 30), (e(7, 8), 2)]
            .into_iter()
            .collect();
        let w = WeightedCfg::from_cfg(Cfg::new(0, &p.functions[0]), &edges);
        let inner = w.cfg().block_starting_at(3).unwrap();
        assert_eq!(w.flow_out(inner), 540);
        assert_eq!(w.weight(inner), w.flow_in(inner).max(540));
        assert_eq!(w.arc(inner, inner), 500);
    }

    #[test]
    fn jmp_and_jtab_arcs() {
        let src = "
            .func main(n)
                .reg i, k, s
                li i, 0
                li s, 0
            top:
                remi k, i, 3
                jtab k, [a, b]
                jmp c
            a:  addi s, s, 1
                jmp next
            b:  addi s, s, 2
                jmp next
            c:  addi s, s, 3
            next:
                addi i, i, 1
                blt i, n, top
                ret s
            .end";
        let (p, edges) = profile(src, &[30]);
        let w = WeightedCfg::build(&p, 0, &edges).unwrap();
        assert_eq!(
            w.to_string(),
            "\
0..2 w=1 -> 2:~1
2..4 w=30 -> 5:10 7:10 4:10
4..5 w=10 -> 9:~10
5..7 w=10 -> 10:~10
7..9 w=10 -> 10:~10
9..10 w=10 -> 10:~10
10..12 w=30 -> 2:29 12:1
12..13 w=1
"
        );
    }

    #[test]
    fn unknown_functions_are_an_error_and_foreign_arcs_are_ignored() {
        let (p, mut edges) = profile(NESTED, &[3]);
        assert!(matches!(
            WeightedCfg::build(&p, 7, &edges),
            Err(Error::NoSuchFunction { func: 7, .. })
        ));
        edges.insert((Pc::new(0, 6), Pc::new(0, 9)), 1_000_000);
        edges.insert((Pc::new(3, 6), Pc::new(3, 3)), 1_000_000);
        let w = WeightedCfg::build(&p, 0, &edges).unwrap();
        assert_eq!(w.weight(2), 9);
    }
}
