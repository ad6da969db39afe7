//! The WebAssembly harness: the C programs of `programs/c` (their committed
//! `.wasm`) at their bench arguments, under toyvm's interpreter, toyvm's
//! JIT driven by the multi-hash and the perfect profilers, wasmi and
//! wasmtime (whole-process runners of `contenders/`, outside the
//! workspace), and native code from `clang -O2` of the same C file.
//!
//! `cargo bench --bench wasm_versus [-- [FILTER] [--test-args]]` (set
//! `TOYVM_BENCH_RUNS`, default 5). `--test-args` runs the programs at their
//! test arguments instead: with `TOYVM_BENCH_RUNS=1` that is the check
//! that every contender prints what toyvm prints. Arguments come from each
//! C file's `//` header (`toyvm_lab::suite::parse_header`, the one parser).
//!
//! Every contender runs once per round, in a rotated order; its stdout and
//! exit status must be toyvm's interpreter's (`toyvm run --exit-code`,
//! whose status is the program's `proc_exit` code as the runners'). The
//! report gives each contender's median wall time and range, the
//! per-round ratios' median and range for the pairs the targets are
//! stated in, and geometric means; then what translation and compilation
//! cost per KB of code (the code section: the modules carry more debug
//! information than code), and toyvm instructions per WebAssembly operator,
//! static (the translator's counts) and executed (toyvm's interpreter's
//! count against `wasmtime-run --count`, wasmtime's fuel with every
//! operator costing 1). The counting and `--stats` runs are extra runs,
//! not timed ones.
//!
//! Contenders not built are skipped with a note: `wasmtime-run` and
//! `wasmi-run` are built by `cd contenders && cargo build --release`
//! (`TOYVM_WASMTIME_RUN` and `TOYVM_WASMI_RUN` name other builds); the
//! native programs need `clang` (`apt-get install clang`) and are built
//! into Cargo's target directory at bench time.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{Spread, geomean, paired_rows, rotated, time_output};
use toyvm_lab::suite::parse_header;

/// toyvm's modes: column and `toyvm run` flags.
const MODES: &[(&str, &[&str])] = &[
    ("toyvm interp", &["--no-jit"]),
    ("toyvm jit/multihash", &["--profile", "multihash"]),
    ("toyvm jit/perfect", &["--profile", "perfect"]),
];

/// The pairs (numerator, denominator) whose per-round ratio is reported:
/// the targets' (the interpreter against wasmi, the JIT against wasmtime,
/// the JIT's speedup over its own interpreter) and each against native.
const ROUND_PAIRS: &[(&str, &str)] = &[
    ("toyvm interp", "wasmi"),
    ("toyvm jit/multihash", "wasmtime"),
    ("toyvm jit/perfect", "wasmtime"),
    ("toyvm interp", "toyvm jit/multihash"),
    ("toyvm interp", "toyvm jit/perfect"),
    ("wasmtime", "clang -O2"),
    ("toyvm jit/multihash", "clang -O2"),
];

/// How a column runs a program.
enum Runner {
    /// `toyvm run` with these flags.
    Toyvm(&'static [&'static str]),
    /// A runner of `contenders/` (`wasmtime-run`, `wasmi-run`).
    Engine(PathBuf),
    /// The program compiled by clang, in this folder.
    Native(PathBuf),
}

struct Contender {
    label: &'static str,
    runner: Runner,
}

/// One program of `programs/c`.
struct Case {
    name: String,
    source: PathBuf,
    wasm: PathBuf,
    args: Vec<String>,
}

/// What one run gave.
struct Ran {
    secs: f64,
    out: Output,
}

fn main() {
    let filter = common::filter();
    let runs = common::runs();
    let test_args = common::flag("--test-args");
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let toyvm = PathBuf::from(env!("CARGO_BIN_EXE_toyvm"));
    let cases: Vec<Case> = cases(&root.join("programs/c"), test_args)
        .into_iter()
        .filter(|c| filter.as_deref().is_none_or(|f| c.name.contains(f)))
        .collect();
    let native_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("wasm_versus-native");
    let contenders = contenders(&root, &native_dir);

    let columns: Vec<String> = contenders.iter().map(|c| c.label.to_owned()).collect();
    let size = if test_args { "test" } else { "bench" };
    println!(
        "whole-program medians over {runs} runs [fastest-slowest], seconds, at the {size} arguments"
    );
    print!("{:<10}", "program");
    for c in &columns {
        print!(" {c:>24}");
    }
    println!();
    let mut table: Vec<(String, Vec<Option<f64>>)> = Vec::new();
    let mut paired: Vec<String> = Vec::new();
    let mut costs: Vec<String> = Vec::new();
    let mut counts: Vec<String> = Vec::new();
    for case in &cases {
        let mut times: Vec<Vec<f64>> = vec![Vec::new(); contenders.len()];
        let mut compile: Vec<Vec<f64>> = vec![Vec::new(); contenders.len()];
        let mut reference: Option<Output> = None;
        for round in 0..runs {
            for c in rotated(round, contenders.len()) {
                let ran = run(&contenders[c], &toyvm, case, &[]);
                check(case, contenders[c].label, &ran.out, &mut reference);
                times[c].push(ran.secs);
                if let Some(s) = stderr_figure(&ran.out, "compile-seconds") {
                    compile[c].push(s);
                }
            }
        }
        paired.extend(paired_rows(&case.name, &columns, &times, ROUND_PAIRS));
        let spreads: Vec<Option<Spread>> = times.iter().map(|t| Spread::of(t)).collect();
        print!("{:<10}", case.name);
        for s in &spreads {
            print!(" {:>24}", s.map_or_else(|| "-".to_owned(), |s| s.cell()));
        }
        println!();
        table.push((
            case.name.clone(),
            spreads.iter().map(|s| s.map(|s| s.median)).collect(),
        ));
        let interp = toyvm_stats(&toyvm, case, MODES[0].1);
        costs.extend(cost_rows(case, &toyvm, &interp, &contenders, &compile));
        counts.push(count_row(case, &interp, &contenders, &toyvm));
    }

    println!();
    let col = |name: &str| columns.iter().position(|c| c == name);
    let ratio = |a: usize, b: usize| -> Option<(f64, usize)> {
        let v: Vec<f64> = table
            .iter()
            .filter_map(|(_, m)| Some(m[a]? / m[b]?))
            .collect();
        (!v.is_empty()).then(|| (geomean(&v), v.len()))
    };
    println!("geometric means of the medians' ratios:");
    for &(num, den) in ROUND_PAIRS {
        if let (Some(a), Some(b)) = (col(num), col(den))
            && let Some((g, n)) = ratio(a, b)
        {
            println!("  {num:>19} / {den:<19} {g:.2} over {n} programs");
        }
    }
    println!();
    println!("per-round ratios (each round's two runs are moments apart):");
    for row in &paired {
        println!("  {row}");
    }
    println!();
    println!("translation and compilation, per KB of code (the code section's function bodies):");
    for row in &costs {
        println!("  {row}");
    }
    println!();
    println!("toyvm instructions per WebAssembly operator (static: emitted per operator read;");
    println!("executed: toyvm's interpreter's count per operator wasmtime's fuel counted):");
    for row in &counts {
        println!("  {row}");
    }
}

/// The programs of `dir` with a `.wasm` beside their `.c`, sorted, with
/// their bench arguments (their test arguments if `test_args` or without).
fn cases(dir: &Path, test_args: bool) -> Vec<Case> {
    let mut sources: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "c"))
        .collect();
    sources.sort();
    sources
        .into_iter()
        .filter_map(|source| {
            let wasm = source.with_extension("wasm");
            if !wasm.is_file() {
                eprintln!(
                    "note: {} has no .wasm (programs/c/build.sh)",
                    source.display()
                );
                return None;
            }
            let text = std::fs::read_to_string(&source).expect("the C source is readable");
            let h =
                parse_header(&text).unwrap_or_else(|e| panic!("{}: header: {e}", source.display()));
            let args = match (test_args, h.bench_args) {
                (false, Some(b)) => b,
                _ => h.args,
            };
            Some(Case {
                name: source.file_stem().unwrap().to_string_lossy().into_owned(),
                source,
                wasm,
                args: args.iter().map(i64::to_string).collect(),
            })
        })
        .collect()
}

/// toyvm's modes, then the runners and native code that are available
/// (a note names how to build each missing one).
fn contenders(root: &Path, native_dir: &Path) -> Vec<Contender> {
    let mut v: Vec<Contender> = MODES
        .iter()
        .map(|&(label, flags)| Contender {
            label,
            runner: Runner::Toyvm(flags),
        })
        .collect();
    for (label, bin, var) in [
        ("wasmi", "wasmi-run", "TOYVM_WASMI_RUN"),
        ("wasmtime", "wasmtime-run", "TOYVM_WASMTIME_RUN"),
    ] {
        let path = std::env::var_os(var).map_or_else(
            || root.join("contenders/target/release").join(bin),
            PathBuf::from,
        );
        if path.is_file() {
            v.push(Contender {
                label,
                runner: Runner::Engine(path),
            });
        } else {
            eprintln!(
                "note: {} is not built; skipping {label} (build it: cd contenders && cargo build --release, or set {var})",
                path.display()
            );
        }
    }
    if Command::new("clang").arg("--version").output().is_ok() {
        v.push(Contender {
            label: "clang -O2",
            runner: Runner::Native(native_dir.to_owned()),
        });
    } else {
        eprintln!("note: clang is not installed; skipping native code (apt-get install clang)");
    }
    v
}

/// Runs `case` under contender `c` (extra flags before the module).
fn run(c: &Contender, toyvm: &Path, case: &Case, flags: &[&str]) -> Ran {
    let mut cmd = match &c.runner {
        Runner::Toyvm(mode) => {
            let mut cmd = Command::new(toyvm);
            cmd.args(["run", "--exit-code"]).args(*mode).args(flags);
            cmd.arg(&case.wasm);
            cmd
        }
        Runner::Engine(bin) => {
            let mut cmd = Command::new(bin);
            cmd.arg("--compile-time").args(flags).arg(&case.wasm);
            cmd
        }
        Runner::Native(dir) => Command::new(native(dir, case)),
    };
    cmd.args(&case.args);
    let (secs, out) = time_output(&mut cmd);
    Ran { secs, out }
}

/// `case` compiled by `clang -O2` into `dir` (once per harness run).
fn native(dir: &Path, case: &Case) -> PathBuf {
    let exe = dir.join(&case.name);
    if !exe.is_file() {
        std::fs::create_dir_all(dir).unwrap();
        let out = Command::new("clang")
            .args(["-O2", "-w", "-o"])
            .arg(&exe)
            .arg(&case.source)
            .output()
            .expect("clang runs");
        assert!(
            out.status.success(),
            "clang -O2 {}: {}",
            case.source.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    exe
}

/// Checks a run against the first (toyvm's interpreter's: the first
/// column of round 0): stdout and exit status.
fn check(case: &Case, label: &str, out: &Output, reference: &mut Option<Output>) {
    match reference {
        None => {
            assert_eq!(label, MODES[0].0, "the interpreter runs first in round 0");
            *reference = Some(out.clone());
        }
        Some(r) => assert!(
            r.stdout == out.stdout && r.status.code() == out.status.code(),
            "{}: {label} gave {:?} (status {:?}) where toyvm's interpreter gave {:?} (status {:?}); its stderr: {}",
            case.name,
            String::from_utf8_lossy(&out.stdout),
            out.status.code(),
            String::from_utf8_lossy(&r.stdout),
            r.status.code(),
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

/// A figure a runner printed on stderr (`RUNNER: NAME VALUE ...`).
fn stderr_figure(out: &Output, name: &str) -> Option<f64> {
    String::from_utf8_lossy(&out.stderr).lines().find_map(|l| {
        let mut w = l.split_whitespace().skip_while(|w| *w != name);
        w.next()?;
        w.next()?.parse().ok()
    })
}

/// One more run of `case` in a toyvm mode with `--stats --json`: the
/// statistics line that ends its stdout.
fn toyvm_stats(toyvm: &Path, case: &Case, mode: &[&str]) -> serde_json::Value {
    let mut cmd = Command::new(toyvm);
    cmd.arg("run")
        .args(mode)
        .args(["--stats", "--json"])
        .arg(&case.wasm)
        .args(&case.args);
    let out = cmd.output().expect("toyvm runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("{}: --stats --json printed no JSON line", case.name))
}

/// Milliseconds, and milliseconds per KB of `bytes` of code.
fn per_kb(secs: f64, bytes: f64) -> String {
    format!(
        "{:.3} ms ({:.3} ms/KB of code)",
        secs * 1e3,
        secs * 1e3 * 1024.0 / bytes
    )
}

/// What translating and compiling `case` cost: toyvm's translation (from
/// the interpreter's stats), the JIT's compile time (one `--stats` run per
/// mode), and each engine's `Module::new` (median over the timed runs).
fn cost_rows(
    case: &Case,
    toyvm: &Path,
    interp: &serde_json::Value,
    contenders: &[Contender],
    compile: &[Vec<f64>],
) -> Vec<String> {
    let t = &interp["translation"];
    // Per KB of code: the modules carry more debug information than code.
    let bytes = t["code_bytes"].as_f64().unwrap_or(f64::NAN);
    let mut rows = vec![format!(
        "{:<10} {:<22} {:.1} KB module, {:.1} KB of code; translation {}",
        case.name,
        "toyvm",
        t["module_bytes"].as_f64().unwrap_or(f64::NAN) / 1024.0,
        bytes / 1024.0,
        per_kb(t["translate_seconds"].as_f64().unwrap_or(f64::NAN), bytes)
    )];
    for &(label, flags) in &MODES[1..] {
        let s = toyvm_stats(toyvm, case, flags);
        let j = &s["jit"];
        let regions = j["compiles"].as_u64().unwrap_or(0) + j["recompiles"].as_u64().unwrap_or(0);
        let secs = j["compile_seconds"].as_f64().unwrap_or(f64::NAN);
        rows.push(format!(
            "{:<10} {label:<22} JIT compile {} over {regions} regions (hot code only; {:.1}% of the run)",
            case.name,
            per_kb(secs, bytes),
            100.0 * secs / s["wall_seconds"].as_f64().unwrap_or(f64::NAN)
        ));
    }
    for (c, secs) in contenders.iter().zip(compile) {
        if let Some(s) = Spread::of(secs) {
            let what = match c.label {
                "wasmi" => "Module::new (validation; lazy translation runs later)",
                _ => "Module::new (the whole module, one thread)",
            };
            rows.push(format!(
                "{:<10} {:<22} {what} {}, median of {}",
                case.name,
                c.label,
                per_kb(s.median, bytes),
                s.n
            ));
        }
    }
    rows
}

/// toyvm instructions per WebAssembly operator for `case`: static from the
/// translation, executed from the interpreter's count and wasmtime's fuel.
fn count_row(
    case: &Case,
    interp: &serde_json::Value,
    contenders: &[Contender],
    toyvm: &Path,
) -> String {
    let t = &interp["translation"];
    let (ops, instrs) = (
        t["operators"].as_u64().unwrap_or(0),
        t["instructions"].as_u64().unwrap_or(0),
    );
    let executed = interp["instructions"].as_u64().unwrap_or(0);
    let wasmtime = contenders.iter().find(|c| c.label == "wasmtime");
    let dynamic = match wasmtime {
        Some(c) => {
            let ran = run(c, toyvm, case, &["--count"]);
            match stderr_figure(&ran.out, "wasm-operators") {
                Some(n) => format!("executed {executed} / {n} = {:.2}", executed as f64 / n),
                None => "executed: wasmtime-run --count printed no count".to_owned(),
            }
        }
        None => "executed: needs wasmtime-run (cd contenders && cargo build --release)".to_owned(),
    };
    format!(
        "{:<10} static {instrs} / {ops} = {:.2}; {dynamic}",
        case.name,
        instrs as f64 / ops.max(1) as f64
    )
}
