//! Native programs' tuple streams, from Valgrind's Lackey tool.
//!
//! `valgrind --tool=lackey --trace-mem=yes --log-file=F prog` writes one
//! line per executed guest instruction (`I  0040104e,3`: address in hex,
//! size in bytes) followed by one line per data access that instruction made
//! (` L addr,size` load, ` S` store, ` M` modify, i.e. load and store of
//! one location). [`LackeyReader`] turns that into toyvm tuples, one input
//! line at a time (memory stays bounded however long the input):
//!
//! - **Edge** `<address of I, address of the next I>` whenever the next
//!   instruction is not at `address + size`: a taken branch, a jump, a
//!   call, a return, or one more iteration of a `rep`-prefixed instruction
//!   (a self-edge). Fall-throughs, including not-taken conditional
//!   branches, give nothing: Lackey does not say which instructions are
//!   branches.
//! - **Value** `<address of I, effective address>` for every ` L` and ` M`
//!   of that instruction, in order: the value slot holds the address that
//!   was read, since Lackey does not report loaded values. Stores give
//!   nothing.
//! - **Call** `<address of I, address of the next I>` in addition to the
//!   edge when the transfer is an inferred call: an instruction that
//!   transfers control (not to itself) and makes exactly one store, of 4 or
//!   8 bytes, and no modify: the return address that x86 and x86-64 `call`
//!   pushes (`call *(%rax)` also loads). Other architectures keep the return
//!   address in a register, so no calls are inferred there.
//!
//! A pc is the native address itself: [`Tuple::pc`]'s function field holds
//! address bits 63..32 and its offset bits 31..0. `profiler/TRACE-FORMAT.md`
//! ("Native traces from Lackey") says what this keeps and what is lost.
//!
//! Lines starting with `==` or `--` (Valgrind's own messages), `SB` lines
//! (`--trace-superblocks=yes`) and blank lines are skipped; data accesses
//! before the first instruction (a trace cut from the middle of a run) are
//! counted and skipped. Anything else is an error naming its 1-based line.
//!
//! ```
//! use toyvm_profiler::lackey::LackeyReader;
//! use toyvm_profiler::Tuple;
//!
//! let log = "==1== Lackey\nI  00401049,5\n S 1fff000750,8\nI  00401000,3\n L 00403000,8\n";
//! let tuples: Vec<Tuple> = LackeyReader::new(log.as_bytes()).collect::<Result<_, _>>()?;
//! assert_eq!(
//!     tuples,
//!     [
//!         Tuple::edge(0x401049, 0x401000),
//!         Tuple::call(0x401049, 0x401000),
//!         Tuple::value(0x401000, 0x403000),
//!     ]
//! );
//! # Ok::<(), toyvm_profiler::Error>(())
//! ```

use std::collections::VecDeque;
use std::io::{BufRead, Read};

use serde::Serialize;

use crate::error::{Error, Result};
use crate::trace::MAX_LINE;
use crate::tuple::Tuple;

/// Return addresses of inferred calls kept to recognize their returns; the
/// oldest are forgotten beyond this depth (a bound on memory, not on input).
const SHADOW_DEPTH: usize = 1 << 16;

/// What an import read and wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ImportStats {
    /// Input lines read.
    pub lines: u64,
    /// Instruction records (`I`).
    pub instructions: u64,
    /// Load records (`L`): one value tuple each.
    pub loads: u64,
    /// Modify records (`M`): one value tuple each.
    pub modifies: u64,
    /// Store records (`S`): no tuple.
    pub stores: u64,
    /// Control transfers that do not fall through: one edge tuple each.
    pub transfers: u64,
    /// Inferred calls: one call tuple each.
    pub calls: u64,
    /// Transfers to the fall-through address of the latest inferred call not
    /// yet returned from: evidence that the inferred calls were calls.
    pub returns: u64,
    /// Valgrind messages, `SB` records and blank lines.
    pub skipped: u64,
    /// Data accesses before the first instruction record (skipped).
    pub orphan_accesses: u64,
}

impl ImportStats {
    /// Value tuples written.
    pub fn values(&self) -> u64 {
        self.loads + self.modifies
    }

    /// One line for people: what was read, what was written, what was lost.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "{} instructions: {} value, {} edge, {} call tuples ({} stores not profiled; {} calls inferred, {} of them seen returning)",
            self.instructions,
            self.values(),
            self.transfers,
            self.calls,
            self.stores,
            self.calls,
            self.returns
        );
        if self.orphan_accesses > 0 {
            s.push_str(&format!(
                "; {} data accesses before the first instruction skipped",
                self.orphan_accesses
            ));
        }
        s
    }
}

/// The instruction whose data accesses are being read.
#[derive(Clone, Copy, Debug)]
struct Insn {
    addr: u64,
    /// `addr + size`: where a fall-through goes.
    end: u64,
    stores: u32,
    store_size: u64,
    modifies: u32,
}

/// Reads Lackey's `--trace-mem=yes` output as a stream of `Result<Tuple>`
/// (see the module doc). After the first error the iterator ends.
#[derive(Debug)]
pub struct LackeyReader<R: BufRead> {
    input: R,
    line: u64,
    buf: Vec<u8>,
    cur: Option<Insn>,
    /// Tuples made by the last record, not yet handed out (at most two).
    queue: VecDeque<Tuple>,
    shadow: VecDeque<u64>,
    stats: ImportStats,
    done: bool,
}

impl<R: BufRead> LackeyReader<R> {
    /// A reader over Lackey's output.
    pub fn new(input: R) -> Self {
        LackeyReader {
            input,
            line: 0,
            buf: Vec::new(),
            cur: None,
            queue: VecDeque::with_capacity(2),
            shadow: VecDeque::new(),
            stats: ImportStats::default(),
            done: false,
        }
    }

    /// What has been read so far.
    pub fn stats(&self) -> &ImportStats {
        &self.stats
    }

    fn err(&self, msg: impl Into<String>) -> Error {
        Error::Import {
            format: "lackey",
            line: self.line,
            msg: msg.into(),
        }
    }

    /// Reads the next line into `buf` (without its line end); `false` at the
    /// end of the input. Reads at most one byte past [`MAX_LINE`].
    fn read_line(&mut self) -> Result<bool> {
        self.buf.clear();
        let n = (&mut self.input)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut self.buf)?;
        if n == 0 {
            return Ok(false);
        }
        self.line += 1;
        self.stats.lines += 1;
        if self.buf.last() == Some(&b'\n') {
            self.buf.pop();
        } else if self.buf.len() > MAX_LINE {
            return Err(self.err(format!("line longer than {MAX_LINE} bytes")));
        }
        if self.buf.last() == Some(&b'\r') {
            self.buf.pop();
        }
        Ok(true)
    }

    /// Parses the line in `buf`, queueing the tuples it completes.
    fn record(&mut self) -> Result<()> {
        let line = std::str::from_utf8(&self.buf)
            .ok()
            .filter(|s| s.is_ascii())
            .ok_or_else(|| self.err("not ASCII text"))?;
        let body = line.trim_start();
        if body.is_empty() || line.starts_with("==") || line.starts_with("--") {
            self.stats.skipped += 1;
            return Ok(());
        }
        let (tag, rest) = body.split_at(body.find([' ', '\t']).unwrap_or(body.len()));
        if tag == "SB" {
            self.stats.skipped += 1;
            return Ok(());
        }
        if !matches!(tag, "I" | "L" | "S" | "M") {
            return Err(self.err(format!(
                "unknown record `{}` (expected I, L, S, M, SB or a `==pid==` message)",
                truncate(tag)
            )));
        }
        let (addr, size) = parse_access(rest.trim()).map_err(|m| self.err(m))?;
        match tag {
            "I" => self.instruction(addr, size)?,
            "S" => {
                self.stats.stores += 1;
                if let Some(c) = &mut self.cur {
                    c.stores += 1;
                    c.store_size = size;
                }
            }
            _ => {
                let Some(c) = &mut self.cur else {
                    self.stats.orphan_accesses += 1;
                    return Ok(());
                };
                let pc = c.addr;
                if tag == "L" {
                    self.stats.loads += 1;
                } else {
                    c.modifies += 1;
                    self.stats.modifies += 1;
                }
                self.queue.push_back(Tuple::value(pc, addr));
            }
        }
        Ok(())
    }

    fn instruction(&mut self, addr: u64, size: u64) -> Result<()> {
        let end = addr.checked_add(size).ok_or_else(|| {
            self.err(format!(
                "instruction at {addr:#x} of {size} bytes ends past the 64-bit address space"
            ))
        })?;
        self.stats.instructions += 1;
        if let Some(prev) = self.cur.replace(Insn {
            addr,
            end,
            stores: 0,
            store_size: 0,
            modifies: 0,
        }) && addr != prev.end
        {
            self.stats.transfers += 1;
            self.queue.push_back(Tuple::edge(prev.addr, addr));
            let pushes_return =
                prev.stores == 1 && prev.modifies == 0 && matches!(prev.store_size, 4 | 8);
            if pushes_return && addr != prev.addr {
                self.stats.calls += 1;
                self.queue.push_back(Tuple::call(prev.addr, addr));
                if self.shadow.len() == SHADOW_DEPTH {
                    self.shadow.pop_front();
                }
                self.shadow.push_back(prev.end);
            } else if self.shadow.back() == Some(&addr) {
                self.shadow.pop_back();
                self.stats.returns += 1;
            }
        }
        Ok(())
    }

    fn step(&mut self) -> Result<Option<Tuple>> {
        loop {
            if let Some(t) = self.queue.pop_front() {
                return Ok(Some(t));
            }
            if !self.read_line()? {
                return Ok(None);
            }
            self.record()?;
        }
    }
}

/// Parses `addr,size`: a hex address (optional `0x`) and a decimal size.
fn parse_access(s: &str) -> std::result::Result<(u64, u64), String> {
    let (a, rest) = s
        .split_once(',')
        .ok_or_else(|| format!("expected `address,size`, found `{}`", truncate(s)))?;
    let (z, extra) = rest.split_at(rest.find([' ', '\t']).unwrap_or(rest.len()));
    if !extra.trim().is_empty() {
        return Err(format!(
            "unexpected `{}` after the size",
            truncate(extra.trim())
        ));
    }
    let hex = a.strip_prefix("0x").unwrap_or(a);
    let addr = if !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        u64::from_str_radix(hex, 16).ok()
    } else {
        None
    }
    .ok_or_else(|| {
        format!(
            "address `{}` is not a hexadecimal number of at most 64 bits",
            truncate(a)
        )
    })?;
    let size = (!z.is_empty() && z.bytes().all(|b| b.is_ascii_digit()))
        .then(|| z.parse::<u64>().ok())
        .flatten()
        .ok_or_else(|| {
            format!(
                "size `{}` is not a decimal number of at most 64 bits",
                truncate(z)
            )
        })?;
    Ok((addr, size))
}

fn truncate(s: &str) -> String {
    s.chars().take(40).collect()
}

impl<R: BufRead> Iterator for LackeyReader<R> {
    type Item = Result<Tuple>;

    fn next(&mut self) -> Option<Result<Tuple>> {
        if self.done {
            return None;
        }
        match self.step() {
            Ok(Some(t)) => Some(Ok(t)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn tuples(text: &str) -> Result<Vec<Tuple>> {
        LackeyReader::new(text.as_bytes()).collect()
    }

    #[test]
    fn fall_throughs_give_nothing_and_transfers_give_edges() {
        let ts = tuples("I  00000010,4\nI  00000014,2\nI  00000010,4\n").unwrap();
        assert_eq!(ts, [Tuple::edge(0x14, 0x10)]);
    }

    #[test]
    fn loads_and_modifies_are_values_of_their_instruction_stores_are_not() {
        let ts =
            tuples("I  00000010,4\n L 00000100,8\n S 00000200,8\n M 00000300,4\nI  00000014,2\n")
                .unwrap();
        assert_eq!(ts, [Tuple::value(0x10, 0x100), Tuple::value(0x10, 0x300)]);
    }

    #[test]
    fn calls_are_transfers_that_push_and_returns_are_counted() {
        let text = "I  00000010,5\n S 7ff0,8\nI  00000100,1\n L 7ff0,8\nI  00000015,1\n";
        let mut r = LackeyReader::new(text.as_bytes());
        let ts: Vec<Tuple> = r.by_ref().collect::<Result<_>>().unwrap();
        assert_eq!(
            ts,
            [
                Tuple::edge(0x10, 0x100),
                Tuple::call(0x10, 0x100),
                Tuple::value(0x100, 0x7ff0),
                Tuple::edge(0x100, 0x15),
            ]
        );
        assert_eq!((r.stats().calls, r.stats().returns), (1, 1));
    }

    #[test]
    fn a_storing_self_loop_is_not_a_call() {
        // `rep stosq`: one store per iteration, the same instruction again.
        let ts = tuples("I  00000010,3\n S 00000800,8\nI  00000010,3\n S 00000808,8\n").unwrap();
        assert_eq!(ts, [Tuple::edge(0x10, 0x10)]);
    }

    #[test]
    fn messages_superblocks_blanks_and_crlf_are_skipped() {
        let text = "==42== Lackey\r\n--42-- note\n\nSB 00000010\nI  00000010,4\r\nI  00000020,4\n";
        let mut r = LackeyReader::new(text.as_bytes());
        assert_eq!(r.next().unwrap().unwrap(), Tuple::edge(0x10, 0x20));
        assert!(r.next().is_none());
        assert_eq!(r.stats().skipped, 4);
    }

    #[test]
    fn accesses_before_the_first_instruction_are_counted_and_skipped() {
        let mut r = LackeyReader::new(&b" L 00000100,8\n S 8,8\nI  10,1\n L 20,8\n"[..]);
        let ts: Vec<Tuple> = r.by_ref().collect::<Result<_>>().unwrap();
        assert_eq!(ts, [Tuple::value(0x10, 0x20)]);
        assert_eq!(r.stats().orphan_accesses, 1);
    }

    #[test]
    fn malformed_lines_are_errors_naming_the_line() {
        for (bad, needle) in [
            ("I  10,1\nX 10,1\n", "lackey line 2: unknown record `X`"),
            ("I  10,1\nI  0040", "line 2: expected `address,size`"),
            ("I  10,1\n L 0040,\n", "line 2: size ``"),
            ("I  zz,1\n", "line 1: address `zz`"),
            ("I  10000000000000000,1\n", "line 1: address"),
            ("I  10,18446744073709551616\n", "line 1: size"),
            (
                "I  ffffffffffffffff,2\n",
                "line 1: instruction at 0xffffffffffffffff",
            ),
            ("I  10,1 junk\n", "line 1: unexpected `junk`"),
            ("I  10,-1\n", "line 1: size `-1`"),
            ("\n\nI  10,1\n L 1\u{e9},8\n", "line 4: not ASCII"),
        ] {
            let e = tuples(bad).unwrap_err().to_string();
            assert!(e.contains(needle), "{bad:?}: {e}");
        }
    }

    #[test]
    fn overlong_lines_are_rejected_without_reading_everything() {
        let long = vec![b'I'; 1 << 20];
        let e = LackeyReader::new(&long[..]).next().unwrap().unwrap_err();
        assert!(e.to_string().contains("line 1: line longer than"), "{e}");
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
            let n = LackeyReader::new(&bytes[..]).take(1000).count();
            // Every tuple comes from a line: at most two per line, plus one.
            prop_assert!(n <= 2 * bytes.len() + 1);
        }

        #[test]
        fn well_formed_traces_give_one_edge_per_transfer(
            steps in proptest::collection::vec((0u64..64, 1u64..16, 0usize..3), 1..100)
        ) {
            let mut text = String::new();
            for (addr, size, loads) in &steps {
                text.push_str(&format!("I  {addr:08x},{size}\n"));
                for l in 0..*loads {
                    text.push_str(&format!(" L {:x},8\n", 0x1000 + l));
                }
            }
            let ts = tuples(&text).unwrap();
            let edges = ts.iter().filter(|t| t.kind == crate::Kind::Edge).count();
            let transfers = steps.windows(2).filter(|w| w[1].0 != w[0].0 + w[0].1).count();
            prop_assert_eq!(edges, transfers);
            let values = ts.iter().filter(|t| t.kind == crate::Kind::Value).count();
            prop_assert_eq!(values, steps.iter().map(|s| s.2).sum::<usize>());
        }
    }
}
