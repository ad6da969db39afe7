//! Offline tuple traces: a text format and a compact binary one.
//!
//! **Text.** One tuple a line: a kind letter (`V`, `E` or `C`), then two unsigned 64-bit
//! integers in decimal or `0x` hex, separated by spaces or tabs.  `#` starts a comment
//! (whole line or trailing); blank lines are ignored.  Lines longer than 4096 bytes are
//! rejected, so hostile input cannot make the reader allocate without bound.
//!
//! ```text
//! # kind a b
//! V 0x100000004 42
//! E 0x100000007 0x100000002
//! C 0x10000000c 3
//! ```
//!
//! **Binary** (little-endian).  An 8-byte header: the magic `TVMT`, a `u16` version
//! (currently 1) and two reserved zero bytes.  Then records until end of file: one byte
//! holding the kind discriminant (0 value, 1 edge, 2 call), then `a` and `b` as unsigned
//! LEB128 varints (at most 10 bytes each; the tenth byte may only carry the top bit).  A
//! record is 3 to 21 bytes; typical toyvm tuples (small function indices, offsets and
//! values) take 7 to 11.  [`TraceReader`] tells the formats apart by the magic, which no
//! valid text trace can start with.  `profiler/TRACE-FORMAT.md` repeats this.

use crate::error::{Error, Result};
use crate::tuple::{Kind, Tuple};
use std::io::{BufRead, Write};

/// The binary trace magic.
pub const MAGIC: [u8; 4] = *b"TVMT";
/// The binary trace version this crate writes and reads.
pub const VERSION: u16 = 1;
/// The longest text line accepted, in bytes.
pub const MAX_LINE: usize = 4096;

/// Which trace format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// One tuple a line.
    Text,
    /// Header plus varint records.
    Binary,
}

/// Writes tuples as a text or binary trace.
#[derive(Debug)]
pub struct TraceWriter<W: Write> {
    out: W,
    format: Format,
}

impl<W: Write> TraceWriter<W> {
    /// A text-trace writer.
    pub fn text(out: W) -> Self {
        TraceWriter {
            out,
            format: Format::Text,
        }
    }

    /// A binary-trace writer; writes the header now.
    pub fn binary(mut out: W) -> Result<Self> {
        out.write_all(&MAGIC)?;
        out.write_all(&VERSION.to_le_bytes())?;
        out.write_all(&[0, 0])?;
        Ok(TraceWriter {
            out,
            format: Format::Binary,
        })
    }

    /// A writer of either format.
    pub fn new(out: W, format: Format) -> Result<Self> {
        match format {
            Format::Text => Ok(Self::text(out)),
            Format::Binary => Self::binary(out),
        }
    }

    /// Writes one tuple.
    pub fn write(&mut self, t: &Tuple) -> Result<()> {
        match self.format {
            Format::Text => writeln!(self.out, "{}", t.text())?,
            Format::Binary => {
                let mut buf = [0u8; 21];
                buf[0] = t.kind as u8;
                let mut n = 1;
                n += leb128(t.a, &mut buf[n..]);
                n += leb128(t.b, &mut buf[n..]);
                self.out.write_all(&buf[..n])?;
            }
        }
        Ok(())
    }

    /// Writes many tuples.
    pub fn write_all(&mut self, ts: &[Tuple]) -> Result<()> {
        ts.iter().try_for_each(|t| self.write(t))
    }

    /// Flushes and returns the sink.
    pub fn finish(mut self) -> Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

fn leb128(mut v: u64, out: &mut [u8]) -> usize {
    let mut i = 0;
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out[i] = byte;
            return i + 1;
        }
        out[i] = byte | 0x80;
        i += 1;
    }
}

/// Reads a text or binary trace (auto-detected) as a stream of `Result<Tuple>`.  After
/// the first error the iterator ends.
#[derive(Debug)]
pub struct TraceReader<R: BufRead> {
    input: R,
    format: Format,
    /// Bytes read while sniffing the format that belong to the first text line.
    pending: Vec<u8>,
    line: u64,
    offset: u64,
    line_buf: Vec<u8>,
    done: bool,
}

impl TraceReader<std::io::BufReader<std::fs::File>> {
    /// Opens a trace file.
    pub fn open(path: impl AsRef<std::path::Path>) -> Result<Self> {
        TraceReader::new(std::io::BufReader::new(std::fs::File::open(path)?))
    }
}

impl<R: BufRead> TraceReader<R> {
    /// A reader over `input`; sniffs the format from the first bytes.
    pub fn new(mut input: R) -> Result<Self> {
        let mut head = Vec::with_capacity(8);
        while head.len() < 4 {
            let n = match input.fill_buf()? {
                [] => break,
                buf => {
                    let n = buf.len().min(4 - head.len());
                    head.extend_from_slice(&buf[..n]);
                    n
                }
            };
            input.consume(n);
        }
        let mut r = TraceReader {
            input,
            format: Format::Text,
            pending: Vec::new(),
            line: 0,
            offset: 0,
            line_buf: Vec::new(),
            done: false,
        };
        if head == MAGIC {
            r.format = Format::Binary;
            let mut rest = [0u8; 4];
            let got = r.read_exact_or_eof(&mut rest)?;
            if got < 4 {
                return Err(Error::TraceBinary {
                    offset: 4 + got as u64,
                    msg: "truncated header".into(),
                });
            }
            let version = u16::from_le_bytes([rest[0], rest[1]]);
            if version != VERSION {
                return Err(Error::TraceBinary {
                    offset: 4,
                    msg: format!("unsupported version {version} (this reader knows {VERSION})"),
                });
            }
            if rest[2..] != [0, 0] {
                return Err(Error::TraceBinary {
                    offset: 6,
                    msg: "reserved header bytes are not zero".into(),
                });
            }
            r.offset = 8;
        } else {
            r.pending = head;
        }
        Ok(r)
    }

    /// The detected format.
    pub fn format(&self) -> Format {
        self.format
    }

    fn read_exact_or_eof(&mut self, out: &mut [u8]) -> Result<usize> {
        let mut got = 0;
        while got < out.len() {
            let buf = self.input.fill_buf()?;
            if buf.is_empty() {
                break;
            }
            let n = buf.len().min(out.len() - got);
            out[got..got + n].copy_from_slice(&buf[..n]);
            self.input.consume(n);
            got += n;
        }
        Ok(got)
    }

    fn next_byte(&mut self) -> Result<Option<u8>> {
        let b = match self.input.fill_buf()? {
            [] => return Ok(None),
            buf => buf[0],
        };
        self.input.consume(1);
        Ok(Some(b))
    }

    fn next_binary(&mut self) -> Result<Option<Tuple>> {
        let start = self.offset;
        let Some(tag) = self.next_byte()? else {
            return Ok(None);
        };
        self.offset += 1;
        let kind = Kind::from_u8(tag).ok_or_else(|| Error::TraceBinary {
            offset: start,
            msg: format!("bad kind byte {tag:#04x} (valid: 0, 1, 2)"),
        })?;
        let a = self.varint(start)?;
        let b = self.varint(start)?;
        Ok(Some(Tuple::new(kind, a, b)))
    }

    fn varint(&mut self, record: u64) -> Result<u64> {
        let mut v = 0u64;
        for i in 0..10 {
            let byte = self.next_byte()?.ok_or_else(|| Error::TraceBinary {
                offset: record,
                msg: "record truncated inside a varint".into(),
            })?;
            self.offset += 1;
            if i == 9 && byte > 1 {
                return Err(Error::TraceBinary {
                    offset: self.offset - 1,
                    msg: "varint overflows 64 bits".into(),
                });
            }
            v |= ((byte & 0x7f) as u64) << (7 * i);
            if byte & 0x80 == 0 {
                return Ok(v);
            }
        }
        unreachable!("the tenth byte either ends the varint or is rejected")
    }

    /// Reads one line into `line_buf` (without the newline); `false` at end of input.
    fn read_line(&mut self) -> Result<bool> {
        self.line_buf.clear();
        self.line += 1;
        let pending = std::mem::take(&mut self.pending);
        let mut saw_any = !pending.is_empty();
        for (i, &b) in pending.iter().enumerate() {
            if b == b'\n' {
                self.pending = pending[i + 1..].to_vec();
                return Ok(true);
            }
            self.line_buf.push(b);
        }
        loop {
            let (used, found) = {
                let buf = self.input.fill_buf()?;
                if buf.is_empty() {
                    return Ok(saw_any);
                }
                saw_any = true;
                // Copy at most one byte past the limit: enough to reject the line.
                let room = MAX_LINE + 1 - self.line_buf.len();
                match buf.iter().position(|&b| b == b'\n') {
                    Some(p) if p <= room => {
                        self.line_buf.extend_from_slice(&buf[..p]);
                        (p + 1, true)
                    }
                    _ => {
                        let n = buf.len().min(room);
                        self.line_buf.extend_from_slice(&buf[..n]);
                        (n, false)
                    }
                }
            };
            self.input.consume(used);
            if self.line_buf.len() > MAX_LINE {
                return Err(Error::TraceText {
                    line: self.line,
                    msg: format!("line longer than {MAX_LINE} bytes"),
                });
            }
            if found {
                return Ok(true);
            }
        }
    }

    fn next_text(&mut self) -> Result<Option<Tuple>> {
        loop {
            if !self.read_line()? {
                return Ok(None);
            }
            if let Some(t) = parse_line(&self.line_buf).map_err(|msg| Error::TraceText {
                line: self.line,
                msg,
            })? {
                return Ok(Some(t));
            }
        }
    }
}

/// Parses one text line: `Ok(None)` for blank and comment lines.
pub fn parse_line(line: &[u8]) -> std::result::Result<Option<Tuple>, String> {
    let line = std::str::from_utf8(line).map_err(|_| "not UTF-8".to_string())?;
    let line = line.split('#').next().unwrap_or("").trim();
    if line.is_empty() {
        return Ok(None);
    }
    let mut parts = line.split_ascii_whitespace();
    let k = parts.next().unwrap_or("");
    let kind = match k {
        "V" => Kind::Value,
        "E" => Kind::Edge,
        "C" => Kind::Call,
        _ => return Err(format!("bad kind `{}` (expected V, E or C)", truncate(k))),
    };
    let mut num = |what: &str| -> std::result::Result<u64, String> {
        let s = parts.next().ok_or_else(|| format!("missing {what}"))?;
        let parsed = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
            Some(h) => u64::from_str_radix(h, 16),
            None => s.parse::<u64>(),
        };
        parsed.map_err(|_| {
            format!(
                "{what} `{}` is not an unsigned 64-bit integer (decimal or 0x hex)",
                truncate(s)
            )
        })
    };
    let a = num("first number")?;
    let b = num("second number")?;
    if let Some(extra) = parts.next() {
        return Err(format!(
            "unexpected `{}` after the two numbers",
            truncate(extra)
        ));
    }
    Ok(Some(Tuple::new(kind, a, b)))
}

fn truncate(s: &str) -> String {
    s.chars().take(40).collect()
}

impl<R: BufRead> Iterator for TraceReader<R> {
    type Item = Result<Tuple>;

    fn next(&mut self) -> Option<Result<Tuple>> {
        if self.done {
            return None;
        }
        let r = match self.format {
            Format::Text => self.next_text(),
            Format::Binary => self.next_binary(),
        };
        match r {
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

/// Reads a whole trace from bytes (tests and small tools).
pub fn read_all(bytes: &[u8]) -> Result<Vec<Tuple>> {
    TraceReader::new(bytes)?.collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn tuple() -> impl Strategy<Value = Tuple> {
        (0u8..3, any::<u64>(), any::<u64>())
            .prop_map(|(k, a, b)| Tuple::new(Kind::from_u8(k).unwrap(), a, b))
    }

    fn write(ts: &[Tuple], format: Format) -> Vec<u8> {
        let mut w = TraceWriter::new(Vec::new(), format).unwrap();
        w.write_all(ts).unwrap();
        w.finish().unwrap()
    }

    #[test]
    fn text_accepts_comments_blanks_and_hex() {
        let text = b"# header\n\nV 0x10 42\n  E 1 0X2   # trailing\r\nC 18446744073709551615 0\n";
        let ts = read_all(text).unwrap();
        assert_eq!(
            ts,
            vec![
                Tuple::value(16, 42),
                Tuple::edge(1, 2),
                Tuple::call(u64::MAX, 0)
            ]
        );
    }

    #[test]
    fn text_errors_carry_the_line() {
        for (bad, needle) in [
            (&b"V 1 2\nX 1 2\n"[..], "line 2: bad kind"),
            (b"V 1\n", "line 1: missing second"),
            (b"\n\nV 1 2 3\n", "line 3: unexpected"),
            (b"V 1 18446744073709551616\n", "line 1: second number"),
            (b"V 0xg 1", "line 1: first number"),
        ] {
            let e = read_all(bad).unwrap_err().to_string();
            assert!(e.contains(needle), "{e}");
        }
    }

    #[test]
    fn overlong_lines_are_rejected_without_reading_everything() {
        let long = vec![b'1'; 1 << 20];
        let e = read_all(&long).unwrap_err().to_string();
        assert!(e.contains("longer than"), "{e}");
    }

    #[test]
    fn binary_errors_carry_the_offset() {
        let mut b = write(&[Tuple::value(1, 2)], Format::Binary);
        b.push(7);
        let e = read_all(&b).unwrap_err().to_string();
        assert!(e.contains("offset 11") && e.contains("kind"), "{e}");
        let mut v2 = write(&[], Format::Binary);
        v2[4] = 2;
        assert!(read_all(&v2).unwrap_err().to_string().contains("version 2"));
        let over = [&MAGIC[..], &[1, 0, 0, 0, 0], &[0xff; 9], &[0x02, 0]].concat();
        assert!(
            read_all(&over)
                .unwrap_err()
                .to_string()
                .contains("overflows")
        );
    }

    #[test]
    fn empty_inputs_are_empty_traces() {
        assert!(read_all(b"").unwrap().is_empty());
        assert!(read_all(&write(&[], Format::Binary)).unwrap().is_empty());
    }

    proptest! {
        #[test]
        fn round_trips(ts in proptest::collection::vec(tuple(), 0..200)) {
            for f in [Format::Text, Format::Binary] {
                let bytes = write(&ts, f);
                let r = TraceReader::new(&bytes[..]).unwrap();
                prop_assert_eq!(r.format(), f);
                let back: Vec<Tuple> = r.collect::<Result<_>>().unwrap();
                prop_assert_eq!(&back, &ts);
            }
        }

        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300), magic in any::<bool>()) {
            let input = if magic { [&MAGIC[..], &[1, 0, 0, 0], &bytes[..]].concat() } else { bytes };
            if let Ok(r) = TraceReader::new(&input[..]) {
                for item in r.take(1000) {
                    let _ = item;
                }
            }
        }

        #[test]
        fn mutated_binary_gives_err_or_tuples(ts in proptest::collection::vec(tuple(), 1..50), pos in any::<usize>(), byte in any::<u8>()) {
            let mut bytes = write(&ts, Format::Binary);
            let p = pos % bytes.len();
            bytes[p] = byte;
            if let Ok(r) = TraceReader::new(&bytes[..]) {
                let n = r.take(1000).count();
                prop_assert!(n <= bytes.len());
            }
        }

        #[test]
        fn mutated_text_gives_err_or_tuples(ts in proptest::collection::vec(tuple(), 1..50), pos in any::<usize>(), byte in any::<u8>()) {
            let mut bytes = write(&ts, Format::Text);
            let p = pos % bytes.len();
            bytes[p] = byte;
            if let Ok(r) = TraceReader::new(&bytes[..]) {
                let n = r.take(1000).count();
                prop_assert!(n <= ts.len() + 1);
            }
        }
    }
}
