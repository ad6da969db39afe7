//! WASI preview 1: the calls wasi-libc's command-line programs make to
//! print and exit, as a [`HostFunctions`] for toyvm's interpreter.
//!
//! Memory: a guest pointer `p` is toyvm byte `base + p` (see [`Layout`]);
//! byte `B` of toyvm memory is byte `B % 8` of word `B / 8`, little-endian.
//! A pointer past the memory gets WASI's `EFAULT` (21).

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::io::Write;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use toyvm_vm::interp::{HostError, HostFunctions};
use wasmparser::ValType;

use crate::{Layout, Translation};

/// The module name of WASI preview 1's imports.
pub const WASI_MODULE: &str = "wasi_snapshot_preview1";

/// WASI's errno values used here.
pub mod errno {
    /// Success.
    pub const SUCCESS: i32 = 0;
    /// Bad file descriptor.
    pub const BADF: i32 = 8;
    /// Bad address.
    pub const FAULT: i32 = 21;
    /// Invalid argument.
    pub const INVAL: i32 = 28;
    /// I/O error.
    pub const IO: i32 = 29;
    /// Invalid seek.
    pub const SPIPE: i32 = 70;
}

/// The WASI functions this host offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WasiFn {
    /// `args_get(argv, argv_buf) -> errno`
    ArgsGet,
    /// `args_sizes_get(argc_ptr, argv_buf_size_ptr) -> errno`
    ArgsSizesGet,
    /// `environ_get(environ, environ_buf) -> errno` (empty environment)
    EnvironGet,
    /// `environ_sizes_get(count_ptr, buf_size_ptr) -> errno`
    EnvironSizesGet,
    /// `fd_write(fd, iovs, iovs_len, nwritten_ptr) -> errno`: fd 1 and 2.
    FdWrite,
    /// `fd_close(fd) -> errno`
    FdClose,
    /// `fd_seek(fd, offset, whence, newoffset_ptr) -> errno`: stdio does
    /// not seek (`ESPIPE`).
    FdSeek,
    /// `fd_fdstat_get(fd, stat_ptr) -> errno`: stdio are character devices.
    FdFdstatGet,
    /// `clock_time_get(id, precision, time_ptr) -> errno`
    ClockTimeGet,
    /// `random_get(buf, len) -> errno`
    RandomGet,
    /// `proc_exit(code)`: translated into `halt`.
    ProcExit,
}

const I32: ValType = ValType::I32;
const I64: ValType = ValType::I64;

impl WasiFn {
    /// Every function, for listings.
    pub const ALL: [WasiFn; 11] = [
        WasiFn::ArgsGet,
        WasiFn::ArgsSizesGet,
        WasiFn::EnvironGet,
        WasiFn::EnvironSizesGet,
        WasiFn::FdWrite,
        WasiFn::FdClose,
        WasiFn::FdSeek,
        WasiFn::FdFdstatGet,
        WasiFn::ClockTimeGet,
        WasiFn::RandomGet,
        WasiFn::ProcExit,
    ];

    /// The import's field name.
    pub fn name(self) -> &'static str {
        match self {
            WasiFn::ArgsGet => "args_get",
            WasiFn::ArgsSizesGet => "args_sizes_get",
            WasiFn::EnvironGet => "environ_get",
            WasiFn::EnvironSizesGet => "environ_sizes_get",
            WasiFn::FdWrite => "fd_write",
            WasiFn::FdClose => "fd_close",
            WasiFn::FdSeek => "fd_seek",
            WasiFn::FdFdstatGet => "fd_fdstat_get",
            WasiFn::ClockTimeGet => "clock_time_get",
            WasiFn::RandomGet => "random_get",
            WasiFn::ProcExit => "proc_exit",
        }
    }

    /// The function with this field name.
    pub fn from_name(name: &str) -> Option<WasiFn> {
        WasiFn::ALL.into_iter().find(|f| f.name() == name)
    }

    /// Its WebAssembly parameter types.
    pub fn params(self) -> &'static [ValType] {
        match self {
            WasiFn::FdWrite => &[I32, I32, I32, I32],
            WasiFn::FdClose | WasiFn::ProcExit => &[I32],
            WasiFn::FdSeek => &[I32, I64, I32, I32],
            WasiFn::ClockTimeGet => &[I32, I64, I32],
            _ => &[I32, I32],
        }
    }

    /// Its WebAssembly result types.
    pub fn results(self) -> &'static [ValType] {
        match self {
            WasiFn::ProcExit => &[],
            _ => &[I32],
        }
    }
}

/// Where `clock_time_get` takes time from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Clock {
    /// Every call advances every clock by [`Deterministic::TICK_NS`], from
    /// [`Deterministic::REALTIME_START_NS`] for the real-time clock and 0
    /// for the others: runs compare byte for byte.
    #[default]
    Deterministic,
    /// The host's clocks.
    Real,
}

/// Where `random_get` takes bytes from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Randomness {
    /// A fixed stream ([`Deterministic::fill_random`]).
    #[default]
    Deterministic,
    /// Seeded from the host's randomness (not for cryptography).
    Real,
}

/// The deterministic clock and random stream, shared by every host that
/// must agree with this one (the tests' WASI over another engine).
#[derive(Clone, Debug)]
pub struct Deterministic {
    calls: u64,
    state: u64,
}

impl Default for Deterministic {
    fn default() -> Self {
        Deterministic {
            calls: 0,
            state: 0x746f_7976_6d57_4153,
        }
    }
}

impl Deterministic {
    /// How far each `clock_time_get` advances time: 1 ms.
    pub const TICK_NS: u64 = 1_000_000;
    /// The real-time clock's first reading: 2026-01-01T00:00:00Z.
    pub const REALTIME_START_NS: u64 = 1_767_225_600 * 1_000_000_000;

    /// The next reading of clock `id` (0 real time, else from 0).
    pub fn time(&mut self, id: u32) -> u64 {
        self.calls += 1;
        let t = self.calls * Self::TICK_NS;
        if id == 0 {
            Self::REALTIME_START_NS + t
        } else {
            t
        }
    }

    /// Fills `buf` with the next bytes of a splitmix64 stream.
    pub fn fill_random(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            chunk.copy_from_slice(&z.to_le_bytes()[..chunk.len()]);
        }
    }
}

/// The WASI host: answers a translated program's WASI imports, and hands
/// its other imports to the embedder's host ([`Wasi::others`]).
pub struct Wasi<'a> {
    fns: Vec<Option<crate::WasiFn>>,
    base: u64,
    args: Vec<Vec<u8>>,
    stdout: Box<dyn Write + Send + 'a>,
    stderr: Box<dyn Write + Send + 'a>,
    clock: Clock,
    randomness: Randomness,
    det: Deterministic,
    started: Instant,
    real_random: Option<RandomState>,
    random_calls: u64,
    others: Option<&'a mut (dyn HostFunctions + Send)>,
}

impl std::fmt::Debug for Wasi<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wasi")
            .field("fns", &self.fns)
            .field("base", &self.base)
            .field("args", &self.args.len())
            .field("clock", &self.clock)
            .field("randomness", &self.randomness)
            .finish_non_exhaustive()
    }
}

impl<'a> Wasi<'a> {
    /// A host for `t`'s program, whose `argv` is `args` (the program's name
    /// first, as C's `argv[0]`). Output goes to the process's stdout and
    /// stderr until [`Wasi::stdout`] and [`Wasi::stderr`] say otherwise.
    pub fn new(t: &Translation, args: Vec<String>) -> Wasi<'a> {
        Wasi::for_imports(t.imports.iter().map(|i| i.wasi).collect(), &t.layout, args)
    }

    /// Same, from the imports' WASI functions (by program import index)
    /// and the layout.
    pub fn for_imports(fns: Vec<Option<WasiFn>>, layout: &Layout, args: Vec<String>) -> Wasi<'a> {
        Wasi {
            fns,
            base: layout.base,
            args: args.into_iter().map(String::into_bytes).collect(),
            stdout: Box::new(std::io::stdout()),
            stderr: Box::new(std::io::stderr()),
            clock: Clock::Deterministic,
            randomness: Randomness::Deterministic,
            det: Deterministic::default(),
            started: Instant::now(),
            real_random: None,
            random_calls: 0,
            others: None,
        }
    }

    /// Where fd 1 writes.
    pub fn stdout(mut self, w: impl Write + Send + 'a) -> Self {
        self.stdout = Box::new(w);
        self
    }

    /// Where fd 2 writes.
    pub fn stderr(mut self, w: impl Write + Send + 'a) -> Self {
        self.stderr = Box::new(w);
        self
    }

    /// Which clock `clock_time_get` reads.
    pub fn clock(mut self, c: Clock) -> Self {
        self.clock = c;
        self
    }

    /// Which bytes `random_get` gives.
    pub fn randomness(mut self, r: Randomness) -> Self {
        self.randomness = r;
        if r == Randomness::Real {
            self.real_random = Some(RandomState::new());
        }
        self
    }

    /// The host of the program's other imports (by the same import index).
    pub fn others(mut self, host: &'a mut (dyn HostFunctions + Send)) -> Self {
        self.others = Some(host);
        self
    }

    /// Flushes stdout and stderr.
    pub fn flush(&mut self) -> std::io::Result<()> {
        self.stdout.flush()?;
        self.stderr.flush()
    }

    fn wasi(&mut self, f: WasiFn, a: &[i64], mem: &mut Mem<'_>) -> Result<i32, Fault> {
        let arg = |i: usize| a.get(i).copied().unwrap_or(0);
        let ptr = |i: usize| arg(i) as u32 as u64;
        Ok(match f {
            WasiFn::ArgsSizesGet => {
                let size: usize = self.args.iter().map(|a| a.len() + 1).sum();
                mem.write_u32(ptr(0), self.args.len() as u32)?;
                mem.write_u32(ptr(1), size as u32)?;
                errno::SUCCESS
            }
            WasiFn::ArgsGet => {
                let (mut argv, mut buf) = (ptr(0), ptr(1));
                for s in &self.args {
                    mem.write_u32(argv, buf as u32)?;
                    mem.write_bytes(buf, s)?;
                    mem.write_bytes(buf + s.len() as u64, &[0])?;
                    argv += 4;
                    buf += s.len() as u64 + 1;
                }
                errno::SUCCESS
            }
            WasiFn::EnvironSizesGet => {
                mem.write_u32(ptr(0), 0)?;
                mem.write_u32(ptr(1), 0)?;
                errno::SUCCESS
            }
            WasiFn::EnvironGet => errno::SUCCESS,
            WasiFn::FdWrite => {
                let out: &mut dyn Write = match arg(0) as i32 {
                    1 => &mut self.stdout,
                    2 => &mut self.stderr,
                    _ => return Ok(errno::BADF),
                };
                let (iovs, n) = (ptr(1), ptr(2));
                mem.check(iovs, n * 8)?;
                let mut total = 0u64;
                let mut chunk = Vec::new();
                for i in 0..n {
                    let buf = mem.read_u32(iovs + 8 * i)? as u64;
                    let len = mem.read_u32(iovs + 8 * i + 4)? as u64;
                    mem.check(buf, len)?;
                    let mut at = buf;
                    while at < buf + len {
                        let step = (buf + len - at).min(1 << 16);
                        chunk.clear();
                        mem.read_bytes(at, step, &mut chunk)?;
                        if out.write_all(&chunk).is_err() {
                            return Ok(errno::IO);
                        }
                        at += step;
                    }
                    total += len;
                }
                mem.write_u32(ptr(3), total as u32)?;
                errno::SUCCESS
            }
            WasiFn::FdClose => match arg(0) as i32 {
                0..=2 => errno::SUCCESS,
                _ => errno::BADF,
            },
            WasiFn::FdSeek => match arg(0) as i32 {
                0..=2 => errno::SPIPE,
                _ => errno::BADF,
            },
            WasiFn::FdFdstatGet => {
                let fd = arg(0) as i32;
                if !(0..=2).contains(&fd) {
                    return Ok(errno::BADF);
                }
                // filetype: character device; no flags; rights: read (fd 0)
                // or write; none inherited.
                let rights: u64 = if fd == 0 { 1 << 1 } else { 1 << 6 };
                let mut stat = [0u8; 24];
                stat[0] = 2;
                stat[8..16].copy_from_slice(&rights.to_le_bytes());
                mem.write_bytes(ptr(1), &stat)?;
                errno::SUCCESS
            }
            WasiFn::ClockTimeGet => {
                let id = arg(0) as u32;
                if id > 3 {
                    return Ok(errno::INVAL);
                }
                let t = match self.clock {
                    Clock::Deterministic => self.det.time(id),
                    Clock::Real if id == 0 => SystemTime::now()
                        .duration_since(UNIX_EPOCH)
                        .map_or(0, |d| d.as_nanos() as u64),
                    Clock::Real => self.started.elapsed().as_nanos() as u64,
                };
                mem.write_bytes(ptr(2), &t.to_le_bytes())?;
                errno::SUCCESS
            }
            WasiFn::RandomGet => {
                let (buf, len) = (ptr(0), ptr(1));
                mem.check(buf, len)?;
                let mut at = buf;
                let mut bytes = Vec::new();
                while at < buf + len {
                    let step = (buf + len - at).min(1 << 16);
                    bytes.resize(step as usize, 0);
                    match &self.real_random {
                        Some(state) if self.randomness == Randomness::Real => {
                            for chunk in bytes.chunks_mut(8) {
                                let mut h = state.build_hasher();
                                self.random_calls += 1;
                                h.write_u64(self.random_calls);
                                chunk.copy_from_slice(&h.finish().to_le_bytes()[..chunk.len()]);
                            }
                        }
                        _ => self.det.fill_random(&mut bytes),
                    }
                    mem.write_bytes(at, &bytes)?;
                    at += step;
                }
                errno::SUCCESS
            }
            // Translated into `halt`; never called.
            WasiFn::ProcExit => errno::SUCCESS,
        })
    }
}

impl HostFunctions for Wasi<'_> {
    fn call(&mut self, index: u16, args: &[i64], mem: &mut [i64]) -> Result<i64, HostError> {
        match self.fns.get(index as usize).copied() {
            Some(Some(f)) => {
                let len = mem.len() as u64 * 8;
                let mut m = Mem {
                    words: mem,
                    base: self.base,
                    len,
                };
                Ok(self.wasi(f, args, &mut m).unwrap_or(errno::FAULT) as i64)
            }
            _ => match self.others.as_mut() {
                Some(h) => h.call(index, args, mem),
                None => Err(HostError::msg(format!(
                    "import {index} is not a WASI function and no host provides it"
                ))),
            },
        }
    }
}

/// A WASI call touched memory out of bounds.
#[derive(Debug)]
struct Fault;

/// The guest's view of toyvm memory.
struct Mem<'m> {
    words: &'m mut [i64],
    base: u64,
    /// The memory's length in toyvm bytes.
    len: u64,
}

impl Mem<'_> {
    /// Checks guest bytes `[p, p + n)`; returns toyvm's address of `p`.
    fn check(&self, p: u64, n: u64) -> Result<u64, Fault> {
        let at = self.base + p;
        match at.checked_add(n) {
            Some(end) if end <= self.len => Ok(at),
            _ => Err(Fault),
        }
    }

    fn byte(&self, at: u64) -> u8 {
        (self.words[(at / 8) as usize] >> (8 * (at % 8))) as u8
    }

    fn set_byte(&mut self, at: u64, b: u8) {
        let w = &mut self.words[(at / 8) as usize];
        let shift = 8 * (at % 8);
        *w = (*w & !(0xff << shift)) | ((b as i64) << shift);
    }

    fn read_bytes(&self, p: u64, n: u64, out: &mut Vec<u8>) -> Result<(), Fault> {
        let at = self.check(p, n)?;
        out.extend((at..at + n).map(|a| self.byte(a)));
        Ok(())
    }

    fn write_bytes(&mut self, p: u64, bytes: &[u8]) -> Result<(), Fault> {
        let at = self.check(p, bytes.len() as u64)?;
        for (i, &b) in bytes.iter().enumerate() {
            self.set_byte(at + i as u64, b);
        }
        Ok(())
    }

    fn read_u32(&self, p: u64) -> Result<u32, Fault> {
        let mut b = Vec::with_capacity(4);
        self.read_bytes(p, 4, &mut b)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn write_u32(&mut self, p: u64, v: u32) -> Result<(), Fault> {
        self.write_bytes(p, &v.to_le_bytes())
    }
}
