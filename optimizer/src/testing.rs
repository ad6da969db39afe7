//! Test support: a reference evaluator over bytecode, and a mixed-mode
//! runner that enters compiled regions at their heads.
//!
//! The evaluator is deliberately plain (one instruction at a time, through
//! `toyvm_vm::semantics`) so that the JIT is checked against the VM's own
//! definition of each op; `toyvm_vm::interp` is the oracle for whole runs.

use std::collections::HashMap;
use std::fmt::Write as _;

use toyvm_vm::interp::Memory;
use toyvm_vm::isa::Instr;
use toyvm_vm::semantics::{self, as_binary, as_branch, as_unary};
use toyvm_vm::{Pc, Program, Tuple, interp};

use crate::jit::CompiledRegion;
use crate::{DEFAULT_MAX_DEPTH, Exit, ExitKind};

/// `programs/loop.tasm`'s nest: `(i * j) % 7` summed over `1..=n` squared,
/// printed and returned (the loop-nest fixture of several tests).
pub const LOOP_NEST: &str = "
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
    .end";

/// What one instruction did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stepped {
    Next(u32),
    Call { d: u8, f: u32, a: u8, n: u8 },
    Ret(i64),
    Halt(i64),
    Trap,
}

/// Executes the instruction at `pc` of function `func`.
pub fn step(
    p: &Program,
    func: u32,
    pc: u32,
    regs: &mut [i64; 256],
    mem: &mut Memory,
    out: &mut Vec<u8>,
    input_len: i64,
) -> Stepped {
    let f = &p.functions[func as usize];
    let i = f.code[pc as usize];
    let r = |x: u8| regs[x as usize];
    if let Some((op, d, a, rhs)) = as_binary(&i) {
        let y = match rhs {
            toyvm_vm::semantics::Rhs::Reg(b) => r(b),
            toyvm_vm::semantics::Rhs::Imm(k) => k,
        };
        return match op.eval(r(a), y) {
            Ok(v) => {
                regs[d as usize] = v;
                Stepped::Next(pc + 1)
            }
            Err(_) => Stepped::Trap,
        };
    }
    if let Some((cond, a, rhs, target)) = as_branch(&i) {
        let y = match rhs {
            toyvm_vm::semantics::Rhs::Reg(b) => r(b),
            toyvm_vm::semantics::Rhs::Imm(k) => k,
        };
        return Stepped::Next(if cond.holds(r(a), y) { target } else { pc + 1 });
    }
    let next = Stepped::Next(pc + 1);
    if let Some((op, d, a)) = as_unary(&i) {
        regs[d as usize] = op.eval(r(a));
        return next;
    }
    if let Some((size, signed)) = i.op().sized_access() {
        return sized(i, size, signed, regs, mem).map_or(Stepped::Trap, |()| next);
    }
    match i {
        Instr::Nop {} => next,
        Instr::Mov { d, a } => {
            regs[d as usize] = r(a);
            next
        }
        Instr::Li { d, imm } => {
            regs[d as usize] = imm as i64;
            next
        }
        Instr::Lk { d, k } => {
            regs[d as usize] = k;
            next
        }
        Instr::Fref { d, f } => {
            regs[d as usize] = f as i64;
            next
        }
        Instr::Neg { d, a } => {
            regs[d as usize] = r(a).wrapping_neg();
            next
        }
        Instr::Not { d, a } => {
            regs[d as usize] = !r(a);
            next
        }
        Instr::Ld { d, a, imm } => {
            let addr = semantics::word_index(semantics::word_address(r(a), imm));
            match mem.get(addr) {
                Some(&v) => {
                    regs[d as usize] = v;
                    next
                }
                None => Stepped::Trap,
            }
        }
        Instr::St { a, imm, b } => {
            let addr = semantics::word_index(semantics::word_address(r(a), imm));
            match mem.get_mut(addr) {
                Some(slot) => {
                    *slot = r(b);
                    next
                }
                None => Stepped::Trap,
            }
        }
        Instr::Select { d, c, a, b } => {
            regs[d as usize] = semantics::select(r(c), r(a), r(b));
            next
        }
        Instr::Msize { d } => {
            regs[d as usize] = mem.len_bytes() as i64;
            next
        }
        Instr::Mgrow { d, a } => {
            regs[d as usize] = mem.grow(r(a)).map_or(-1, |old| old as i64);
            next
        }
        Instr::Trap { .. } => Stepped::Trap,
        Instr::Jmp { target } => Stepped::Next(target),
        Instr::Loop { a, b, target } => {
            let (x, y) = (r(a), r(b));
            let v = semantics::loop_count(x);
            regs[a as usize] = v;
            let on = semantics::LOOP_COND.holds(v, y);
            Stepped::Next(if on { target } else { pc + 1 })
        }
        Instr::Jtab { a, t } => {
            let to = semantics::jtab_entry(&f.tables[t as usize], r(a));
            Stepped::Next(to.unwrap_or(pc + 1))
        }
        Instr::Call { d, f, a, n } => Stepped::Call { d, f, a, n },
        Instr::Calli { d, f, a, n } => match u32::try_from(r(f)) {
            Ok(callee)
                if p.functions
                    .get(callee as usize)
                    .is_some_and(|g| g.params == n) =>
            {
                Stepped::Call { d, f: callee, a, n }
            }
            _ => Stepped::Trap,
        },
        // The evaluator has no host: a host function fails.
        Instr::Hcall { .. } => Stepped::Trap,
        Instr::Ret { a } => Stepped::Ret(r(a)),
        Instr::Halt { a } => Stepped::Halt(r(a)),
        Instr::Putn { a } => {
            let _ = write!(Utf8(out), "{}", r(a));
            next
        }
        Instr::Putc { a } => {
            out.push(r(a) as u8);
            next
        }
        Instr::Inlen { d } => {
            regs[d as usize] = input_len;
            next
        }
        _ => unreachable!("binary ops and branches are handled above: {i:?}"),
    }
}

/// A sized load or store through the memory's byte view; `None` when out
/// of bounds.
fn sized(i: Instr, size: u8, signed: bool, regs: &mut [i64; 256], mem: &mut Memory) -> Option<()> {
    let (reg, a, imm) = match i {
        Instr::Ld8s { d, a, imm }
        | Instr::Ld8u { d, a, imm }
        | Instr::Ld16s { d, a, imm }
        | Instr::Ld16u { d, a, imm }
        | Instr::Ld32s { d, a, imm }
        | Instr::Ld32u { d, a, imm }
        | Instr::Ld64 { d, a, imm } => (d, a, imm),
        Instr::St8 { a, imm, b }
        | Instr::St16 { a, imm, b }
        | Instr::St32 { a, imm, b }
        | Instr::St64 { a, imm, b } => (b, a, imm),
        _ => unreachable!("only sized accesses"),
    };
    let ea = semantics::byte_address(regs[a as usize], imm);
    if !semantics::bytes_in_bounds(ea, size, mem.len_bytes()) {
        return None;
    }
    let range = ea as usize..ea as usize + size as usize;
    if i.op().is_load() {
        let mut le = [0u8; 8];
        le[..size as usize].copy_from_slice(&mem.bytes()[range]);
        let raw = u64::from_le_bytes(le);
        regs[reg as usize] = semantics::extend_loaded(raw, size, signed);
    } else {
        let le = regs[reg as usize].to_le_bytes();
        mem.bytes_mut()[range].copy_from_slice(&le[..size as usize]);
    }
    Some(())
}

struct Utf8<'a>(&'a mut Vec<u8>);
impl std::fmt::Write for Utf8<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

/// How a whole run ended: output and value, or the pc of a trap.
pub type RunResult = Result<(Vec<u8>, i64), Pc>;

/// What the JIT did during a mixed run.
#[derive(Debug, Default)]
pub struct JitStats {
    pub entries: u64,
    pub exits: HashMap<ExitKind, u64>,
}

/// Runs a program with the reference evaluator, entering `regions` (keyed
/// by `(func, head)`) whenever control reaches a head, except right after
/// an exit at that pc (the interpreter then runs at least one instruction:
/// the `Interpret` contract, and what keeps a guard that resumes at the
/// head from re-entering forever).
pub fn run_mixed(
    p: &Program,
    args: &[i64],
    file: &[u8],
    regions: &HashMap<(u32, u32), CompiledRegion>,
    max_steps: u64,
) -> (RunResult, JitStats) {
    let mut mem = interp::memory(p, file).expect("the program's memory");
    let mut counters: HashMap<(u32, u32), Vec<u64>> = regions
        .iter()
        .map(|(&k, r)| (k, vec![0; r.counters_len()]))
        .collect();
    let mut stats = JitStats::default();
    let mut out = Vec::new();
    let mut func = p.entry;
    let mut pc = 0u32;
    let mut regs = Box::new([0i64; 256]);
    regs[..args.len()].copy_from_slice(args);
    let mut frames: Vec<(u32, u32, u8, Box<[i64; 256]>)> = Vec::new();
    let mut just_exited = false;
    for _ in 0..max_steps {
        if !just_exited && let Some(r) = regions.get(&(func, pc)) {
            let c = counters
                .get_mut(&(func, pc))
                .expect("one counter set per region");
            stats.entries += 1;
            let Exit { kind, resume } =
                match r.run_with(&mut regs, &mut mem, c, frames.len(), DEFAULT_MAX_DEPTH) {
                    Ok(e) => e,
                    Err(t) => {
                        *stats.exits.entry(ExitKind::Trap).or_insert(0) += 1;
                        return (Err(Pc::new(t.func, t.pc)), stats);
                    }
                };
            *stats.exits.entry(kind).or_insert(0) += 1;
            pc = resume;
            just_exited = true;
            continue;
        }
        just_exited = false;
        match step(
            p,
            func,
            pc,
            &mut regs,
            &mut mem,
            &mut out,
            file.len() as i64,
        ) {
            Stepped::Next(n) => pc = n,
            Stepped::Call { d, f, a, n } => {
                if frames.len() >= DEFAULT_MAX_DEPTH {
                    return (Err(Pc::new(func, pc)), stats);
                }
                let mut callee = Box::new([0i64; 256]);
                callee[..n as usize].copy_from_slice(&regs[a as usize..(a + n) as usize]);
                let caller = std::mem::replace(&mut regs, callee);
                frames.push((func, pc + 1, d, caller));
                func = f;
                pc = 0;
            }
            Stepped::Ret(v) => match frames.pop() {
                Some((f, ret, d, caller)) => {
                    regs = caller;
                    regs[d as usize] = v;
                    func = f;
                    pc = ret;
                }
                None => return (Ok((out, v)), stats),
            },
            Stepped::Halt(v) => return (Ok((out, v)), stats),
            Stepped::Trap => return (Err(Pc::new(func, pc)), stats),
        }
    }
    panic!("run_mixed: no end after {max_steps} steps");
}

/// The oracle: `toyvm_vm::interp` on the same input.
pub fn run_oracle(p: &Program, args: &[i64], file: &[u8]) -> RunResult {
    let mut out = Vec::new();
    let input = interp::Input { args, file };
    match interp::run(p, input, &mut out, &Default::default()) {
        Ok(o) => Ok((out, o.value)),
        Err(toyvm_vm::Error::Trap(t)) => Err(t.pc),
        Err(e) => panic!("oracle failed outside a trap: {e}"),
    }
}

/// All tuples of a run (for edge, value and call profiles).
pub fn tuples(p: &Program, args: &[i64], file: &[u8]) -> Vec<Tuple> {
    let mut t = Vec::new();
    let input = interp::Input { args, file };
    // A step limit, so a program that does not end fails its test
    // instead of filling memory with tuples.
    let cfg = interp::Config {
        fuel: Some(50_000_000),
        ..Default::default()
    };
    if let Err(toyvm_vm::Error::Trap(trap)) =
        interp::run_with_sink(p, input, &mut Vec::new(), &mut t, &cfg)
        && matches!(trap.kind, interp::TrapKind::OutOfFuel { .. })
    {
        panic!(
            "the program does not end:\n{}",
            toyvm_vm::asm::disassemble(p)
        );
    }
    t
}

/// Runs function `func` on `args` with the reference evaluator, calls
/// included, at interpreter frame count `depth`: its value, or `None` if it
/// traps (or does output, halts, or runs out of `budget` steps).
pub fn eval_call(
    p: &Program,
    func: u32,
    args: &[i64],
    mem: &mut Memory,
    depth: usize,
    budget: &mut u64,
) -> Option<i64> {
    let mut regs = Box::new([0i64; 256]);
    regs[..args.len()].copy_from_slice(args);
    let mut pc = 0;
    let mut out = Vec::new();
    loop {
        *budget = budget.checked_sub(1)?;
        match step(p, func, pc, &mut regs, mem, &mut out, 0) {
            Stepped::Next(n) => pc = n,
            Stepped::Call { d, f, a, n } => {
                regs[d as usize] = call_ref(p, &regs, f, a, n, mem, depth, budget)?;
                pc += 1;
            }
            Stepped::Ret(v) if out.is_empty() => return Some(v),
            _ => return None,
        }
    }
}

/// A call from a frame at `depth`, with the interpreter's depth check.
#[allow(clippy::too_many_arguments)]
fn call_ref(
    p: &Program,
    regs: &[i64; 256],
    f: u32,
    a: u8,
    n: u8,
    mem: &mut Memory,
    depth: usize,
    budget: &mut u64,
) -> Option<i64> {
    if depth >= DEFAULT_MAX_DEPTH {
        return None;
    }
    let args = &regs[a as usize..a as usize + n as usize];
    eval_call(p, f, args, mem, depth + 1, budget)
}

/// Whether running the reference from `head` on `(regs, mem)` passes
/// through `exit.resume` with exactly `(regs_after, mem_after)` within
/// `max_steps` instructions of function `func` (calls run to completion
/// as one step, as native calls do; stopping at returns, which regions
/// never cross). The frame is the entry function's (depth 0).
#[allow(clippy::too_many_arguments)]
pub fn reaches(
    p: &Program,
    func: u32,
    head: u32,
    mut regs: Box<[i64; 256]>,
    mut mem: Memory,
    exit: Exit,
    regs_after: &[i64; 256],
    mem_after: &Memory,
    max_steps: usize,
) -> bool {
    let mut pc = head;
    let mut out = Vec::new();
    for _ in 0..=max_steps {
        if pc == exit.resume && *regs == *regs_after && mem == *mem_after {
            return true;
        }
        match step(p, func, pc, &mut regs, &mut mem, &mut out, 0) {
            Stepped::Next(n) => pc = n,
            Stepped::Call { d, f, a, n } => {
                let mut budget = 10_000_000;
                match call_ref(p, &regs, f, a, n, &mut mem, 0, &mut budget) {
                    Some(v) => regs[d as usize] = v,
                    None => return false,
                }
                pc += 1;
            }
            _ => return false,
        }
    }
    false
}

/// Whether the reference, run from `head` on `(regs, mem)`, traps (in the
/// function or a callee) within `max_steps` instructions of `func`.
pub fn reference_traps(
    p: &Program,
    func: u32,
    head: u32,
    mut regs: Box<[i64; 256]>,
    mut mem: Memory,
    max_steps: usize,
) -> bool {
    let mut pc = head;
    let mut out = Vec::new();
    for _ in 0..=max_steps {
        match step(p, func, pc, &mut regs, &mut mem, &mut out, 0) {
            Stepped::Next(n) => pc = n,
            Stepped::Call { d, f, a, n } => {
                let mut budget = 10_000_000;
                match call_ref(p, &regs, f, a, n, &mut mem, 0, &mut budget) {
                    Some(v) => regs[d as usize] = v,
                    None => return true,
                }
                pc += 1;
            }
            Stepped::Trap => return true,
            _ => return false,
        }
    }
    false
}
