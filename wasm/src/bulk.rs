//! Bulk memory: `memory.fill`, `memory.copy` (as `memmove`), `memory.init`
//! and `data.drop`, as loops of toyvm's sized loads and stores (no
//! instruction of their own: the interpreter, the profilers and the JIT see
//! ordinary loops).
//!
//! Each operator first checks its ranges, in 64-bit arithmetic on the
//! zero-extended operands, against the memory's current length (and
//! `memory.init` against the segment's) and traps out of bounds before it
//! writes a byte, as WebAssembly does (a range ending exactly at the end is
//! in bounds, so is an empty one there). Then it moves 16 bytes per
//! iteration (two unaligned 64-bit accesses each way, both loads before
//! both stores) and the last few one by one. A copy whose destination lies
//! above its source runs from the end down: overlapping ranges behave as
//! `memmove`.

use toyvm_vm::isa::{Imm, Instr, Reg};

use crate::emit::{self, Width};
use crate::func::Builder;
use crate::{Result, trap_code};

impl Builder<'_, '_> {
    /// Scratch register `j` past the three operands of a bulk operator
    /// whose first operand was slot `k`.
    pub(crate) fn bulk_reg(&mut self, k: usize, j: usize) -> Result<Reg> {
        self.reg(self.locals + k + 3 + j)
    }

    /// Pops the three i32 operands: their first slot, and scratch
    /// registers 0, 1, 2 holding them zero-extended.
    pub(crate) fn pop3_u32(&mut self) -> Result<(usize, [Reg; 3])> {
        let c = self.pop()?;
        let b = self.pop()?;
        let a = self.pop()?;
        let k = self.stack.len();
        let mut out = [0; 3];
        for (i, v) in [a, b, c].into_iter().enumerate() {
            let r = self.reg_of(v, k + i)?;
            let t = self.bulk_reg(k, i)?;
            self.emit(emit::zext32(t, r))?;
            out[i] = t;
        }
        Ok((k, out))
    }

    /// A toyvm byte address as an immediate (every address below the
    /// memory's end fits: toyvm's memory is at most 1 GiB).
    pub(crate) fn addr_imm(&self, addr: u64) -> Result<Imm> {
        Imm::try_from(addr).map_err(|_| self.internal("an address past 2^31"))
    }

    /// `d` = the memory's current length in WebAssembly bytes.
    fn memory_len(&mut self, d: Reg) -> Result<()> {
        self.emit(Instr::Msize { d })?;
        let base = self.addr_imm(self.shared.layout.base)?;
        if base != 0 {
            self.emit(Instr::Subi { d, a: d, imm: base })?;
        }
        Ok(())
    }

    /// Traps out of bounds unless `start + n <= limit` (`end` is scratch).
    pub(crate) fn check_range(&mut self, start: Reg, n: Reg, limit: Reg, end: Reg) -> Result<()> {
        self.emit(Instr::Add {
            d: end,
            a: start,
            b: n,
        })?;
        let oob = self.cold_trap(trap_code::OUT_OF_BOUNDS)?;
        self.emit(Instr::Bltu {
            a: limit,
            b: end,
            target: oob,
        })
    }

    /// `memory.fill`: `n` bytes of `value` from `d`.
    pub fn memory_fill(&mut self) -> Result<()> {
        if self.unreachable {
            return Ok(());
        }
        let (k, [d, v, n]) = self.pop3_u32()?;
        let (len, end, lim) = (
            self.bulk_reg(k, 3)?,
            self.bulk_reg(k, 4)?,
            self.bulk_reg(k, 5)?,
        );
        self.memory_len(len)?;
        self.check_range(d, n, len, end)?;
        let base = self.addr_imm(self.shared.layout.base)?;
        let base8 = self.addr_imm(self.shared.layout.base + 8)?;
        // The byte in every byte of a word.
        self.emit(Instr::Andi {
            d: v,
            a: v,
            imm: 0xff,
        })?;
        self.load_const(lim, 0x0101_0101_0101_0101)?;
        self.emit(Instr::Mul { d: v, a: v, b: lim })?;
        // 16 bytes at a time while d + 16 <= end.
        self.emit(Instr::Subi {
            d: lim,
            a: end,
            imm: 16,
        })?;
        let (words, bytes, byte, done) = (
            self.new_label(),
            self.new_label(),
            self.new_label(),
            self.new_label(),
        );
        self.emit(Instr::Blt {
            a: lim,
            b: d,
            target: bytes,
        })?;
        self.bind(words);
        self.emit(emit::store(Width::W64, d, base, v))?;
        self.emit(emit::store(Width::W64, d, base8, v))?;
        self.emit(Instr::Addi { d, a: d, imm: 16 })?;
        self.emit(Instr::Bge {
            a: lim,
            b: d,
            target: words,
        })?;
        self.bind(bytes);
        self.emit(Instr::Bge {
            a: d,
            b: end,
            target: done,
        })?;
        self.bind(byte);
        self.emit(emit::store(Width::W8, d, base, v))?;
        self.emit(Instr::Addi { d, a: d, imm: 1 })?;
        self.emit(Instr::Blt {
            a: d,
            b: end,
            target: byte,
        })?;
        self.bind(done);
        Ok(())
    }

    /// `memory.copy`: `n` bytes from `s` to `d`, as `memmove`.
    pub fn memory_copy(&mut self) -> Result<()> {
        if self.unreachable {
            return Ok(());
        }
        let (k, [d, s, n]) = self.pop3_u32()?;
        let (len, end) = (self.bulk_reg(k, 3)?, self.bulk_reg(k, 4)?);
        self.memory_len(len)?;
        self.check_range(s, n, len, end)?;
        self.check_range(d, n, len, end)?;
        let base = self.shared.layout.base;
        self.copy_bytes(k, [d, s, n], base, base, true)
    }

    /// `memory.init`: `n` bytes of data segment `segment` from `s` to `d`.
    pub fn memory_init(&mut self, segment: u32) -> Result<()> {
        if self.unreachable {
            return Ok(());
        }
        let place = *self
            .shared
            .layout
            .data
            .get(segment as usize)
            .ok_or_else(|| self.internal("memory.init of a segment without a place"))?;
        let (k, [d, s, n]) = self.pop3_u32()?;
        let (len, end) = (self.bulk_reg(k, 3)?, self.bulk_reg(k, 4)?);
        let at = self.addr_imm(place.len)?;
        self.emit(Instr::Li { d: end, imm: 0 })?;
        self.emit(emit::load(Width::W64, false, len, end, at))?;
        self.check_range(s, n, len, end)?;
        self.memory_len(len)?;
        self.check_range(d, n, len, end)?;
        let base = self.shared.layout.base;
        self.copy_bytes(k, [d, s, n], base, place.bytes, false)
    }

    /// `data.drop`: the segment's length becomes 0.
    pub fn data_drop(&mut self, segment: u32) -> Result<()> {
        if self.unreachable {
            return Ok(());
        }
        let place = *self
            .shared
            .layout
            .data
            .get(segment as usize)
            .ok_or_else(|| self.internal("data.drop of a segment without a place"))?;
        let at = self.addr_imm(place.len)?;
        let zero = self.temp(0)?;
        self.emit(Instr::Li { d: zero, imm: 0 })?;
        self.emit(emit::store(Width::W64, zero, at, zero))
    }

    /// Copies `n` bytes from toyvm address `src + s` to `dst + d` (all
    /// checked in bounds), forward, or, when `overlap` is possible and
    /// `d > s`, from the end down. Clobbers `d`, `s` and scratch 4 to 8.
    pub(crate) fn copy_bytes(
        &mut self,
        k: usize,
        [d, s, n]: [Reg; 3],
        dst: u64,
        src: u64,
        overlap: bool,
    ) -> Result<()> {
        let (dst, dst8) = (self.addr_imm(dst)?, self.addr_imm(dst + 8)?);
        let (src, src8) = (self.addr_imm(src)?, self.addr_imm(src + 8)?);
        let (se, lim, de, t1, t2) = (
            self.bulk_reg(k, 4)?,
            self.bulk_reg(k, 5)?,
            self.bulk_reg(k, 6)?,
            self.bulk_reg(k, 7)?,
            self.bulk_reg(k, 8)?,
        );
        let done = self.new_label();
        let backward = self.new_label();
        if overlap {
            self.emit(Instr::Bltu {
                a: s,
                b: d,
                target: backward,
            })?;
        }
        // (Without `overlap`, `backward` stays unbound and unused.)
        // Forward: 16 bytes while s + 16 <= s + n, then bytes.
        let (words, bytes, byte) = (self.new_label(), self.new_label(), self.new_label());
        self.emit(Instr::Add { d: se, a: s, b: n })?;
        self.emit(Instr::Subi {
            d: lim,
            a: se,
            imm: 16,
        })?;
        self.emit(Instr::Blt {
            a: lim,
            b: s,
            target: bytes,
        })?;
        self.bind(words);
        self.emit(emit::load(Width::W64, false, t1, s, src))?;
        self.emit(emit::load(Width::W64, false, t2, s, src8))?;
        self.emit(emit::store(Width::W64, d, dst, t1))?;
        self.emit(emit::store(Width::W64, d, dst8, t2))?;
        self.emit(Instr::Addi {
            d: s,
            a: s,
            imm: 16,
        })?;
        self.emit(Instr::Addi { d, a: d, imm: 16 })?;
        self.emit(Instr::Bge {
            a: lim,
            b: s,
            target: words,
        })?;
        self.bind(bytes);
        self.emit(Instr::Bge {
            a: s,
            b: se,
            target: done,
        })?;
        self.bind(byte);
        self.emit(emit::load(Width::W8, false, t1, s, src))?;
        self.emit(emit::store(Width::W8, d, dst, t1))?;
        self.emit(Instr::Addi { d: s, a: s, imm: 1 })?;
        self.emit(Instr::Addi { d, a: d, imm: 1 })?;
        self.emit(Instr::Blt {
            a: s,
            b: se,
            target: byte,
        })?;
        if overlap {
            // Backward: the ends move down 16 bytes while at least 16 are
            // left above s, then one by one.
            self.emit(Instr::Jmp { target: done })?;
            let (words, bytes, byte) = (self.new_label(), self.new_label(), self.new_label());
            self.bind(backward);
            self.emit(Instr::Add { d: se, a: s, b: n })?;
            self.emit(Instr::Add { d: de, a: d, b: n })?;
            self.emit(Instr::Addi {
                d: lim,
                a: s,
                imm: 16,
            })?;
            self.emit(Instr::Blt {
                a: se,
                b: lim,
                target: bytes,
            })?;
            self.bind(words);
            self.emit(Instr::Subi {
                d: se,
                a: se,
                imm: 16,
            })?;
            self.emit(Instr::Subi {
                d: de,
                a: de,
                imm: 16,
            })?;
            self.emit(emit::load(Width::W64, false, t1, se, src8))?;
            self.emit(emit::load(Width::W64, false, t2, se, src))?;
            self.emit(emit::store(Width::W64, de, dst8, t1))?;
            self.emit(emit::store(Width::W64, de, dst, t2))?;
            self.emit(Instr::Bge {
                a: se,
                b: lim,
                target: words,
            })?;
            self.bind(bytes);
            self.emit(Instr::Bge {
                a: s,
                b: se,
                target: done,
            })?;
            self.bind(byte);
            self.emit(Instr::Subi {
                d: se,
                a: se,
                imm: 1,
            })?;
            self.emit(Instr::Subi {
                d: de,
                a: de,
                imm: 1,
            })?;
            self.emit(emit::load(Width::W8, false, t1, se, src))?;
            self.emit(emit::store(Width::W8, de, dst, t1))?;
            self.emit(Instr::Blt {
                a: s,
                b: se,
                target: byte,
            })?;
        }
        self.bind(done);
        Ok(())
    }
}
