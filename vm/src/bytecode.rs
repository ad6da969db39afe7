//! The binary `.bc` format (documented in `docs/isa.md`, "The `.bc` binary
//! format").
//!
//! ```text
//! header   magic "TOYVMBC\x1a" (8 bytes) | version u16 | reserved u16 = 0 | section count u32
//! section  id u8 | reserved [u8; 3] = 0 | payload length u32 | payload
//!   1 MEMORY     memory_words u64 | input_base u64 | entry function u32
//!                | memory_len u64 (version 2 only: the initial length in bytes)
//!   2 FUNCTIONS  count u32, then per function:
//!                name_len u16 | name (UTF-8) | params u8 | regs u16
//!                | table count u16, per table: len u32, len x target u32
//!                | instruction count u32, per instruction: opcode u8, operands
//!   3 DATA       count u32, then per segment: addr u64 | len u32 | len x i64
//!   4 IMPORTS    count u32, then per host function imported:
//!                name_len u16 | name (UTF-8) | params u8
//! ```
//!
//! Version 2 added `memory_len` (and the sized memory, unsigned and bit
//! operations, `select` and `trap` opcodes). A version-1 file still loads,
//! with the initial length the whole memory; writing always gives version 2.
//!
//! A program's [`Program::source_offsets`] (debug information of a
//! translation) are not carried: a decoded program has none.
//!
//! All integers are little-endian.  Operand sizes come from
//! [`crate::isa::OperandKind::encoded_size`].  MEMORY and FUNCTIONS are
//! required, DATA and IMPORTS are optional (written only when not empty);
//! each appears at most once, in id order.
//!
//! Decoding never trusts a count: before allocating for `n` items it checks
//! that the bytes left could hold `n` of the smallest such item, so a hostile
//! header cannot make it allocate more than the file's own size.

use crate::isa::{Instr, Op, Operand, OperandKind};
use crate::program::{DataSegment, Function, Import, Program};
use crate::{Error, Result};

/// The first eight bytes of every `.bc` file.
pub const MAGIC: &[u8; 8] = b"TOYVMBC\x1a";
/// The format version this build writes; it reads this one and
/// [`OLDEST_VERSION`] onwards.
pub const VERSION: u16 = 2;
/// The oldest format version this build reads (version 1: no initial
/// memory length; the memory starts whole).
pub const OLDEST_VERSION: u16 = 1;

const SECTION_MEMORY: u8 = 1;
const SECTION_FUNCTIONS: u8 = 2;
const SECTION_DATA: u8 = 3;
const SECTION_IMPORTS: u8 = 4;

/// Encodes a program.  The encoding is canonical: decoding and encoding
/// again gives the same bytes.
pub fn encode(p: &Program) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    let sections = 2 + u32::from(!p.data.is_empty()) + u32::from(!p.imports.is_empty());
    out.extend_from_slice(&sections.to_le_bytes());

    let mut mem = Vec::new();
    mem.extend_from_slice(&p.memory_words.to_le_bytes());
    mem.extend_from_slice(&p.input_base.to_le_bytes());
    mem.extend_from_slice(&p.entry.to_le_bytes());
    mem.extend_from_slice(&p.memory_len.to_le_bytes());
    section(&mut out, SECTION_MEMORY, &mem);

    let mut funcs = Vec::new();
    funcs.extend_from_slice(&(p.functions.len() as u32).to_le_bytes());
    for f in &p.functions {
        put_name(&mut funcs, &f.name);
        funcs.push(f.params);
        funcs.extend_from_slice(&f.regs.to_le_bytes());
        funcs.extend_from_slice(&(f.tables.len() as u16).to_le_bytes());
        for t in &f.tables {
            funcs.extend_from_slice(&(t.len() as u32).to_le_bytes());
            for &target in t {
                funcs.extend_from_slice(&target.to_le_bytes());
            }
        }
        funcs.extend_from_slice(&(f.code.len() as u32).to_le_bytes());
        for i in &f.code {
            encode_instr(i, &mut funcs);
        }
    }
    section(&mut out, SECTION_FUNCTIONS, &funcs);

    if !p.data.is_empty() {
        let mut data = Vec::new();
        data.extend_from_slice(&(p.data.len() as u32).to_le_bytes());
        for seg in &p.data {
            data.extend_from_slice(&seg.addr.to_le_bytes());
            data.extend_from_slice(&(seg.words.len() as u32).to_le_bytes());
            for w in &seg.words {
                data.extend_from_slice(&w.to_le_bytes());
            }
        }
        section(&mut out, SECTION_DATA, &data);
    }
    if !p.imports.is_empty() {
        let mut imports = Vec::new();
        imports.extend_from_slice(&(p.imports.len() as u32).to_le_bytes());
        for i in &p.imports {
            put_name(&mut imports, &i.name);
            imports.push(i.params);
        }
        section(&mut out, SECTION_IMPORTS, &imports);
    }
    out
}

/// A name: its length as a u16, then its UTF-8 bytes.
fn put_name(out: &mut Vec<u8>, name: &str) {
    out.extend_from_slice(&(name.len() as u16).to_le_bytes());
    out.extend_from_slice(name.as_bytes());
}

fn section(out: &mut Vec<u8>, id: u8, payload: &[u8]) {
    out.push(id);
    out.extend_from_slice(&[0, 0, 0]);
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(payload);
}

/// Appends one instruction's encoding.
pub fn encode_instr(i: &Instr, out: &mut Vec<u8>) {
    out.push(i.op() as u8);
    for o in i.operands().iter() {
        match *o {
            Operand::Reg(r) | Operand::Count(r) => out.push(r),
            Operand::Table(t) | Operand::HostFn(t) => out.extend_from_slice(&t.to_le_bytes()),
            Operand::Imm(v) => out.extend_from_slice(&v.to_le_bytes()),
            Operand::Label(v) | Operand::Func(v) => out.extend_from_slice(&v.to_le_bytes()),
            Operand::Wide(v) => out.extend_from_slice(&v.to_le_bytes()),
        }
    }
}

/// A bounds-checked little-endian reader over the image.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    /// Where the current section ends; reads past it are errors.
    end: usize,
}

impl<'a> Reader<'a> {
    fn err<T>(&self, msg: impl Into<String>) -> Result<T> {
        Err(Error::Decode {
            offset: self.pos,
            msg: msg.into(),
        })
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        if self.end - self.pos < n {
            return self.err(format!(
                "truncated: {what} needs {n} bytes, {} left",
                self.end - self.pos
            ));
        }
        let s = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn u8(&mut self, what: &str) -> Result<u8> {
        Ok(self.take(1, what)?[0])
    }
    fn u16(&mut self, what: &str) -> Result<u16> {
        Ok(u16::from_le_bytes(self.take(2, what)?.try_into().unwrap()))
    }
    fn u32(&mut self, what: &str) -> Result<u32> {
        Ok(u32::from_le_bytes(self.take(4, what)?.try_into().unwrap()))
    }
    fn u64(&mut self, what: &str) -> Result<u64> {
        Ok(u64::from_le_bytes(self.take(8, what)?.try_into().unwrap()))
    }

    /// A name written by `put_name`; `what` names its owner in errors.
    fn name(&mut self, what: &str) -> Result<String> {
        let len = self.u16(&format!("{what} name length"))? as usize;
        let at = self.pos;
        let bytes = self.take(len, &format!("{what} name"))?;
        let name = std::str::from_utf8(bytes).map_err(|_| Error::Decode {
            offset: at,
            msg: format!("{what} name is not UTF-8"),
        })?;
        // The assembler's rule: a loaded program disassembles into text
        // that assembles back.
        if !crate::name::is_name(name) {
            return Err(Error::Decode {
                offset: at,
                msg: crate::error::capped(&format!(
                    "{what} name `{name}` is not a name the assembler reads (a letter, `_` or `.`, then letters, digits, `_` or `.`)"
                )),
            });
        }
        Ok(name.to_owned())
    }

    /// Checks that `count` items of at least `min_size` bytes each can fit
    /// in what is left, before anything is allocated for them.
    fn check_count(&self, count: u64, min_size: usize, what: &str) -> Result<usize> {
        let left = (self.end - self.pos) as u64;
        if count.saturating_mul(min_size as u64) > left {
            return self.err(format!(
                "{what} count {count} cannot fit in the {left} bytes left"
            ));
        }
        Ok(count as usize)
    }
}

/// Decodes a `.bc` image.  The result still has to be verified.
pub fn decode(bytes: &[u8]) -> Result<Program> {
    let mut r = Reader {
        bytes,
        pos: 0,
        end: bytes.len(),
    };
    let magic = r.take(8, "magic")?;
    if magic != MAGIC {
        return Err(Error::Decode {
            offset: 0,
            msg: "bad magic: not a toyvm bytecode file".into(),
        });
    }
    let version = r.u16("version")?;
    if !(OLDEST_VERSION..=VERSION).contains(&version) {
        return Err(Error::Decode {
            offset: 8,
            msg: format!(
                "unsupported version {version} (this toyvm reads versions {OLDEST_VERSION} to {VERSION})"
            ),
        });
    }
    if r.u16("reserved")? != 0 {
        return r.err("reserved header field is not zero");
    }
    let count = r.u32("section count")?;
    r.check_count(count as u64, 8, "section")?;

    let mut memory = None;
    let mut functions = None;
    let mut data = Vec::new();
    let mut imports = Vec::new();
    let mut last_id = 0u8;
    for _ in 0..count {
        let at = r.pos;
        let id = r.u8("section id")?;
        if r.take(3, "section header")? != [0, 0, 0] {
            return r.err("reserved section header bytes are not zero");
        }
        let len = r.u32("section length")? as usize;
        if len > r.end - r.pos {
            return r.err(format!(
                "section {id} claims {len} bytes but only {} remain",
                r.end - r.pos
            ));
        }
        if id <= last_id {
            return Err(Error::Decode {
                offset: at,
                msg: format!("section {id} is out of order or repeated"),
            });
        }
        last_id = id;
        let mut s = Reader {
            bytes,
            pos: r.pos,
            end: r.pos + len,
        };
        match id {
            SECTION_MEMORY => {
                let words = s.u64("memory size")?;
                let input = s.u64("input base")?;
                let entry = s.u32("entry function")?;
                let len = match version {
                    1 => words.saturating_mul(8),
                    _ => s.u64("initial memory length")?,
                };
                memory = Some((words, input, entry, len));
            }
            SECTION_FUNCTIONS => functions = Some(decode_functions(&mut s)?),
            SECTION_DATA => data = decode_data(&mut s)?,
            SECTION_IMPORTS => imports = decode_imports(&mut s)?,
            other => {
                return Err(Error::Decode {
                    offset: at,
                    msg: format!("unknown section id {other}"),
                });
            }
        }
        if s.pos != s.end {
            return s.err(format!(
                "{} unused bytes at the end of section {id}",
                s.end - s.pos
            ));
        }
        r.pos += len;
    }
    if r.pos != r.end {
        return r.err(format!(
            "{} trailing bytes after the last section",
            r.end - r.pos
        ));
    }
    let Some((memory_words, input_base, entry, memory_len)) = memory else {
        return r.err("missing MEMORY section");
    };
    let Some(functions) = functions else {
        return r.err("missing FUNCTIONS section");
    };
    Ok(Program {
        functions,
        data,
        memory_words,
        memory_len,
        input_base,
        entry,
        imports,
        source_offsets: Vec::new(),
    })
}

fn decode_imports(r: &mut Reader<'_>) -> Result<Vec<Import>> {
    let count = r.u32("import count")?;
    // Smallest import: name_len, params.
    let count = r.check_count(count as u64, 3, "import")?;
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        let name = r.name("import")?;
        let params = r.u8("import parameter count")?;
        out.push(Import { name, params });
    }
    Ok(out)
}

fn decode_functions(r: &mut Reader<'_>) -> Result<Vec<Function>> {
    let count = r.u32("function count")?;
    // Smallest function: name_len, params, regs, tables, code count.
    let count = r.check_count(count as u64, 11, "function")?;
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        let name = r.name("function")?;
        let params = r.u8("parameter count")?;
        let regs = r.u16("register count")?;
        let ntables = r.u16("jump table count")?;
        let ntables = r.check_count(ntables as u64, 4, "jump table")?;
        let mut tables = Vec::with_capacity(ntables);
        for _ in 0..ntables {
            let len = r.u32("jump table length")?;
            let len = r.check_count(len as u64, 4, "jump table entry")?;
            let mut t = Vec::with_capacity(len);
            for _ in 0..len {
                t.push(r.u32("jump table entry")?);
            }
            tables.push(t);
        }
        let ncode = r.u32("instruction count")?;
        let ncode = r.check_count(ncode as u64, 1, "instruction")?;
        let mut code = Vec::with_capacity(ncode);
        for _ in 0..ncode {
            code.push(decode_instr(r, &name, code.len())?);
        }
        out.push(Function {
            name,
            params,
            regs,
            code,
            tables,
        });
    }
    Ok(out)
}

fn decode_instr(r: &mut Reader<'_>, func: &str, index: usize) -> Result<Instr> {
    let at = r.pos;
    let byte = r.u8("opcode")?;
    let Some(op) = Op::from_byte(byte) else {
        return r.err(format!(
            "function `{func}`, instruction {index}: unknown opcode 0x{byte:02x}"
        ));
    };
    let mut ops = [Operand::Reg(0); crate::isa::MAX_OPERANDS];
    let kinds = op.operand_kinds();
    for (slot, kind) in ops.iter_mut().zip(kinds) {
        *slot = match kind {
            OperandKind::Reg => Operand::Reg(r.u8("register")?),
            OperandKind::Count => Operand::Count(r.u8("count")?),
            OperandKind::Table => Operand::Table(r.u16("table")?),
            OperandKind::HostFn => Operand::HostFn(r.u16("host function")?),
            OperandKind::Imm => Operand::Imm(r.u32("immediate")? as i32),
            OperandKind::Label => Operand::Label(r.u32("label")?),
            OperandKind::Func => Operand::Func(r.u32("function")?),
            OperandKind::Wide => Operand::Wide(r.u64("constant")? as i64),
        };
    }
    Instr::from_operands(op, &ops[..kinds.len()]).ok_or_else(|| Error::Decode {
        offset: at,
        msg: format!("function `{func}`, instruction {index}: malformed `{op}`"),
    })
}

fn decode_data(r: &mut Reader<'_>) -> Result<Vec<DataSegment>> {
    let count = r.u32("data segment count")?;
    let count = r.check_count(count as u64, 12, "data segment")?;
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        let addr = r.u64("data address")?;
        let len = r.u32("data length")?;
        let len = r.check_count(len as u64, 8, "data word")?;
        let mut words = Vec::with_capacity(len);
        for _ in 0..len {
            words.push(r.u64("data word")? as i64);
        }
        out.push(DataSegment { addr, words });
    }
    Ok(out)
}
