//! The verifier: every invariant the interpreter (and the JIT) relies on,
//! checked once at load so execution never has to.
//!
//! After `verify` succeeds:
//! 1. every function has `params <= regs <= 256` and at least one
//!    instruction, and control cannot run off the end of its code;
//! 2. every register operand is `< regs` of its function, and the argument
//!    window `a .. a+n` of every call fits in the caller's registers;
//! 3. every label and jump-table entry is an instruction index of the same
//!    function, and every `jtab` names one of the function's tables;
//! 4. every direct call names a function that exists and takes exactly `n`
//!    arguments (`calli` is checked when it runs);
//! 5. memory is at most [`MAX_MEMORY_WORDS`], its initial length is a
//!    multiple of 8 bytes within it, the input base lies inside it, and
//!    every data segment fits inside the initial length;
//! 6. the entry function exists, and function names are unique; every
//!    `trap` names a known kind ([`TrapCode`]);
//! 7. no register is read before it is written on every path from the
//!    function's entry (parameters count as written), as in the JVM's
//!    definite-assignment rule.  So a frame's registers need no zeroing,
//!    and the interpreter and the JIT can never observe a stale value.

use std::collections::HashSet;

use crate::dataflow::{RegSet, reads_and_write, successors};
use crate::isa::{Instr, Operand};
use crate::program::{
    MAX_CODE_LEN, MAX_FUNCTIONS, MAX_IMPORTS, MAX_MEMORY_WORDS, MAX_REGS, Program,
};
use crate::trap::TrapCode;
use crate::{Error, Result};

/// Checks a program; the error names the function, instruction and problem.
pub fn verify(p: &Program) -> Result<()> {
    check_program(p)?;
    for f in &p.functions {
        check_function(p, f)?;
    }
    Ok(())
}

/// A verification error in `function` (`<program>` for the program's own
/// fields), at instruction `offset` if there is one.
fn fail(function: &str, offset: Option<usize>, msg: String) -> Error {
    Error::Verify {
        function: function.to_owned(),
        offset: offset.map(|o| o as u32),
        msg,
    }
}

/// The program's own fields: functions, imports, memory, data, entry.
fn check_program(p: &Program) -> Result<()> {
    if p.functions.is_empty() {
        return Err(fail(
            "<program>",
            None,
            "the program has no functions".into(),
        ));
    }
    if p.functions.len() > MAX_FUNCTIONS {
        return Err(fail(
            "<program>",
            None,
            format!("{} functions (at most {MAX_FUNCTIONS})", p.functions.len()),
        ));
    }
    let mut names = HashSet::new();
    for f in &p.functions {
        if !names.insert(f.name.as_str()) {
            return Err(fail(&f.name, None, "function name defined twice".into()));
        }
    }
    if p.imports.len() > MAX_IMPORTS {
        return Err(fail(
            "<program>",
            None,
            format!("{} imports (at most {MAX_IMPORTS})", p.imports.len()),
        ));
    }
    let mut imported = HashSet::new();
    for i in &p.imports {
        if i.name.is_empty() || !imported.insert(i.name.as_str()) {
            return Err(fail(
                "<program>",
                None,
                format!(
                    "host function `{}` is imported twice or has no name",
                    i.name
                ),
            ));
        }
    }
    if p.memory_words > MAX_MEMORY_WORDS {
        return Err(fail(
            "<program>",
            None,
            format!(
                "memory of {} words exceeds the limit of {MAX_MEMORY_WORDS}",
                p.memory_words
            ),
        ));
    }
    if !p.memory_len.is_multiple_of(8) || p.memory_len / 8 > p.memory_words {
        return Err(fail(
            "<program>",
            None,
            format!(
                "initial memory length {} bytes is not a multiple of 8 within memory of {} words",
                p.memory_len, p.memory_words
            ),
        ));
    }
    if p.input_base > p.memory_words {
        return Err(fail(
            "<program>",
            None,
            format!(
                "input base {} lies outside memory of {} words",
                p.input_base, p.memory_words
            ),
        ));
    }
    for (i, seg) in p.data.iter().enumerate() {
        let end = seg.addr.checked_add(seg.words.len() as u64);
        if end.is_none_or(|e| e > p.memory_len / 8) {
            return Err(fail(
                "<program>",
                None,
                format!(
                    "data segment {i} at {} of {} words does not fit in memory of {} words",
                    seg.addr,
                    seg.words.len(),
                    p.memory_len / 8
                ),
            ));
        }
    }
    if p.entry as usize >= p.functions.len() {
        return Err(fail(
            "<program>",
            None,
            format!("entry function index {} does not exist", p.entry),
        ));
    }
    Ok(())
}

/// One function: its sizes, jump tables, instructions, definite
/// assignment and end.
fn check_function(p: &Program, f: &crate::program::Function) -> Result<()> {
    let name = f.name.as_str();
    if f.regs as usize > MAX_REGS {
        return Err(fail(
            name,
            None,
            format!("{} registers (at most {MAX_REGS})", f.regs),
        ));
    }
    if f.params as u16 > f.regs {
        return Err(fail(
            name,
            None,
            format!("{} parameters but only {} registers", f.params, f.regs),
        ));
    }
    if f.code.is_empty() {
        return Err(fail(name, None, "function has no instructions".into()));
    }
    if f.code.len() > MAX_CODE_LEN {
        return Err(fail(
            name,
            None,
            format!("{} instructions (at most {MAX_CODE_LEN})", f.code.len()),
        ));
    }
    let len = f.code.len();
    for (t, table) in f.tables.iter().enumerate() {
        if let Some(&bad) = table.iter().find(|&&e| e as usize >= len) {
            return Err(fail(
                name,
                None,
                format!(
                    "jump table {t} targets instruction {bad}, past the end ({len} instructions)"
                ),
            ));
        }
    }
    for (pc, ins) in f.code.iter().enumerate() {
        check_instr(p, f, pc, ins)?;
    }
    check_definite_assignment(f).map_err(|(at, m)| fail(name, Some(at), m))?;
    if f.code[len - 1].op().falls_through() {
        return Err(fail(
            name,
            Some(len - 1),
            format!(
                "control can run off the end of the function (last instruction `{}` is not jmp, ret, halt or trap)",
                f.code[len - 1].op()
            ),
        ));
    }
    Ok(())
}

/// One instruction: its operands in range, and the calls' and traps'
/// own rules.
fn check_instr(p: &Program, f: &crate::program::Function, pc: usize, ins: &Instr) -> Result<()> {
    let (name, len) = (f.name.as_str(), f.code.len());
    let at = Some(pc);
    for o in ins.operands().iter() {
        match *o {
            Operand::Reg(r) if r as u16 >= f.regs => {
                return Err(fail(
                    name,
                    at,
                    format!(
                        "`{}` uses register r{r}, but the function has {} registers",
                        ins.op(),
                        f.regs
                    ),
                ));
            }
            Operand::Label(l) if l as usize >= len => {
                return Err(fail(
                    name,
                    at,
                    format!("branch target {l} is past the end ({len} instructions)"),
                ));
            }
            Operand::Func(g) if g as usize >= p.functions.len() => {
                return Err(fail(name, at, format!("function index {g} does not exist")));
            }
            Operand::HostFn(h) if h as usize >= p.imports.len() => {
                return Err(fail(
                    name,
                    at,
                    format!("import {h} does not exist ({} imports)", p.imports.len()),
                ));
            }
            Operand::Table(t) if t as usize >= f.tables.len() => {
                return Err(fail(
                    name,
                    at,
                    format!("jump table {t} does not exist ({} tables)", f.tables.len()),
                ));
            }
            _ => {}
        }
    }
    match *ins {
        Instr::Call { f: g, a, n, .. } => {
            let callee = &p.functions[g as usize];
            if callee.params != n {
                return Err(fail(
                    name,
                    at,
                    format!(
                        "call to `{}` passes {n} arguments but it takes {}",
                        callee.name, callee.params
                    ),
                ));
            }
            check_window(f.regs, a, n).map_err(|m| fail(name, at, m))?;
        }
        Instr::Calli { a, n, .. } => {
            check_window(f.regs, a, n).map_err(|m| fail(name, at, m))?;
        }
        Instr::Trap { imm } if TrapCode::from_code(imm).is_none() => {
            return Err(fail(
                name,
                at,
                format!(
                    "`trap {imm}`: unknown trap code (0 to {})",
                    TrapCode::ALL.len() - 1
                ),
            ));
        }
        Instr::Hcall { h, a, n, .. } => {
            let import = &p.imports[h as usize];
            if import.params != n {
                return Err(fail(
                    name,
                    at,
                    format!(
                        "hcall of `{}` passes {n} arguments but it is imported with {}",
                        import.name, import.params
                    ),
                ));
            }
            check_window(f.regs, a, n).map_err(|m| fail(name, at, m))?;
        }
        _ => {}
    }
    Ok(())
}

fn check_window(regs: u16, a: u8, n: u8) -> Result<(), String> {
    if a as u16 + n as u16 > regs {
        return Err(format!(
            "arguments r{a}..r{} run past the {regs} registers",
            a as u16 + n as u16
        ));
    }
    Ok(())
}

/// Forward dataflow over "definitely written" sets; reports the first
/// reachable read of a register that some path leaves unwritten.
fn check_definite_assignment(f: &crate::program::Function) -> Result<(), (usize, String)> {
    let len = f.code.len();
    let mut state: Vec<Option<RegSet>> = vec![None; len];
    state[0] = Some(RegSet::first(f.params as usize));
    let mut work = vec![0usize];
    let mut succ = Vec::new();
    while let Some(pc) = work.pop() {
        let ins = &f.code[pc];
        let mut out = state[pc].expect("queued instructions have a state");
        if let (_, Some(d)) = reads_and_write(ins) {
            out.insert(d);
        }
        successors(f, pc, &mut succ);
        for &s in &succ {
            let merged = match state[s] {
                Some(old) => old.intersect(&out),
                None => out,
            };
            if state[s] != Some(merged) {
                state[s] = Some(merged);
                work.push(s);
            }
        }
    }
    for (pc, ins) in f.code.iter().enumerate() {
        let Some(written) = state[pc] else { continue };
        if let Some(r) = reads_and_write(ins)
            .0
            .into_iter()
            .find(|&r| !written.contains(r))
        {
            return Err((
                pc,
                format!(
                    "`{}` reads r{r}, which is not written on every path to here",
                    ins.op()
                ),
            ));
        }
    }
    Ok(())
}
