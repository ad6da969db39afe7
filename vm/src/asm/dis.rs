//! The disassembler: a program as canonical assembly text.

use std::fmt::Write as _;

use crate::isa::{Instr, Operand};
use crate::program::{Function, Program};

/// Prints a program as canonical assembly text.
pub fn disassemble(p: &Program) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# toyvm assembly");
    let _ = writeln!(s, ".memory {}", p.memory_words);
    if p.memory_len != p.memory_words.saturating_mul(8) {
        let _ = writeln!(s, ".memlen {}", p.memory_len);
    }
    let _ = writeln!(s, ".input {}", p.input_base);
    let _ = writeln!(s, ".entry {}", p.functions[p.entry as usize].name);
    for i in &p.imports {
        let _ = writeln!(s, ".import {} {}", i.name, i.params);
    }
    for seg in &p.data {
        match as_text(&seg.words) {
            Some(text) => {
                let _ = writeln!(s, ".string {}: \"{text}\"", seg.addr);
            }
            None => {
                let words: Vec<String> = seg.words.iter().map(|w| w.to_string()).collect();
                let _ = writeln!(s, ".data {}: {}", seg.addr, words.join(", "));
            }
        }
    }
    for f in &p.functions {
        let params: Vec<String> = (0..f.params).map(|i| format!("r{i}")).collect();
        let _ = writeln!(s, "\n.func {}({})", f.name, params.join(", "));
        let _ = writeln!(s, "    .regs {}", f.regs);
        let mut targets = vec![false; f.code.len()];
        for i in &f.code {
            if let Some(l) = i.label() {
                targets[l as usize] = true;
            }
        }
        for t in f.tables.iter().flatten() {
            targets[*t as usize] = true;
        }
        for (at, i) in f.code.iter().enumerate() {
            if targets[at] {
                let _ = writeln!(s, "L{at}:");
            }
            let _ = writeln!(s, "    {}", format_instr(p, f, i));
        }
        let _ = writeln!(s, ".end");
    }
    s
}

/// One instruction in assembly syntax (labels as `L<index>`).
pub fn format_instr(p: &Program, f: &Function, i: &Instr) -> String {
    let ops: Vec<String> = i
        .operands()
        .iter()
        .map(|o| match *o {
            Operand::Reg(r) => format!("r{r}"),
            Operand::Imm(v) => v.to_string(),
            Operand::Wide(v) => v.to_string(),
            Operand::Count(v) => v.to_string(),
            Operand::Label(l) => format!("L{l}"),
            Operand::Func(g) => p
                .functions
                .get(g as usize)
                .map_or_else(|| format!("<function {g}>"), |f| f.name.clone()),
            Operand::HostFn(h) => p
                .imports
                .get(h as usize)
                .map_or_else(|| format!("<import {h}>"), |i| i.name.clone()),
            Operand::Table(t) => match f.tables.get(t as usize) {
                Some(table) => {
                    let ls: Vec<String> = table.iter().map(|l| format!("L{l}")).collect();
                    format!("[{}]", ls.join(", "))
                }
                None => format!("<table {t}>"),
            },
        })
        .collect();
    if ops.is_empty() {
        i.op().mnemonic().to_owned()
    } else {
        format!("{} {}", i.op().mnemonic(), ops.join(", "))
    }
}

/// The words as a string literal body, if they are all printable ASCII.
fn as_text(words: &[i64]) -> Option<String> {
    if words.is_empty() {
        return None;
    }
    let mut s = String::new();
    for &w in words {
        match w {
            0x0a => s.push_str("\\n"),
            0x09 => s.push_str("\\t"),
            0x5c => s.push_str("\\\\"),
            0x22 => s.push_str("\\\""),
            0x20..=0x7e => s.push(w as u8 as char),
            _ => return None,
        }
    }
    Some(s)
}
