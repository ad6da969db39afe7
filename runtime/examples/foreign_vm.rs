//! A second, different VM using toyvm's feedback component as a plug-in
//! ([`toyvm::feedback`]): a small stack machine with locals, jumps and
//! indirect calls, written here from scratch, that knows nothing of toyvm's
//! instruction set. Its interpreter reports block-to-block edges, the
//! values its `Load`s produce and the callees of its indirect calls; its
//! pretend JIT "installs" every trace it is told to compile (it keeps
//! interpreting, but counts entries and exits as compiled code would) and
//! obeys drop and recompile reviews. It prints the decisions it received.
//!
//! ```sh
//! cargo run --example foreign_vm -- 20000 multihash:interval=5000
//! ```

use std::collections::{BTreeMap, BTreeSet};

use toyvm::feedback::{CallDecision, Decisions, Feedback, HostGraph, Loc, Review};

/// The stack machine's instructions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Push(i64),
    Load(usize),
    Store(usize),
    Add,
    Mul,
    Rem,
    Lt,
    /// Pops a condition; jumps when it is 0.
    Jz(usize),
    Jmp(usize),
    /// Pops a function number and an argument; pushes the callee's result.
    CallIndirect,
    /// Returns the top of the stack.
    Ret,
}

/// A function: its code and how many locals it has (local 0 is the
/// argument).
#[derive(Clone, Debug)]
pub struct Func {
    pub code: Vec<Op>,
    pub locals: usize,
}

/// A function's basic blocks: the block of each instruction, and each
/// block's first instruction and successors.
#[derive(Clone, Debug)]
pub struct Blocks {
    pub of: Vec<u32>,
    pub starts: Vec<usize>,
    pub succs: Vec<Vec<u32>>,
}

impl Blocks {
    pub fn new(code: &[Op]) -> Blocks {
        let mut leaders = BTreeSet::from([0]);
        for (pc, op) in code.iter().enumerate() {
            match *op {
                Op::Jz(t) => {
                    leaders.insert(t);
                    leaders.insert(pc + 1);
                }
                Op::Jmp(t) => {
                    leaders.insert(t);
                    leaders.insert(pc + 1);
                }
                Op::Ret => {
                    leaders.insert(pc + 1);
                }
                _ => {}
            }
        }
        leaders.retain(|&l| l < code.len());
        let starts: Vec<usize> = leaders.into_iter().collect();
        let mut of = vec![0u32; code.len()];
        for (b, &s) in starts.iter().enumerate() {
            let end = starts.get(b + 1).copied().unwrap_or(code.len());
            of[s..end].fill(b as u32);
        }
        let succs = starts
            .iter()
            .enumerate()
            .map(|(b, _)| {
                let end = starts.get(b + 1).copied().unwrap_or(code.len());
                let next = (end < code.len()).then(|| of[end]);
                match code[end - 1] {
                    Op::Jz(t) => [next, Some(of[t])].into_iter().flatten().collect(),
                    Op::Jmp(t) => vec![of[t]],
                    Op::Ret => vec![],
                    _ => next.into_iter().collect(),
                }
            })
            .collect();
        Blocks { of, starts, succs }
    }
}

/// The program's graph, as the feedback component asks for it.
#[derive(Debug)]
pub struct Graph<'a> {
    pub funcs: &'a [Func],
    pub blocks: Vec<Blocks>,
}

impl HostGraph for Graph<'_> {
    fn blocks(&self, func: u32) -> u32 {
        self.blocks
            .get(func as usize)
            .map_or(0, |b| b.starts.len() as u32)
    }
    fn successors(&self, func: u32, block: u32) -> Vec<u32> {
        self.blocks
            .get(func as usize)
            .and_then(|b| b.succs.get(block as usize))
            .cloned()
            .unwrap_or_default()
    }
    fn size(&self, func: u32, block: u32) -> usize {
        let b = &self.blocks[func as usize];
        let end = b
            .starts
            .get(block as usize + 1)
            .copied()
            .unwrap_or(self.funcs[func as usize].code.len());
        end - b.starts[block as usize]
    }
    /// A block that calls stays in the interpreter here.
    fn stops(&self, func: u32, block: u32) -> bool {
        let b = &self.blocks[func as usize];
        let start = b.starts[block as usize];
        let end = start + self.size(func, block);
        self.funcs[func as usize].code[start..end].contains(&Op::CallIndirect)
    }
}

/// A trace the pretend JIT installed: its blocks, entries and exits.
#[derive(Debug, Default)]
struct Installed {
    blocks: BTreeSet<u32>,
    entries: u64,
    exits: BTreeMap<u32, u64>,
}

/// What a run received and did.
#[derive(Debug, Default)]
pub struct RunLog {
    pub result: i64,
    pub decisions: Vec<Decisions>,
    /// Traces installed, by head, in order.
    pub installs: Vec<Loc>,
    pub drops: Vec<Loc>,
    pub recompiles: Vec<Loc>,
}

/// Runs `funcs[0]` on `arg` with the feedback component profiling by
/// `spec`, installing every trace it names whose head weight is at least
/// `min_weight`.
pub fn run(funcs: &[Func], arg: i64, spec: &str, min_weight: u64) -> toyvm::Result<RunLog> {
    let graph = Graph {
        funcs,
        blocks: funcs.iter().map(|f| Blocks::new(&f.code)).collect(),
    };
    let mut fb = Feedback::new(spec)?;
    let mut log = RunLog::default();
    let mut jit: BTreeMap<Loc, Installed> = BTreeMap::new();
    let mut fresh = Vec::new();
    // The interpreter: frames of (function, pc, locals), one value stack.
    let mut frames: Vec<(usize, usize, Vec<i64>)> = vec![(0, 0, {
        let mut l = vec![0; funcs[0].locals.max(1)];
        l[0] = arg;
        l
    })];
    let mut stack: Vec<i64> = Vec::new();
    // The installed trace control is in, if any.
    let mut inside: Option<Loc> = None;
    loop {
        let (f, pc) = {
            let fr = frames.last().expect("a frame");
            (fr.0, fr.1)
        };
        let op = funcs[f].code[pc];
        let mut next = pc + 1;
        let pop = |s: &mut Vec<i64>| s.pop().expect("stack underflow");
        match op {
            Op::Push(v) => stack.push(v),
            Op::Load(i) => {
                let v = frames.last().unwrap().2[i];
                fb.value(Loc::new(f as u32, pc as u32), v, &graph, &mut fresh);
                stack.push(v);
            }
            Op::Store(i) => {
                let v = pop(&mut stack);
                frames.last_mut().unwrap().2[i] = v;
            }
            Op::Add | Op::Mul | Op::Rem | Op::Lt => {
                let (b, a) = (pop(&mut stack), pop(&mut stack));
                stack.push(match op {
                    Op::Add => a.wrapping_add(b),
                    Op::Mul => a.wrapping_mul(b),
                    Op::Rem => a.checked_rem(b).unwrap_or(0),
                    _ => i64::from(a < b),
                });
            }
            Op::Jz(t) => {
                if pop(&mut stack) == 0 {
                    next = t;
                }
            }
            Op::Jmp(t) => next = t,
            Op::CallIndirect => {
                let callee = pop(&mut stack) as usize % funcs.len();
                let a = pop(&mut stack);
                fb.call(
                    Loc::new(f as u32, pc as u32),
                    callee as u32,
                    &graph,
                    &mut fresh,
                );
                frames.last_mut().unwrap().1 = next;
                let mut l = vec![0; funcs[callee].locals.max(1)];
                l[0] = a;
                frames.push((callee, 0, l));
                inside = None;
                continue;
            }
            Op::Ret => {
                frames.pop();
                inside = None;
                match frames.last() {
                    None => {
                        log.result = pop(&mut stack);
                        break;
                    }
                    Some(_) => continue,
                }
            }
        }
        // A transfer between blocks is an edge; entering an installed
        // trace's head is an entry; leaving its blocks is an exit.
        let blocks = &graph.blocks[f];
        if next < funcs[f].code.len() && (next != pc + 1 || blocks.of[next] != blocks.of[pc]) {
            let (from, to) = (blocks.of[pc], blocks.of[next]);
            fb.edge(
                Loc::new(f as u32, from),
                Loc::new(f as u32, to),
                &graph,
                &mut fresh,
            );
            if let Some(head) = inside {
                // Compiled code stays in its tree (looping back to the
                // head included) and leaves through an exit otherwise.
                let t = jit.get_mut(&head).expect("inside an installed trace");
                if !t.blocks.contains(&to) {
                    *t.exits.entry(to).or_insert(0) += 1;
                    inside = None;
                } else if to == head.at {
                    // Another pass through the head (what the component
                    // counts as entries; see `Feedback::exits`).
                    t.entries += 1;
                }
            }
            if inside.is_none() {
                let here = Loc::new(f as u32, to);
                if let Some(t) = jit.get_mut(&here) {
                    t.entries += 1;
                    inside = Some(here);
                }
            }
        }
        frames.last_mut().unwrap().1 = next;
        // Decisions: install what is named, obey reviews; report exits at
        // each interval end.
        for d in fresh.drain(..) {
            for (head, t) in &mut jit {
                let exits: Vec<(u32, u64)> = std::mem::take(&mut t.exits).into_iter().collect();
                fb.exits(*head, std::mem::take(&mut t.entries), &exits);
            }
            for r in &d.reviews {
                let (Review::Drop { head, .. } | Review::Recompile { head, .. }) = r;
                jit.remove(head);
                if inside == Some(*head) {
                    inside = None;
                }
                match r {
                    Review::Drop { .. } => log.drops.push(*head),
                    Review::Recompile { .. } => log.recompiles.push(*head),
                }
            }
            for t in d.traces.iter().filter(|t| t.weight >= min_weight) {
                if let std::collections::btree_map::Entry::Vacant(e) = jit.entry(t.head) {
                    let blocks = t.blocks.iter().chain(t.arms.iter().flatten());
                    e.insert(Installed {
                        blocks: blocks.copied().collect(),
                        ..Installed::default()
                    });
                    fb.installed(t);
                    log.installs.push(t.head);
                }
            }
            log.decisions.push(d);
        }
    }
    Ok(log)
}

/// Where [`two_phases`]' landmarks are (instruction offsets in `main`).
#[derive(Clone, Copy, Debug)]
pub struct Landmarks {
    /// The inner loop's head, and the load of its bound (always 40).
    pub inner: usize,
    pub bound_load: usize,
    /// The second phase's loop head and its two indirect calls.
    pub second: usize,
    pub mono: usize,
    pub poly: usize,
}

/// Two phases: a nested loop whose inner bound is a loaded constant (a
/// value worth specializing), then a loop making two indirect calls, one
/// nearly always to the same callee, one spread over three.
pub fn two_phases() -> (Vec<Func>, Landmarks) {
    use Op::*;
    let mut m: Vec<Op> = Vec::new();
    let at = |m: &Vec<Op>| m.len();
    m.extend([Push(40), Store(4), Push(0), Store(1), Push(0), Store(3)]);
    let outer = at(&m);
    m.extend([Load(1), Load(0), Lt, Jz(usize::MAX)]);
    let outer_exit = at(&m) - 1;
    m.extend([Push(0), Store(2)]);
    let inner = at(&m);
    m.extend([Load(2), Load(4), Lt, Jz(usize::MAX)]);
    let inner_exit = at(&m) - 1;
    m.extend([
        Load(3),
        Load(2),
        Add,
        Store(3),
        Load(2),
        Push(1),
        Add,
        Store(2),
        Jmp(inner),
    ]);
    m[inner_exit] = Jz(at(&m));
    m.extend([Load(1), Push(1), Add, Store(1), Jmp(outer)]);
    m[outer_exit] = Jz(at(&m));
    // Phase 2: i from 0 to n again.
    m.extend([Push(0), Store(1)]);
    let second = at(&m);
    m.extend([Load(1), Load(0), Lt, Jz(usize::MAX)]);
    let second_exit = at(&m) - 1;
    // s += f(i) with f = 1 unless i % 16 == 0 (then 2): nearly monomorphic.
    m.extend([
        Load(3),
        Load(1),
        Load(1),
        Push(16),
        Rem,
        Push(1),
        Lt,
        Push(1),
        Add,
    ]);
    let mono = at(&m);
    m.extend([CallIndirect, Add, Store(3)]);
    // s += g(i) with g = 1 + i % 3: polymorphic.
    m.extend([Load(3), Load(1), Load(1), Push(3), Rem, Push(1), Add]);
    let poly = at(&m);
    m.extend([CallIndirect, Add, Store(3)]);
    m.extend([Load(1), Push(1), Add, Store(1), Jmp(second)]);
    m[second_exit] = Jz(at(&m));
    m.extend([Load(3), Ret]);
    let marks = Landmarks {
        inner,
        bound_load: inner + 1,
        second,
        mono,
        poly,
    };
    let funcs = vec![
        Func { code: m, locals: 5 },
        // f1(x) = x * 3, f2(x) = x + 7, f3(x) = x * x % 1000
        Func {
            code: vec![Load(0), Push(3), Mul, Ret],
            locals: 1,
        },
        Func {
            code: vec![Load(0), Push(7), Add, Ret],
            locals: 1,
        },
        Func {
            code: vec![Load(0), Load(0), Mul, Push(1000), Rem, Ret],
            locals: 1,
        },
    ];
    (funcs, marks)
}

#[allow(dead_code)]
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: i64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(20_000);
    let spec = args
        .get(2)
        .map_or("multihash:interval=5000", String::as_str);
    let (funcs, _) = two_phases();
    match run(&funcs, n, spec, 100) {
        Ok(log) => {
            println!(
                "result {} after {} intervals",
                log.result,
                log.decisions.len()
            );
            for d in &log.decisions {
                let traces: Vec<String> = d
                    .traces
                    .iter()
                    .take(3)
                    .map(|t| {
                        format!(
                            "{} {:?} w{}{}",
                            t.head,
                            t.blocks,
                            t.weight,
                            if t.loops { " loop" } else { "" }
                        )
                    })
                    .collect();
                let values: Vec<String> = d
                    .values
                    .iter()
                    .map(|v| format!("{}={} ({:.0}%)", v.site, v.value, v.share * 100.0))
                    .collect();
                let calls: Vec<String> = d
                    .calls
                    .iter()
                    .map(|c| match c {
                        CallDecision::Monomorphic {
                            site,
                            callee,
                            share,
                        } => format!("{site} mono f{callee} ({:.0}%)", share * 100.0),
                        CallDecision::Polymorphic { site, callees } => format!(
                            "{site} poly {}",
                            callees
                                .iter()
                                .map(|(c, s)| format!("f{c} {:.0}%", s * 100.0))
                                .collect::<Vec<_>>()
                                .join(" ")
                        ),
                    })
                    .collect();
                println!(
                    "interval {:>3}: traces [{}]; values [{}]; calls [{}]; reviews {:?}",
                    d.interval,
                    traces.join(", "),
                    values.join(", "),
                    calls.join(", "),
                    d.reviews
                );
            }
            println!(
                "installed {:?}; dropped {:?}; recompiled {:?}",
                log.installs, log.drops, log.recompiles
            );
        }
        Err(e) => {
            eprintln!("foreign_vm: {e}");
            std::process::exit(2);
        }
    }
}
