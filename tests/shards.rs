//! Studies that outgrow one machine (issue 39): a study killed mid-run and
//! resumed loses no finished cell; sharded and merged reports equal the
//! unsharded one apart from timings; merges of other studies', missing or
//! duplicate shards are refused; GNU parallel and the Slurm script's task
//! commands run the shards; the tidy data loads with Python's csv and json.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn toyvm() -> &'static str {
    env!("CARGO_BIN_EXE_toyvm")
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("toyvm-shards-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The tiny study: two programs, the interpreter and two models.
fn study(repeat: &str) -> Vec<String> {
    let programs = root().join("programs");
    [
        "loop",
        "sieve",
        "--profile",
        "multihash,perfect",
        "--repeat",
        repeat,
        "--program-dir",
        programs.to_str().unwrap(),
    ]
    .map(String::from)
    .to_vec()
}

fn run(args: &[String]) -> Output {
    let o = Command::new(toyvm()).args(args).output().unwrap();
    assert!(
        o.status.success(),
        "toyvm {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

fn args(base: &[String], more: &[&str]) -> Vec<String> {
    let mut v = vec!["compare".to_owned()];
    v.extend(base.iter().cloned());
    v.extend(more.iter().map(|s| s.to_string()));
    v
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// A JSON report without what depends on the clock: timings, the speedups
/// and noise marks made of them, the date.
fn untimed(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| {
                    !(k.contains("seconds")
                        || k.contains("speedup")
                        || k.contains("noise")
                        || k.as_str() == "date")
                })
                .map(|(k, x)| (k.clone(), untimed(x)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(untimed).collect()),
        x => x.clone(),
    }
}

fn report(path: &Path) -> Value {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert!(!v["rows"].as_array().unwrap().is_empty());
    untimed(&v)
}

/// The fields of one CSV line (quoted fields may hold commas).
fn fields(line: &str) -> Vec<String> {
    let (mut out, mut cur, mut quoted) = (Vec::new(), String::new(), false);
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out
}

/// The CSV report without its timing columns.
fn untimed_csv(path: &Path) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let head = fields(lines.next().unwrap());
    let keep: Vec<usize> = (0..head.len())
        .filter(|&i| {
            !(head[i].contains("seconds")
                || head[i].contains("speedup")
                || head[i].contains("noise"))
        })
        .collect();
    lines
        .map(|l| {
            let cells = fields(l);
            keep.iter().map(|&i| cells[i].clone()).collect()
        })
        .collect()
}

fn cell_numbers(path: &Path) -> Vec<u64> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["cell"]
                .as_u64()
                .unwrap()
        })
        .collect()
}

#[test]
fn sharded_and_merged_equals_unsharded_and_bad_merges_are_refused() {
    let d = dir("merge");
    let base = study("2");
    let whole = d.join("whole.json");
    run(&args(&base, &["--format", "json", "-o", p(&whole)]));
    let whole_csv = d.join("whole.csv");
    run(&args(&base, &["--format", "csv", "-o", p(&whole_csv)]));
    let parts: Vec<PathBuf> = (0..3).map(|i| d.join(format!("part-{i}.jsonl"))).collect();
    let mut shares = BTreeSet::new();
    for (i, part) in parts.iter().enumerate() {
        let shard = format!("{i}/3");
        run(&args(&base, &["--shard", &shard, "--cells", p(part)]));
        let mine = cell_numbers(part);
        assert!(!mine.is_empty(), "shard {shard} ran no cell");
        for c in mine {
            assert!(shares.insert(c), "cell {c} ran in two shards");
        }
    }
    let merged = d.join("merged.json");
    let mut merge = vec!["compare".to_owned(), "--merge".to_owned()];
    merge.extend(parts.iter().map(|x| p(x).to_owned()));
    let with = |more: &[&str]| {
        let mut v = merge.clone();
        v.extend(more.iter().map(|s| s.to_string()));
        v
    };
    run(&with(&["--format", "json", "-o", p(&merged)]));
    assert_eq!(report(&merged), report(&whole));
    let merged_csv = d.join("merged.csv");
    run(&with(&["--format", "csv", "-o", p(&merged_csv)]));
    assert_eq!(untimed_csv(&merged_csv), untimed_csv(&whole_csv));
    let svg = d.join("chart.svg");
    run(&with(&["--chart", p(&svg), "-o", p(&d.join("t.txt"))]));
    assert!(std::fs::read_to_string(&svg).unwrap().contains("<svg"));

    let refused = |v: Vec<String>, want: &[&str]| {
        let o = Command::new(toyvm()).args(&v).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        assert!(!o.status.success(), "{v:?} was accepted");
        for w in want {
            assert!(err.contains(w), "{v:?}: `{w}` not in: {err}");
        }
    };
    let (p0, p1, p2) = (p(&parts[0]), p(&parts[1]), p(&parts[2]));
    let m = |xs: &[&str]| {
        let mut v = vec!["compare".to_owned(), "--merge".to_owned()];
        v.extend(xs.iter().map(|s| s.to_string()));
        v
    };
    refused(m(&[p0, p1]), &["shards missing: 2/3"]);
    refused(m(&[p0, p1, p2, p1]), &["duplicate shards", "shard 1/3", p1]);
    let other = d.join("other-0.jsonl");
    run(&args(
        &study("1"),
        &["--shard", "0/3", "--cells", p(&other)],
    ));
    refused(
        m(&[p(&other), p1, p2]),
        &["different studies", p(&other), p1],
    );
    // A shard that lost its last cells: the merge names them.
    let text = std::fs::read_to_string(&parts[2]).unwrap();
    let kept: Vec<&str> = text.lines().collect();
    std::fs::write(&parts[2], kept[..kept.len() - 1].join("\n") + "\n").unwrap();
    refused(
        m(&[p0, p1, p2]),
        &["1 of the study's", "cells are missing", "shard 2/3", p2],
    );
    // Resuming the shard runs just that cell, and the merge agrees again.
    run(&args(&base, &["--shard", "2/3", "--cells", p2, "--resume"]));
    assert_eq!(cell_numbers(&parts[2]).len(), kept.len() - 1);
    run(&with(&["--format", "json", "-o", p(&merged)]));
    assert_eq!(report(&merged), report(&whole));
    // Without --resume an existing cells file is not overwritten.
    refused(
        args(&base, &["--shard", "2/3", "--cells", p2]),
        &["--resume"],
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_killed_study_resumes_without_losing_or_rerunning_a_cell() {
    let d = dir("kill");
    let programs = root().join("programs");
    let base: Vec<String> = [
        "loop",
        "sieve",
        "--profile",
        "perfect",
        "--repeat",
        "150",
        "--program-dir",
        p(&programs),
    ]
    .map(String::from)
    .to_vec();
    let cells = d.join("cells.jsonl");
    let total = 2 + 2 * 2 * 150;
    let mut child = Command::new(toyvm())
        .args(args(&base, &["--cells", p(&cells), "--format", "json"]))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    loop {
        let n = std::fs::read_to_string(&cells).map_or(0, |t| t.lines().count());
        if n > 5 || start.elapsed().as_secs() > 60 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert!(!status.success(), "the study finished before it was killed");
    // A kill in the middle of a write leaves a partial last line.
    let mut before = std::fs::read_to_string(&cells).unwrap();
    let cut = before.rfind('\n').unwrap() + 1;
    before.truncate(cut);
    std::fs::write(&cells, format!("{before}{{\"cell\":9999,\"prog")).unwrap();
    let finished = before.lines().count() - 1;
    assert!(
        finished < total,
        "{finished} of {total} cells before the kill"
    );
    let resumed = d.join("resumed.json");
    run(&args(
        &base,
        &[
            "--cells",
            p(&cells),
            "--resume",
            "--format",
            "json",
            "-o",
            p(&resumed),
        ],
    ));
    let after = std::fs::read_to_string(&cells).unwrap();
    assert!(after.starts_with(&before), "a finished cell was rewritten");
    let numbers = cell_numbers(&cells);
    let unique: BTreeSet<u64> = numbers.iter().copied().collect();
    assert_eq!(numbers.len(), total, "cells run twice or lost");
    assert_eq!(unique.len(), total);
    let whole = d.join("whole.json");
    run(&args(&base, &["--format", "json", "-o", p(&whole)]));
    assert_eq!(report(&resumed), report(&whole));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn gnu_parallel_runs_the_shards_side_by_side() {
    if Command::new("parallel").arg("--version").output().is_err() {
        println!("SKIPPED: GNU parallel is not installed (.ci/run installs it)");
        return;
    }
    let d = dir("parallel");
    let base = study("1");
    let whole = d.join("whole.json");
    run(&args(&base, &["--format", "json", "-o", p(&whole)]));
    let mut cmd = vec![
        "--halt".to_owned(),
        "now,fail=1".to_owned(),
        "-j".to_owned(),
        "4".to_owned(),
        toyvm().to_owned(),
        "compare".to_owned(),
    ];
    cmd.extend(base.iter().cloned());
    let part = format!("{}/part-{{}}.jsonl", p(&d));
    cmd.extend(
        [
            "--shard", "{}/4", "--cells", &part, ":::", "0", "1", "2", "3",
        ]
        .map(String::from),
    );
    let o = Command::new("parallel").args(&cmd).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let merged = d.join("merged.json");
    let mut merge = vec!["compare".to_owned(), "--merge".to_owned()];
    merge.extend((0..4).map(|i| format!("{}/part-{i}.jsonl", p(&d))));
    merge.extend(["--format", "json", "-o", p(&merged)].map(String::from));
    run(&merge);
    assert_eq!(report(&merged), report(&whole));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn the_slurm_scripts_tasks_and_merge_make_the_unsharded_report() {
    let d = dir("slurm");
    let base = study("1");
    let script = root().join("scripts/slurm-study.sh");
    let out = d.join("out");
    std::fs::create_dir_all(&out).unwrap();
    // What `sbatch --array=0-1` would run: the task mode with the array
    // variable set, once per task, then the dependent merge job.
    for i in 0..2 {
        let o = Command::new("bash")
            .arg(&script)
            .args(["task", "2", p(&out), "--"])
            .args(&base)
            .env("TOYVM", toyvm())
            .env("SLURM_ARRAY_TASK_ID", i.to_string())
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "task {i}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let o = Command::new("bash")
        .arg(&script)
        .args(["merge", "2", p(&out)])
        .env("TOYVM", toyvm())
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "merge: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let whole = d.join("whole.json");
    run(&args(&base, &["--format", "json", "-o", p(&whole)]));
    assert_eq!(report(&out.join("report.json")), report(&whole));
    for f in [
        "report.txt",
        "report.csv",
        "tidy.csv",
        "tidy.csv.meta.json",
        "chart.svg",
    ] {
        assert!(out.join(f).exists(), "{f}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

const READ_TIDY: &str = r#"
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
meta = json.load(open(sys.argv[1] + ".meta.json"))
assert meta["format"] == "toyvm-tidy" and meta["format_version"] == 1, meta
for k in ("date", "machine", "toyvm_version", "bench", "repeat"):
    assert k in meta, k
names = [c["name"] for c in meta["columns"]]
assert list(rows[0].keys()) == names, (list(rows[0].keys()), names)
for r in rows:
    assert float(r["wall_s"]) > 0, r
    assert r["status"] == "ok", r
    if r["config"] != "none":
        assert 0 <= float(r["error_pct"]) <= 200, r
print(len(rows), sorted({r["round"] for r in rows}), sorted({r["config"] for r in rows}))
"#;

#[test]
fn tidy_data_has_one_row_per_run_and_loads_with_python() {
    let d = dir("tidy");
    let base = study("2");
    let tidy = d.join("tidy.csv");
    let report_csv = d.join("r.csv");
    run(&args(
        &base,
        &["--tidy", p(&tidy), "--format", "csv", "-o", p(&report_csv)],
    ));
    let text = std::fs::read_to_string(&tidy).unwrap();
    let head = fields(text.lines().next().unwrap());
    for c in [
        "program",
        "config",
        "round",
        "wall_s",
        "error_pct",
        "state_bytes",
    ] {
        assert!(head.iter().any(|h| h == c), "{c} not in {head:?}");
    }
    // 2 programs x 3 configurations x 2 rounds.
    assert_eq!(text.lines().count(), 1 + 12, "{text}");
    // error_pct is the report's fraction in percent.
    let report = std::fs::read_to_string(&report_csv).unwrap();
    let rh = fields(report.lines().next().unwrap());
    let at = |h: &[String], k: &str| h.iter().position(|x| x == k).unwrap();
    let mh = fields(
        report
            .lines()
            .find(|l| l.starts_with("loop,multihash"))
            .unwrap(),
    );
    let frac: f64 = mh[at(&rh, "error")].parse().unwrap();
    let row = fields(
        text.lines()
            .find(|l| l.starts_with("loop,multihash"))
            .unwrap(),
    );
    let pct: f64 = row[head.iter().position(|x| x == "error_pct").unwrap()]
        .parse()
        .unwrap();
    assert!((pct - 100.0 * frac).abs() < 1e-9, "{pct} vs {frac}");
    match Command::new("python3")
        .arg("-c")
        .arg(READ_TIDY)
        .arg(&tidy)
        .output()
    {
        Ok(o) => {
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            let said = String::from_utf8_lossy(&o.stdout);
            assert!(said.starts_with("12 ['1', '2']"), "{said}");
        }
        Err(_) => println!("python3 is absent: the tidy file was checked in Rust only"),
    }
    let _ = std::fs::remove_dir_all(&d);
}
