//! The whole-program harness: toyvm against the peers in `../shared/peers`
//! on the same benchmarks, in the same run, as whole processes.
//!
//! `cargo bench --bench versus` (set `TOYVM_BENCH_RUNS`, default 5). For
//! every benchmark it runs each command in interleaved rounds, checks that
//! every command printed the same output, and reports the median wall time
//! and toyvm's ratio to each peer, with the geometric mean over benchmarks.
//! Peers that are not installed (`apt-get install lua5.4 luajit`) are
//! skipped with a note.

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

struct Bench {
    name: &'static str,
    arg: &'static str,
}

const BENCHES: &[Bench] = &[
    Bench {
        name: "fib",
        arg: "32",
    },
    Bench {
        name: "loop",
        arg: "10000",
    },
    Bench {
        name: "sieve",
        arg: "10000000",
    },
    Bench {
        name: "poly",
        arg: "20000000",
    },
];

struct Contender {
    label: &'static str,
    program: &'static str,
    args: &'static [&'static str],
}

const PEERS: &[Contender] = &[
    Contender {
        label: "lua5.4",
        program: "lua5.4",
        args: &[],
    },
    Contender {
        label: "luajit -joff",
        program: "luajit",
        args: &["-joff"],
    },
];

fn available(program: &str) -> bool {
    Command::new(program).arg("-v").output().is_ok()
}

fn time(cmd: &mut Command) -> (f64, Vec<u8>) {
    let start = Instant::now();
    let out = cmd.output().expect("command runs");
    let secs = start.elapsed().as_secs_f64();
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (secs, out.stdout)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument selects benchmarks.
    let filter: Option<String> = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let runs: usize = std::env::var("TOYVM_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let peers_dir = root.join("../shared/peers");
    let toyvm = env!("CARGO_BIN_EXE_toyvm");
    let peers: Vec<&Contender> = PEERS
        .iter()
        .filter(|p| {
            let ok = available(p.program);
            if !ok {
                eprintln!("note: {} is not installed; skipping it", p.program);
            }
            ok
        })
        .collect();
    if !peers_dir.is_dir() {
        eprintln!(
            "note: {} not found; only toyvm is timed",
            peers_dir.display()
        );
    }

    println!("whole-program medians over {runs} runs (seconds); ratio = toyvm / peer");
    let mut header = format!("{:<8} {:>10}", "bench", "toyvm");
    for p in &peers {
        header += &format!(" {:>13} {:>7}", p.label, "ratio");
    }
    println!("{header}");
    let mut log_ratios: Vec<Vec<f64>> = vec![Vec::new(); peers.len()];
    for b in BENCHES {
        if filter.as_deref().is_some_and(|f| !b.name.contains(f)) {
            continue;
        }
        let program = root.join(format!("programs/{}.tasm", b.name));
        let lua = peers_dir.join(format!("{}.lua", b.name));
        let mut times = vec![Vec::new(); 1 + peers.len()];
        let mut outputs: Vec<Vec<u8>> = vec![Vec::new(); 1 + peers.len()];
        for _ in 0..runs {
            let (t, out) = time(Command::new(toyvm).arg("run").arg(&program).arg(b.arg));
            times[0].push(t);
            outputs[0] = out;
            for (i, p) in peers.iter().enumerate() {
                if !lua.exists() {
                    continue;
                }
                let (t, out) = time(Command::new(p.program).args(p.args).arg(&lua).arg(b.arg));
                times[i + 1].push(t);
                outputs[i + 1] = out;
            }
        }
        let mine = median(&mut times[0]);
        let mut line = format!("{:<8} {:>10.3}", b.name, mine);
        for (i, _) in peers.iter().enumerate() {
            if times[i + 1].is_empty() {
                line += &format!(" {:>13} {:>7}", "-", "-");
                continue;
            }
            assert_eq!(
                String::from_utf8_lossy(&outputs[0]).trim(),
                String::from_utf8_lossy(&outputs[i + 1]).trim(),
                "{}: toyvm and {} disagree",
                b.name,
                peers[i].label
            );
            let theirs = median(&mut times[i + 1]);
            log_ratios[i].push((mine / theirs).ln());
            line += &format!(" {:>13.3} {:>7.2}", theirs, mine / theirs);
        }
        println!("{line}");
    }
    for (i, p) in peers.iter().enumerate() {
        let r = &log_ratios[i];
        if !r.is_empty() {
            let geo = (r.iter().sum::<f64>() / r.len() as f64).exp();
            println!("geometric mean of toyvm / {}: {geo:.2}", p.label);
        }
    }
}
