//! Translating one function body: the builder's state (code, labels, the
//! abstract operand stack, control frames) and the finishing steps. The
//! operators themselves are in `control` and `ops`.
//!
//! Registers: WebAssembly local `i` is register `ri` (parameters first, as
//! toyvm passes them), and operand-stack slot `k` is register `r(L+k)` (its
//! *home*), `L` the number of locals; scratch registers are taken past the
//! current stack top. A stack entry may be *lazy*: a local's value or a
//! constant not yet copied to its home; it is copied when it must be in
//! place (a call's arguments, a block's start, a local assigned while it is
//! still on the stack).

use toyvm_vm::isa::{Instr, Label, Reg};
use toyvm_vm::program::{Function, MAX_CODE_LEN, MAX_REGS};
use wasmparser::ValType;

use crate::cond::{Cond, Opnd};
use crate::layout::Layout;
use crate::{Error, Result};

/// Most jump tables a function may have (`jtab`'s table operand is 16 bits).
const MAX_TABLES: usize = 1 << 16;
/// Most instructions of each of a function's main and out-of-line code:
/// with the locals' zeroing (at most 256) they stay within toyvm's limit.
const MAX_PART: usize = (MAX_CODE_LEN - MAX_REGS) / 2;

/// What a WebAssembly function index calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Callee {
    /// A toyvm function.
    Func(u32),
    /// A host import.
    Host(u16),
    /// WASI's `proc_exit`: a `halt`.
    Exit,
}

/// What every function's translation reads.
pub struct Shared<'a> {
    pub module: &'a crate::module::Module<'a>,
    pub layout: &'a Layout,
    /// By WebAssembly function index.
    pub callees: Vec<Callee>,
}

/// A value on the abstract operand stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Val {
    /// In its home register.
    Home,
    /// Equal to this local's register (not yet copied).
    Local(Reg),
    /// This constant (not yet materialized).
    Const(i64),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameKind {
    Func,
    Block,
    Loop,
    If,
    Else,
}

#[derive(Clone, Debug)]
pub struct Frame {
    pub kind: FrameKind,
    /// Stack height at entry; a result lands in home(height).
    pub height: usize,
    /// 0 or 1.
    pub results: usize,
    /// Where a branch to this frame goes (a loop's head, the others' end).
    pub label: Label,
    /// An `if`'s else branch, until bound.
    pub else_label: Option<Label>,
    /// Some branch goes to `label` (for the end to be reachable).
    pub reached: bool,
    /// Entered in unreachable code: everything in it is dead.
    pub dead: bool,
}

/// The last instructions emitted compute `reg` from `start` on; if `cmp`,
/// they are the value form of that comparison.
#[derive(Clone, Copy, Debug)]
pub struct Pending {
    pub start: usize,
    pub reg: Reg,
    pub cmp: Option<(Cond, Reg, Opnd)>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sec {
    Main,
    Cold,
}

/// A translated function before it joins the program.
pub struct Built {
    pub function: Function,
    /// The WebAssembly code offset of each instruction.
    pub offsets: Vec<u32>,
    /// Instructions that trap because their WebAssembly operator is not
    /// supported: (pc, operator).
    pub unsupported: Vec<(u32, &'static str)>,
    /// The WebAssembly operators of the body (the final `end` included).
    pub operators: u32,
}

pub struct Builder<'s, 'a> {
    pub shared: &'s Shared<'a>,
    pub index: u32,
    pub name: &'s str,
    /// Parameters and declared locals.
    pub locals: usize,
    params: usize,
    code: Vec<Instr>,
    offsets: Vec<u32>,
    cold: Vec<Instr>,
    cold_offsets: Vec<u32>,
    /// Where each label is bound.
    labels: Vec<Option<(Sec, u32)>>,
    /// Instructions whose label operand is a label id still.
    fixups: Vec<(Sec, u32)>,
    /// Jump tables, entries are label ids until `finish`.
    tables: Vec<Vec<u32>>,
    pub stack: Vec<Val>,
    pub frames: Vec<Frame>,
    pub unreachable: bool,
    pub pending: Option<Pending>,
    /// A label is bound at the current end of the main code: the last
    /// instruction is not the only way here.
    bound_here: bool,
    max_reg: usize,
    /// The current operator's code offset.
    pub offset: usize,
    /// The operators read so far.
    pub operators: u32,
    unsupported: Vec<(Sec, u32, &'static str)>,
}

impl<'s, 'a> Builder<'s, 'a> {
    pub fn new(
        shared: &'s Shared<'a>,
        index: u32,
        name: &'s str,
        params: &[ValType],
        locals: usize,
    ) -> Builder<'s, 'a> {
        Builder {
            shared,
            index,
            name,
            locals,
            params: params.len(),
            code: Vec::new(),
            offsets: Vec::new(),
            cold: Vec::new(),
            cold_offsets: Vec::new(),
            labels: Vec::new(),
            fixups: Vec::new(),
            tables: Vec::new(),
            stack: Vec::new(),
            frames: Vec::new(),
            unreachable: false,
            pending: None,
            bound_here: false,
            max_reg: params.len().max(1),
            offset: 0,
            operators: 0,
            unsupported: Vec::new(),
        }
    }

    pub fn too_large(&self, what: String) -> Error {
        Error::FunctionTooLarge {
            index: self.index,
            name: self.name.to_owned(),
            offset: self.offset,
            what,
        }
    }

    /// An error for a module the validator accepted that breaks an
    /// assumption of the translator (so a bug of one or the other).
    pub fn internal(&self, what: &str) -> Error {
        Error::InvalidFunction {
            index: self.index,
            name: self.name.to_owned(),
            offset: self.offset,
            message: format!("translator: {what}"),
        }
    }

    /// Register `r`, checked against toyvm's 256.
    pub fn reg(&mut self, r: usize) -> Result<Reg> {
        if r >= MAX_REGS {
            return Err(self.too_large(format!(
                "needs more than {MAX_REGS} registers ({} locals and the operand stack; toyvm has {MAX_REGS} per function)",
                self.locals
            )));
        }
        self.max_reg = self.max_reg.max(r + 1);
        Ok(r as Reg)
    }

    /// The home register of stack slot `k`.
    pub fn home(&mut self, k: usize) -> Result<Reg> {
        self.reg(self.locals + k)
    }

    /// Scratch register `j` past the current stack top.
    pub fn temp(&mut self, j: usize) -> Result<Reg> {
        self.reg(self.locals + self.stack.len() + j)
    }

    // ---- emission ----

    pub fn code_len(&self) -> usize {
        self.code.len()
    }

    pub fn emit(&mut self, i: Instr) -> Result<()> {
        if self.code.len() >= MAX_PART {
            return Err(self.too_large(format!("more than {MAX_PART} toyvm instructions")));
        }
        if i.label().is_some() {
            self.fixups.push((Sec::Main, self.code.len() as u32));
        }
        self.code.push(i);
        self.offsets.push(self.offset as u32);
        self.pending = None;
        self.bound_here = false;
        Ok(())
    }

    pub fn emit_cold(&mut self, i: Instr) -> Result<()> {
        if self.cold.len() >= MAX_PART {
            return Err(self.too_large(format!(
                "more than {MAX_PART} out-of-line toyvm instructions"
            )));
        }
        if i.label().is_some() {
            self.fixups.push((Sec::Cold, self.cold.len() as u32));
        }
        self.cold.push(i);
        self.cold_offsets.push(self.offset as u32);
        Ok(())
    }

    /// `trap code` here, recorded as this operator's unsupported trap when
    /// `what` names it.
    pub fn emit_trap(&mut self, code: i32, what: Option<&'static str>) -> Result<()> {
        if let Some(op) = what {
            self.unsupported
                .push((Sec::Main, self.code.len() as u32, op));
        }
        self.emit(crate::emit::trap(code))
    }

    /// A new out-of-line `trap code`, returning its label.
    pub fn cold_trap(&mut self, code: i32) -> Result<Label> {
        let l = self.new_label();
        self.bind_cold(l);
        self.emit_cold(crate::emit::trap(code))?;
        Ok(l)
    }

    pub fn new_label(&mut self) -> Label {
        self.labels.push(None);
        (self.labels.len() - 1) as Label
    }

    /// Binds `l` at the current end of the main code.
    pub fn bind(&mut self, l: Label) {
        self.labels[l as usize] = Some((Sec::Main, self.code.len() as u32));
        self.pending = None;
        self.bound_here = true;
    }

    /// Binds `l` at the current end of the out-of-line code.
    pub fn bind_cold(&mut self, l: Label) {
        self.labels[l as usize] = Some((Sec::Cold, self.cold.len() as u32));
    }

    /// A new jump table of label ids.
    pub fn add_table(&mut self, entries: Vec<Label>) -> Result<u16> {
        if self.tables.len() >= MAX_TABLES {
            return Err(self.too_large(format!("more than {MAX_TABLES} br_table jump tables")));
        }
        self.tables.push(entries);
        Ok((self.tables.len() - 1) as u16)
    }

    /// The pending computation of the stack top, if the last instructions
    /// are it and nothing else reaches here.
    pub fn pending_top(&self) -> Option<Pending> {
        let p = self.pending?;
        (!self.bound_here && p.start < self.code.len()).then_some(p)
    }

    /// Removes the last instructions from `start` on (a pending value
    /// replaced by a fused form).
    pub fn truncate(&mut self, start: usize) {
        self.code.truncate(start);
        self.offsets.truncate(start);
        self.fixups
            .retain(|&(s, i)| s == Sec::Cold || (i as usize) < start);
        self.unsupported
            .retain(|&(s, i, _)| s == Sec::Cold || (i as usize) < start);
        self.pending = None;
    }

    /// Makes the last instruction write `d` instead (it writes the pending
    /// register, which nothing reads afterwards).
    pub fn retarget_last(&mut self, d: Reg) {
        if let Some(last) = self.code.last_mut() {
            let mut ops: Vec<_> = last.operands().to_vec();
            if let Some(toyvm_vm::isa::Operand::Reg(r)) = ops.first_mut() {
                *r = d;
            }
            if let Some(i) = Instr::from_operands(last.op(), &ops) {
                *last = i;
            }
        }
        self.pending = None;
    }

    /// Whether the main code ends with `i`.
    pub fn last_is(&self, i: Instr) -> bool {
        self.code.last() == Some(&i)
    }

    /// The last instruction, if it is at the end of the main code and
    /// writes `reg`.
    pub fn last_writes(&self, reg: Reg) -> bool {
        self.code.last().and_then(|i| i.dest()) == Some(reg)
    }

    // ---- the abstract stack ----

    pub fn push(&mut self, v: Val) -> Result<()> {
        self.home(self.stack.len())?;
        self.stack.push(v);
        Ok(())
    }

    /// Pushes a value computed into home(top) by the instructions from
    /// `start` on.
    pub fn push_computed(&mut self, start: usize, cmp: Option<(Cond, Reg, Opnd)>) -> Result<()> {
        let reg = self.home(self.stack.len())?;
        self.stack.push(Val::Home);
        self.pending = Some(Pending { start, reg, cmp });
        Ok(())
    }

    pub fn pop(&mut self) -> Result<Val> {
        match self.stack.pop() {
            Some(v) => Ok(v),
            None => Err(self.internal("operand stack underflow")),
        }
    }

    /// A register holding `v`, the value of slot `slot`: its home, the
    /// local, or the constant materialized into its home.
    pub fn reg_of(&mut self, v: Val, slot: usize) -> Result<Reg> {
        Ok(match v {
            Val::Home => self.home(slot)?,
            Val::Local(r) => r,
            Val::Const(k) => {
                let h = self.home(slot)?;
                self.load_const(h, k)?;
                h
            }
        })
    }

    /// `d = k`.
    pub fn load_const(&mut self, d: Reg, k: i64) -> Result<()> {
        match i32::try_from(k) {
            Ok(imm) => self.emit(Instr::Li { d, imm }),
            Err(_) => self.emit(Instr::Lk { d, k }),
        }
    }

    /// Puts `v` (of slot `slot`) into register `d`.
    pub fn move_to(&mut self, d: Reg, v: Val, slot: usize) -> Result<()> {
        match v {
            Val::Home => {
                let h = self.home(slot)?;
                if h != d {
                    self.emit(Instr::Mov { d, a: h })?;
                }
                Ok(())
            }
            Val::Local(r) if r == d => Ok(()),
            Val::Local(a) => self.emit(Instr::Mov { d, a }),
            Val::Const(k) => self.load_const(d, k),
        }
    }

    /// Same, in the out-of-line code.
    pub fn move_to_cold(&mut self, d: Reg, v: Val, slot: usize) -> Result<()> {
        let h = self.home(slot)?;
        match v {
            Val::Home if h == d => Ok(()),
            Val::Home => self.emit_cold(Instr::Mov { d, a: h }),
            Val::Local(r) if r == d => Ok(()),
            Val::Local(a) => self.emit_cold(Instr::Mov { d, a }),
            Val::Const(k) => match i32::try_from(k) {
                Ok(imm) => self.emit_cold(Instr::Li { d, imm }),
                Err(_) => self.emit_cold(Instr::Lk { d, k }),
            },
        }
    }

    /// Copies every lazy entry of the stack to its home.
    pub fn materialize_all(&mut self) -> Result<()> {
        for k in 0..self.stack.len() {
            self.materialize(k)?;
        }
        Ok(())
    }

    pub fn materialize(&mut self, k: usize) -> Result<()> {
        let v = self.stack[k];
        if v != Val::Home {
            let h = self.home(k)?;
            self.move_to(h, v, k)?;
            self.stack[k] = Val::Home;
        }
        Ok(())
    }

    /// Copies every stack entry that is a lazy copy of local `r` to its
    /// home (before `r` is assigned).
    pub fn materialize_local(&mut self, r: Reg) -> Result<bool> {
        let mut any = false;
        for k in 0..self.stack.len() {
            if self.stack[k] == Val::Local(r) {
                self.materialize(k)?;
                any = true;
            }
        }
        Ok(any)
    }

    // ---- finishing ----

    /// The function: main code, then the out-of-line code, labels resolved,
    /// and zero initialization for the declared locals that some path reads
    /// before writing (WebAssembly zeroes every local; toyvm's verifier
    /// wants every register written before it is read).
    pub fn finish(mut self) -> Result<Built> {
        if self.code.last().is_none_or(|i| i.op().falls_through()) {
            // Only reachable in a module whose last code is dead (after a
            // trap, which ends control): a jump to itself closes the code.
            let l = self.new_label();
            self.bind(l);
            self.emit(Instr::Jmp { target: l })?;
        }
        let main_len = self.code.len() as u32;
        let resolve = |labels: &[Option<(Sec, u32)>], l: u32| -> u32 {
            match labels[l as usize] {
                Some((Sec::Main, at)) => at,
                Some((Sec::Cold, at)) => main_len + at,
                // A label no reachable code binds is only the target of dead
                // branches; the function's first instruction serves.
                None => 0,
            }
        };
        let mut code = std::mem::take(&mut self.code);
        code.append(&mut self.cold);
        let mut offsets = std::mem::take(&mut self.offsets);
        offsets.append(&mut self.cold_offsets);
        for &(sec, at) in &self.fixups {
            let at = if sec == Sec::Main { at } else { main_len + at } as usize;
            code[at] = relabel(code[at], |l| resolve(&self.labels, l));
        }
        let tables: Vec<Vec<u32>> = self
            .tables
            .iter()
            .map(|t| t.iter().map(|&l| resolve(&self.labels, l)).collect())
            .collect();
        let mut unsupported: Vec<(u32, &'static str)> = self
            .unsupported
            .iter()
            .map(|&(s, at, op)| (if s == Sec::Main { at } else { main_len + at }, op))
            .collect();

        let mut function = Function {
            name: self.name.to_owned(),
            params: self.params as u8,
            regs: self.max_reg as u16,
            code,
            tables,
        };
        // Zero the locals read before written: prepend `li r, 0` and shift
        // every label past them.
        let live = toyvm_vm::dataflow::live_in(&function);
        let zeroed: Vec<Reg> = (self.params..self.locals)
            .map(|r| r as Reg)
            .filter(|&r| live.first().is_some_and(|s| s.contains(r)))
            .collect();
        if !zeroed.is_empty() {
            let n = zeroed.len() as u32;
            for i in function.code.iter_mut() {
                *i = relabel(*i, |l| l + n);
            }
            for t in function.tables.iter_mut() {
                t.iter_mut().for_each(|e| *e += n);
            }
            let first = offsets.first().copied().unwrap_or(0);
            let mut code: Vec<Instr> = zeroed.iter().map(|&d| Instr::Li { d, imm: 0 }).collect();
            code.append(&mut function.code);
            function.code = code;
            let mut o = vec![first; zeroed.len()];
            o.append(&mut offsets);
            offsets = o;
            unsupported.iter_mut().for_each(|(pc, _)| *pc += n);
        }
        Ok(Built {
            function,
            offsets,
            unsupported,
            operators: self.operators,
        })
    }
}

/// `i` with its label operand mapped through `f`.
fn relabel(i: Instr, f: impl Fn(u32) -> u32) -> Instr {
    let Some(_) = i.label() else { return i };
    let ops: Vec<_> = i
        .operands()
        .iter()
        .map(|o| match *o {
            toyvm_vm::isa::Operand::Label(l) => toyvm_vm::isa::Operand::Label(f(l)),
            o => o,
        })
        .collect();
    Instr::from_operands(i.op(), &ops).unwrap_or(i)
}
