//! The text assembly: [`assemble`] and [`disassemble`].
//!
//! The syntax is described in `docs/isa.md`.  In short:
//!
//! ```text
//! # or ; start a comment
//! .memory 100000              # words of linear memory (default 65536)
//! .memlen 65536               # initial length in bytes (default: all of it)
//! .input 5000                 # where --input bytes are loaded (default 0)
//! .entry main                 # entry function (default `main`)
//! .data 100: 1, 2, 0x30       # initialized words at address 100
//! .string 200: "hi\n"         # one byte per word at address 200
//! .func name(n, m)            # parameters are r0, r1, ... and may be named
//!     .regs 8                 # register count (default: highest used + 1)
//!     .reg acc, i             # name the next free registers
//!     .alias tmp r7           # name a given register
//! top:                        # a label
//!     add acc, acc, i
//!     jtab i, [top, done]     # a jump table
//! done:
//!     ret acc
//! .end
//! ```
//!
//! `disassemble` prints a canonical form with every default made explicit,
//! so `assemble(disassemble(p)) == p` for every valid program, and hence
//! `.bc -> text -> .bc` reproduces the bytes exactly.

use std::collections::HashMap;

use crate::isa::{Instr, Op, Operand, OperandKind};
use crate::program::{DataSegment, Function, Import, MAX_IMPORTS, MAX_REGS, Program};
use crate::{Error, Result};

mod dis;
pub use dis::{disassemble, format_instr};

/// Default words of memory when `.memory` is absent.
pub const DEFAULT_MEMORY_WORDS: u64 = 1 << 16;

fn err<T>(line: usize, msg: impl Into<String>) -> Result<T> {
    Err(Error::Asm {
        line,
        msg: crate::error::capped(&msg.into()),
    })
}

/// Removes a trailing comment, leaving `#`/`;` inside quotes alone.
fn strip_comment(line: &str) -> &str {
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in line.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        match (quote, c) {
            (Some(_), '\\') => escaped = true,
            (Some(q), c) if c == q => quote = None,
            (None, '"' | '\'') => quote = Some(c),
            (None, '#' | ';') => return &line[..i],
            _ => {}
        }
    }
    line
}

fn is_ident(s: &str) -> bool {
    crate::name::is_name(s)
}

/// `r12` -> 12.
fn parse_reg_name(s: &str) -> Option<u32> {
    let digits = s.strip_prefix('r')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) || digits.len() > 4 {
        return None;
    }
    digits.parse().ok()
}

/// Splits on commas that are not inside brackets or quotes.
fn split_operands(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start, mut quote) = (0i32, 0usize, None::<char>);
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        match (quote, c) {
            (Some(_), '\\') => escaped = true,
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '[') => depth += 1,
            (None, ']') => depth -= 1,
            (None, ',') if depth == 0 => {
                out.push(s[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    let last = s[start..].trim();
    if !last.is_empty() || !out.is_empty() {
        out.push(last);
    }
    out
}

fn unescape(c: char) -> Option<char> {
    Some(match c {
        'n' => '\n',
        't' => '\t',
        'r' => '\r',
        '0' => '\0',
        '\\' => '\\',
        '\'' => '\'',
        '"' => '"',
        _ => return None,
    })
}

/// An integer literal ([`toyvm_event::parse_int`]: decimal, `0x` hex, `0b`
/// binary, `1e6`, `_` separators, optionally negative), or a character
/// literal like `'a'` or `'\n'`.
fn parse_int(s: &str) -> Option<i128> {
    let s = s.trim();
    if let Some(body) = s.strip_prefix('\'').and_then(|b| b.strip_suffix('\'')) {
        let mut chars = body.chars();
        let c = match chars.next()? {
            '\\' => unescape(chars.next()?)?,
            c => c,
        };
        return chars.next().is_none().then_some(c as i128);
    }
    toyvm_event::parse_int(s)
}

fn parse_string(s: &str, line: usize) -> Result<Vec<i64>> {
    let Some(body) = s.trim().strip_prefix('"').and_then(|b| b.strip_suffix('"')) else {
        return err(line, "expected a double-quoted string");
    };
    let mut out = Vec::new();
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        let c = if c == '\\' {
            let e = chars.next().unwrap_or(' ');
            match unescape(e) {
                Some(c) => c,
                None => return err(line, format!("unknown escape `\\{e}` in string")),
            }
        } else {
            c
        };
        let mut buf = [0u8; 4];
        out.extend(c.encode_utf8(&mut buf).bytes().map(|b| b as i64));
    }
    Ok(out)
}

/// One instruction line before labels and names are resolved.
struct Pending<'a> {
    line: usize,
    op: Op,
    args: Vec<&'a str>,
}

struct FuncBuilder<'a> {
    name: String,
    line: usize,
    params: u8,
    /// The `.regs` count and its line (where a count too small is reported).
    regs: Option<(u16, usize)>,
    names: HashMap<String, u32>,
    next_named: u32,
    labels: HashMap<&'a str, u32>,
    body: Vec<Pending<'a>>,
}

/// Assembles text into a verified program.
pub fn assemble(src: &str) -> Result<Program> {
    let lines: Vec<(usize, &str)> = src
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, strip_comment(l).trim()))
        .filter(|(_, l)| !l.is_empty())
        .collect();

    // Pass 1: function and import names, so calls may refer forward.
    let (func_index, imports, import_index) = names(&lines)?;

    let mut memory_words = None;
    let mut memory_len = None;
    let mut input_base = None;
    let mut entry_name: Option<(usize, &str)> = None;
    let mut data = Vec::new();
    let mut funcs: Vec<FuncBuilder<'_>> = Vec::new();
    let mut current: Option<FuncBuilder<'_>> = None;

    for &(line, l) in &lines {
        let (word, rest) = l.split_once(char::is_whitespace).unwrap_or((l, ""));
        let rest = rest.trim();
        if let Some(f) = current.as_mut() {
            if word == ".end" {
                funcs.push(current.take().expect("inside a function"));
            } else {
                function_line(f, line, l, word, rest)?;
            }
            continue;
        }
        match word {
            ".func" => current = Some(start_function(rest, line)?),
            ".end" => return err(line, "`.end` outside a function"),
            ".memory" => match parse_int(rest).filter(|&n| (0..=u64::MAX as i128).contains(&n)) {
                Some(n) => memory_words = Some(n as u64),
                None => return err(line, "`.memory` needs a word count"),
            },
            ".memlen" => match parse_int(rest).filter(|&n| (0..=u64::MAX as i128).contains(&n)) {
                Some(n) => memory_len = Some(n as u64),
                None => return err(line, "`.memlen` needs a length in bytes"),
            },
            ".input" => match parse_int(rest).filter(|&n| (0..=u64::MAX as i128).contains(&n)) {
                Some(n) => input_base = Some(n as u64),
                None => return err(line, "`.input` needs an address"),
            },
            ".entry" => entry_name = Some((line, rest)),
            // Read in pass 1.
            ".import" => {}
            ".data" | ".string" => data.push(data_segment(word, rest, line)?),
            other if other.starts_with('.') => {
                return err(line, format!("unknown directive `{other}`"));
            }
            _ => {
                return err(
                    line,
                    format!(
                        "`{word}` outside a function (instructions go between `.func` and `.end`)"
                    ),
                );
            }
        }
    }
    if let Some(f) = current {
        return err(f.line, format!("function `{}` has no `.end`", f.name));
    }

    let mut functions = Vec::with_capacity(funcs.len());
    for f in &funcs {
        functions.push(finish_function(f, &func_index, &import_index)?);
    }
    let entry = match entry_name {
        Some((line, name)) => match func_index.get(name) {
            Some(&i) => i,
            None => return err(line, format!("entry function `{name}` is not defined")),
        },
        None => match func_index.get("main") {
            Some(&i) => i,
            None => {
                return err(
                    lines.last().map_or(1, |l| l.0),
                    "no `main` function and no `.entry`",
                );
            }
        },
    };
    let memory_words = memory_words.unwrap_or(DEFAULT_MEMORY_WORDS);
    let p = Program {
        functions,
        data,
        memory_words,
        memory_len: memory_len.unwrap_or(memory_words.saturating_mul(8)),
        input_base: input_base.unwrap_or(0),
        entry,
        imports,
        source_offsets: Vec::new(),
    };
    crate::verify::verify(&p)?;
    Ok(p)
}

/// Pass 1: the functions' and imports' names (with the imports), so
/// that calls may refer forward.
#[allow(clippy::type_complexity)]
fn names(
    lines: &[(usize, &str)],
) -> Result<(HashMap<String, u32>, Vec<Import>, HashMap<String, u16>)> {
    let mut func_index: HashMap<String, u32> = HashMap::new();
    let mut imports: Vec<Import> = Vec::new();
    let mut import_index: HashMap<String, u16> = HashMap::new();
    for &(line, l) in lines {
        if let Some(rest) = l.strip_prefix(".import") {
            let mut words = rest.split_whitespace();
            let (name, params) = (words.next().unwrap_or(""), words.next());
            if !is_ident(name) {
                return err(line, format!("bad import name `{name}`"));
            }
            let Some(params) = params.and_then(parse_int).filter(|n| (0..=255).contains(n)) else {
                return err(line, "`.import` needs `NAME ARGUMENTS` (0-255 arguments)");
            };
            if words.next().is_some() {
                return err(line, "`.import` takes a name and an argument count");
            }
            if imports.len() >= MAX_IMPORTS {
                return err(line, format!("more than {MAX_IMPORTS} imports"));
            }
            if import_index
                .insert(name.to_owned(), imports.len() as u16)
                .is_some()
            {
                return err(line, format!("host function `{name}` is imported twice"));
            }
            imports.push(Import {
                name: name.to_owned(),
                params: params as u8,
            });
            continue;
        }
        if let Some(rest) = l.strip_prefix(".func") {
            let name = rest.trim().split('(').next().unwrap_or("").trim();
            if !is_ident(name) {
                return err(line, format!("bad function name `{name}`"));
            }
            let index = func_index.len() as u32;
            if func_index.insert(name.to_owned(), index).is_some() {
                return err(line, format!("function `{name}` is defined twice"));
            }
        }
    }
    Ok((func_index, imports, import_index))
}

/// One line inside a function but `.end`: a directive of its own
/// (`.regs`, `.reg`, `.alias`), or labels and an instruction.
fn function_line<'a>(
    f: &mut FuncBuilder<'a>,
    line: usize,
    l: &'a str,
    word: &str,
    rest: &str,
) -> Result<()> {
    match word {
        ".func" => {
            return err(
                line,
                format!("`.func` inside function `{}` (missing `.end`)", f.name),
            );
        }
        ".regs" => {
            match parse_int(rest).filter(|&n| (0..=MAX_REGS as i128).contains(&n)) {
                Some(n) => f.regs = Some((n as u16, line)),
                None => {
                    return err(line, format!("`.regs` needs a count from 0 to {MAX_REGS}"));
                }
            }
            return Ok(());
        }
        ".reg" => {
            for name in rest.split(',').map(str::trim) {
                define_name(f, name, f.next_named, line)?;
                f.next_named += 1;
            }
            return Ok(());
        }
        ".alias" => {
            let mut parts = rest
                .split(|c: char| c == ',' || c.is_whitespace())
                .filter(|s| !s.is_empty());
            let (Some(name), Some(reg), None) = (parts.next(), parts.next(), parts.next()) else {
                return err(
                    line,
                    "`.alias` needs a name and a register, e.g. `.alias tmp r7`",
                );
            };
            let Some(r) = parse_reg_name(reg) else {
                return err(line, format!("`{reg}` is not a register (r0 to r255)"));
            };
            define_name(f, name, r, line)?;
            f.next_named = f.next_named.max(r + 1);
            return Ok(());
        }
        _ => {}
    }
    let mut text = l;
    // Labels, possibly several, possibly followed by an instruction.
    while let Some((label, after)) = text.split_once(':') {
        let label = label.trim();
        if !is_ident(label) || label.contains(char::is_whitespace) {
            break;
        }
        if f.labels.insert(label, f.body.len() as u32).is_some() {
            return err(
                line,
                format!("label `{label}` is defined twice in `{}`", f.name),
            );
        }
        text = after.trim();
    }
    if text.is_empty() {
        return Ok(());
    }
    let (mnemonic, args) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
    let Some(op) = Op::from_mnemonic(mnemonic) else {
        return err(line, format!("unknown instruction `{mnemonic}`"));
    };
    f.body.push(Pending {
        line,
        op,
        args: split_operands(args),
    });
    Ok(())
}

/// A `.data ADDRESS: words` or `.string ADDRESS: "text"` line.
fn data_segment(word: &str, rest: &str, line: usize) -> Result<DataSegment> {
    let Some((addr, values)) = rest.split_once(':') else {
        return err(line, format!("`{word}` needs `ADDRESS: values`"));
    };
    let Some(addr) = parse_int(addr).filter(|&n| (0..=u64::MAX as i128).contains(&n)) else {
        return err(line, format!("bad address `{}`", addr.trim()));
    };
    let words = if word == ".string" {
        parse_string(values, line)?
    } else {
        let mut words = Vec::new();
        for v in values
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|s| !s.is_empty())
        {
            match parse_int(v).filter(|&n| (i64::MIN as i128..=u64::MAX as i128).contains(&n)) {
                Some(n) => words.push(n as i64),
                None => return err(line, format!("bad data word `{v}`")),
            }
        }
        words
    };
    Ok(DataSegment {
        addr: addr as u64,
        words,
    })
}

fn define_name(f: &mut FuncBuilder<'_>, name: &str, reg: u32, line: usize) -> Result<()> {
    if !is_ident(name) || parse_reg_name(name).is_some() {
        return err(line, format!("`{name}` cannot name a register"));
    }
    if reg as usize >= MAX_REGS {
        return err(
            line,
            format!("register r{reg} is out of range (r0 to r255)"),
        );
    }
    if f.names.insert(name.to_owned(), reg).is_some() {
        return err(line, format!("register name `{name}` is defined twice"));
    }
    Ok(())
}

fn start_function<'a>(rest: &str, line: usize) -> Result<FuncBuilder<'a>> {
    let (name, params) = match rest.split_once('(') {
        Some((n, p)) => match p.trim().strip_suffix(')') {
            Some(p) => (n.trim(), p),
            None => return err(line, "missing `)` after the parameter list"),
        },
        None => (rest.trim(), ""),
    };
    let mut f = FuncBuilder {
        name: name.to_owned(),
        line,
        params: 0,
        regs: None,
        names: HashMap::new(),
        next_named: 0,
        labels: HashMap::new(),
        body: Vec::new(),
    };
    for (i, p) in params
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .enumerate()
    {
        if i >= 255 {
            return err(line, "too many parameters (at most 255)");
        }
        match parse_reg_name(p) {
            Some(r) if r as usize == i => {}
            Some(_) => return err(line, format!("parameter {i} is register r{i}, not `{p}`")),
            None => define_name(&mut f, p, i as u32, line)?,
        }
        f.params += 1;
    }
    f.next_named = f.params as u32;
    Ok(f)
}

fn finish_function(
    f: &FuncBuilder<'_>,
    funcs: &HashMap<String, u32>,
    imports: &HashMap<String, u16>,
) -> Result<Function> {
    let mut code = Vec::with_capacity(f.body.len());
    let mut tables = Vec::new();
    let mut max_reg: i64 = f.params as i64 - 1;
    for p in &f.body {
        let kinds = p.op.operand_kinds();
        if p.args.len() != kinds.len() {
            let wanted: Vec<_> = kinds.iter().map(|k| k.describe()).collect();
            return err(
                p.line,
                format!(
                    "`{}` takes {} operand{} ({}), got {}",
                    p.op,
                    kinds.len(),
                    if kinds.len() == 1 { "" } else { "s" },
                    wanted.join(", "),
                    p.args.len()
                ),
            );
        }
        let mut ops = Vec::with_capacity(kinds.len());
        for (&kind, &arg) in kinds.iter().zip(&p.args) {
            let bad = |why: &str| {
                err(
                    p.line,
                    format!(
                        "`{}` operand `{arg}`: expected {}{why}",
                        p.op,
                        kind.describe()
                    ),
                )
            };
            ops.push(match kind {
                OperandKind::Reg => {
                    let r = match parse_reg_name(arg).or_else(|| f.names.get(arg).copied()) {
                        Some(r) if (r as usize) < MAX_REGS => r,
                        Some(_) => return bad(" (r0 to r255)"),
                        None => return bad(""),
                    };
                    max_reg = max_reg.max(r as i64);
                    Operand::Reg(r as u8)
                }
                OperandKind::Imm => match parse_int(arg) {
                    Some(v) if (i32::MIN as i128..=i32::MAX as i128).contains(&v) => {
                        Operand::Imm(v as i32)
                    }
                    Some(_) => return bad(" (it does not fit in 32 bits; load it with `lk`)"),
                    None => return bad(""),
                },
                OperandKind::Wide => match parse_int(arg) {
                    Some(v) if (i64::MIN as i128..=u64::MAX as i128).contains(&v) => {
                        Operand::Wide(v as i64)
                    }
                    _ => return bad(""),
                },
                OperandKind::Count => match parse_int(arg) {
                    Some(v) if (0..=255).contains(&v) => Operand::Count(v as u8),
                    _ => return bad(""),
                },
                OperandKind::Label => match f.labels.get(arg) {
                    Some(&l) => Operand::Label(l),
                    None => return err(p.line, format!("undefined label `{arg}` in `{}`", f.name)),
                },
                OperandKind::Func => match funcs.get(arg) {
                    Some(&g) => Operand::Func(g),
                    None => return err(p.line, format!("undefined function `{arg}`")),
                },
                OperandKind::HostFn => match imports.get(arg) {
                    Some(&h) => Operand::HostFn(h),
                    None => {
                        return err(
                            p.line,
                            format!("host function `{arg}` is not imported (`.import {arg} N`)"),
                        );
                    }
                },
                OperandKind::Table => {
                    let Some(list) = arg.strip_prefix('[').and_then(|a| a.strip_suffix(']')) else {
                        return bad("");
                    };
                    let mut table = Vec::new();
                    for l in list.split(',').map(str::trim).filter(|l| !l.is_empty()) {
                        match f.labels.get(l) {
                            Some(&t) => table.push(t),
                            None => {
                                return err(
                                    p.line,
                                    format!("undefined label `{l}` in `{}`", f.name),
                                );
                            }
                        }
                    }
                    if tables.len() > u16::MAX as usize {
                        return err(p.line, "too many jump tables in one function");
                    }
                    tables.push(table);
                    Operand::Table(tables.len() as u16 - 1)
                }
            });
        }
        code.push(Instr::from_operands(p.op, &ops).expect("operands were parsed by kind"));
    }
    let used = (max_reg + 1).max(f.next_named as i64) as u16;
    let regs = match f.regs {
        Some((n, at)) if n < used => {
            return err(
                at,
                format!("`.regs {n}` is too few: `{}` uses {used} registers", f.name),
            );
        }
        Some((n, _)) => n,
        None => used,
    };
    Ok(Function {
        name: f.name.clone(),
        params: f.params,
        regs,
        code,
        tables,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"
        .memory 64
        .data 3: 1, -2, 0x10
        .string 10: "a;b#\n"   # comment chars inside a string
        .func main()
            .reg i, acc
            li i, 0
            li acc, 0
        top: addi acc, acc, 'x'
            fref r3, helper
            calli r4, r3, i, 1
            jtab i, [top, out]
        out:
            ret acc
        .end
        .func helper(x)
            ret x
        .end
    "#;

    #[test]
    fn assembles_and_round_trips_through_text_and_bytes() {
        let p = assemble(SAMPLE).unwrap();
        assert_eq!(p.functions[0].regs, 5);
        assert_eq!(p.data[1].words, vec![97, 59, 98, 35, 10]);
        let text = disassemble(&p);
        let again = assemble(&text).unwrap();
        assert_eq!(again, p);
        assert_eq!(disassemble(&again), text);
        let bytes = p.to_bytes();
        assert_eq!(Program::load(&bytes).unwrap(), p);
    }

    #[test]
    fn errors_name_the_line_and_problem() {
        let cases = [
            (
                ".func main()\n  ad r1, r1, r1\n ret r0\n.end",
                "line 2: unknown instruction `ad`",
            ),
            (
                ".func main()\n  add r1, r1\n ret r0\n.end",
                "line 2: `add` takes 3 operands",
            ),
            (
                ".func main()\n  jmp nowhere\n.end",
                "line 2: undefined label `nowhere`",
            ),
            (
                ".func main()\n  li r1, 0x1_0000_0000\n ret r1\n.end",
                "does not fit in 32 bits",
            ),
            (
                ".func main()\n  li r300, 1\n ret r0\n.end",
                "expected a register",
            ),
            (
                ".func main()\n  call r0, nope, r0, 0\n ret r0\n.end",
                "undefined function `nope`",
            ),
            (".func main()\n  li r0, 1\n", "has no `.end`"),
            (
                ".func main()\n  li r0, 1\n.end",
                "control can run off the end",
            ),
            (
                ".func main()\n  ret r0\n.end\n.func main()\n ret r0\n.end",
                "defined twice",
            ),
            ("add r1, r2, r3", "outside a function"),
            (".func f()\n ret r0\n.end", "no `main` function"),
        ];
        for (src, want) in cases {
            let got = assemble(src).unwrap_err().to_string();
            assert!(got.contains(want), "{src:?}: got {got:?}, want {want:?}");
        }
    }

    #[test]
    fn integer_literals() {
        assert_eq!(parse_int("-12"), Some(-12));
        assert_eq!(parse_int("0xff"), Some(255));
        assert_eq!(parse_int("0b101"), Some(5));
        assert_eq!(parse_int("'\\n'"), Some(10));
        assert_eq!(parse_int("1_000"), Some(1000));
        assert_eq!(parse_int("x1"), None);
        assert_eq!(parse_int(""), None);
    }
}
