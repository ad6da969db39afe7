//! Exits of a region: each exit site's cold block, and filling those
//! blocks once every path into them exists (the exit counter, the arrivals
//! counter, registers written back, fuel refunded, the encoded exit), after
//! the blocks where native calls unwind (a bail or a trap).

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{Block, InstBuilder, MemFlagsData, Value, types};

use super::{Lower, loc};
use crate::exit::{Exit, ExitKind, ExitSite};
use crate::native::{self, ctx_offset};
use toyvm_vm::isa::Reg;

impl Lower<'_, '_> {
    /// A new exit site and its (cold, not yet filled) block.
    pub(super) fn exit(&mut self, kind: ExitKind, resume: u32) -> Block {
        let blk = self.b.create_block();
        self.b.set_cold_block(blk);
        self.pending.push((blk, self.exits.len()));
        let report = match kind {
            ExitKind::Side | ExitKind::Guard => self.report,
            _ => None,
        };
        self.exits.push(ExitSite {
            kind,
            resume,
            report,
        });
        // What of the charged block this exit did not run.
        let refund = match (kind, self.charged) {
            (ExitKind::Interpret | ExitKind::Guard, Some((start, end)))
                if (start..end).contains(&resume) =>
            {
                end - resume
            }
            _ => 0,
        };
        self.refunds.push(refund);
        blk
    }

    pub(super) fn leave(&mut self, kind: ExitKind, resume: u32) {
        let blk = self.exit(kind, resume);
        self.b.ins().jump(blk, &[]);
        self.done = true;
    }

    /// Continues only if `ok`; otherwise leaves through a new exit.
    pub(super) fn check(&mut self, ok: Value, kind: ExitKind, resume: u32) {
        let fail = self.exit(kind, resume);
        let cont = self.b.create_block();
        self.b.ins().brif(ok, cont, &[], fail, &[]);
        self.b.switch_to_block(cont);
    }

    pub(super) fn fill_exits(&mut self) {
        let flags = MemFlagsData::trusted();
        for (blk, trap, interpret) in std::mem::take(&mut self.unwinds) {
            self.b.switch_to_block(blk);
            let kind = self
                .b
                .ins()
                .load(types::I64, flags, self.ctx, ctx_offset::TRAP_KIND);
            let bail = self.b.create_block();
            self.b.set_cold_block(bail);
            let bailed = self
                .b
                .ins()
                .icmp_imm_s(IntCC::Equal, kind, native::TRAP_BAIL as i64);
            self.b.ins().brif(bailed, bail, &[], trap, &[]);
            self.b.switch_to_block(bail);
            let none = self.b.ins().iconst(types::I64, native::TRAP_NONE as i64);
            self.b
                .ins()
                .store(flags, none, self.ctx, ctx_offset::TRAP_KIND);
            self.b.ins().jump(interpret, &[]);
        }
        let pending = std::mem::take(&mut self.pending);
        if pending.is_empty() {
            return;
        }
        let base = self.region.steps.len() + 1;
        // What every exit ends with, written once: its counter and the
        // arrivals counter (which follows the exits'; see
        // `CompiledRegion`) counted, its code returned. Each exit's own
        // block only writes its registers back and jumps here with its
        // code and the arrivals so far; the site's counter is found from
        // the code (`Exit::encode_at`). One tail rather than one per exit
        // is a fifth to a quarter less IR for the compiler on a region
        // with dozens of exits (bytecode.wasm's dispatch loop 1,123 -> 849
        // Cranelift instructions), and one epilogue in the machine code.
        let tail = self.b.create_block();
        self.b.set_cold_block(tail);
        let code = self.b.append_block_param(tail, types::I64);
        let arrived = self.b.append_block_param(tail, types::I64);
        for (blk, i) in pending {
            self.b.switch_to_block(blk);
            self.b.set_srcloc(loc(base + i));
            let arrived = self.b.use_var(self.arrivals);
            // An exit to the interpreter need not store a register dead
            // where it resumes (the interpreter writes it before any read);
            // a trap's registers stay as the interpreter's would be.
            let live = match self.exits[i].kind {
                ExitKind::Side | ExitKind::Guard | ExitKind::Interpret => self
                    .live
                    .and_then(|live| live.get(self.exits[i].resume as usize)),
                ExitKind::Trap => None,
            };
            for r in 0..256 {
                // A cold register is in `regs` already.
                if self.written[r] && !self.cold[r] && live.is_none_or(|l| l.contains(r as u8)) {
                    let v = self.get(r as Reg);
                    self.b.ins().store(flags, v, self.regs, 8 * r as i32);
                }
            }
            if let Some(fuel) = self.fuel {
                let mut left = self.b.use_var(fuel);
                if self.refunds[i] > 0 {
                    left = self.b.ins().iadd_imm_s(left, self.refunds[i] as i64);
                }
                self.b.ins().store(flags, left, self.ctx, ctx_offset::FUEL);
            }
            let code = Exit {
                kind: self.exits[i].kind,
                resume: self.exits[i].resume,
            }
            .encode_at(i);
            let code = self.b.ins().iconst(types::I64, code as i64);
            self.b.ins().jump(tail, &[code.into(), arrived.into()]);
        }
        self.b.switch_to_block(tail);
        self.b.set_srcloc(loc(base + self.exits.len()));
        // Site i's counter is at 8 * i: the site number is the code's
        // site field less one (`Exit::site`).
        let site = self.b.ins().ushr_imm_u(code, i64::from(Exit::SITE_SHIFT));
        let at = self.b.ins().ishl_imm_u(site, 3);
        let at = self.b.ins().iadd(self.counters, at);
        let n = self.b.ins().load(types::I64, flags, at, -8);
        let n = self.b.ins().iadd_imm_s(n, 1);
        self.b.ins().store(flags, n, at, -8);
        let trips = 8 * self.exits.len() as i32;
        let n = self.b.ins().load(types::I64, flags, self.counters, trips);
        let n = self.b.ins().iadd(n, arrived);
        self.b.ins().store(flags, n, self.counters, trips);
        self.b.ins().return_(&[code]);
    }
}
