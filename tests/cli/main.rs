//! The `toyvm` command line, end to end.

#[path = "../common/mod.rs"]
mod common;
mod hostile;
mod reliability;

use std::path::Path;
use std::process::{Command, Output};

fn toyvm(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toyvm"))
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .args(args)
        .output()
        .expect("toyvm runs")
}

fn tmp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("toyvm-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `run --stats --json`'s standard output: the program's output, and the
/// statistics, the last line.
fn output_and_stats(stdout: &[u8]) -> (&[u8], serde_json::Value) {
    let body = stdout.strip_suffix(b"\n").expect("a JSON line ends it");
    let at = body.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let stats: serde_json::Value = serde_json::from_slice(&body[at..]).unwrap();
    assert_eq!(stats["format"], 1, "{stats}");
    (&stdout[..at], stats)
}

#[test]
fn asm_and_dis_round_trip_every_program_byte_for_byte() {
    for case in common::all() {
        let bc = tmp(&format!("{}.bc", case.name));
        let text = tmp(&format!("{}.dis.tasm", case.name));
        let bc2 = tmp(&format!("{}.2.bc", case.name));
        let o = toyvm(&["asm", s(&case.path), "-o", s(&bc)]);
        assert!(
            o.status.success(),
            "{}: {}",
            case.name,
            String::from_utf8_lossy(&o.stderr)
        );
        let o = toyvm(&["dis", s(&bc), "-o", s(&text)]);
        assert!(o.status.success());
        let o = toyvm(&["asm", s(&text), "-o", s(&bc2)]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(
            std::fs::read(&bc).unwrap(),
            std::fs::read(&bc2).unwrap(),
            "{}",
            case.name
        );
        let dis_again = toyvm(&["dis", s(&bc2)]).stdout;
        assert_eq!(dis_again, std::fs::read(&text).unwrap(), "{}", case.name);
    }
}

#[test]
fn run_takes_either_form_and_maps_exit_status() {
    let src = tmp("exit.tasm");
    std::fs::write(&src, ".func main(n)\n putn n\n ret n\n.end\n").unwrap();
    let bc = tmp("exit.bc");
    assert!(toyvm(&["asm", s(&src), "-o", s(&bc)]).status.success());
    for file in [&src, &bc] {
        // The program's value is not an exit status unless asked for.
        let o = toyvm(&["run", s(file), "--", "-7"]);
        assert_eq!(o.stdout, b"-7");
        assert_eq!(o.status.code(), Some(0));
        let o = toyvm(&["run", s(file), "--exit-code", "--", "-7"]);
        assert_eq!(o.stdout, b"-7");
        assert_eq!(o.status.code(), Some(249), "low byte of -7");
        // Unambiguously: the `result` of the statistics.
        let o = toyvm(&["run", s(file), "--stats", "--json", "--", "-7"]);
        let (out, stats) = output_and_stats(&o.stdout);
        assert_eq!(out, b"-7\n", "the JSON starts a line of its own");
        assert_eq!(stats["result"], -7);
    }
}

#[test]
fn traps_and_bad_input_give_clear_errors_and_status() {
    let src = tmp("trap.tasm");
    std::fs::write(
        &src,
        ".func main(n)\n li r1, 0\n div n, n, r1\n ret n\n.end\n",
    )
    .unwrap();
    let o = toyvm(&["run", s(&src), "4"]);
    assert_eq!(o.status.code(), Some(4));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("trap in `main` at instruction 1") && err.contains("division by zero"),
        "{err}"
    );

    let o = toyvm(&["run", s(&src)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("takes 1 argument, 0 given"));

    let o = toyvm(&["run", s(&src), "four"]);
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("argument 1 (`four`) is not an integer (or not within 64 bits)")
    );

    let junk = tmp("junk.bc");
    let mut bytes = toyvm_vm::bytecode::MAGIC.to_vec();
    bytes.extend_from_slice(&[1, 0, 0, 0, 9, 9]);
    std::fs::write(&junk, bytes).unwrap();
    let o = toyvm(&["run", s(&junk)]);
    assert_eq!(o.status.code(), Some(3));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("bytecode: byte offset"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );

    let o = toyvm(&["run", s(&src), "1", "--fuel", "1"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("out of fuel"));
}

#[test]
fn record_writes_both_trace_formats_with_the_counted_tuples() {
    let case = common::load(&common::root().join("programs/fib.tasm"));
    let args: Vec<String> = case.args.iter().map(|a| a.to_string()).collect();
    let mut counts = None;
    for format in ["text", "binary"] {
        let trace = tmp(&format!("fib.{format}.trace"));
        let mut cmd = vec!["run", s(&case.path)];
        cmd.extend(args.iter().map(String::as_str));
        cmd.extend([
            "--record",
            s(&trace),
            "--record-format",
            format,
            "--stats",
            "--json",
        ]);
        let o = toyvm(&cmd);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let (_, stats) = output_and_stats(&o.stdout);
        let tuples = toyvm_profiler::trace::read_all(&std::fs::read(&trace).unwrap()).unwrap();
        let by_kind =
            |k: toyvm_profiler::Kind| tuples.iter().filter(|t| t.kind == k).count() as u64;
        assert_eq!(
            stats["tuples"]["value"],
            by_kind(toyvm_profiler::Kind::Value)
        );
        assert_eq!(stats["tuples"]["edge"], by_kind(toyvm_profiler::Kind::Edge));
        assert_eq!(stats["tuples"]["call"], by_kind(toyvm_profiler::Kind::Call));
        assert!(stats["instructions"].as_u64().unwrap() > 0);
        let now = (by_kind(toyvm_profiler::Kind::Edge), tuples.len());
        if let Some(before) = counts {
            assert_eq!(before, now, "both formats hold the same stream");
        }
        counts = Some(now);
    }
}

#[test]
fn help_explains_each_command() {
    let o = toyvm(&["--help"]);
    let text = String::from_utf8_lossy(&o.stdout);
    for cmd in ["run", "asm", "dis"] {
        assert!(text.contains(cmd), "{text}");
    }
    let o = toyvm(&["run", "--help"]);
    let text = String::from_utf8_lossy(&o.stdout);
    for flag in ["--input", "--fuel", "--record", "--stats", "--kinds"] {
        assert!(text.contains(flag), "{text}");
    }
}

#[test]
fn profiling_a_run_changes_nothing_the_program_prints() {
    let case = common::load(&common::root().join("programs/sieve.tasm"));
    let arg = case.args[0].to_string();
    let plain = toyvm(&["run", s(&case.path), &arg]);
    assert!(plain.status.success());
    for spec in ["perfect", "multihash", "stratified", "rap", "conte"] {
        let o = toyvm(&[
            "run",
            s(&case.path),
            &arg,
            "--profile",
            spec,
            "--stats",
            "--json",
        ]);
        assert!(
            o.status.success(),
            "{spec}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let (out, stats) = output_and_stats(&o.stdout);
        assert_eq!(out, plain.stdout, "{spec}");
        assert!(stats["intervals"].as_u64().unwrap() > 0, "{spec}: {stats}");
        assert!(stats["profile"].as_str().unwrap().starts_with(spec));
    }
    let o = toyvm(&[
        "run",
        s(&case.path),
        &arg,
        "--profile",
        "multihash:tables=x",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("tables"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A trace of fib 10, recorded once per test that needs it.
fn fib_trace(name: &str) -> std::path::PathBuf {
    let trace = tmp(name);
    let o = toyvm(&["run", "programs/fib.tasm", "10", "--record", s(&trace)]);
    assert!(o.status.success(), "{}", stderr(&o));
    trace
}

#[test]
fn spec_limits_are_clear_errors_never_panics() {
    let trace = fib_trace("limits.trace");
    for spec in [
        "multihash:tables=17,entries=1114112",
        "singlehash:entries=131072",
        "tagged:entries=1073741824,ways=16384",
        "conte:history=16",
        "conte:entries=2097152",
        "multihash:threshold=0.001%",
    ] {
        for o in [
            toyvm(&["run", "programs/fib.tasm", "10", "--profile", spec]),
            toyvm(&["profile", "--trace", s(&trace), "--profile", spec]),
        ] {
            assert_eq!(o.status.code(), Some(2), "{spec}: {}", stderr(&o));
            assert!(
                stderr(&o).contains("bad profiler spec"),
                "{spec}: {}",
                stderr(&o)
            );
        }
    }
    // A list is bounded too: all its models' tables are alive together
    // (2,000 large multihash specs reached 8.5 GB before).
    let list = |n: usize| vec!["multihash:tables=16,entries=1048576"; n].join(",");
    let o = toyvm(&["profile", "--trace", s(&trace), "--profile", &list(33)]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("33 models over one stream; at most 32 run at once"),
        "{}",
        stderr(&o)
    );
    let o = toyvm(&["profile", "--trace", s(&trace), "--profile", &list(32)]);
    assert!(o.status.success(), "{}", stderr(&o));
    // The limits are in the help text.
    let help = String::from_utf8_lossy(&toyvm(&["profile", "--help"]).stdout).into_owned();
    assert!(
        help.contains("tables=4 (1..=16)") && help.contains("at most 2^20"),
        "{help}"
    );
}

#[test]
fn every_spec_list_the_help_and_readme_show_parses() {
    let trace = fib_trace("lists.trace");
    for (list, models) in [
        ("multihash,stratified,rap:eps=1%", 3),
        ("perfect,multihash:interval=10", 2),
        ("multihash,stratified,rap,conte", 4),
        ("multihash:tables=1,entries=512,reset=on", 1),
        ("multihash:tables=4,entries=2048;perfect", 2),
    ] {
        let o = toyvm(&["profile", "--trace", s(&trace), "--profile", list, "--json"]);
        assert!(o.status.success(), "{list}: {}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let n = v["models"].as_array().map_or(0, Vec::len);
        assert_eq!(n, models, "{list}: {v}");
    }
    // One spec for run and verify; `none` is the interpreter.
    for spec in [
        "multihash:tables=4,entries=2048",
        "none",
        "perfect,interval=1000",
    ] {
        let o = toyvm(&["run", "programs/fib.tasm", "10", "--profile", spec]);
        assert!(o.status.success(), "{spec}: {}", stderr(&o));
    }
    let o = toyvm(&[
        "run",
        "programs/fib.tasm",
        "10",
        "--profile",
        "perfect,multihash",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("one --profile spec"), "{}", stderr(&o));
}

#[cfg(unix)]
#[test]
fn flags_that_cannot_act_are_errors_that_say_why() {
    for (args, why) in [
        (&["--candidates"][..], "--candidates needs --profile SPEC"),
        (&["--jit-log"], "--jit-log needs --profile SPEC"),
        (&["--dump-clif", "clif"], "--dump-clif needs --profile SPEC"),
        (&["--no-value-spec"], "--no-value-spec needs --profile SPEC"),
        (&["--kinds", "edge"], "--kinds needs --record FILE"),
        (
            &["--profile", "perfect", "--kinds", "edge"],
            "--kinds needs --record FILE",
        ),
        (
            &["--profile", "perfect", "--no-jit", "--jit-log"],
            "--jit-log cannot act with --no-jit",
        ),
        (
            &["--profile", "perfect", "--no-jit", "--dump-clif", "clif"],
            "--dump-clif cannot act with --no-jit",
        ),
        // Issue 34 item 5: these were accepted where they cannot act.
        (&["--lag", "5"], "--lag needs --profile SPEC"),
        (&["--threads", "2"], "--threads needs --profile SPEC"),
        (
            &["--install-lag", "5"],
            "--install-lag needs --profile SPEC",
        ),
        (
            &["--record-format", "binary"],
            "--record-format needs --record FILE",
        ),
    ] {
        let mut all = vec!["run", "programs/fib.tasm", "10"];
        all.extend_from_slice(args);
        let o = toyvm(&all);
        assert_eq!(o.status.code(), Some(2), "{all:?}");
        let err = stderr(&o);
        assert!(err.starts_with(&format!("toyvm: {why}")), "{all:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(o.stdout.is_empty(), "nothing ran: {all:?}");
    }
    // Where they can act, they do.
    let trace = tmp("kinds.trace");
    let o = toyvm(&[
        "run",
        "programs/fib.tasm",
        "10",
        "--record",
        s(&trace),
        "--kinds",
        "call",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let t = std::fs::read_to_string(&trace).unwrap();
    assert!(
        !t.is_empty() && t.lines().all(|l| l.starts_with("C ")),
        "{t}"
    );
    let o = toyvm(&[
        "run",
        "programs/fib.tasm",
        "10",
        "--profile",
        "perfect",
        "--no-jit",
        "--candidates",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn run_takes_a_suite_name_as_compare_does() {
    let by_path = toyvm(&["run", "programs/fib.tasm", "15"]);
    let by_name = toyvm(&["run", "fib", "15"]);
    assert!(by_name.status.success(), "{}", stderr(&by_name));
    assert_eq!(by_name.stdout, by_path.stdout);
    assert_eq!(String::from_utf8_lossy(&by_name.stdout), "610\n");
    // From another directory too: the suite beside the sources.
    let o = Command::new(env!("CARGO_BIN_EXE_toyvm"))
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .args(["run", "fib", "15"])
        .current_dir(std::env::temp_dir())
        .output()
        .unwrap();
    assert_eq!(o.stdout, by_path.stdout, "{}", stderr(&o));
    let o = toyvm(&["run", "no-such-program", "1"]);
    assert_eq!(o.status.code(), Some(3));
    let err = stderr(&o);
    assert!(
        err.contains("`no-such-program` is neither a file nor a program in") && err.contains("fib"),
        "{err}"
    );
}

#[test]
fn run_warns_when_the_header_names_an_input_and_none_is_given() {
    let src = tmp("reads.tasm");
    std::fs::write(
        &src,
        "# Prints the first input byte.\n# input: some/file.txt\n.memory 64\n.input 8\n.func main()\n li r1, 8\n ld r0, r1, 0\n putn r0\n ret r0\n.end\n",
    )
    .unwrap();
    let o = toyvm(&["run", s(&src)]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "0");
    let err = stderr(&o);
    assert!(
        err.starts_with("toyvm: warning: ")
            && err.contains("header names an input (")
            && err.contains("some/file.txt")
            && err.contains("no --input was given"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    let input = tmp("reads.txt");
    std::fs::write(&input, "A").unwrap();
    let o = toyvm(&["run", s(&src), "--input", s(&input)]);
    assert_eq!(String::from_utf8_lossy(&o.stdout), "65");
    assert_eq!(stderr(&o), "", "no warning with --input");
    let o = toyvm(&["run", "programs/fib.tasm", "10"]);
    assert_eq!(stderr(&o), "", "no warning without an input line");
}

#[test]
fn compare_takes_profile_and_still_the_old_profiles() {
    let run = |flag: &str| {
        let o = toyvm(&[
            "compare", "fib", flag, "perfect", "--repeat", "1", "--format", "csv",
        ]);
        assert!(o.status.success(), "{flag}: {}", stderr(&o));
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        out.lines()
            .map(|l| l.split(',').next().unwrap_or("").to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(run("--profile"), run("--profiles"));
    let help = String::from_utf8_lossy(&toyvm(&["compare", "--help"]).stdout).into_owned();
    assert!(help.contains("--profile <SPEC,SPEC,...>"), "{help}");
    assert!(!help.contains("--profiles"), "the old spelling is hidden");
}

/// A printed pc: `f<function>:<offset>` or `f<function>:arg<i>`.
fn is_pc(s: &str) -> bool {
    let Some((f, o)) = s.strip_prefix('f').and_then(|r| r.split_once(':')) else {
        return false;
    };
    let o = o.strip_prefix("arg").unwrap_or(o);
    !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()) && o.parse::<u32>().is_ok()
}

#[test]
fn pcs_print_one_way_in_candidates_and_verify_evidence() {
    let o = toyvm(&[
        "run",
        "programs/fib.tasm",
        "10",
        "--profile",
        "perfect:interval=200",
        "--no-jit",
        "--candidates",
    ]);
    assert!(o.status.success());
    let err = stderr(&o);
    let rows: Vec<&str> = err.lines().filter(|l| l.starts_with("   ")).collect();
    assert!(rows.len() > 5, "{err}");
    for row in rows {
        let f: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(f.len(), 4, "{row}");
        assert!(is_pc(f[2]), "{row}");
        match f[1] {
            "E" => assert!(is_pc(f[3]), "{row}"),
            "C" => assert!(
                f[3].strip_prefix('f')
                    .is_some_and(|n| n.parse::<u32>().is_ok())
            ),
            "V" => assert!(f[3].parse::<i64>().is_ok(), "{row}"),
            k => panic!("kind {k} in {row}"),
        }
    }
    // A table of 4 counters misestimates: verify's evidence names entries
    // the same way.
    let o = toyvm(&[
        "verify",
        "programs/fib.tasm",
        "15",
        "--profile",
        "multihash:tables=1,entries=4,interval=200",
    ]);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let evidence: Vec<&str> = out.lines().filter(|l| l.contains("interval ")).collect();
    assert!(!evidence.is_empty(), "{out}");
    for e in evidence {
        let tuple: Vec<&str> = e.split(": ").nth(1).unwrap().split_whitespace().collect();
        assert!(
            matches!(tuple[0], "V" | "E" | "C") && is_pc(tuple[1]),
            "{e}"
        );
        assert!(!e.contains("0x"), "{e}");
    }
}

/// The names of a `--stats` text's lines (the first 19 columns).
fn stat_names(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| !l.starts_with("toyvm:"))
        .map(|l| l.get(..19).unwrap_or(l).trim_end().to_owned())
        .collect()
}

#[test]
fn stats_have_one_layout_and_one_json_shape_in_every_mode() {
    let trace = tmp("modes.trace");
    let modes: [&[&str]; 4] = [
        &[],
        &["--record", s(&trace)],
        &["--profile", "multihash:interval=500", "--no-jit"],
        &["--profile", "multihash:interval=500"],
    ];
    let mut layouts = Vec::new();
    let mut shapes = Vec::new();
    for extra in modes {
        let mut args = vec!["run", "programs/loop.tasm", "3000", "--stats"];
        args.extend_from_slice(extra);
        let o = toyvm(&args);
        assert!(o.status.success(), "{extra:?}: {}", stderr(&o));
        layouts.push((extra, stat_names(&stderr(&o)), stderr(&o)));
        args.push("--json");
        let o = toyvm(&args);
        assert!(o.status.success(), "{extra:?}: {}", stderr(&o));
        let (_, v) = output_and_stats(&o.stdout);
        // Data on standard output; nothing mixed into standard error.
        assert_eq!(stderr(&o), "", "{extra:?}");
        // The same document in a file named by --stats-file.
        let file = tmp("modes.stats.json");
        let mut to_file = args.clone();
        to_file.extend(["--stats-file", s(&file)]);
        let o = toyvm(&to_file);
        assert!(o.status.success(), "{extra:?}: {}", stderr(&o));
        let (_, in_stdout) = output_and_stats(&[o.stdout.as_slice(), b"{\"format\":1}\n"].concat());
        assert_eq!(in_stdout["format"], 1, "nothing but the program's output");
        let saved: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        assert_eq!(saved["mode"], v["mode"]);
        let mut keys: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        keys.sort();
        shapes.push((extra, keys, v));
    }
    for (extra, names, text) in &layouts[1..] {
        assert_eq!(names, &layouts[0].1, "{extra:?}:\n{text}");
    }
    for (extra, keys, _) in &shapes[1..] {
        assert_eq!(keys, &shapes[0].1, "{extra:?}");
    }
    let modes: Vec<&str> = shapes
        .iter()
        .map(|s| s.2["mode"].as_str().unwrap())
        .collect();
    assert_eq!(modes, ["interpreter", "record", "model", "jit"]);
    // Under the JIT the instructions are the interpreter's, and it says so.
    let (_, _, jit) = &layouts[3];
    assert!(jit.contains("ns per interpreted instruction"), "{jit}");
    assert!(jit.contains("compiled code's are not counted"), "{jit}");
    let v = &shapes[3].2;
    assert!(v["jit"]["compiles"].as_u64().unwrap() > 0, "{v}");
    assert!(shapes[0].2["jit"].is_null());
    // The JIT leaves instructions to compiled code: fewer are interpreted.
    assert!(v["instructions"].as_u64() < shapes[0].2["instructions"].as_u64());
    assert_eq!(v["result"], shapes[0].2["result"]);
}

#[test]
fn compare_and_profile_help_explain_every_column_and_term() {
    let help = String::from_utf8_lossy(&toyvm(&["compare", "--help"]).stdout).into_owned();
    for term in [
        "x interp",
        "x perfect",
        "E %",
        "fp/fn/np/nn %",
        "P/R",
        "state B",
        "msgs, cycles",
        "model ms",
        "jit ms",
        "jit c/r/x",
        "status",
        "test size",
        "--baseline",
    ] {
        assert!(help.contains(term), "compare --help lacks `{term}`");
    }
    let help = String::from_utf8_lossy(&toyvm(&["profile", "--help"]).stdout).into_owned();
    for term in [
        "invariance error",
        "arc-weight error",
        "range error",
        "fp fn np nn",
    ] {
        assert!(help.contains(term), "profile --help lacks `{term}`");
    }
}

#[test]
fn compare_shows_progress_as_lines_when_piped_and_says_test_sizes_are_not_timings() {
    let o = toyvm(&[
        "compare",
        "loop",
        "fib",
        "--profile",
        "multihash",
        "--repeat",
        "2",
        "--format",
        "csv",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    let pairs: Vec<&str> = err.lines().filter(|l| l.contains(" under ")).collect();
    // fib and loop, each under none and multihash: one line per pair.
    assert_eq!(pairs.len(), 4, "{err}");
    assert!(pairs[0].starts_with("toyvm compare: [1/4,"), "{err}");
    assert!(pairs[3].starts_with("toyvm compare: [4/4,"), "{err}");
    assert!(pairs.iter().all(|l| l.contains("of 2 runs")), "{err}");
    assert!(err.contains("test sizes"), "{err}");
    let o = toyvm(&[
        "compare",
        "loop",
        "--profile",
        "multihash",
        "--repeat",
        "1",
        "--bench",
        "--format",
        "csv",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("test sizes"), "{}", stderr(&o));
}
