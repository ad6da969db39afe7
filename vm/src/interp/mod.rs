//! The interpreter: one `match` over decoded instructions.
//!
//! Design, for speed without `unsafe`:
//! - each frame sees its registers as a `&mut [i64; 256]` window into one
//!   register stack, so a `u8` register index needs no bounds check (the
//!   verifier guarantees indices are below the function's register count,
//!   and the stack always keeps 256 slots past the current base);
//! - the sink type `S` and the `COUNT` flag are compile-time parameters:
//!   with [`NoSink`] and no fuel or step counting the
//!   loop contains no profiling or counting code at all;
//! - nothing allocates per instruction; output goes to a buffer flushed in
//!   large writes.
//!
//! Traps (division by zero, memory out of bounds, call depth, fuel, a bad
//! function value, a `trap` instruction) stop the program with the pc and a
//! message.
//!
//! Memory: the loop keeps the word view of the current length (the whole
//! words within it) in a local slice, so `ld`/`st` check their index
//! against that slice's length as before; the sized accesses check their
//! byte range against the length, kept in a local too. `mgrow` and compiled
//! code (which may run `mgrow`) change the length: the loop then takes its
//! view again from the [`Memory`], which always holds the current length.

mod entry;
mod frames;
mod host;
mod memory;
mod reentry;

use std::io::Write;

pub use crate::trap::{HostError, Trap, TrapCode, TrapKind};
pub use entry::{
    Call, Config, HostFunctions, Input, NoHostFunctions, Outcome, call_with_host, memory, run,
    run_hosted, run_with_host, run_with_sink,
};
pub use host::{Host, NoJit};
pub use memory::{HUGE_PAGE_MIN_BYTES, MAP_MIN_BYTES, Memory};
pub use reentry::{CallSite, Reentry};

use frames::{Calls, FnView, Frame, fn_views, give_spare, grow_for_call, take_spare, window};

use crate::isa::Instr;
use crate::program::{ARG_OFFSET, Pc, Program};
use crate::semantics::{self, ArithError, BinOp, UnOp};
use crate::tuple::{BATCH, Emitter, Kind, KindSet, NoSink, Tuple, TupleSink, flush_full};
use crate::{Error, Result};
use reentry::Stop;

/// What a dispatch loop emits, fixed at compile time: nothing, every kind,
/// or the kinds the emitter's flags name (checked per tuple).
const EMIT_NONE: u8 = 0;
const EMIT_ALL: u8 = 1;
const EMIT_SOME: u8 = 2;

/// Slots kept past the current base so every frame has a full 256-register
/// window.
const WINDOW: usize = 256;
/// Output buffered before a write to the underlying stream.
const OUT_CHUNK: usize = 1 << 16;
/// Most register-stack words any run may use (128 MiB).
const MAX_STACK_WORDS: usize = 1 << 24;

struct Machine<'p, 'o, 'm> {
    prog: &'p Program,
    host_fns: &'m mut dyn HostFunctions,
    /// The function called.
    entry: u32,
    mem: &'m mut Memory,
    /// What only calls and returns need.
    calls: Calls<'p>,
    input_len: i64,
    out_buf: Vec<u8>,
    out: &'o mut dyn Write,
    steps: u64,
    /// The run's fuel limit, which an out-of-fuel trap names (the loop's
    /// own budget is what is left of it).
    fuel_limit: u64,
}

/// How the dispatch loop ended without an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ended {
    /// The first frame returned this value.
    Returned(i64),
    /// `halt` ended the whole run with this value.
    Halted(i64),
}

impl Ended {
    fn value(self) -> i64 {
        match self {
            Ended::Returned(v) | Ended::Halted(v) => v,
        }
    }
}

impl Machine<'_, '_, '_> {
    /// Gives the register stack back for the thread's next run.
    fn recycle(self) {
        give_spare(self.calls.stack, self.calls.frames);
    }
}

impl<'p, 'o, 'm> Machine<'p, 'o, 'm> {
    fn new(
        prog: &'p Program,
        fns: &'p [FnView<'p>],
        call: Call<'_>,
        mem: &'m mut Memory,
        out: &'o mut dyn Write,
        host_fns: &'m mut dyn HostFunctions,
    ) -> Self {
        let (mut stack, frames) = take_spare();
        stack[..call.args.len()].copy_from_slice(call.args);
        Machine {
            prog,
            host_fns,
            entry: call.func,
            mem,
            calls: Calls {
                fns,
                max_depth: 0,
                depth_base: 0,
                stack,
                frames,
                depth: 0,
                base: 0,
                frame_regs: prog.functions[call.func as usize].regs as usize,
                fpc: 0,
            },
            input_len: call.input_len as i64,
            // Grown on the first output: most calls print nothing.
            out_buf: Vec::new(),
            out,
            steps: 0,
            fuel_limit: u64::MAX,
        }
    }

    fn flush_output(&mut self) -> Result<()> {
        flush_output(&mut self.out_buf, self.out)
    }

    #[cold]
    #[inline(never)]
    fn trap(&self, kind: TrapKind, func: usize, pc: usize) -> Error {
        Error::Trap(Trap {
            kind,
            pc: Pc::new(func as u32, pc as u32),
            function: self.prog.functions[func].name.clone(),
        })
    }

    /// The dispatch loop: runs the first frame's function (the entry
    /// function, or the callee of a [`Reentry`]) with at most `fuel`
    /// instructions, calls nested below `max_depth - depth_base`.
    ///
    /// The hot state lives in locals the register allocator can keep in
    /// registers: the current function's code, `pc`, the register window,
    /// and (with an active sink) the tuple buffer and its fill level, which
    /// go back into the emitter only when the loop exits.
    #[inline(never)]
    fn exec<S: Host, const COUNT: bool, const EMIT: u8>(
        &mut self,
        em: &mut Emitter<'_, '_, S>,
        fuel: u64,
        max_depth: usize,
        depth_base: usize,
    ) -> Result<Ended> {
        let prog = self.prog;
        // The word view, the capacity past it, and the length in bytes.
        let (mut mem, mut rest, mut len) = self.mem.split();
        let fns = self.calls.fns;
        let mut code = fns[self.entry as usize].0;
        let mut pc: usize = 0;
        let mut steps: u64 = 0;
        // What only calls and returns need (the stack, the frames, the
        // current base and register count) stays in memory, rather than
        // competing for registers with the dispatch state: behind a
        // reference the optimizer cannot see through, it is not promoted
        // to registers across the loop.
        let cs: &mut Calls<'_> = std::hint::black_box(&mut self.calls);
        cs.depth = 0;
        cs.base = 0;
        cs.frame_regs = fns[self.entry as usize].1;
        cs.max_depth = max_depth;
        cs.depth_base = depth_base;
        cs.fpc = (self.entry as u64) << 32;
        let mut regs = window(&mut cs.stack, 0);

        let flag = |on: bool| S::ACTIVE && (EMIT == EMIT_ALL || (EMIT == EMIT_SOME && on));
        let (emit_value, emit_edge, emit_call) = (flag(em.value), flag(em.edge), flag(em.call));
        let buf: &mut [Tuple; BATCH] = em.buf;
        let mut tlen: usize = em.len;

        macro_rules! fidx {
            () => {
                (cs.fpc >> 32) as usize
            };
        }
        // Takes the code and the register window again from `cs` after a
        // call out of the loop (output, host functions, growing the
        // stack), so neither is kept live across that call: the loop's
        // hot state then stays in registers.
        macro_rules! reload {
            () => {
                code = cs.fns[fidx!()].0;
                regs = window(&mut cs.stack, cs.base as usize);
            };
        }
        // Writes the loop's state back; every exit goes through here.
        macro_rules! leave {
            () => {
                self.steps = steps;
                if EMIT != EMIT_NONE {
                    em.len = tlen;
                }
            };
        }
        // Appends a tuple; a full buffer goes to the sink at once, so every
        // batch but the last holds exactly `BATCH` tuples (the
        // `TupleSink` contract).
        macro_rules! push {
            ($kind:expr, $a:expr, $b:expr) => {{
                buf[tlen % BATCH] = Tuple {
                    kind: $kind,
                    a: $a,
                    b: $b,
                };
                tlen += 1;
                if tlen == BATCH {
                    tlen = 0;
                    flush_full(&mut *em.sink, buf, &mut em.counts, em.count);
                }
            }};
        }

        if emit_value {
            let params = prog.functions[fidx!()].params as usize;
            for (i, &v) in regs[..params].iter().enumerate() {
                push!(
                    Kind::Value,
                    cs.fpc | (ARG_OFFSET | i as u32) as u64,
                    v as u64
                );
            }
        }

        // Every arm leaves `pc` at the next instruction to run.  Traps
        // leave the loop with `pc` still at the trapping instruction.
        macro_rules! bin {
            ($d:ident, $a:ident, $b:expr, $f:expr) => {{
                let x = regs[$a as usize];
                let y = $b;
                regs[$d as usize] = $f(x, y);
                pc += 1;
            }};
        }
        macro_rules! fail {
            ($kind:expr) => {{
                let func = fidx!();
                leave!();
                return Err(self.trap($kind, func, pc));
            }};
        }
        macro_rules! divide {
            ($op:expr, $d:ident, $a:ident, $b:expr) => {{
                match $op.eval(regs[$a as usize], $b) {
                    Ok(v) => regs[$d as usize] = v,
                    Err(ArithError::DivisionByZero) => fail!(TrapKind::DivisionByZero),
                }
                pc += 1;
            }};
        }
        // After a control transfer to `pc`: run compiled code if a region
        // starts there (only in hosts with a JIT; see `Host`).
        macro_rules! transfer {
            () => {
                // Compiled code emits no tuples, so the buffered ones stay
                // in execution order without a flush here.
                if S::JIT
                    && let Some(id) = em.sink.region_at(fidx!() as u32, pc as u32)
                {
                    let mut left = fuel - steps;
                    // What compiled code may call the interpreter with:
                    // this run's output and tuple buffer, so what the
                    // callee prints and emits lands in order.
                    let mut vm = Reentry {
                        prog,
                        fns: cs.fns,
                        out: &mut *self.out,
                        out_buf: &mut self.out_buf,
                        input_len: self.input_len,
                        buf: &mut *buf,
                        tlen: &mut tlen,
                        counts: &mut em.counts,
                        count: em.count,
                        kinds: (em.value, em.edge, em.call),
                        counting: COUNT,
                        emit: EMIT,
                        fuel_limit: self.fuel_limit,
                        max_depth: cs.max_depth,
                        stop: None,
                    };
                    let depth = cs.depth + cs.depth_base;
                    let ran = em.sink.run_region(
                        id,
                        regs,
                        &mut *self.mem,
                        &mut *self.host_fns,
                        depth,
                        &mut left,
                        &mut vm,
                    );
                    if let Some(stop) = vm.stop.take() {
                        leave!();
                        return match stop {
                            Stop::Halt(v) => Ok(Ended::Halted(v)),
                            Stop::Error(e) => Err(e),
                        };
                    }
                    match ran {
                        Ok(resume) => {
                            if COUNT {
                                steps = fuel - left;
                            }
                            pc = resume as usize;
                            // Compiled code may have grown the memory.
                            (mem, rest, len) = self.mem.split();
                        }
                        Err(trap) => {
                            // What compiled code ran counts (all of the
                            // fuel, when it ran out).
                            if COUNT {
                                steps = fuel - left;
                            }
                            leave!();
                            return Err(Error::Trap(trap));
                        }
                    }
                }
            };
        }
        macro_rules! branch {
            ($cond:expr, $target:ident) => {{
                let taken = $cond;
                let next = if taken { $target as usize } else { pc + 1 };
                if emit_edge {
                    push!(Kind::Edge, cs.fpc | pc as u64, cs.fpc | next as u64);
                }
                pc = next;
                if taken {
                    transfer!();
                }
            }};
        }
        macro_rules! unary {
            ($d:ident, $a:ident, $op:expr) => {{
                regs[$d as usize] = $op.eval(regs[$a as usize]);
                pc += 1;
            }};
        }
        // A sized load: check the byte range against the length, read it,
        // extend it, emit the Value tuple as `ld` does.
        macro_rules! load_bytes {
            ($d:ident, $a:ident, $imm:ident, $size:literal, $signed:literal) => {{
                let addr = semantics::byte_address(regs[$a as usize], $imm);
                if !semantics::bytes_in_bounds(addr, $size, len) {
                    fail!(TrapKind::BytesOutOfBounds {
                        addr,
                        bytes: $size,
                        len
                    });
                }
                let raw = memory::load(mem, rest, addr as u64, $size);
                let v = semantics::extend_loaded(raw, $size, $signed);
                regs[$d as usize] = v;
                if emit_value {
                    push!(Kind::Value, cs.fpc | pc as u64, v as u64);
                }
                pc += 1;
            }};
        }
        macro_rules! store_bytes {
            ($a:ident, $imm:ident, $b:ident, $size:literal) => {{
                let addr = semantics::byte_address(regs[$a as usize], $imm);
                if !semantics::bytes_in_bounds(addr, $size, len) {
                    fail!(TrapKind::BytesOutOfBounds {
                        addr,
                        bytes: $size,
                        len
                    });
                }
                memory::store(mem, rest, addr as u64, $size, regs[$b as usize]);
                pc += 1;
            }};
        }
        macro_rules! imm {
            ($i:ident) => {
                $i as i64
            };
        }
        // Pushes a frame and starts `callee` with arguments `a .. a+n`.
        // The hot path checks once for a spare frame slot and for a full
        // window past the callee's base; when either is missing, a cold
        // function grows them (or names the trap) and the call instruction
        // runs again, so no decoded operand stays live across a call.
        macro_rules! enter {
            ($d:ident, $callee:expr, $a:ident, $n:ident) => {{
                let callee: usize = $callee;
                let depth = cs.depth;
                let base = cs.base as usize;
                let frame_regs = cs.frame_regs;
                let (a, n) = ($a as usize, $n as usize);
                // Two windows past the caller's base, the caller's and the
                // callee's, so the argument copy indexes one fixed-size
                // array without bounds checks.
                let (Some(slot), Some(both)) = (
                    cs.frames.get_mut(depth),
                    cs.stack.get_mut(base..base + 2 * WINDOW),
                ) else {
                    match grow_for_call(cs, depth, base, frame_regs) {
                        Ok(()) => {
                            // Run the call again, now with room.
                            reload!();
                            if COUNT {
                                steps -= 1;
                            }
                            continue;
                        }
                        Err(kind) => {
                            if emit_call {
                                push!(Kind::Call, cs.fpc | pc as u64, callee as u64);
                            }
                            fail!(kind);
                        }
                    }
                };
                let both: &mut [i64; 2 * WINDOW] = both.try_into().expect("two windows");
                *slot = Frame {
                    ret: cs.fpc | (pc as u32 + 1) as u64,
                    base: base as u32,
                    dest: $d,
                };
                if emit_call {
                    push!(Kind::Call, cs.fpc | pc as u64, callee as u64);
                }
                let (callee_code, callee_regs) = cs.fns[callee];
                // The verifier proves no register is read before it is
                // written, so only the arguments need setting; a + n <=
                // frame_regs <= 256.  The first two slots are copied
                // whatever n is (the callee writes a register before it
                // reads it), which spares a branch on the usual 1-2.
                {
                    const M: usize = 2 * WINDOW - 1;
                    let to = frame_regs;
                    both[to & M] = both[a & M];
                    both[(to + 1) & M] = both[(a + 1) & M];
                    for i in 2..n {
                        both[(to + i) & M] = both[(a + i) & M];
                    }
                }
                regs = (&mut both[frame_regs..frame_regs + WINDOW])
                    .try_into()
                    .expect("window");
                cs.base = (base + frame_regs) as u32;
                cs.depth = depth + 1;
                cs.frame_regs = callee_regs;
                cs.fpc = (callee as u64) << 32;
                code = callee_code;
                pc = 0;
                if emit_value {
                    let args = cs.fpc | ARG_OFFSET as u64;
                    // One argument is the usual case: no loop.
                    if n == 1 {
                        push!(Kind::Value, args, regs[0] as u64);
                    } else {
                        for i in 0..n {
                            push!(Kind::Value, args | i as u64, regs[i] as u64);
                        }
                    }
                }
                transfer!();
            }};
        }

        // Code compiled during an earlier call may start at the called
        // function's first instruction, as at any call's.
        transfer!();

        loop {
            let ins = &code[pc];
            if COUNT {
                if steps >= fuel {
                    fail!(TrapKind::OutOfFuel {
                        limit: self.fuel_limit
                    });
                }
                steps += 1;
            }
            match *ins {
                Instr::Nop {} => pc += 1,
                Instr::Mov { d, a } => {
                    regs[d as usize] = regs[a as usize];
                    pc += 1;
                }
                Instr::Li { d, imm } => {
                    regs[d as usize] = imm as i64;
                    pc += 1;
                }
                Instr::Lk { d, k } => {
                    regs[d as usize] = k;
                    pc += 1;
                }
                Instr::Fref { d, f } => {
                    regs[d as usize] = f as i64;
                    pc += 1;
                }
                Instr::Neg { d, a } => {
                    regs[d as usize] = regs[a as usize].wrapping_neg();
                    pc += 1;
                }
                Instr::Not { d, a } => {
                    regs[d as usize] = !regs[a as usize];
                    pc += 1;
                }
                Instr::Sext8 { d, a } => unary!(d, a, UnOp::Sext8),
                Instr::Sext16 { d, a } => unary!(d, a, UnOp::Sext16),
                Instr::Sext32 { d, a } => unary!(d, a, UnOp::Sext32),
                Instr::Zext32 { d, a } => unary!(d, a, UnOp::Zext32),
                Instr::Clz { d, a } => unary!(d, a, UnOp::Clz),
                Instr::Ctz { d, a } => unary!(d, a, UnOp::Ctz),
                Instr::Popcnt { d, a } => unary!(d, a, UnOp::Popcnt),

                Instr::Add { d, a, b } => bin!(d, a, regs[b as usize], i64::wrapping_add),
                Instr::Sub { d, a, b } => bin!(d, a, regs[b as usize], i64::wrapping_sub),
                Instr::Mul { d, a, b } => bin!(d, a, regs[b as usize], i64::wrapping_mul),
                Instr::Div { d, a, b } => divide!(BinOp::Div, d, a, regs[b as usize]),
                Instr::Rem { d, a, b } => divide!(BinOp::Rem, d, a, regs[b as usize]),
                Instr::And { d, a, b } => bin!(d, a, regs[b as usize], |x, y| x & y),
                Instr::Or { d, a, b } => bin!(d, a, regs[b as usize], |x, y| x | y),
                Instr::Xor { d, a, b } => bin!(d, a, regs[b as usize], |x, y| x ^ y),
                Instr::Shl { d, a, b } => bin!(d, a, regs[b as usize], sem(BinOp::Shl)),
                Instr::Shr { d, a, b } => bin!(d, a, regs[b as usize], sem(BinOp::Shr)),
                Instr::Ushr { d, a, b } => bin!(d, a, regs[b as usize], sem(BinOp::Ushr)),
                Instr::Eq { d, a, b } => bin!(d, a, regs[b as usize], sem(BinOp::Eq)),
                Instr::Ne { d, a, b } => bin!(d, a, regs[b as usize], sem(BinOp::Ne)),
                Instr::Lt { d, a, b } => bin!(d, a, regs[b as usize], sem(BinOp::Lt)),
                Instr::Le { d, a, b } => bin!(d, a, regs[b as usize], sem(BinOp::Le)),
                Instr::Ltu { d, a, b } => bin!(d, a, regs[b as usize], sem(BinOp::Ltu)),

                Instr::Addi { d, a, imm } => bin!(d, a, imm!(imm), i64::wrapping_add),
                Instr::Subi { d, a, imm } => bin!(d, a, imm!(imm), i64::wrapping_sub),
                Instr::Muli { d, a, imm } => bin!(d, a, imm!(imm), i64::wrapping_mul),
                Instr::Divi { d, a, imm } => divide!(BinOp::Div, d, a, imm!(imm)),
                Instr::Remi { d, a, imm } => divide!(BinOp::Rem, d, a, imm!(imm)),
                Instr::Andi { d, a, imm } => bin!(d, a, imm!(imm), |x, y| x & y),
                Instr::Ori { d, a, imm } => bin!(d, a, imm!(imm), |x, y| x | y),
                Instr::Xori { d, a, imm } => bin!(d, a, imm!(imm), |x, y| x ^ y),
                Instr::Shli { d, a, imm } => bin!(d, a, imm!(imm), sem(BinOp::Shl)),
                Instr::Shri { d, a, imm } => bin!(d, a, imm!(imm), sem(BinOp::Shr)),
                Instr::Ushri { d, a, imm } => bin!(d, a, imm!(imm), sem(BinOp::Ushr)),
                Instr::Eqi { d, a, imm } => bin!(d, a, imm!(imm), sem(BinOp::Eq)),
                Instr::Nei { d, a, imm } => bin!(d, a, imm!(imm), sem(BinOp::Ne)),
                Instr::Lti { d, a, imm } => bin!(d, a, imm!(imm), sem(BinOp::Lt)),
                Instr::Lei { d, a, imm } => bin!(d, a, imm!(imm), sem(BinOp::Le)),
                Instr::Ltui { d, a, imm } => bin!(d, a, imm!(imm), sem(BinOp::Ltu)),
                Instr::Divu { d, a, b } => divide!(BinOp::Divu, d, a, regs[b as usize]),
                Instr::Remu { d, a, b } => divide!(BinOp::Remu, d, a, regs[b as usize]),
                Instr::Rotl { d, a, b } => bin!(d, a, regs[b as usize], sem(BinOp::Rotl)),
                Instr::Rotr { d, a, b } => bin!(d, a, regs[b as usize], sem(BinOp::Rotr)),
                Instr::Rotl32 { d, a, b } => bin!(d, a, regs[b as usize], sem(BinOp::Rotl32)),
                Instr::Rotr32 { d, a, b } => bin!(d, a, regs[b as usize], sem(BinOp::Rotr32)),
                Instr::Leu { d, a, b } => bin!(d, a, regs[b as usize], sem(BinOp::Leu)),
                Instr::Addw { d, a, b } => bin!(d, a, regs[b as usize], sem(BinOp::AddW)),
                Instr::Subw { d, a, b } => bin!(d, a, regs[b as usize], sem(BinOp::SubW)),
                Instr::Mulw { d, a, b } => bin!(d, a, regs[b as usize], sem(BinOp::MulW)),
                Instr::Shlw { d, a, b } => bin!(d, a, regs[b as usize], sem(BinOp::ShlW)),
                Instr::Shrw { d, a, b } => bin!(d, a, regs[b as usize], sem(BinOp::ShrW)),
                Instr::Ushrw { d, a, b } => bin!(d, a, regs[b as usize], sem(BinOp::UshrW)),
                Instr::Addiw { d, a, imm } => bin!(d, a, imm!(imm), sem(BinOp::AddW)),
                Instr::Muliw { d, a, imm } => bin!(d, a, imm!(imm), sem(BinOp::MulW)),
                Instr::Shliw { d, a, imm } => bin!(d, a, imm!(imm), sem(BinOp::ShlW)),
                Instr::Ushriw { d, a, imm } => bin!(d, a, imm!(imm), sem(BinOp::UshrW)),
                Instr::Select { d, c, a, b } => {
                    let (c, x, y) = (regs[c as usize], regs[a as usize], regs[b as usize]);
                    regs[d as usize] = semantics::select(c, x, y);
                    pc += 1;
                }

                Instr::Ld { d, a, imm } => {
                    let addr = semantics::word_address(regs[a as usize], imm);
                    let Some(&v) = mem.get(semantics::word_index(addr)) else {
                        let size = mem.len() as u64;
                        fail!(TrapKind::OutOfBounds { addr, size });
                    };
                    regs[d as usize] = v;
                    if emit_value {
                        push!(Kind::Value, cs.fpc | pc as u64, v as u64);
                    }
                    pc += 1;
                }
                Instr::St { a, imm, b } => {
                    let addr = semantics::word_address(regs[a as usize], imm);
                    let size = mem.len() as u64;
                    let Some(slot) = mem.get_mut(semantics::word_index(addr)) else {
                        fail!(TrapKind::OutOfBounds { addr, size });
                    };
                    *slot = regs[b as usize];
                    pc += 1;
                }
                Instr::Ld8s { d, a, imm } => load_bytes!(d, a, imm, 1, true),
                Instr::Ld8u { d, a, imm } => load_bytes!(d, a, imm, 1, false),
                Instr::Ld16s { d, a, imm } => load_bytes!(d, a, imm, 2, true),
                Instr::Ld16u { d, a, imm } => load_bytes!(d, a, imm, 2, false),
                Instr::Ld32s { d, a, imm } => load_bytes!(d, a, imm, 4, true),
                Instr::Ld32u { d, a, imm } => load_bytes!(d, a, imm, 4, false),
                Instr::Ld64 { d, a, imm } => load_bytes!(d, a, imm, 8, false),
                Instr::St8 { a, imm, b } => store_bytes!(a, imm, b, 1),
                Instr::St16 { a, imm, b } => store_bytes!(a, imm, b, 2),
                Instr::St32 { a, imm, b } => store_bytes!(a, imm, b, 4),
                Instr::St64 { a, imm, b } => store_bytes!(a, imm, b, 8),
                Instr::Msize { d } => {
                    regs[d as usize] = len as i64;
                    pc += 1;
                }
                Instr::Mgrow { d, a } => {
                    let by = regs[a as usize];
                    regs[d as usize] = self.mem.grow(by).map_or(-1, |old| old as i64);
                    (mem, rest, len) = self.mem.split();
                    pc += 1;
                }

                Instr::Jmp { target } => {
                    pc = target as usize;
                    transfer!();
                }
                Instr::Jnz { a, target } => branch!(regs[a as usize] != 0, target),
                Instr::Jz { a, target } => branch!(regs[a as usize] == 0, target),
                Instr::Beq { a, b, target } => {
                    branch!(regs[a as usize] == regs[b as usize], target)
                }
                Instr::Bne { a, b, target } => {
                    branch!(regs[a as usize] != regs[b as usize], target)
                }
                Instr::Blt { a, b, target } => branch!(regs[a as usize] < regs[b as usize], target),
                Instr::Ble { a, b, target } => {
                    branch!(regs[a as usize] <= regs[b as usize], target)
                }
                Instr::Bgt { a, b, target } => branch!(regs[a as usize] > regs[b as usize], target),
                Instr::Bge { a, b, target } => {
                    branch!(regs[a as usize] >= regs[b as usize], target)
                }
                Instr::Beqi { a, imm, target } => branch!(regs[a as usize] == imm as i64, target),
                Instr::Bnei { a, imm, target } => branch!(regs[a as usize] != imm as i64, target),
                Instr::Blti { a, imm, target } => branch!(regs[a as usize] < imm as i64, target),
                Instr::Blei { a, imm, target } => branch!(regs[a as usize] <= imm as i64, target),
                Instr::Bgti { a, imm, target } => branch!(regs[a as usize] > imm as i64, target),
                Instr::Bgei { a, imm, target } => branch!(regs[a as usize] >= imm as i64, target),
                Instr::Bltu { a, b, target } => {
                    branch!(
                        (regs[a as usize] as u64) < (regs[b as usize] as u64),
                        target
                    )
                }
                Instr::Bgeu { a, b, target } => {
                    branch!(
                        (regs[a as usize] as u64) >= (regs[b as usize] as u64),
                        target
                    )
                }
                Instr::Loop { a, b, target } => {
                    let v = semantics::loop_count(regs[a as usize]);
                    regs[a as usize] = v;
                    branch!(semantics::LOOP_COND.holds(v, regs[b as usize]), target)
                }
                Instr::Jtab { a, t } => {
                    let table = &self.prog.functions[fidx!()].tables[t as usize];
                    let next = semantics::jtab_entry(table, regs[a as usize])
                        .map_or(pc + 1, |t| t as usize);
                    if emit_edge {
                        push!(Kind::Edge, cs.fpc | pc as u64, cs.fpc | next as u64);
                    }
                    pc = next;
                    transfer!();
                }

                Instr::Call { d, f, a, n } => enter!(d, f as usize, a, n),
                Instr::Calli { d, f, a, n } => {
                    let v = regs[f as usize];
                    let callee = match usize::try_from(v)
                        .ok()
                        .filter(|&i| i < self.prog.functions.len())
                    {
                        Some(i) if self.prog.functions[i].params == n => i,
                        Some(i) => fail!(TrapKind::ArityMismatch {
                            callee: self.prog.functions[i].name.clone(),
                            expected: self.prog.functions[i].params,
                            given: n,
                        }),
                        None => fail!(TrapKind::BadFunctionValue(v)),
                    };
                    enter!(d, callee, a, n)
                }
                Instr::Hcall { d, h, a, n } => {
                    if emit_call {
                        // Imports are callees past the program's functions.
                        push!(
                            Kind::Call,
                            cs.fpc | pc as u64,
                            (cs.fns.len() + h as usize) as u64
                        );
                    }
                    let args = &regs[a as usize..a as usize + n as usize];
                    match self.host_fns.call(h, args, mem) {
                        Ok(v) => {
                            reload!();
                            regs[d as usize] = v;
                            if emit_value {
                                push!(Kind::Value, cs.fpc | pc as u64, v as u64);
                            }
                        }
                        Err(message) => fail!(TrapKind::Host {
                            name: self.prog.imports[h as usize].name.clone(),
                            message,
                        }),
                    }
                    pc += 1;
                }
                Instr::Ret { a } => {
                    let v = regs[a as usize];
                    let Some(depth) = cs.depth.checked_sub(1) else {
                        leave!();
                        return Ok(Ended::Returned(v));
                    };
                    cs.depth = depth;
                    let fr = cs.frames[depth];
                    cs.fpc = fr.ret & !0xffff_ffff;
                    pc = fr.ret as u32 as usize;
                    (code, cs.frame_regs) = cs.fns[(fr.ret >> 32) as usize];
                    cs.base = fr.base;
                    regs = window(&mut cs.stack, fr.base as usize);
                    regs[fr.dest as usize] = v;
                }
                Instr::Halt { a } => {
                    let v = regs[a as usize];
                    leave!();
                    return Ok(Ended::Halted(v));
                }
                Instr::Trap { imm } => {
                    // The verifier admits only known codes.
                    fail!(TrapKind::Trap(
                        TrapCode::from_code(imm).unwrap_or(TrapCode::Unsupported)
                    ))
                }

                Instr::Putn { a } => {
                    let v = regs[a as usize];
                    let _ = write!(self.out_buf, "{v}");
                    if self.out_buf.len() >= OUT_CHUNK
                        && let Err(e) = flush_output(&mut self.out_buf, self.out)
                    {
                        leave!();
                        return Err(e);
                    }
                    reload!();
                    pc += 1;
                }
                Instr::Putc { a } => {
                    self.out_buf.push(regs[a as usize] as u8);
                    if self.out_buf.len() >= OUT_CHUNK
                        && let Err(e) = flush_output(&mut self.out_buf, self.out)
                    {
                        leave!();
                        return Err(e);
                    }
                    reload!();
                    pc += 1;
                }
                Instr::Inlen { d } => {
                    regs[d as usize] = self.input_len;
                    pc += 1;
                }
            }
        }
    }
}

fn flush_output(out_buf: &mut Vec<u8>, out: &mut dyn Write) -> Result<()> {
    // Every earlier flush wrote and flushed what the buffer held, so with
    // nothing buffered there is nothing to flush (most embedder calls print
    // nothing; flushing stdout takes its lock, about 250 instructions).
    if out_buf.is_empty() {
        return Ok(());
    }
    let r = out.write_all(out_buf).and_then(|_| out.flush());
    out_buf.clear();
    r.map_err(Error::Output)
}

#[inline(always)]
fn sem(op: BinOp) -> impl Fn(i64, i64) -> i64 {
    // Only for operations that cannot fail.
    move |x, y| op.eval(x, y).unwrap_or(0)
}
