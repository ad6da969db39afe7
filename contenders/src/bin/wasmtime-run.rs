//! `wasmtime-run [--compile-time] [--count] MODULE [ARGS...]`: a WASI
//! command module on the `wasmtime` crate (Cranelift, every function
//! compiled ahead of time), with toyvm's WASI semantics (see the library).
//!
//! `--compile-time` prints `Module::new`'s time (validation and Cranelift
//! compilation of the whole module, on one thread) on stderr.
//! `--count` turns on fuel with every operator costing 1 and prints the
//! WebAssembly operators executed on stderr; fuel changes the compiled
//! code, so a counting run is not a timing run.

use std::process::ExitCode;
use std::time::Instant;

use toyvm_contenders::{
    Cli, Host, STATUS_LOAD, STATUS_TRAP, STATUS_USAGE, WASI_MODULE, report_compile, report_count,
};
use wasmtime::{Caller, Config, Engine, Extern, Linker, Module, OperatorCost, Result, Store, Trap};

const NAME: &str = "wasmtime-run";

/// `proc_exit`'s status, carried out of the call as an error.
#[derive(Debug)]
struct Exit(i32);

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "exit with status {}", self.0)
    }
}

impl std::error::Error for Exit {}

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

fn linker(engine: &Engine) -> Result<Linker<Host>> {
    let mut l = Linker::<Host>::new(engine);
    let w = WASI_MODULE;
    l.func_wrap(w, "proc_exit", |_: C<'_>, code: i32| -> Result<()> {
        Err(wasmtime::Error::new(Exit(code)))
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

/// Every operator costs 1 fuel (the default makes `nop`, `drop`, `block`,
/// `loop`, `unreachable`, `return`, `else` and `end` free).
fn every_operator_costs_one() -> OperatorCost {
    let mut cost = OperatorCost::new();
    cost.Nop = 1;
    cost.Drop = 1;
    cost.Block = 1;
    cost.Loop = 1;
    cost.Unreachable = 1;
    cost.Return = 1;
    cost.Else = 1;
    cost.End = 1;
    cost
}

fn main() -> ExitCode {
    let Some(cli) = Cli::parse(NAME, std::env::args().skip(1)) else {
        return ExitCode::from(STATUS_USAGE as u8);
    };
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
    // Without the `parallel-compilation` feature, `Module::new` compiles
    // on this one thread.
    let mut config = Config::new();
    if cli.count {
        config.consume_fuel(true);
        config.operator_cost(every_operator_costs_one());
    }
    let engine = match Engine::new(&config) {
        Ok(e) => e,
        Err(e) => return load(&e),
    };
    let start = Instant::now();
    let module = match Module::new(&engine, &bytes) {
        Ok(m) => m,
        Err(e) => return load(&e),
    };
    if cli.compile_time {
        report_compile(NAME, bytes.len(), start.elapsed());
    }
    let mut store = Store::new(&engine, Host::new(cli.argv.clone()));
    if cli.count
        && let Err(e) = store.set_fuel(u64::MAX)
    {
        return load(&e);
    }
    let linked = linker(&engine).and_then(|l| l.instantiate_pre(&module));
    let pre = match linked {
        Ok(p) => p,
        Err(e) => return load(&e),
    };
    // Instantiation runs the start function: it may trap or exit too.
    let ended = match pre.instantiate(&mut store) {
        Ok(instance) => match instance.get_typed_func::<(), ()>(&mut store, "_start") {
            Ok(start) => start.call(&mut store, ()),
            Err(e) => return load(&e),
        },
        Err(e) => Err(e),
    };
    if cli.count {
        let left = store.get_fuel().unwrap_or(u64::MAX);
        report_count(NAME, u64::MAX - left);
    }
    match ended {
        Ok(()) => 0,
        Err(e) => match e.downcast_ref::<Exit>() {
            Some(Exit(code)) => *code,
            None => {
                let kind = e.downcast_ref::<Trap>().map(|t| format!(" ({t:?})"));
                eprintln!("{NAME}: trap{}: {e:?}", kind.unwrap_or_default());
                STATUS_TRAP
            }
        },
    }
}
