//! The whole-program harness: toyvm (interpreter, and JIT driven by the
//! perfect and multi-hash profilers) against the peers in `../shared/peers`
//! and native Rust, on the same benchmarks, in the same run.
//!
//! `cargo bench --bench versus [FILTER]` (set `TOYVM_BENCH_RUNS`, default 5).
//! Every command runs in interleaved rounds, each round in a rotated
//! order; every contender's output is checked against toyvm's interpreter;
//! the report gives median wall times (whole processes; native Rust is
//! timed in-process), each toyvm mode's ratio to the peers, the JIT's
//! speedup over toyvm's own interpreter, geometric means, each
//! contender's fastest and slowest run, and the median and range of the
//! per-round ratios of the pairs the targets are stated in (the interpreter
//! to each Lua interpreter, the JIT to the interpreter, LuaJIT and Rust:
//! robust to a host whose speed drifts over the run). Peers that are not
//! installed (`apt-get install lua5.4 luajit`) are skipped with a note.
//! The rounds and statistics are `common`'s, shared with `wasm_versus`.

mod common;

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use common::{Spread, geomean, paired_rows, rotated, time};

struct Bench {
    name: &'static str,
    /// The program's argument (the peers' size argument too).
    arg: Option<&'static str>,
    /// A `.b` file under `../shared/peers/bf`, repeated this many times as
    /// the input (for the Brainfuck interpreter).
    bf_input: Option<(&'static str, usize)>,
    /// Whether `../shared/peers/NAME.lua` exists for it.
    lua: bool,
    native: Option<fn(i64) -> String>,
}

const BENCHES: &[Bench] = &[
    Bench {
        name: "fib",
        arg: Some("32"),
        bf_input: None,
        lua: true,
        native: Some(native_fib),
    },
    Bench {
        name: "loop",
        arg: Some("10000"),
        bf_input: None,
        lua: true,
        native: Some(native_loop),
    },
    Bench {
        name: "sieve",
        arg: Some("10000000"),
        bf_input: None,
        lua: true,
        native: Some(native_sieve),
    },
    Bench {
        name: "poly",
        arg: Some("20000000"),
        bf_input: None,
        lua: true,
        native: Some(native_poly),
    },
    Bench {
        name: "bf",
        arg: None,
        bf_input: Some(("99beer.b", 20)),
        lua: false,
        native: None,
    },
    Bench {
        name: "matmul",
        arg: Some("340"),
        bf_input: None,
        lua: false,
        native: None,
    },
];

/// toyvm's modes: label and extra `toyvm run` flags.
const MODES: &[(&str, &[&str])] = &[
    ("interp", &[]),
    ("jit/perfect", &["--profile", "perfect"]),
    ("jit/multihash", &["--profile", "multihash"]),
];

/// The pairs of contenders (numerator, denominator) whose per-round ratio
/// the report gives: the interpreter against both Lua interpreters, the
/// JIT against its own interpreter, LuaJIT and native Rust.
const ROUND_PAIRS: &[(&str, &str)] = &[
    ("toyvm interp", "lua5.4"),
    ("toyvm interp", "luajit -joff"),
    ("toyvm interp", "toyvm jit/perfect"),
    ("toyvm interp", "toyvm jit/multihash"),
    ("toyvm jit/perfect", "luajit"),
    ("toyvm jit/multihash", "luajit"),
    ("toyvm jit/perfect", "rust"),
    ("toyvm jit/multihash", "rust"),
];

const PEERS: &[(&str, &str, &[&str])] = &[
    ("lua5.4", "lua5.4", &[]),
    ("luajit -joff", "luajit", &["-joff"]),
    ("luajit", "luajit", &[]),
];

fn native_fib(n: i64) -> String {
    fn fib(n: i64) -> i64 {
        if n < 2 { n } else { fib(n - 1) + fib(n - 2) }
    }
    fib(black_box(n)).to_string()
}

fn native_loop(n: i64) -> String {
    let n = black_box(n);
    let mut s = 0i64;
    for i in 1..=n {
        for j in 1..=n {
            s += (i * j) % 7;
        }
    }
    s.to_string()
}

fn native_sieve(n: i64) -> String {
    let n = black_box(n) as usize;
    let mut composite = vec![false; n + 1];
    let mut count = 0;
    for i in 2..=n {
        if !composite[i] {
            count += 1;
            let mut j = i * i;
            while j <= n {
                composite[j] = true;
                j += i;
            }
        }
    }
    count.to_string()
}

fn native_poly(n: i64) -> String {
    trait Obj {
        fn f(&self, x: i64) -> i64;
    }
    struct A(i64);
    struct B(i64);
    struct C(i64);
    struct D(i64);
    impl Obj for A {
        fn f(&self, x: i64) -> i64 {
            x + self.0
        }
    }
    impl Obj for B {
        fn f(&self, x: i64) -> i64 {
            x - self.0
        }
    }
    impl Obj for C {
        fn f(&self, x: i64) -> i64 {
            x + x + self.0
        }
    }
    impl Obj for D {
        fn f(&self, _: i64) -> i64 {
            self.0
        }
    }
    let objs: Vec<Box<dyn Obj>> = vec![
        Box::new(A(1)),
        Box::new(B(2)),
        Box::new(C(3)),
        Box::new(D(4)),
    ];
    let objs = black_box(objs);
    let mut acc = 0i64;
    for i in 0..black_box(n) {
        // Lua's % is floored.
        acc = (acc + objs[(i % 4) as usize].f(i)).rem_euclid(1_000_003);
    }
    acc.to_string()
}

fn available(program: &str) -> bool {
    Command::new(program).arg("-v").output().is_ok()
}

fn main() {
    let filter = common::filter();
    let runs = common::runs();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let peers_dir = root.join("../shared/peers");
    let toyvm = env!("CARGO_BIN_EXE_toyvm");
    let peers: Vec<_> = PEERS
        .iter()
        .filter(|p| {
            let ok = available(p.1) && peers_dir.is_dir();
            if !ok {
                eprintln!(
                    "note: {} (or ../shared/peers) is not available; skipping it",
                    p.1
                );
            }
            ok
        })
        .collect();
    let tmp = std::env::temp_dir().join(format!("toyvm-versus-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();

    let mut columns: Vec<String> = MODES.iter().map(|m| format!("toyvm {}", m.0)).collect();
    columns.extend(peers.iter().map(|p| p.0.to_owned()));
    columns.push("rust".into());
    println!("whole-program medians over {runs} runs [fastest-slowest], seconds");
    print!("{:<8}", "bench");
    for c in &columns {
        print!(" {c:>24}");
    }
    println!();

    let mut compile_rows: Vec<String> = Vec::new();
    let mut paired: Vec<String> = Vec::new();
    // (bench, column) -> median
    let mut table: Vec<(&str, Vec<Option<f64>>)> = Vec::new();
    for b in BENCHES {
        if filter.as_deref().is_some_and(|f| !b.name.contains(f)) {
            continue;
        }
        let program = root.join(format!("programs/{}.tasm", b.name));
        let lua = peers_dir.join(format!("{}.lua", b.name));
        let input: Option<PathBuf> = b.bf_input.map(|(file, times)| {
            let src =
                std::fs::read(peers_dir.join("bf").join(file)).expect("the .b file is readable");
            let path = tmp.join(format!("{file}.x{times}"));
            std::fs::write(&path, src.repeat(times)).unwrap();
            path
        });
        let mut times: Vec<Vec<f64>> = vec![Vec::new(); columns.len()];
        let mut reference: Option<String> = None;
        let mut check = |label: &str, out: String| match &reference {
            None => reference = Some(out),
            Some(r) => assert!(
                *r == out,
                "{}: {label} printed something else than toyvm's interpreter",
                b.name
            ),
        };
        // `toyvm run` on this benchmark with a mode's flags.
        let toyvm_run = |flags: &[&str]| {
            let mut cmd = Command::new(toyvm);
            cmd.arg("run").arg(&program).args(flags);
            if let Some(a) = b.arg {
                cmd.arg(a);
            }
            if let Some(inp) = &input {
                cmd.arg("--input").arg(inp);
            }
            cmd
        };
        // Each round runs every contender once, in a rotated order.
        for round in 0..runs {
            for c in rotated(round, columns.len()) {
                if let Some((label, flags)) = MODES.get(c) {
                    let (t, out) = time(&mut toyvm_run(flags));
                    times[c].push(t);
                    check(label, out);
                } else if let Some(p) = peers.get(c - MODES.len()) {
                    let mut cmd = Command::new(p.1);
                    cmd.args(p.2);
                    if b.lua {
                        cmd.arg(&lua).arg(b.arg.unwrap_or_default());
                    } else if let Some(inp) = &input {
                        cmd.arg(peers_dir.join("bf.lua")).arg(inp);
                    } else {
                        continue;
                    }
                    let (t, out) = time(&mut cmd);
                    times[c].push(t);
                    check(p.0, out);
                } else if let (Some(f), Some(a)) = (b.native, b.arg) {
                    let n: i64 = a.parse().unwrap();
                    let start = Instant::now();
                    let out = f(n);
                    times[c].push(start.elapsed().as_secs_f64());
                    check("rust", out);
                }
            }
        }
        // Per-round ratios of the pairs the targets are stated in.
        paired.extend(paired_rows(b.name, &columns, &times, ROUND_PAIRS));
        // One more run per JIT mode with `--stats --json`: the compiler's
        // time per region and its share of the run.
        for (label, flags) in MODES.iter().filter(|m| !m.1.is_empty()) {
            let out = toyvm_run(flags)
                .args(["--stats", "--json"])
                .output()
                .expect("toyvm runs");
            // The JSON line ends standard output, after the program's.
            let stats: serde_json::Value = String::from_utf8_lossy(&out.stdout)
                .lines()
                .rev()
                .find_map(|l| serde_json::from_str(l).ok())
                .expect("--stats --json prints a JSON line");
            let wall = stats["wall_seconds"].as_f64().unwrap_or(f64::NAN);
            let jit = &stats["jit"];
            let regions =
                jit["compiles"].as_u64().unwrap_or(0) + jit["recompiles"].as_u64().unwrap_or(0);
            let secs = jit["compile_seconds"].as_f64().unwrap_or(0.0);
            compile_rows.push(format!(
                "{:<8} {label:<14} {regions:>3} regions, {:.3} ms per region, {:.1}% of the run",
                b.name,
                if regions > 0 {
                    1e3 * secs / regions as f64
                } else {
                    0.0
                },
                100.0 * secs / wall
            ));
        }
        let spreads: Vec<Option<Spread>> = times.iter().map(|t| Spread::of(t)).collect();
        print!("{:<8}", b.name);
        for s in &spreads {
            print!(" {:>24}", s.map_or_else(|| "-".to_owned(), |s| s.cell()));
        }
        println!();
        table.push((
            b.name,
            spreads.iter().map(|s| s.map(|s| s.median)).collect(),
        ));
    }

    let col = |name: &str| columns.iter().position(|c| c == name);
    let ratio = |a: usize, b: usize, only: &[&str]| -> Option<(f64, usize)> {
        let v: Vec<f64> = table
            .iter()
            .filter(|(n, _)| only.is_empty() || only.contains(n))
            .filter_map(|(_, m)| Some(m[a]? / m[b]?))
            .collect();
        (!v.is_empty()).then(|| (geomean(&v), v.len()))
    };
    println!();
    let lua_set = ["fib", "loop", "sieve", "poly"];
    let interp = col("toyvm interp").unwrap();
    for (peer, set) in [("lua5.4", &lua_set[..]), ("luajit -joff", &lua_set[..])] {
        if let Some(p) = col(peer)
            && let Some((g, n)) = ratio(interp, p, set)
        {
            println!("toyvm interp / {peer}: geometric mean {g:.2} over {n} benchmarks");
        }
    }
    for mode in ["toyvm jit/perfect", "toyvm jit/multihash"] {
        let m = col(mode).unwrap();
        if let Some((g, n)) = ratio(interp, m, &[]) {
            println!(
                "{mode}: speedup over the interpreter, geometric mean {g:.2} over {n} benchmarks"
            );
        }
        for (name, medians) in &table {
            if let (Some(i), Some(j)) = (medians[interp], medians[m]) {
                println!("    {name:<8} {:.2}x", i / j);
            }
        }
        for peer in ["luajit", "rust"] {
            if let Some(p) = col(peer)
                && let Some((g, n)) = ratio(m, p, &lua_set)
            {
                println!("  {mode} / {peer}: geometric mean {g:.2} over {n} benchmarks");
            }
        }
    }
    println!();
    println!("per-round ratios (each round's two runs are moments apart):");
    for row in &paired {
        println!("  {row}");
    }
    println!();
    println!("compile time (one run with --stats --json; regions counts recompiles too):");
    for row in &compile_rows {
        println!("  {row}");
    }
    let _ = std::fs::remove_dir_all(&tmp);
    let _: &Path = &tmp;
}
