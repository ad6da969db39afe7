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
//! compiled code can make natively (a `call` to a closed function, or a
//! monomorphic `calli` to one, as the caller's [`NativeCallee`] decides):
//! it becomes a [`Step::Call`] and the trace goes on past it, so a loop that
//! calls a small closed function stays in one region. A polymorphic `calli`
//! whose profiled targets are closed becomes a [`Step::Dispatch`] among them
//! (any other function value leaves for the interpreter).

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
            max_arms: 16,
        }
    }
}

/// Whether compiled code leaves this instruction to the interpreter
/// (regions exit to it there; native functions hold none of these but
/// `call` and `ret`, which they make themselves). `hcall` is not among
/// them: regions call host functions through a trampoline (native
/// functions hold none, see [`crate::native`]).
pub fn is_interpreted(i: &Instr) -> bool {
    matches!(
        i.op(),
        Op::Call | Op::Calli | Op::Ret | Op::Halt | Op::Putn | Op::Putc | Op::Inlen
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
    /// names, or leaving for the interpreter ([`Step::Dispatch`]).
    Dispatch(Vec<u32>),
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
mod tests {
    use super::*;
    use crate::cfg::{EdgeCounts, edge_counts};
    use toyvm_vm::asm::assemble;
    use toyvm_vm::{Pc, Program, interp};

    /// `src` assembled, and its function 0's CFG weighted by a run's edges.
    fn profiled(src: &str, args: &[i64]) -> (Program, WeightedCfg) {
        let p = assemble(src).unwrap();
        let mut tuples = Vec::new();
        let input = interp::Input { args, file: &[] };
        interp::run_with_sink(&p, input, &mut Vec::new(), &mut tuples, &Default::default())
            .unwrap();
        let w = WeightedCfg::build(&p, 0, &edge_counts(&tuples)).unwrap();
        (p, w)
    }

    fn regions(src: &str, args: &[i64], cfg: &SuperblockConfig) -> (Program, Vec<Region>) {
        let (p, w) = profiled(src, args);
        let r = form_superblocks(&w, &p.functions[0], cfg);
        (p, r)
    }

    fn text(rs: &[Region]) -> String {
        rs.iter().map(|r| r.to_string()).collect()
    }

    #[test]
    fn a_counted_loop_stays_inside_its_region() {
        let (_, rs) = regions(
            "
            .func main(n)
                .reg s, i, j, t
                li s, 0
                li i, 1
            outer:
                li j, 1
            inner:
                mul t, i, j
                remi t, t, 7
                add s, s, t
                loop j, n, inner
                loop i, n, outer
                putn s
                ret s
            .end",
            &[10],
            &SuperblockConfig::default(),
        );
        assert_eq!(
            text(&rs),
            "\
region f0:3
  block 3 weight=100
    3: mul r4, r2, r3
    4: remi r4, r4, 7
    5: add r1, r1, r4
    6: loop r3, r0, L3 -> head | block 7
  block 7 weight=10
    7: loop r2, r0, L2 -> next | exit 8
  block 2 weight=10 dup
    2: li r3, 1
    goto head
region f0:0
  block 0 weight=1
    0: li r1, 0
    1: li r2, 1
    goto exit 2
"
        );
        assert!(rs[0].loops());
    }

    const DIAMOND: &str = "
        .func main(n)
            .reg i, s, t
            li i, 0
            li s, 0
        top:                    # 2
            andi t, i, 7
            beqi t, 7, rare     # 3: taken 1 time in 8
            addi s, s, 1        # 4: hot side
            jmp join            # 5
        rare:
            subi s, s, 5        # 6
        join:
            add s, s, i         # 7
            addi i, i, 1
            blt i, n, top       # 9
            ret s
        .end";

    /// Plain superblocks: no trace-tree arms.
    fn plain() -> SuperblockConfig {
        SuperblockConfig {
            arm_share: 0.0,
            ..Default::default()
        }
    }

    #[test]
    fn a_hot_path_through_a_diamond_tail_duplicates_the_join() {
        let (_, rs) = regions(DIAMOND, &[800], &plain());
        assert_eq!(
            rs[0].to_string(),
            "\
region f0:2
  block 2 weight=800
    2: andi r3, r1, 7
    3: beqi r3, 7, L6 -> exit 6 | next
  block 4 weight=700
    4: addi r2, r2, 1
  block 7 weight=800 dup
    7: add r2, r2, r1
    8: addi r1, r1, 1
    9: blt r1, r0, L2 -> head | exit 10
"
        );
    }

    /// [`DIAMOND`] with its branch taken every other iteration.
    fn unbiased_diamond() -> String {
        DIAMOND
            .replace("andi t, i, 7", "andi t, i, 1")
            .replace("beqi t, 7", "beqi t, 1")
    }

    #[test]
    fn growth_stops_below_the_threshold() {
        // Taken half the time: neither successor is likely enough.
        let src = unbiased_diamond();
        let (_, rs) = regions(&src, &[800], &plain());
        assert_eq!(
            rs[0].to_string(),
            "\
region f0:2
  block 2 weight=800
    2: andi r3, r1, 1
    3: beqi r3, 1, L6 -> exit 6 | exit 4
"
        );
        // A lower threshold takes the likelier (here: first listed) arc.
        let cfg = SuperblockConfig {
            threshold: 0.5,
            ..plain()
        };
        let (_, rs) = regions(&src, &[800], &cfg);
        assert_eq!(rs[0].instr_count(), 6);
    }

    #[test]
    fn the_size_cap_and_interpreted_instructions_end_a_trace() {
        let cfg = SuperblockConfig {
            max_instrs: 4,
            ..Default::default()
        };
        let (_, rs) = regions(DIAMOND, &[800], &cfg);
        assert_eq!(rs[0].instr_count(), 3);
        assert_eq!(rs[0].steps.last(), Some(&Step::Goto(Target::Exit(7))));

        let src = "
            .func main(n)
                .reg i
                li i, 0
            top:
                putn i
                addi i, i, 1
                blt i, n, top
                ret i
            .end";
        let (_, rs) = regions(src, &[50], &SuperblockConfig::default());
        // The loop's only block starts with `putn`: nothing worth compiling.
        assert!(rs.iter().all(|r| r.head != 1), "{}", text(&rs));
    }

    #[test]
    fn traces_do_not_grow_into_blocks_of_other_traces() {
        let p = assemble(DIAMOND).unwrap();
        let e = |a: u32, b: u32| (Pc::new(0, a), Pc::new(0, b));
        // A profile where the rare side is as hot as the common one.
        let edges: EdgeCounts = [
            (e(3, 6), 500),
            (e(3, 4), 500),
            (e(9, 2), 999),
            (e(9, 10), 1),
        ]
        .into_iter()
        .collect();
        let w = WeightedCfg::build(&p, 0, &edges).unwrap();
        let rs = form_superblocks(&w, &p.functions[0], &plain());
        // Seed 2 (weight 1000) cannot grow (0.5 < 0.6); 7 (weight 1000)
        // loops back to 2, not to its own head, so it exits there.
        assert_eq!(
            rs[1].to_string(),
            "\
region f0:7
  block 7 weight=1000
    7: add r2, r2, r1
    8: addi r1, r1, 1
    9: blt r1, r0, L2 -> exit 2 | exit 10
"
        );
    }

    #[test]
    fn both_sides_of_an_unbiased_branch_become_arms_of_one_tree() {
        let src = unbiased_diamond();
        let (_, rs) = regions(&src, &[800], &SuperblockConfig::default());
        assert_eq!(
            rs[0].to_string(),
            "\
region f0:2
  block 2 weight=800
    2: andi r3, r1, 1
    3: beqi r3, 1, L6 -> block 6 | block 4
  block 4 weight=400
    4: addi r2, r2, 1
  block 7 weight=800 dup
    7: add r2, r2, r1
    8: addi r1, r1, 1
    9: blt r1, r0, L2 -> head | exit 10
  block 6 weight=400
    6: subi r2, r2, 5
  block 7 weight=800 dup
    7: add r2, r2, r1
    8: addi r1, r1, 1
    9: blt r1, r0, L2 -> head | exit 10
"
        );
        // The whole loop is one region: the join seeds no trace of its own.
        assert!(rs.iter().all(|r| r.head != 7), "{}", text(&rs));
        // The text form has every step but the blocks' ends (fuel metering
        // needs them; a parsed region has none).
        let mut unended = rs[0].clone();
        for s in &mut unended.steps {
            if let Step::Block { end, .. } = s {
                *end = 0;
            }
        }
        assert_eq!(Region::parse(&rs[0].to_string()).unwrap(), unended);
    }

    #[test]
    fn a_rare_side_below_the_arm_share_stays_an_exit() {
        // 1 in 8 is 12.5% of the head: an arm at the default 2%, an exit
        // at 20%.
        let (_, rs) = regions(DIAMOND, &[800], &SuperblockConfig::default());
        assert!(rs[0].to_string().contains("-> block 6 | next"), "{}", rs[0]);
        let cfg = SuperblockConfig {
            arm_share: 0.2,
            ..Default::default()
        };
        let (_, rs) = regions(DIAMOND, &[800], &cfg);
        assert!(rs[0].to_string().contains("-> exit 6 | next"), "{}", rs[0]);
    }

    #[test]
    fn a_dispatch_loop_becomes_a_tree_with_an_arm_per_hot_case() {
        // A jump-table interpreter loop: no case is likely enough to grow a
        // superblock through (each 1/3), so only a tree keeps it compiled.
        let src = "
            .func main(n)
                .reg i, op, s
                li i, 0
                li s, 0
            next:                       # 2
                remi op, i, 3
                jtab op, [a, b, c]
                ret s                   # 4
            a:
                addi s, s, 1            # 5
                jmp tail
            b:
                subi s, s, 2            # 7
                jmp tail
            c:
                muli s, s, 3            # 9
            tail:
                addi i, i, 1            # 10
                blt i, n, next
                ret s
            .end";
        let (_, rs) = regions(src, &[300], &SuperblockConfig::default());
        let r = &rs[0];
        assert_eq!(r.head, 2);
        assert!(r.loops());
        let text = r.to_string();
        assert!(
            text.contains("jtab r2 -> [block 5, block 7, block 9] | exit 4"),
            "{text}"
        );
        // Each arm ends back at the head; `tail` is copied into each.
        assert_eq!(text.matches("-> head | exit 12").count(), 3, "{text}");
    }

    #[test]
    fn only_seedable_blocks_head_a_tree_but_others_join_one() {
        let (p, w) = profiled(DIAMOND, &[800]);
        // The loop's first block (2) may not head a region: the heaviest
        // block that may (7, the join) heads one that loops through 2.
        let rs = form_superblocks_with(
            &w,
            &p.functions[0],
            &SuperblockConfig::default(),
            &no_native,
            &|o| o != 2,
        );
        assert!(rs.iter().all(|r| r.head != 2), "{}", text(&rs));
        assert_eq!(rs[0].head, 7);
        assert!(
            rs[0].to_string().contains("block 2 weight=800"),
            "{}",
            rs[0]
        );
    }
}
