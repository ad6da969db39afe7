//! A long differential-fuzzing campaign: N generated programs, each run
//! interpreted and under every JIT configuration of `fuzzgen::configs`, on
//! all cores.
//!
//! ```sh
//! cargo run --release --example fuzz_campaign -- --programs 2000 --seed 1
//! cargo run --release --example fuzz_campaign -- --seed 1 --only 417   # one program again
//! ```
//!
//! Program `k` of seed `s` is generated from `Seeded::new(s << 32 | k)`, so
//! a failure is reproduced by its seed and index. Each mismatching program
//! is written to `--out` (default `fuzz-failures/`) with an `# args:`
//! header, ready to minimize and add to `tests/corpus/`. Release builds
//! abort on a panic; a panic hook first writes the programs in flight.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use rayon::prelude::*;
use toyvm_lab::fuzzgen::{self, End, JitTotals, Seeded};

struct Args {
    programs: u64,
    seed: u64,
    only: Option<u64>,
    out: PathBuf,
}

fn parse_args() -> Args {
    let mut a = Args {
        programs: 300,
        seed: 1,
        only: None,
        out: PathBuf::from("fuzz-failures"),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .unwrap_or_else(|| usage(&format!("{flag} needs a value")))
        };
        let num = |v: String| -> u64 {
            v.parse()
                .unwrap_or_else(|_| usage(&format!("bad number `{v}`")))
        };
        match flag.as_str() {
            "--programs" => a.programs = num(value()),
            "--seed" => a.seed = num(value()),
            "--only" => a.only = Some(num(value())),
            "--out" => a.out = PathBuf::from(value()),
            _ => usage(&format!("unknown flag `{flag}`")),
        }
    }
    a
}

fn usage(msg: &str) -> ! {
    eprintln!(
        "fuzz_campaign: {msg}\nusage: fuzz_campaign [--programs N] [--seed S] [--only K] [--out DIR]"
    );
    std::process::exit(2)
}

/// Seeds of the programs being checked, for the panic hook.
static IN_FLIGHT: Mutex<Vec<u64>> = Mutex::new(Vec::new());

fn save(out: &Path, name: &str, text: &str) -> PathBuf {
    std::fs::create_dir_all(out).expect("cannot create the failure directory");
    let path = out.join(name);
    std::fs::write(&path, text).expect("cannot write a failing program");
    path
}

fn main() {
    let args = parse_args();
    let configs = fuzzgen::configs();
    let seed_of = |k: u64| (args.seed << 32) | k;
    let indices: Vec<u64> = match args.only {
        Some(k) => vec![k],
        None => (0..args.programs).collect(),
    };

    let out = args.out.clone();
    let base = args.seed;
    std::panic::set_hook(Box::new(move |info| {
        eprintln!("PANIC: {info}");
        for &s in IN_FLIGHT
            .lock()
            .map(|v| v.clone())
            .unwrap_or_default()
            .iter()
        {
            let case = fuzzgen::generate(&mut Seeded::new(s));
            let k = s & 0xffff_ffff;
            let path = save(
                &out,
                &format!("panic-seed{base}-prog{k}.tasm"),
                &case.to_corpus(&format!(
                    "in flight when a run panicked ({info}); seed {base}, program {k}"
                )),
            );
            eprintln!("  in flight: {}", path.display());
        }
    }));

    let start = Instant::now();
    let done = AtomicU64::new(0);
    let traps = AtomicU64::new(0);
    let no_fuel = AtomicU64::new(0);
    let totals = Mutex::new(JitTotals::default());
    let failures = Mutex::new(Vec::new());
    let total = indices.len() as u64;
    let step = (total / 20).max(1);
    eprintln!(
        "{total} programs x {} configurations on {} threads, seed {}",
        configs.len(),
        rayon::current_num_threads(),
        args.seed
    );
    indices.par_iter().for_each(|&k| {
        let seed = seed_of(k);
        IN_FLIGHT.lock().unwrap().push(seed);
        let case = fuzzgen::generate(&mut Seeded::new(seed));
        let result = fuzzgen::check(&case, &configs);
        IN_FLIGHT.lock().unwrap().retain(|&s| s != seed);
        match result {
            Ok(s) => {
                totals.lock().unwrap().add(&s.jit);
                if matches!(s.oracle, Some(End::Trap { .. })) {
                    traps.fetch_add(1, Ordering::Relaxed);
                }
                if s.out_of_fuel {
                    no_fuel.fetch_add(1, Ordering::Relaxed);
                }
            }
            Err(m) => {
                let comment = format!(
                    "Found by fuzz_campaign --seed {} --only {k}\nconfig: {}\n{}",
                    args.seed, m.config, m.what
                );
                let path = save(
                    &args.out,
                    &format!("seed{}-prog{k}.tasm", args.seed),
                    &m.program.to_corpus(&comment),
                );
                eprintln!("{m}\nwritten to {}", path.display());
                failures.lock().unwrap().push((k, m.config.clone()));
            }
        }
        let n = done.fetch_add(1, Ordering::Relaxed) + 1;
        if n.is_multiple_of(step) || n == total {
            eprintln!(
                "{n}/{total} programs, {} mismatches, {:.0} s",
                failures.lock().unwrap().len(),
                start.elapsed().as_secs_f64()
            );
        }
    });

    let failures = failures.into_inner().unwrap();
    let t = totals.into_inner().unwrap();
    let m = configs.len() as u64;
    eprintln!(
        "oracle: {} trapped, {} out of fuel (not compared); JIT: {} compiles, {} recompiles, {} drops, {} region entries, {} side exits, {} guard failures, {} products strength-reduced, {} calls into the interpreter; {} runs cut short by fuel",
        traps.load(Ordering::Relaxed),
        no_fuel.load(Ordering::Relaxed),
        t.compiles,
        t.recompiles,
        t.drops,
        t.region_entries,
        t.side_exits,
        t.guard_failures,
        t.reduced_products,
        t.interpreter_calls,
        t.fuel_cut
    );
    for (k, config) in &failures {
        eprintln!("mismatch: program {k} under {config}");
    }
    println!(
        "{total} programs x {m} configurations = {} runs, plus one configuration per program again \
         under a fuel limit (compiled code counting fuel), {} mismatches ({:.0} s)",
        total * m,
        failures.len(),
        start.elapsed().as_secs_f64()
    );
    if !failures.is_empty() {
        std::process::exit(1);
    }
}
