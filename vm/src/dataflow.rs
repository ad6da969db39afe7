//! Dataflow over a function's bytecode: the registers each instruction
//! reads and writes, its successors, and which registers are live before
//! each instruction. The verifier's definite-assignment rule
//! ([`crate::verify`], invariant 7) and the JIT's exits (which store back
//! only the registers the interpreter can still read where it resumes) are
//! both built on these.
//!
//! ```
//! use toyvm_vm::asm::assemble;
//! use toyvm_vm::dataflow::live_in;
//!
//! let p = assemble(".func main(n)\n li r1, 1\n add r1, r1, n\n ret r1\n.end\n").unwrap();
//! let live = live_in(&p.functions[0]);
//! assert!(live[0].contains(0) && !live[0].contains(1)); // n is read later, r1 is written first
//! assert!(live[2].contains(1) && !live[2].contains(0)); // `ret r1` reads only r1
//! ```

use crate::isa::{Instr, Operand};
use crate::program::Function;

/// A set of registers (each `u8` register index one bit).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct RegSet([u64; 4]);

impl RegSet {
    /// No register.
    pub const EMPTY: RegSet = RegSet([0; 4]);

    /// Registers `0 .. n`.
    pub fn first(n: usize) -> RegSet {
        let mut s = RegSet::EMPTY;
        for r in 0..n.min(256) {
            s.insert(r as u8);
        }
        s
    }

    /// Adds `r`.
    pub fn insert(&mut self, r: u8) {
        self.0[r as usize / 64] |= 1 << (r % 64);
    }

    /// Removes `r`.
    pub fn remove(&mut self, r: u8) {
        self.0[r as usize / 64] &= !(1 << (r % 64));
    }

    /// Whether `r` is in the set.
    pub fn contains(&self, r: u8) -> bool {
        self.0[r as usize / 64] & (1 << (r % 64)) != 0
    }

    /// The registers in both sets.
    pub fn intersect(&self, o: &RegSet) -> RegSet {
        RegSet(std::array::from_fn(|i| self.0[i] & o.0[i]))
    }

    /// The registers in either set.
    pub fn union(&self, o: &RegSet) -> RegSet {
        RegSet(std::array::from_fn(|i| self.0[i] | o.0[i]))
    }
}

/// The registers an instruction reads, and the one it writes.
pub fn reads_and_write(i: &Instr) -> (Vec<u8>, Option<u8>) {
    match *i {
        Instr::Call { d, a, n, .. } | Instr::Hcall { d, a, n, .. } => {
            ((a..a.saturating_add(n)).collect(), Some(d))
        }
        Instr::Calli { d, f, a, n } => {
            let mut r: Vec<u8> = (a..a.saturating_add(n)).collect();
            r.push(f);
            (r, Some(d))
        }
        Instr::Loop { a, b, .. } => (vec![a, b], Some(a)),
        _ => {
            let dest = i.dest();
            let ops = i.operands();
            let regs = ops.iter().enumerate().filter_map(|(k, o)| match o {
                Operand::Reg(r) if !(k == 0 && dest.is_some()) => Some(*r),
                _ => None,
            });
            (regs.collect(), dest)
        }
    }
}

/// Replaces `out` with the offsets control can go to after instruction
/// `pc` of `f`: the next instruction when it falls through, its label, and
/// a `jtab`'s table entries (with repeats; nothing past the function's end).
pub fn successors(f: &Function, pc: usize, out: &mut Vec<usize>) {
    out.clear();
    let ins = &f.code[pc];
    if ins.op().falls_through() && pc + 1 < f.code.len() {
        out.push(pc + 1);
    }
    if let Some(l) = ins.label() {
        out.push(l as usize);
    }
    if let Instr::Jtab { t, .. } = ins
        && let Some(table) = f.tables.get(*t as usize)
    {
        out.extend(table.iter().map(|&l| l as usize));
    }
}

/// For each instruction of `f`, the registers live before it: those some
/// path from it reads before writing. A register outside the set holds no
/// value the function can still observe there, so code that hands control
/// to the interpreter at that instruction need not store it back.
///
/// An over-approximation is safe for that use, and this is one: a call is
/// taken to write only its destination (a callee cannot write its caller's
/// registers in this VM, so that is also exact), and every successor
/// counts, feasible or not. The function must be verified (labels and
/// tables in range); an out-of-range successor is ignored.
pub fn live_in(f: &Function) -> Vec<RegSet> {
    let len = f.code.len();
    let effects: Vec<(RegSet, Option<u8>)> = f
        .code
        .iter()
        .map(|i| {
            let (reads, write) = reads_and_write(i);
            let mut r = RegSet::EMPTY;
            for x in reads {
                r.insert(x);
            }
            (r, write)
        })
        .collect();
    let succs: Vec<Vec<usize>> = (0..len)
        .map(|pc| {
            let mut out = Vec::new();
            successors(f, pc, &mut out);
            out.retain(|&s| s < len);
            out
        })
        .collect();
    let mut preds: Vec<Vec<usize>> = vec![Vec::new(); len];
    for (pc, out) in succs.iter().enumerate() {
        for &s in out {
            preds[s].push(pc);
        }
    }
    let mut live = vec![RegSet::EMPTY; len];
    // Backward: visit in reverse order first, then revisit the predecessors
    // of any instruction whose set grew (sets only grow, so this ends).
    let mut work: Vec<usize> = (0..len).collect();
    let mut queued = vec![true; len];
    while let Some(pc) = work.pop() {
        queued[pc] = false;
        let mut out = RegSet::EMPTY;
        for &s in &succs[pc] {
            out = out.union(&live[s]);
        }
        let (reads, write) = effects[pc];
        if let Some(d) = write {
            out.remove(d);
        }
        let new = out.union(&reads);
        if new != live[pc] {
            live[pc] = new;
            for &p in &preds[pc] {
                if !queued[p] {
                    queued[p] = true;
                    work.push(p);
                }
            }
        }
    }
    live
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::asm::assemble;

    fn live_of(src: &str) -> Vec<Vec<u8>> {
        let p = assemble(src).unwrap();
        crate::verify::verify(&p).unwrap();
        live_in(&p.functions[0])
            .iter()
            .map(|s| (0..=255u8).filter(|&r| s.contains(r)).collect())
            .collect()
    }

    #[test]
    fn a_loop_keeps_its_counter_and_bound_live_and_temporaries_dead() {
        // r1 = s, r2 = i, r3 = t: t is written before every read.
        let live = live_of(
            ".func main(n)\n li r1, 0\n li r2, 0\nl:\n mul r3, r2, r2\n add r1, r1, r3\n loop r2, n, l\n ret r1\n.end\n",
        );
        assert_eq!(live[0], vec![0]);
        assert_eq!(live[2], vec![0, 1, 2], "the loop head: n, s, i; not t");
        assert_eq!(live[3], vec![0, 1, 2, 3]);
        assert_eq!(live[4], vec![0, 1, 2]);
        assert_eq!(live[5], vec![1]);
    }

    #[test]
    fn calls_read_their_window_and_write_only_their_destination() {
        let live = live_of(
            ".func main(n)\n li r1, 2\n li r2, 3\n call r3, f, r1, 2\n add r3, r3, r2\n ret r3\n.end\n.func f(a, b)\n add a, a, b\n ret a\n.end\n",
        );
        assert_eq!(
            live[2],
            vec![1, 2],
            "the arguments, and r2 read after the call"
        );
        assert_eq!(live[3], vec![2, 3]);
    }

    #[test]
    fn a_jump_table_joins_every_target() {
        let live = live_of(
            ".func main(n)\n li r1, 1\n li r2, 2\n jtab n, [a, b]\n ret n\na:\n ret r1\nb:\n ret r2\n.end\n",
        );
        assert_eq!(live[2], vec![0, 1, 2]);
    }

    #[test]
    fn new_instructions_read_write_and_branch_as_declared() {
        let p = crate::asm::assemble(
            ".func main(a, b)\n select r2, a, b, a\n st8 r2, 0, b\n mgrow r3, r2\n bltu r3, a, out\n trap 0\nout:\n ret r3\n.end\n",
        )
        .unwrap();
        let f = &p.functions[0];
        let rw: Vec<_> = f.code.iter().map(reads_and_write).collect();
        assert_eq!(rw[0], (vec![0, 1, 0], Some(2)));
        assert_eq!(rw[1], (vec![2, 1], None));
        assert_eq!(rw[2], (vec![2], Some(3)));
        assert_eq!(rw[3], (vec![3, 0], None));
        assert_eq!(rw[4], (vec![], None));
        let mut succ = Vec::new();
        successors(f, 3, &mut succ);
        assert_eq!(succ, [4, 5]);
        successors(f, 4, &mut succ);
        assert!(succ.is_empty(), "`trap` has no successor");
        // Nothing after the `trap` reads r3 before `out`.
        let live = live_in(f);
        assert!(!live[4].contains(3));
    }
}
