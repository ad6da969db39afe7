//! The oracle: a module run under wasmi, with a small WASI of the test's
//! own (the same deterministic clock and random stream as toyvm_wasm's).

use toyvm_wasm::wasi::{Deterministic, errno};
use wasmi::{Caller, Config, Engine, Extern, Linker, Module, Store};

use super::{Ending, Run, WasmTrap};

struct State {
    args: Vec<Vec<u8>>,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    det: Deterministic,
}

type C<'a> = Caller<'a, State>;

fn memory(c: &mut C<'_>) -> Option<wasmi::Memory> {
    c.get_export("memory").and_then(Extern::into_memory)
}

fn read(c: &mut C<'_>, p: u32, n: u32) -> Option<Vec<u8>> {
    let m = memory(c)?;
    let data = m.data(&*c);
    data.get(p as usize..(p as usize).checked_add(n as usize)?)
        .map(<[u8]>::to_vec)
}

fn write(c: &mut C<'_>, p: u32, bytes: &[u8]) -> bool {
    let Some(m) = memory(c) else { return false };
    let data = m.data_mut(&mut *c);
    match data.get_mut(p as usize..p as usize + bytes.len()) {
        Some(d) => {
            d.copy_from_slice(bytes);
            true
        }
        None => false,
    }
}

fn ok(b: bool) -> i32 {
    if b { errno::SUCCESS } else { errno::FAULT }
}

fn linker(engine: &Engine) -> Linker<State> {
    let mut l = Linker::<State>::new(engine);
    let w = "wasi_snapshot_preview1";
    l.func_wrap(
        w,
        "proc_exit",
        |_: C<'_>, code: i32| -> Result<(), wasmi::Error> { Err(wasmi::Error::i32_exit(code)) },
    )
    .unwrap();
    l.func_wrap(
        w,
        "args_sizes_get",
        |mut c: C<'_>, argc: i32, size: i32| -> i32 {
            let n = c.data().args.len() as u32;
            let s: usize = c.data().args.iter().map(|a| a.len() + 1).sum();
            ok(write(&mut c, argc as u32, &n.to_le_bytes())
                && write(&mut c, size as u32, &(s as u32).to_le_bytes()))
        },
    )
    .unwrap();
    l.func_wrap(w, "args_get", |mut c: C<'_>, argv: i32, buf: i32| -> i32 {
        let args = c.data().args.clone();
        let (mut argv, mut buf) = (argv as u32, buf as u32);
        for a in &args {
            let mut z = a.clone();
            z.push(0);
            if !(write(&mut c, argv, &buf.to_le_bytes()) && write(&mut c, buf, &z)) {
                return errno::FAULT;
            }
            argv += 4;
            buf += z.len() as u32;
        }
        errno::SUCCESS
    })
    .unwrap();
    l.func_wrap(
        w,
        "environ_sizes_get",
        |mut c: C<'_>, n: i32, s: i32| -> i32 {
            ok(write(&mut c, n as u32, &[0; 4]) && write(&mut c, s as u32, &[0; 4]))
        },
    )
    .unwrap();
    l.func_wrap(w, "environ_get", |_: C<'_>, _: i32, _: i32| -> i32 {
        errno::SUCCESS
    })
    .unwrap();
    l.func_wrap(
        w,
        "fd_write",
        |mut c: C<'_>, fd: i32, iovs: i32, n: i32, nw: i32| -> i32 {
            if fd != 1 && fd != 2 {
                return errno::BADF;
            }
            let mut out = Vec::new();
            for i in 0..n as u32 {
                let Some(iov) = read(&mut c, iovs as u32 + 8 * i, 8) else {
                    return errno::FAULT;
                };
                let p = u32::from_le_bytes(iov[0..4].try_into().unwrap());
                let len = u32::from_le_bytes(iov[4..8].try_into().unwrap());
                let Some(bytes) = read(&mut c, p, len) else {
                    return errno::FAULT;
                };
                out.extend_from_slice(&bytes);
            }
            let total = out.len() as u32;
            if fd == 1 {
                c.data_mut().stdout.extend_from_slice(&out);
            } else {
                c.data_mut().stderr.extend_from_slice(&out);
            }
            ok(write(&mut c, nw as u32, &total.to_le_bytes()))
        },
    )
    .unwrap();
    l.func_wrap(w, "fd_close", |_: C<'_>, fd: i32| -> i32 {
        if (0..=2).contains(&fd) {
            errno::SUCCESS
        } else {
            errno::BADF
        }
    })
    .unwrap();
    l.func_wrap(
        w,
        "fd_seek",
        |_: C<'_>, fd: i32, _: i64, _: i32, _: i32| -> i32 {
            if (0..=2).contains(&fd) {
                errno::SPIPE
            } else {
                errno::BADF
            }
        },
    )
    .unwrap();
    l.func_wrap(w, "fd_fdstat_get", |mut c: C<'_>, fd: i32, p: i32| -> i32 {
        if !(0..=2).contains(&fd) {
            return errno::BADF;
        }
        let mut stat = [0u8; 24];
        stat[0] = 2;
        let rights: u64 = if fd == 0 { 1 << 1 } else { 1 << 6 };
        stat[8..16].copy_from_slice(&rights.to_le_bytes());
        ok(write(&mut c, p as u32, &stat))
    })
    .unwrap();
    l.func_wrap(
        w,
        "clock_time_get",
        |mut c: C<'_>, id: i32, _: i64, p: i32| -> i32 {
            if !(0..=3).contains(&id) {
                return errno::INVAL;
            }
            let t = c.data_mut().det.time(id as u32);
            ok(write(&mut c, p as u32, &t.to_le_bytes()))
        },
    )
    .unwrap();
    l.func_wrap(w, "random_get", |mut c: C<'_>, p: i32, n: i32| -> i32 {
        let mut bytes = vec![0u8; n as u32 as usize];
        c.data_mut().det.fill_random(&mut bytes);
        ok(write(&mut c, p as u32, &bytes))
    })
    .unwrap();
    l
}

/// Runs a WASI command (`_start`) under wasmi.
pub fn run_command(wasm: &[u8], args: &[&str]) -> Run {
    let mut config = Config::default();
    config.wasm_sign_extension(true);
    let engine = Engine::new(&config);
    let module = Module::new(&engine, wasm).expect("wasmi compiles the module");
    let state = State {
        args: args.iter().map(|a| a.as_bytes().to_vec()).collect(),
        stdout: Vec::new(),
        stderr: Vec::new(),
        det: Deterministic::default(),
    };
    let mut store = Store::new(&engine, state);
    let ending = match linker(&engine).instantiate_and_start(&mut store, &module) {
        Err(e) => Ending::Trap(WasmTrap::from_wasmi(&e)),
        Ok(instance) => {
            let start = instance
                .get_typed_func::<(), ()>(&store, "_start")
                .expect("a WASI command exports _start");
            match start.call(&mut store, ()) {
                Ok(()) => Ending::Exit(0),
                Err(e) => match e.i32_exit_status() {
                    Some(code) => Ending::Exit(code),
                    None => Ending::Trap(WasmTrap::from_wasmi(&e)),
                },
            }
        }
    };
    let s = store.into_data();
    Run {
        stdout: s.stdout,
        stderr: s.stderr,
        ending,
    }
}
