//! What `wasmtime-run` and `wasmi-run` share: the command line, the exit
//! statuses, and the WASI preview 1 calls of toyvm's own host
//! (`toyvm_wasm::Wasi`) written once over a guest memory as a byte slice.
//! Each runner wraps these in its engine's `func_wrap`; nothing else of
//! WASI is offered (an import outside this list is a link error, as in
//! toyvm).
//!
//! Same semantics as `toyvm run prog.wasm ARGS`: `argv` is the module's
//! file name then ARGS, the environment is empty, fd 1 and 2 write to
//! stdout and stderr, stdio does not seek, the clock and random bytes are
//! toyvm's deterministic ones (`toyvm_wasm::wasi::Deterministic`). The exit
//! status is the program's `proc_exit` code (as `toyvm run --exit-code`
//! gives it), else toyvm's: 2 usage, 3 a module that does not load or link,
//! 4 a trap.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

pub use toyvm_wasm::wasi::{Deterministic, WASI_MODULE, errno};

/// The exit status of a bad command line.
pub const STATUS_USAGE: i32 = 2;
/// The exit status of a module that does not load, compile or link.
pub const STATUS_LOAD: i32 = 3;
/// The exit status of a trap.
pub const STATUS_TRAP: i32 = 4;

/// A runner's command line: `RUNNER [--compile-time] [--count] MODULE
/// [ARGS...]` (flags before the module; everything after it is the
/// program's).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Cli {
    /// `--compile-time`: print the time `Module::new` took on stderr.
    pub compile_time: bool,
    /// `--count`: print the WebAssembly operators executed on stderr (where
    /// the runner can count them).
    pub count: bool,
    /// The module.
    pub module: PathBuf,
    /// The program's `argv`: the module's file name, then the arguments.
    pub argv: Vec<Vec<u8>>,
}

impl Cli {
    /// Reads the process's arguments; `None` (after a usage line on stderr)
    /// when they are not a command line.
    pub fn parse(runner: &str, args: impl IntoIterator<Item = String>) -> Option<Cli> {
        let mut cli = Cli::default();
        let mut args = args.into_iter();
        loop {
            match args.next()?.as_str() {
                "--compile-time" => cli.compile_time = true,
                "--count" => cli.count = true,
                f if f.starts_with("--") => {
                    eprintln!("{runner}: unknown flag {f}");
                    eprintln!("usage: {runner} [--compile-time] [--count] MODULE [ARGS...]");
                    return None;
                }
                m => {
                    cli.module = PathBuf::from(m);
                    break;
                }
            }
        }
        let name = cli.module.file_name().map_or_else(
            || cli.module.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        cli.argv = std::iter::once(name)
            .chain(args)
            .map(String::into_bytes)
            .collect();
        Some(cli)
    }
}

/// Prints the compile-time line the harness reads (`--compile-time`).
pub fn report_compile(runner: &str, module_bytes: usize, took: Duration) {
    eprintln!(
        "{runner}: compile-seconds {:.6} module-bytes {module_bytes}",
        took.as_secs_f64()
    );
}

/// Prints the operator-count line the harness reads (`--count`).
pub fn report_count(runner: &str, operators: u64) {
    eprintln!("{runner}: wasm-operators {operators}");
}

/// The host's state: the program's arguments and toyvm's deterministic
/// clock and random stream.
#[derive(Debug)]
pub struct Host {
    argv: Vec<Vec<u8>>,
    det: Deterministic,
}

impl Host {
    /// A host whose `argv` is `argv`.
    pub fn new(argv: Vec<Vec<u8>>) -> Host {
        Host {
            argv,
            det: Deterministic::default(),
        }
    }

    /// `args_sizes_get(argc_ptr, argv_buf_size_ptr)`
    pub fn args_sizes_get(&self, mem: &mut [u8], argc: i32, size: i32) -> i32 {
        let bytes: usize = self.argv.iter().map(|a| a.len() + 1).sum();
        ok(write_u32(mem, argc, self.argv.len() as u32) && write_u32(mem, size, bytes as u32))
    }

    /// `args_get(argv, argv_buf)`
    pub fn args_get(&self, mem: &mut [u8], argv: i32, buf: i32) -> i32 {
        let (mut argv, mut buf) = (argv as u32, buf as u32);
        for a in &self.argv {
            let fits = write_u32(mem, argv as i32, buf)
                && write(mem, buf, a)
                && write(mem, buf.wrapping_add(a.len() as u32), &[0]);
            if !fits {
                return errno::FAULT;
            }
            argv = argv.wrapping_add(4);
            buf = buf.wrapping_add(a.len() as u32 + 1);
        }
        errno::SUCCESS
    }

    /// `environ_sizes_get(count_ptr, buf_size_ptr)`: an empty environment.
    pub fn environ_sizes_get(&self, mem: &mut [u8], count: i32, size: i32) -> i32 {
        ok(write_u32(mem, count, 0) && write_u32(mem, size, 0))
    }

    /// `environ_get(environ, environ_buf)`: nothing to write.
    pub fn environ_get(&self, _mem: &mut [u8], _environ: i32, _buf: i32) -> i32 {
        errno::SUCCESS
    }

    /// `fd_write(fd, iovs, iovs_len, nwritten_ptr)`: fd 1 and 2.
    pub fn fd_write(&self, mem: &mut [u8], fd: i32, iovs: i32, n: i32, nwritten: i32) -> i32 {
        let mut out: Box<dyn Write> = match fd {
            1 => Box::new(std::io::stdout().lock()),
            2 => Box::new(std::io::stderr().lock()),
            _ => return errno::BADF,
        };
        let mut total = 0u32;
        for i in 0..n as u32 {
            let at = (iovs as u32).wrapping_add(8 * i);
            let (Some(p), Some(len)) = (read_u32(mem, at), read_u32(mem, at.wrapping_add(4)))
            else {
                return errno::FAULT;
            };
            let Some(bytes) = slice(mem, p, len) else {
                return errno::FAULT;
            };
            if out.write_all(bytes).is_err() {
                return errno::IO;
            }
            total = total.wrapping_add(len);
        }
        ok(write_u32(mem, nwritten, total))
    }

    /// `fd_close(fd)`
    pub fn fd_close(&self, fd: i32) -> i32 {
        if (0..=2).contains(&fd) {
            errno::SUCCESS
        } else {
            errno::BADF
        }
    }

    /// `fd_seek(fd, offset, whence, newoffset_ptr)`: stdio does not seek.
    pub fn fd_seek(&self, fd: i32) -> i32 {
        if (0..=2).contains(&fd) {
            errno::SPIPE
        } else {
            errno::BADF
        }
    }

    /// `fd_fdstat_get(fd, stat_ptr)`: stdio are character devices.
    pub fn fd_fdstat_get(&self, mem: &mut [u8], fd: i32, stat: i32) -> i32 {
        if !(0..=2).contains(&fd) {
            return errno::BADF;
        }
        // filetype: character device; no flags; rights: read (fd 0) or
        // write; none inherited.
        let rights: u64 = if fd == 0 { 1 << 1 } else { 1 << 6 };
        let mut s = [0u8; 24];
        s[0] = 2;
        s[8..16].copy_from_slice(&rights.to_le_bytes());
        ok(write(mem, stat as u32, &s))
    }

    /// `clock_time_get(id, precision, time_ptr)`: the deterministic clock.
    pub fn clock_time_get(&mut self, mem: &mut [u8], id: i32, time: i32) -> i32 {
        if !(0..=3).contains(&id) {
            return errno::INVAL;
        }
        let t = self.det.time(id as u32);
        ok(write(mem, time as u32, &t.to_le_bytes()))
    }

    /// `random_get(buf, len)`: the deterministic stream.
    pub fn random_get(&mut self, mem: &mut [u8], buf: i32, len: i32) -> i32 {
        let Some(dst) = slice_mut(mem, buf as u32, len as u32) else {
            return errno::FAULT;
        };
        self.det.fill_random(dst);
        errno::SUCCESS
    }
}

fn ok(b: bool) -> i32 {
    if b { errno::SUCCESS } else { errno::FAULT }
}

fn slice(mem: &[u8], p: u32, n: u32) -> Option<&[u8]> {
    mem.get(p as usize..(p as usize).checked_add(n as usize)?)
}

fn slice_mut(mem: &mut [u8], p: u32, n: u32) -> Option<&mut [u8]> {
    mem.get_mut(p as usize..(p as usize).checked_add(n as usize)?)
}

fn write(mem: &mut [u8], p: u32, bytes: &[u8]) -> bool {
    match slice_mut(mem, p, bytes.len() as u32) {
        Some(d) => {
            d.copy_from_slice(bytes);
            true
        }
        None => false,
    }
}

fn write_u32(mem: &mut [u8], p: i32, v: u32) -> bool {
    write(mem, p as u32, &v.to_le_bytes())
}

fn read_u32(mem: &[u8], p: u32) -> Option<u32> {
    let b = slice(mem, p, 4)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_come_before_the_module() {
        let args = ["--count", "m/x.wasm", "--count", "7"].map(String::from);
        let cli = Cli::parse("t", args).unwrap();
        assert!(cli.count && !cli.compile_time);
        assert_eq!(cli.module, PathBuf::from("m/x.wasm"));
        assert_eq!(cli.argv, [&b"x.wasm"[..], b"--count", b"7"]);
        assert_eq!(Cli::parse("t", ["--bad".to_owned()]), None);
        assert_eq!(Cli::parse("t", Vec::new()), None);
    }

    #[test]
    fn arguments_are_laid_out_as_wasi_libc_reads_them() {
        let h = Host::new(vec![b"p".to_vec(), b"12".to_vec()]);
        let mut mem = vec![0u8; 64];
        assert_eq!(h.args_sizes_get(&mut mem, 0, 4), errno::SUCCESS);
        assert_eq!(read_u32(&mem, 0), Some(2));
        assert_eq!(read_u32(&mem, 4), Some(5));
        assert_eq!(h.args_get(&mut mem, 8, 16), errno::SUCCESS);
        assert_eq!(
            (read_u32(&mem, 8), read_u32(&mem, 12)),
            (Some(16), Some(18))
        );
        assert_eq!(&mem[16..21], b"p\x0012\x00");
        // A pointer past the memory is EFAULT, not a panic.
        assert_eq!(h.args_get(&mut mem, 62, 16), errno::FAULT);
        assert_eq!(h.fd_write(&mut mem, 1, 60, 1, 0), errno::FAULT);
        assert_eq!(h.fd_write(&mut mem, 3, 0, 0, 0), errno::BADF);
    }
}
