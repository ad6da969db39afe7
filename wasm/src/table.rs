//! Bulk memory's table operators: `table.copy`, `table.init` and
//! `elem.drop`, as loops over the table's words (one word per entry, in
//! toyvm memory below WebAssembly address 0; see `layout`), the same loops
//! `memory.copy` and `memory.init` run (`bulk`), on the entries' bytes.
//!
//! Each operator checks its ranges, in 64-bit arithmetic on the
//! zero-extended operands, against the table's size (and `table.init`
//! against the segment's current length, 0 once dropped) before it writes
//! an entry, and traps with `trap 2` ("undefined table element": toyvm has
//! one code for WebAssembly's table-access traps) as WebAssembly traps out
//! of bounds; an empty range ending exactly at the end is in bounds.
//! Overlapping copies behave as `memmove`.

use toyvm_vm::isa::Instr;

use crate::emit::{self, Width};
use crate::func::Builder;
use crate::layout::DataPlace;
use crate::{Result, trap_code};

impl Builder<'_, '_> {
    /// Traps (table access out of bounds) unless `start + n <= limit`
    /// (`end` is scratch).
    fn check_table_range(
        &mut self,
        start: toyvm_vm::isa::Reg,
        n: toyvm_vm::isa::Reg,
        limit: toyvm_vm::isa::Reg,
        end: toyvm_vm::isa::Reg,
    ) -> Result<()> {
        self.emit(Instr::Add {
            d: end,
            a: start,
            b: n,
        })?;
        let oob = self.cold_trap(trap_code::UNDEFINED_ELEMENT)?;
        self.emit(Instr::Bltu {
            a: limit,
            b: end,
            target: oob,
        })
    }

    /// `table.copy`: `n` entries from `s` to `d`, as `memmove`.
    pub fn table_copy(&mut self) -> Result<()> {
        if self.unreachable {
            return Ok(());
        }
        let (k, [d, s, n]) = self.pop3_u32()?;
        let (len, end) = (self.bulk_reg(k, 3)?, self.bulk_reg(k, 4)?);
        let table_len = self.shared.layout.table_len as i64;
        self.load_const(len, table_len)?;
        self.check_table_range(s, n, len, end)?;
        self.check_table_range(d, n, len, end)?;
        self.entries_to_bytes([d, s, n])?;
        let table = self.shared.layout.table;
        self.copy_bytes(k, [d, s, n], table, table, true)
    }

    /// `table.init`: `n` entries of element segment `segment` from `s` to
    /// `d`.
    pub fn table_init(&mut self, segment: u32) -> Result<()> {
        if self.unreachable {
            return Ok(());
        }
        let place = self.elem_place(segment, "table.init")?;
        let (k, [d, s, n]) = self.pop3_u32()?;
        let (len, end) = (self.bulk_reg(k, 3)?, self.bulk_reg(k, 4)?);
        let at = self.addr_imm(place.len)?;
        self.emit(Instr::Li { d: end, imm: 0 })?;
        self.emit(emit::load(Width::W64, false, len, end, at))?;
        self.check_table_range(s, n, len, end)?;
        let table_len = self.shared.layout.table_len as i64;
        self.load_const(len, table_len)?;
        self.check_table_range(d, n, len, end)?;
        self.entries_to_bytes([d, s, n])?;
        let table = self.shared.layout.table;
        self.copy_bytes(k, [d, s, n], table, place.bytes, false)
    }

    /// Where element segment `segment` lives (its length word and entries).
    fn elem_place(&self, segment: u32, op: &str) -> Result<DataPlace> {
        self.shared
            .layout
            .elems
            .get(segment as usize)
            .copied()
            .ok_or_else(|| self.internal(&format!("{op} of a segment without a place")))
    }

    /// `elem.drop`: the segment's length becomes 0.
    pub fn elem_drop(&mut self, segment: u32) -> Result<()> {
        if self.unreachable {
            return Ok(());
        }
        let place = self.elem_place(segment, "elem.drop")?;
        let at = self.addr_imm(place.len)?;
        let zero = self.temp(0)?;
        self.emit(Instr::Li { d: zero, imm: 0 })?;
        self.emit(emit::store(Width::W64, zero, at, zero))
    }

    /// Entry counts and indices (checked against the table, so below 2^20)
    /// to byte counts and offsets: times 8.
    fn entries_to_bytes(&mut self, regs: [toyvm_vm::isa::Reg; 3]) -> Result<()> {
        for r in regs {
            self.emit(Instr::Shli { d: r, a: r, imm: 3 })?;
        }
        Ok(())
    }
}
