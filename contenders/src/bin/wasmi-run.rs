//! `wasmi-run [--compile-time] MODULE [ARGS...]`: a WASI command module on
//! the `wasmi` crate (a register-machine interpreter), with toyvm's WASI
//! semantics (see the library).
//!
//! `--compile-time` prints `Module::new`'s time on stderr: with wasmi's
//! default lazy translation that is validation and set-up; each function
//! is translated to wasmi's instructions when first called, during the
//! run. `--count` is refused: wasmi's fuel counts its own instructions,
//! not WebAssembly's (`wasmtime-run --count` counts those).

use std::process::ExitCode;
use std::time::Instant;

use toyvm_contenders::{
    Cli, Host, STATUS_LOAD, STATUS_TRAP, STATUS_USAGE, WASI_MODULE, report_compile,
};
use wasmi::{Caller, Config, Engine, Error, Extern, Linker, Module, Store};

const NAME: &str = "wasmi-run";

type C<'a> = Caller<'a, Host>;

/// Calls `f` with the guest's memory and the host; EFAULT without a memory.
fn with_mem(c: &mut C<'_>, f: impl FnOnce(&mut [u8], &mut Host) -> i32) -> i32 {
    match c.get_export("memory").and_then(Extern::into_memory) {
        Some(m) => {
            let (mem, host) = m.data_and_store_mut(c);
            f(mem, host)
        }
        None => toyvm_contenders::errno::FAULT,
    }
}

fn linker(engine: &Engine) -> Result<Linker<Host>, Error> {
    let mut l = Linker::<Host>::new(engine);
    let w = WASI_MODULE;
    l.func_wrap(w, "proc_exit", |_: C<'_>, code: i32| -> Result<(), Error> {
        Err(Error::i32_exit(code))
    })?;
    l.func_wrap(w, "args_sizes_get", |mut c: C<'_>, a: i32, b: i32| {
        with_mem(&mut c, |m, h| h.args_sizes_get(m, a, b))
    })?;
    l.func_wrap(w, "args_get", |mut c: C<'_>, a: i32, b: i32| {
        with_mem(&mut c, |m, h| h.args_get(m, a, b))
    })?;
    l.func_wrap(w, "environ_sizes_get", |mut c: C<'_>, a: i32, b: i32| {
        with_mem(&mut c, |m, h| h.environ_sizes_get(m, a, b))
    })?;
    l.func_wrap(w, "environ_get", |mut c: C<'_>, a: i32, b: i32| {
        with_mem(&mut c, |m, h| h.environ_get(m, a, b))
    })?;
    l.func_wrap(
        w,
        "fd_write",
        |mut c: C<'_>, fd: i32, iovs: i32, n: i32, nw: i32| {
            with_mem(&mut c, |m, h| h.fd_write(m, fd, iovs, n, nw))
        },
    )?;
    l.func_wrap(w, "fd_close", |c: C<'_>, fd: i32| c.data().fd_close(fd))?;
    l.func_wrap(w, "fd_seek", |c: C<'_>, fd: i32, _: i64, _: i32, _: i32| {
        c.data().fd_seek(fd)
    })?;
    l.func_wrap(w, "fd_fdstat_get", |mut c: C<'_>, fd: i32, p: i32| {
        with_mem(&mut c, |m, h| h.fd_fdstat_get(m, fd, p))
    })?;
    l.func_wrap(
        w,
        "clock_time_get",
        |mut c: C<'_>, id: i32, _: i64, p: i32| with_mem(&mut c, |m, h| h.clock_time_get(m, id, p)),
    )?;
    l.func_wrap(w, "random_get", |mut c: C<'_>, p: i32, n: i32| {
        with_mem(&mut c, |m, h| h.random_get(m, p, n))
    })?;
    Ok(l)
}

fn main() -> ExitCode {
    let Some(cli) = Cli::parse(NAME, std::env::args().skip(1)) else {
        return ExitCode::from(STATUS_USAGE as u8);
    };
    if cli.count {
        eprintln!("{NAME}: --count: wasmi's fuel counts wasmi's instructions, not WebAssembly's");
        return ExitCode::from(STATUS_USAGE as u8);
    }
    let status = run(&cli);
    let _ = std::io::Write::flush(&mut std::io::stdout());
    ExitCode::from(status as u8)
}

fn run(cli: &Cli) -> i32 {
    let load = |e: &dyn std::fmt::Display| {
        eprintln!("{NAME}: {}: {e}", cli.module.display());
        STATUS_LOAD
    };
    let bytes = match std::fs::read(&cli.module) {
        Ok(b) => b,
        Err(e) => return load(&e),
    };
    let engine = Engine::new(&Config::default());
    let start = Instant::now();
    let module = match Module::new(&engine, &bytes) {
        Ok(m) => m,
        Err(e) => return load(&e),
    };
    if cli.compile_time {
        report_compile(NAME, bytes.len(), start.elapsed());
    }
    let mut store = Store::new(&engine, Host::new(cli.argv.clone()));
    let linker = match linker(&engine) {
        Ok(l) => l,
        Err(e) => return load(&e),
    };
    // Instantiation links (a missing import is a load error) and runs the
    // start function, which may trap or exit as `_start` may.
    let ended = linker
        .instantiate_and_start(&mut store, &module)
        .and_then(|instance| {
            let start = instance.get_typed_func::<(), ()>(&store, "_start")?;
            start.call(&mut store, ())
        });
    match ended {
        Ok(()) => 0,
        Err(e) => {
            if let Some(code) = e.i32_exit_status() {
                code
            } else if e.as_trap_code().is_some() {
                eprintln!("{NAME}: trap: {e}");
                STATUS_TRAP
            } else {
                load(&e)
            }
        }
    }
}
