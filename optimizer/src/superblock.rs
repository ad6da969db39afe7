//! Superblock formation, IMPACT style (Hwu et al.; Conte et al. 002,
//! section 3.5 and Figure 5).
//!
//! 1. Seed a trace at the heaviest block not yet in a trace.
//! 2. Grow it forward along the most likely successor while that arc's
//!    probability (arc weight / node weight) is at least the threshold
//!    (0.6, the value the paper's experiments use), the successor is in no
//!    trace yet, and the size cap holds. Growth stops at a back edge to the
//!    trace head, which becomes a jump back to the region head: the loop
//!    stays in compiled code.
//! 3. Remove side entrances by tail duplication: a dynamic optimizer never
//!    rewrites the bytecode, so the region is a copy of its trace and is
//!    entered only at its head. A trace block other than the head that has
//!    off-trace predecessors is thereby duplicated (marked `dup` in the
//!    region IR); those predecessors keep reaching the original block in the
//!    interpreter, exactly the `D` / `D'` split of the paper's Figure 5.
//!
//! 4. Grow a trace *tree* (as trace-based JITs do; Gal and Franz's trace
//!    trees): from each block of the trace, an off-trace arc carrying at
//!    least [`SuperblockConfig::arm_share`] of the head's weight starts an
//!    *arm* grown along the likeliest arcs; an arm is kept when it gets
//!    back to the head (or to another arm) within the size cap, and its
//!    own off-path arcs may start further arms. An arm starts at a
//!    [`Target::Block`] and is itself tail-duplicated code, entered only
//!    from inside the region. This goes beyond the paper: IMPACT leaves the
//!    off-trace paths to other superblocks, which a static compiler links
//!    with direct jumps, but here leaving a region costs a side exit into
//!    the interpreter and a region entry to come back. Without arms a loop
//!    whose body forks evenly (a bytecode interpreter's `jtab` dispatch, a
//!    50/50 diamond) never stays in compiled code. `arm_share = 0` gives
//!    plain superblocks.
//!
//! Where this differs from a static compiler: growth also stops after a
//! block that ends in a call, `ret` or `halt`, or at an instruction compiled
//! code hands to the interpreter (`putn`, `putc`, `inlen`), since nothing
//! after it is reachable inside the region. The exception is a call that
//! compiled code can make natively (a `call` to a closed or bailing function,
//! see `crate::native`, or a monomorphic `calli` to one, as the caller's
//! [`NativeCallee`] decides):
//! it becomes a [`Step::Call`] and the trace goes on past it, so a loop that
//! calls a small closed function stays in one region. A polymorphic `calli`
//! whose profiled targets are closed becomes a [`Step::Dispatch`] among them
//! (any other function value calls the interpreter). Any other call the
//! caller picks becomes a call into the interpreter ([`Step::Interpreted`]),
//! which traces go on past too.

use toyvm_vm::Function;
use toyvm_vm::isa::{Instr, Op};

use crate::cfg::{BlockId, WeightedCfg};
use crate::region::{Region, Step, Target};

/// Knobs of superblock formation.
#[derive(Clone, Debug, PartialEq)]
pub struct SuperblockConfig {
    /// Least probability of the arc a trace grows along (IMPACT's 0.6).
    pub threshold: f64,
    /// Most bytecode instructions in one trace.
    pub max_instrs: usize,
    /// Blocks lighter than this seed no trace.
    pub min_weight: u64,
    /// Least weight of an arm of a trace tree, as a share of the head's
    /// weight; 0 grows no arms (plain superblocks).
    pub arm_share: f64,
    /// Most arms in one tree.
    pub max_arms: usize,
}

impl Default for SuperblockConfig {
    fn default() -> Self {
        SuperblockConfig {
            threshold: 0.6,
            max_instrs: 200,
            min_weight: 1,
            arm_share: 0.02,
            max_arms: 32,
        }
    }
}

/// Whether compiled code leaves this instruction to the interpreter
/// (regions exit to it there, and for a `trap` the interpreter traps;
/// native functions hold none of these but `call`, `ret` and `trap`, which
/// they make or raise themselves). `hcall` is not among
/// them: regions call host functions through a trampoline (native
/// functions hold none, see [`crate::native`]).
pub fn is_interpreted(i: &Instr) -> bool {
    matches!(
        i.op(),
        Op::Call | Op::Calli | Op::Ret | Op::Halt | Op::Putn | Op::Putc | Op::Inlen | Op::Trap
    )
}

/// Which calls compiled code makes natively: given a call instruction and
/// its offset, the closed callee to call, or `None` to leave the call to
/// the interpreter.
pub type NativeCallee<'a> = dyn Fn(u32, &Instr) -> Option<NativeCall> + 'a;

/// How compiled code makes one call natively.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NativeCall {
    /// Always this closed function: a `call`, or a `calli` that
    /// specialization guards to be monomorphic ([`Step::Call`]).
    Callee(u32),
    /// A `calli` calling whichever of these closed functions its value
    /// names, or calling the interpreter ([`Step::Dispatch`]).
    Dispatch(Vec<u32>),
    /// A call whose callee compiled code calls the interpreter for
    /// ([`Step::Interpreted`]).
    Interpreter,
}

/// No call is native: every call is an `Interpret` exit.
fn no_native(_: u32, _: &Instr) -> Option<NativeCall> {
    None
}

/// Whether the instruction at `pc` stops compiled code.
fn stops(native: &NativeCallee<'_>, pc: u32, i: &Instr) -> bool {
    is_interpreted(i) && native(pc, i).is_none()
}

/// A trace and the arms grown from it (see the module docs): each arm is a
/// path of blocks from an off-trace successor of a tree block back to the
/// trace head or to the start of another arm.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceTree {
    /// The trace's blocks in path order, its head (the seed) first.
    pub trace: Vec<BlockId>,
    /// The arms, in the order they were grown, each its blocks in path
    /// order (empty for a plain superblock).
    pub arms: Vec<Vec<BlockId>>,
    /// The blocks paths jump to ([`Target::Block`]): every arm's start, and
    /// each block an arm loops back to (it jumps to the block's first copy).
    pub labels: Vec<BlockId>,
}

/// What trace-tree selection needs of a control-flow graph: blocks with
/// weights, weighted out-arcs, sizes, and where compiled code must stop.
/// toyvm's own functions ([`WeightedCfg`] with their code) implement it,
/// and so does a foreign VM's graph (see `toyvm::feedback`, in the `toyvm`
/// crate), so both get their traces from one algorithm.
pub trait TreeGraph {
    /// Blocks `0..blocks()`.
    fn blocks(&self) -> usize;
    /// How often the block ran.
    fn weight(&self, b: BlockId) -> u64;
    /// The block's successors with how often each arc was taken.
    fn out_arcs(&self, b: BlockId) -> &[(BlockId, u64)];
    /// The block's size in instructions (what `max_instrs` caps).
    fn size(&self, b: BlockId) -> usize;
    /// Whether compiled code cannot go on past this block (it ends in, or
    /// holds, something only the interpreter does).
    fn stops(&self, b: BlockId) -> bool;
    /// Whether compiled code cannot even start at this block (its first
    /// instruction is the interpreter's): no trace is seeded there.
    fn stops_at_once(&self, b: BlockId) -> bool;
    /// Whether a trace may be seeded at the block (compiled code is entered
    /// only where the interpreter looks for it).
    fn seedable(&self, b: BlockId) -> bool;
}

/// A toyvm function's weighted CFG seen as a [`TreeGraph`].
struct Own<'a> {
    wcfg: &'a WeightedCfg,
    f: &'a Function,
    native: &'a NativeCallee<'a>,
    seedable: &'a dyn Fn(u32) -> bool,
}

impl TreeGraph for Own<'_> {
    fn blocks(&self) -> usize {
        self.wcfg.cfg().blocks().len()
    }
    fn weight(&self, b: BlockId) -> u64 {
        self.wcfg.weight(b)
    }
    fn out_arcs(&self, b: BlockId) -> &[(BlockId, u64)] {
        self.wcfg.out_arcs(b)
    }
    fn size(&self, b: BlockId) -> usize {
        self.wcfg.cfg().blocks()[b].len()
    }
    fn stops(&self, b: BlockId) -> bool {
        let blk = &self.wcfg.cfg().blocks()[b];
        stops_growth(self.f, blk.start, blk.end, self.native)
    }
    fn stops_at_once(&self, b: BlockId) -> bool {
        let start = self.wcfg.cfg().blocks()[b].start;
        stops(self.native, start, &self.f.code[start as usize])
    }
    fn seedable(&self, b: BlockId) -> bool {
        (self.seedable)(self.wcfg.cfg().blocks()[b].start)
    }
}

/// The traces of `wcfg` as lists of blocks, heaviest seed first.
pub fn select_traces(
    wcfg: &WeightedCfg,
    f: &Function,
    cfg: &SuperblockConfig,
) -> Vec<Vec<BlockId>> {
    select_trees(wcfg, f, cfg, &no_native, &|_| true)
        .into_iter()
        .map(|t| t.trace)
        .collect()
}

/// The trace trees of `wcfg`, heaviest seed first, with traces growing past
/// the calls `native` makes native. Only blocks whose start offset
/// `seedable` accepts seed a tree (a runtime enters compiled code only
/// where control transfers); the others may still join a tree.
pub fn select_trees(
    wcfg: &WeightedCfg,
    f: &Function,
    cfg: &SuperblockConfig,
    native: &NativeCallee<'_>,
    seedable: &dyn Fn(u32) -> bool,
) -> Vec<TraceTree> {
    grow_trees(
        &Own {
            wcfg,
            f,
            native,
            seedable,
        },
        cfg,
    )
}

/// The trace trees of any [`TreeGraph`], heaviest seed first (steps 1, 2
/// and 4 of the module doc).
pub fn grow_trees(g: &impl TreeGraph, cfg: &SuperblockConfig) -> Vec<TraceTree> {
    let n = g.blocks();
    let mut order: Vec<BlockId> = (0..n)
        .filter(|&b| g.weight(b) >= cfg.min_weight.max(1))
        .collect();
    // Heaviest first; ties go to the earlier block (a loop header precedes
    // its body), so the result does not depend on hash order.
    order.sort_by_key(|&b| (std::cmp::Reverse(g.weight(b)), b));
    let mut placed = vec![false; n];
    let mut trees = Vec::new();
    for seed in order {
        if placed[seed] || !g.seedable(seed) {
            continue;
        }
        placed[seed] = true;
        // A trace that would leave to the interpreter at once buys nothing.
        if g.stops_at_once(seed) {
            continue;
        }
        let mut trace = vec![seed];
        let mut size = g.size(seed);
        loop {
            let cur = *trace.last().expect("a trace has its seed");
            if g.stops(cur) {
                break;
            }
            let Some((next, w)) = likeliest(g, cur) else {
                break;
            };
            let node = g.weight(cur);
            if w == 0 || node == 0 || (w as f64) < cfg.threshold * node as f64 {
                break;
            }
            if next == seed || placed[next] || size + g.size(next) > cfg.max_instrs {
                break;
            }
            placed[next] = true;
            size += g.size(next);
            trace.push(next);
        }
        let (arms, labels) = grow_arms(g, cfg, &trace, &mut placed, size);
        trees.push(TraceTree {
            trace,
            arms,
            labels,
        });
    }
    trees
}

/// The heaviest out-arc of `b` (ties to the lower block).
fn likeliest(g: &impl TreeGraph, b: BlockId) -> Option<(BlockId, u64)> {
    g.out_arcs(b)
        .iter()
        .max_by_key(|&&(s, w)| (w, std::cmp::Reverse(s)))
        .copied()
}

/// The arms of `trace`'s tree and the arm starts and other blocks that
/// paths jump to (see [`TraceTree::labels`]): from every block of the tree
/// (the trace's, then each new arm's), each off-path arc carrying at least
/// `arm_share` of the head's weight starts an arm grown along the likeliest
/// arcs. An arm is kept if it gets back to the head, to another arm's start,
/// or to one of its own blocks (an inner loop: that block becomes a jump
/// target) within the size cap, so that control stays in compiled code; it
/// is dropped if it would leave (an interpreted instruction, a block of
/// another trace). Other blocks of the tree are copied into the arm (tail
/// duplication, as for the trace). Such an arc to a block already in the
/// tree jumps to that block's first copy instead of starting an arm.
fn grow_arms(
    g: &impl TreeGraph,
    cfg: &SuperblockConfig,
    trace: &[BlockId],
    placed: &mut [bool],
    mut size: usize,
) -> (Vec<Vec<BlockId>>, Vec<BlockId>) {
    let head = trace[0];
    let least = ((g.weight(head) as f64 * cfg.arm_share).ceil() as u64).max(1);
    let mut in_tree = vec![false; g.blocks()];
    for &b in trace {
        in_tree[b] = true;
    }
    let mut arms: Vec<Vec<BlockId>> = Vec::new();
    let mut labels: Vec<BlockId> = Vec::new();
    // Branch points: a block and the successor its own path goes on to.
    let mut from: Vec<(BlockId, Option<BlockId>)> = trace
        .iter()
        .enumerate()
        .map(|(i, &b)| (b, trace.get(i + 1).copied()))
        .collect();
    let mut k = 0;
    while k < from.len() && cfg.arm_share > 0.0 {
        let (b, on_path) = from[k];
        k += 1;
        if g.stops(b) {
            continue;
        }
        let mut arcs: Vec<(BlockId, u64)> = g.out_arcs(b).to_vec();
        arcs.sort_by_key(|&(s, w)| (std::cmp::Reverse(w), s));
        for (s, w) in arcs {
            if arms.len() >= cfg.max_arms {
                return (arms, labels);
            }
            if w < least || Some(s) == on_path || s == head || labels.contains(&s) {
                continue;
            }
            if in_tree[s] {
                // Already compiled in the tree: jump to its first copy.
                labels.push(s);
                continue;
            }
            if placed[s] {
                continue;
            }
            let Some((path, inner)) = grow_arm(g, cfg, s, head, &labels, placed, &in_tree, size)
            else {
                continue;
            };
            size += path.iter().map(|&p| g.size(p)).sum::<usize>();
            for (i, &p) in path.iter().enumerate() {
                placed[p] = true;
                in_tree[p] = true;
                from.push((p, path.get(i + 1).copied()));
            }
            labels.push(s);
            labels.extend(inner.filter(|&b| b != s));
            arms.push(path);
        }
    }
    (arms, labels)
}

/// One arm from `s` (see [`grow_arms`]) and the block of its own it loops
/// back to, if any; `None` if it does not get back.
#[allow(clippy::too_many_arguments)]
fn grow_arm(
    g: &impl TreeGraph,
    cfg: &SuperblockConfig,
    s: BlockId,
    head: BlockId,
    labels: &[BlockId],
    placed: &[bool],
    in_tree: &[bool],
    size: usize,
) -> Option<(Vec<BlockId>, Option<BlockId>)> {
    let mut path = vec![s];
    let mut len = g.size(s);
    loop {
        let cur = *path.last().expect("an arm has its start");
        if size + len > cfg.max_instrs || g.stops(cur) {
            return None;
        }
        let (next, w) = likeliest(g, cur)?;
        if w == 0 {
            return None;
        }
        if next == head || labels.contains(&next) {
            return Some((path, None));
        }
        if path.contains(&next) {
            return Some((path, Some(next)));
        }
        if placed[next] && !in_tree[next] {
            return None;
        }
        len += g.size(next);
        path.push(next);
    }
}

/// Whether a trace cannot continue past block `start..end`.
fn stops_growth(f: &Function, start: u32, end: u32, native: &NativeCallee<'_>) -> bool {
    (start..end).any(|pc| stops(native, pc, &f.code[pc as usize]))
}

/// Forms the superblocks of one function: [`select_traces`] (with their
/// trees' arms), then each tree laid out as a [`Region`] (side entrances
/// removed by tail duplication, off-tree arcs turned into side exits).
pub fn form_superblocks(wcfg: &WeightedCfg, f: &Function, cfg: &SuperblockConfig) -> Vec<Region> {
    form_superblocks_with(wcfg, f, cfg, &no_native, &|_| true)
}

/// [`form_superblocks`] with the calls `native` picks compiled as native
/// calls ([`Step::Call`]) that traces continue past, and trees seeded only
/// at the offsets `seedable` accepts.
pub fn form_superblocks_with(
    wcfg: &WeightedCfg,
    f: &Function,
    cfg: &SuperblockConfig,
    native: &NativeCallee<'_>,
    seedable: &dyn Fn(u32) -> bool,
) -> Vec<Region> {
    select_trees(wcfg, f, cfg, native, seedable)
        .iter()
        .map(|t| layout_tree(wcfg, f, t, native))
        .collect()
}

/// Lays a trace out as a region.
pub fn layout(wcfg: &WeightedCfg, f: &Function, trace: &[BlockId]) -> Region {
    let tree = TraceTree {
        trace: trace.to_vec(),
        arms: Vec::new(),
        labels: Vec::new(),
    };
    layout_tree(wcfg, f, &tree, &no_native)
}

/// Lays a tree out as a region: the trace, then each arm, the arms' first
/// blocks being where [`Target::Block`]s go.
pub fn layout_tree(
    wcfg: &WeightedCfg,
    f: &Function,
    tree: &TraceTree,
    native: &NativeCallee<'_>,
) -> Region {
    let blocks = wcfg.cfg().blocks();
    let head = blocks[tree.trace[0]].start;
    let starts: Vec<u32> = tree.labels.iter().map(|&b| blocks[b].start).collect();
    let mut steps = Vec::new();
    layout_path(wcfg, f, &tree.trace, head, &starts, native, &mut steps);
    for arm in &tree.arms {
        layout_path(wcfg, f, arm, head, &starts, native, &mut steps);
    }
    Region {
        func: wcfg.cfg().func(),
        head,
        steps,
    }
}

/// Appends one path of a tree (the trace or an arm) to `steps`.
fn layout_path(
    wcfg: &WeightedCfg,
    f: &Function,
    path: &[BlockId],
    head: u32,
    starts: &[u32],
    native: &NativeCallee<'_>,
    steps: &mut Vec<Step>,
) {
    let c = wcfg.cfg();
    let blocks = c.blocks();
    let is_arm = blocks[path[0]].start != head;
    for (n, &b) in path.iter().enumerate() {
        let blk = blocks[b];
        let next_start = path.get(n + 1).map(|&nb| blocks[nb].start);
        let target = |to: u32| {
            if Some(to) == next_start {
                Target::Next
            } else if to == head {
                Target::Head
            } else if starts.contains(&to) {
                Target::Block(to)
            } else {
                Target::Exit(to)
            }
        };
        let previous = n.checked_sub(1).map(|k| path[k]);
        let duplicated = if n == 0 {
            is_arm && c.preds(b).len() > 1
        } else {
            c.preds(b).iter().any(|&p| Some(p) != previous)
        };
        steps.push(Step::Block {
            offset: blk.start,
            end: blk.end,
            weight: wcfg.weight(b),
            duplicated,
        });
        for pc in blk.start..blk.end {
            let instr = f.code[pc as usize];
            if let Some(call) = is_interpreted(&instr).then(|| native(pc, &instr)).flatten() {
                steps.push(match call {
                    NativeCall::Callee(callee) => Step::Call { pc, instr, callee },
                    NativeCall::Dispatch(callees) => Step::Dispatch { pc, instr, callees },
                    NativeCall::Interpreter => Step::Interpreted { pc, instr },
                });
                // A call ends its block: go on along the path, or leave.
                if pc + 1 == blk.end && next_start.is_none() {
                    steps.push(Step::Goto(target(blk.end)));
                }
                continue;
            }
            if is_interpreted(&instr) {
                steps.push(Step::Interpret { pc, instr });
                return;
            }
            match instr {
                Instr::Jmp { target: to } => {
                    if target(to) != Target::Next {
                        steps.push(Step::Goto(target(to)));
                    }
                }
                Instr::Jtab { a, t } => steps.push(Step::Switch {
                    pc,
                    a,
                    cases: f
                        .tables
                        .get(t as usize)
                        .map(|tab| tab.iter().map(|&to| target(to)).collect())
                        .unwrap_or_default(),
                    default: target(pc + 1),
                }),
                _ if instr.op().is_conditional_branch() => {
                    let to = instr.label().expect("branches have a label");
                    steps.push(Step::Branch {
                        pc,
                        instr,
                        taken: target(to),
                        fall: target(pc + 1),
                    });
                }
                _ => {
                    steps.push(Step::Op { pc, instr });
                    // The path's last block falls through off the path.
                    if pc + 1 == blk.end && next_start.is_none() {
                        steps.push(Step::Goto(target(blk.end)));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
