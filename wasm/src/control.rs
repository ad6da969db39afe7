//! Control flow, calls, locals and globals.

use toyvm_vm::isa::{Instr, Label, Reg};
use wasmparser::{BlockType, BrTable};

use crate::cond::{Cond, Opnd};
use crate::emit;
use crate::func::{Builder, Callee, Frame, FrameKind, Val};
use crate::{Result, trap_code};

impl Builder<'_, '_> {
    fn block_results(&self, ty: BlockType) -> Result<usize> {
        match ty {
            BlockType::Empty => Ok(0),
            BlockType::Type(_) => Ok(1),
            BlockType::FuncType(_) => Err(self.internal("block with a function type")),
        }
    }

    fn open(&mut self, kind: FrameKind, results: usize, label: Label, else_label: Option<Label>) {
        self.frames.push(Frame {
            kind,
            height: self.stack.len(),
            results,
            label,
            else_label,
            reached: false,
            dead: self.unreachable,
        });
    }

    pub fn block(&mut self, ty: BlockType) -> Result<()> {
        let results = self.block_results(ty)?;
        if !self.unreachable {
            self.materialize_all()?;
        }
        let l = self.new_label();
        self.open(FrameKind::Block, results, l, None);
        Ok(())
    }

    pub fn loop_(&mut self, ty: BlockType) -> Result<()> {
        let results = self.block_results(ty)?;
        if !self.unreachable {
            self.materialize_all()?;
        }
        let l = self.new_label();
        self.bind(l);
        self.open(FrameKind::Loop, results, l, None);
        Ok(())
    }

    pub fn if_(&mut self, ty: BlockType) -> Result<()> {
        let results = self.block_results(ty)?;
        let end = self.new_label();
        let else_label = self.new_label();
        if self.unreachable {
            self.open(FrameKind::If, results, end, Some(else_label));
            return Ok(());
        }
        let cond = self.condition()?;
        self.materialize_all()?;
        self.branch_on(cond.negate_all(), else_label)?;
        self.open(FrameKind::If, results, end, Some(else_label));
        Ok(())
    }

    pub fn else_(&mut self) -> Result<()> {
        let Some(frame) = self.frames.last().cloned() else {
            return Err(self.internal("else outside a frame"));
        };
        if !self.unreachable {
            self.fall_into_end(&frame)?;
            self.emit(Instr::Jmp {
                target: frame.label,
            })?;
            self.frames.last_mut().expect("frame").reached = true;
        }
        if let Some(l) = frame.else_label {
            self.bind(l);
        }
        let f = self.frames.last_mut().expect("frame");
        f.else_label = None;
        f.kind = FrameKind::Else;
        self.stack.truncate(frame.height);
        self.unreachable = frame.dead;
        Ok(())
    }

    /// The fall-through result (if any) into the frame's result register.
    fn fall_into_end(&mut self, frame: &Frame) -> Result<()> {
        if frame.results == 1 && frame.kind != FrameKind::Func {
            let v = self.pop()?;
            let h = self.home(frame.height)?;
            self.move_to(h, v, frame.height)?;
            self.stack.push(Val::Home);
        }
        Ok(())
    }

    /// `end`; returns true at the function's end.
    pub fn end(&mut self) -> Result<bool> {
        if self.frames.len() == 1 {
            // The function's end (its frame stays for `return_`).
            if !self.unreachable {
                self.return_()?;
            }
            self.frames.clear();
            return Ok(true);
        }
        let Some(frame) = self.frames.pop() else {
            return Err(self.internal("end outside a frame"));
        };
        let falls = !self.unreachable;
        if falls {
            self.fall_into_end(&frame)?;
        }
        if let Some(l) = frame.else_label {
            // An `if` without `else`: a false condition comes here.
            self.bind(l);
        }
        if frame.kind != FrameKind::Loop {
            self.bind(frame.label);
        }
        let reachable = falls
            || frame.reached
            || (frame.kind == FrameKind::If && frame.else_label.is_some() && !frame.dead);
        self.stack.truncate(frame.height);
        self.unreachable = !reachable;
        if reachable && frame.results == 1 {
            self.push(Val::Home)?;
        }
        Ok(false)
    }

    /// The frame `depth` levels out.
    fn target(&self, depth: u32) -> Result<usize> {
        let n = self.frames.len();
        (depth as usize)
            .checked_add(1)
            .and_then(|d| n.checked_sub(d))
            .ok_or_else(|| self.internal("branch depth past the function"))
    }

    /// What a branch to frame `t` must move: (result register, value, its
    /// slot), or none.
    fn branch_move(&mut self, t: usize) -> Result<Option<(Reg, Val, usize)>> {
        let f = &self.frames[t];
        if f.kind == FrameKind::Loop || f.results == 0 {
            return Ok(None);
        }
        let height = f.height;
        let slot = self.stack.len() - 1;
        let v = *self
            .stack
            .last()
            .ok_or_else(|| self.internal("branch without its value"))?;
        let d = self.home(height)?;
        if v == Val::Home && slot == height {
            return Ok(None);
        }
        Ok(Some((d, v, slot)))
    }

    pub fn br(&mut self, depth: u32) -> Result<()> {
        if self.unreachable {
            return Ok(());
        }
        let t = self.target(depth)?;
        if self.frames[t].kind == FrameKind::Func {
            self.return_()?;
            return Ok(());
        }
        if let Some((d, v, slot)) = self.branch_move(t)? {
            self.move_to(d, v, slot)?;
        }
        self.frames[t].reached = true;
        self.emit(Instr::Jmp {
            target: self.frames[t].label,
        })?;
        self.unreachable = true;
        Ok(())
    }

    pub fn br_if(&mut self, depth: u32) -> Result<()> {
        if self.unreachable {
            return Ok(());
        }
        let cond = self.condition()?;
        let t = self.target(depth)?;
        let target = if self.frames[t].kind == FrameKind::Func {
            // A conditional return: out of line.
            let l = self.new_label();
            self.bind_cold(l);
            self.cold_return()?;
            l
        } else {
            self.frames[t].reached = true;
            match self.branch_move(t)? {
                None => self.frames[t].label,
                Some((d, v, slot)) => {
                    let l = self.new_label();
                    self.bind_cold(l);
                    self.move_to_cold(d, v, slot)?;
                    self.emit_cold(Instr::Jmp {
                        target: self.frames[t].label,
                    })?;
                    l
                }
            }
        };
        self.branch_on(cond, target)
    }

    pub fn br_table(&mut self, targets: &BrTable<'_>) -> Result<()> {
        if self.unreachable {
            return Ok(());
        }
        let v = self.pop()?;
        let index = self.reg_of(v, self.stack.len())?;
        let mut depths = Vec::with_capacity(targets.len().min(1 << 16) as usize);
        for d in targets.targets() {
            depths.push(d.map_err(crate::module::invalid)?);
        }
        // One entry label per target frame (a stub where a value moves).
        let mut entry_of: std::collections::HashMap<usize, Label> = Default::default();
        let mut entry = |b: &mut Self, depth: u32| -> Result<Label> {
            let t = b.target(depth)?;
            if let Some(&l) = entry_of.get(&t) {
                return Ok(l);
            }
            let l = if b.frames[t].kind == FrameKind::Func {
                let l = b.new_label();
                b.bind_cold(l);
                b.cold_return()?;
                l
            } else {
                b.frames[t].reached = true;
                match b.branch_move(t)? {
                    None => b.frames[t].label,
                    Some((d, v, slot)) => {
                        let l = b.new_label();
                        b.bind_cold(l);
                        b.move_to_cold(d, v, slot)?;
                        b.emit_cold(Instr::Jmp {
                            target: b.frames[t].label,
                        })?;
                        l
                    }
                }
            };
            entry_of.insert(t, l);
            Ok(l)
        };
        let mut labels = Vec::with_capacity(depths.len());
        for &d in &depths {
            labels.push(entry(self, d)?);
        }
        let default = entry(self, targets.default())?;
        if !labels.is_empty() {
            let t = self.add_table(labels)?;
            self.emit(Instr::Jtab { a: index, t })?;
        }
        self.emit(Instr::Jmp { target: default })?;
        self.unreachable = true;
        Ok(())
    }

    /// The function's return, at the current point of the main code.
    pub fn return_(&mut self) -> Result<()> {
        let results = self.frames.first().map_or(0, |f| f.results);
        let a = if results == 1 {
            let v = *self
                .stack
                .last()
                .ok_or_else(|| self.internal("return without its value"))?;
            self.reg_of(v, self.stack.len() - 1)?
        } else {
            self.void_value()?
        };
        self.emit(Instr::Ret { a })?;
        self.unreachable = true;
        Ok(())
    }

    /// A register `ret` may read in a function without results: the first
    /// parameter, else a zeroed scratch register.
    fn void_value(&mut self) -> Result<Reg> {
        if self.params() > 0 {
            return Ok(0);
        }
        let t = self.temp(0)?;
        self.emit(Instr::Li { d: t, imm: 0 })?;
        Ok(t)
    }

    fn params(&self) -> usize {
        self.shared.module.func_type(self.index).params().len()
    }

    /// The function's return, out of line (for a conditional one).
    fn cold_return(&mut self) -> Result<()> {
        let results = self.frames.first().map_or(0, |f| f.results);
        if results == 1 {
            let slot = self.stack.len() - 1;
            let v = self.stack[slot];
            let a = match v {
                Val::Home => self.home(slot)?,
                Val::Local(r) => r,
                Val::Const(_) => {
                    let h = self.home(slot)?;
                    self.move_to_cold(h, v, slot)?;
                    h
                }
            };
            self.emit_cold(Instr::Ret { a })
        } else if self.params() > 0 {
            self.emit_cold(Instr::Ret { a: 0 })
        } else {
            let t = self.temp(0)?;
            self.emit_cold(Instr::Li { d: t, imm: 0 })?;
            self.emit_cold(Instr::Ret { a: t })
        }
    }

    // ---- conditions ----

    /// Pops a condition: a comparison just computed (whose value form is
    /// then removed, to be fused into the branch) or a register.
    fn condition(&mut self) -> Result<Condition> {
        let slot = self.stack.len() - 1;
        let pending = self.pending_top();
        let v = self.pop()?;
        if let Val::Const(k) = v {
            return Ok(Condition::Known(k != 0));
        }
        if let (Val::Home, Some(p)) = (v, pending) {
            let home = self.home(slot)?;
            if let (true, Some((c, a, b))) = (p.reg == home, p.cmp) {
                self.truncate(p.start);
                return Ok(Condition::Cmp(c, a, b));
            }
        }
        let r = self.reg_of(v, slot)?;
        Ok(Condition::Cmp(Cond::Ne, r, Opnd::Imm(0)))
    }

    /// Jumps to `target` when `cond` holds.
    fn branch_on(&mut self, cond: Condition, target: Label) -> Result<()> {
        match cond {
            Condition::Known(false) => Ok(()),
            Condition::Known(true) => self.emit(Instr::Jmp { target }),
            Condition::Cmp(c, a, b) => {
                if let Some(i) = c.branch(a, b, target) {
                    return self.emit(i);
                }
                // An unsigned comparison with an immediate: the immediate
                // in a scratch register.
                let Opnd::Imm(imm) = b else {
                    return Err(self.internal("comparison without a branch form"));
                };
                // Past the comparison's operands' slots.
                let t = self.temp(2)?;
                self.emit(Instr::Li { d: t, imm })?;
                let i = c
                    .branch(a, Opnd::Reg(t), target)
                    .ok_or_else(|| self.internal("comparison without a branch form"))?;
                self.emit(i)
            }
        }
    }

    // ---- calls ----

    /// Moves the top `n` stack entries to their homes; returns the first
    /// one's slot.
    fn arguments(&mut self, n: usize) -> Result<usize> {
        let first = self
            .stack
            .len()
            .checked_sub(n)
            .ok_or_else(|| self.internal("call without its arguments"))?;
        for k in first..self.stack.len() {
            self.materialize(k)?;
        }
        Ok(first)
    }

    pub fn call(&mut self, function: u32) -> Result<()> {
        if self.unreachable {
            return Ok(());
        }
        let ty = self.shared.module.func_type(function);
        let (n, results) = (ty.params().len(), ty.results().len());
        let first = self.arguments(n)?;
        let a = self.home(first)?;
        let callee = *self
            .shared
            .callees
            .get(function as usize)
            .ok_or_else(|| self.internal("call of a missing function"))?;
        match callee {
            Callee::Func(f) => self.emit(Instr::Call {
                d: a,
                f,
                a,
                n: n as u8,
            })?,
            Callee::Host(h) => self.emit(Instr::Hcall {
                d: a,
                h,
                a,
                n: n as u8,
            })?,
            Callee::Exit => {
                self.emit(Instr::Halt { a })?;
                self.unreachable = true;
            }
        }
        self.stack.truncate(first);
        if results == 1 && !self.unreachable {
            self.push(Val::Home)?;
        }
        Ok(())
    }

    /// `call_indirect`: the table lies in memory, one word per entry:
    /// `(canonical type + 1) << 32 | toyvm function`, zero when null.
    pub fn call_indirect(&mut self, type_index: u32) -> Result<()> {
        if self.unreachable {
            return Ok(());
        }
        let module = self.shared.module;
        let ty = module
            .types
            .get(type_index as usize)
            .ok_or_else(|| self.internal("call_indirect of a missing type"))?;
        let (n, results) = (ty.params().len(), ty.results().len());
        let want = module.canonical[type_index as usize] as i64 + 1;
        let v = self.pop()?;
        let index = self.reg_of(v, self.stack.len())?;
        let first = self.arguments(n)?;
        let a = self.home(first)?;
        // Past the arguments and the index (which may be in its home).
        let (t, t2) = (self.temp(1)?, self.temp(2)?);
        let layout = self.shared.layout;
        // Past the table (a negative i32 is a huge unsigned one).
        let bad_index = self.cold_trap(trap_code::UNDEFINED_ELEMENT)?;
        let len = layout.table_len as i32;
        self.emit(Instr::Ltui {
            d: t,
            a: index,
            imm: len,
        })?;
        self.emit(Instr::Jz {
            a: t,
            target: bad_index,
        })?;
        self.emit(Instr::Shli {
            d: t,
            a: index,
            imm: 3,
        })?;
        self.emit(emit::load(
            emit::Width::W64,
            false,
            t,
            t,
            layout.table as i32,
        ))?;
        self.emit(Instr::Ushri {
            d: t2,
            a: t,
            imm: 32,
        })?;
        // A mismatch: a null entry (type 0) or another signature.
        let mismatch = self.new_label();
        self.emit(Instr::Bnei {
            a: t2,
            imm: want as i32,
            target: mismatch,
        })?;
        self.bind_cold(mismatch);
        let null = self.new_label();
        self.emit_cold(Instr::Jz {
            a: t2,
            target: null,
        })?;
        self.emit_cold(emit::trap(trap_code::SIGNATURE_MISMATCH))?;
        self.bind_cold(null);
        self.emit_cold(emit::trap(trap_code::UNDEFINED_ELEMENT))?;
        self.emit(emit::zext32(t, t))?;
        self.emit(Instr::Calli {
            d: a,
            f: t,
            a,
            n: n as u8,
        })?;
        self.stack.truncate(first);
        if results == 1 {
            self.push(Val::Home)?;
        }
        Ok(())
    }

    // ---- locals and globals ----

    pub fn local_get(&mut self, index: u32) -> Result<()> {
        if !self.unreachable {
            self.push(Val::Local(index as Reg))?;
        }
        Ok(())
    }

    pub fn local_set(&mut self, index: u32, tee: bool) -> Result<()> {
        if self.unreachable {
            return Ok(());
        }
        let x = index as Reg;
        let slot = self.stack.len() - 1;
        let pending = self.pending_top();
        let v = self.pop()?;
        let copies = self.stack.contains(&Val::Local(x));
        match (v, pending) {
            // The value was just computed into its home: compute it into
            // the local instead.
            (Val::Home, Some(p))
                if !copies && p.reg == self.home(slot)? && self.last_writes(p.reg) =>
            {
                self.retarget_last(x);
            }
            _ => {
                self.materialize_local(x)?;
                self.move_to(x, v, slot)?;
            }
        }
        if tee {
            self.push(Val::Local(x))?;
        }
        Ok(())
    }

    pub fn global_get(&mut self, index: u32) -> Result<()> {
        if self.unreachable {
            return Ok(());
        }
        let g = *self
            .shared
            .module
            .globals
            .get(index as usize)
            .ok_or_else(|| self.internal("missing global"))?;
        match self.shared.layout.global_addr(index) {
            None => self.push(Val::Const(g.init)),
            Some(addr) => {
                let start = self.code_len();
                let h = self.home(self.stack.len())?;
                self.emit(Instr::Li { d: h, imm: 0 })?;
                self.emit(emit::load(emit::Width::W64, false, h, h, addr as i32))?;
                self.push_computed(start, None)
            }
        }
    }

    pub fn global_set(&mut self, index: u32) -> Result<()> {
        if self.unreachable {
            return Ok(());
        }
        let addr = self
            .shared
            .layout
            .global_addr(index)
            .ok_or_else(|| self.internal("set of an immutable global"))?;
        let v = self.pop()?;
        let b = self.reg_of(v, self.stack.len())?;
        let t = self.temp(1)?;
        self.emit(Instr::Li { d: t, imm: 0 })?;
        self.emit(emit::store(emit::Width::W64, t, addr as i32, b))
    }

    pub fn drop_(&mut self) -> Result<()> {
        if !self.unreachable {
            self.pop()?;
        }
        Ok(())
    }

    pub fn select(&mut self) -> Result<()> {
        if self.unreachable {
            return Ok(());
        }
        let c = self.pop()?;
        let b = self.pop()?;
        let a = self.pop()?;
        let k = self.stack.len();
        if let Val::Const(c) = c {
            // A known condition picks one side. The second one, in its home
            // register, moves down to the result's slot (found by the
            // campaign: `ctz` read a result never written).
            if c != 0 {
                return self.push(a);
            }
            if b == Val::Home {
                let (d, from) = (self.home(k)?, self.home(k + 1)?);
                self.emit(Instr::Mov { d, a: from })?;
            }
            return self.push(b);
        }
        let (ra, rb, rc) = (
            self.reg_of(a, k)?,
            self.reg_of(b, k + 1)?,
            self.reg_of(c, k + 2)?,
        );
        let start = self.code_len();
        let d = self.home(k)?;
        self.emit(emit::select(d, rc, ra, rb))?;
        self.push_computed(start, None)
    }

    pub fn unreachable_(&mut self) -> Result<()> {
        if !self.unreachable {
            self.emit_trap(trap_code::UNREACHABLE, None)?;
            self.unreachable = true;
        }
        Ok(())
    }
}

/// A branch condition.
#[derive(Clone, Copy, Debug)]
pub enum Condition {
    /// Known at translation time.
    Known(bool),
    /// `a cond b`.
    Cmp(Cond, Reg, Opnd),
}

impl Condition {
    fn negate_all(self) -> Condition {
        match self {
            Condition::Known(b) => Condition::Known(!b),
            Condition::Cmp(c, a, b) => Condition::Cmp(c.negate(), a, b),
        }
    }
}
